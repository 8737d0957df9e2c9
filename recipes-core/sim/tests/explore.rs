//! The exhaustive explorer (`zk_sim::explore`): every machine to a depth with no violation,
//! the sequence of issue 34's defect 1 covered, and one negative control per check (a wrapped
//! machine with a planted fault that the explorer must catch, trace printed).

#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use recipes_core::{
    AcquireMachine, Cleanup, Exclusive, Failure, Held, Input, Machine, Op, Outcome, Reply, ZkError,
};
use zk_sim::explore::subjects::{self, Subject};
use zk_sim::explore::{Budget, Check, Config, Report, explore};

const NO_FAULTS: Budget = Budget {
    disconnects: 0,
    lost_or_expiry: 0,
    meddles: 0,
    foreign: 0,
    abandons: 0,
};

fn clean(report: &Report) {
    println!("{report}");
    if let Some(found) = &report.found {
        panic!("{found}");
    }
}

// -- Every machine, to a depth the debug suite affords, with the default fault budget.

fn passes<M>(subject: Subject<M>, depth: usize)
where
    M: Machine + Clone + std::fmt::Debug,
    M::Output: zk_sim::explore::subjects::Holds + std::fmt::Debug,
{
    let deadlines = match subject.timed {
        true => vec![None, Some(Duration::from_secs(1))],
        false => vec![None],
    };
    for deadline in deadlines {
        clean(&explore(
            &subject,
            &Config::new(depth).with_deadline(deadline),
        ));
    }
}

#[test]
fn mutex_explored() {
    passes(subjects::mutex(), MUTEX_DEPTH);
}

#[test]
fn read_lock_explored() {
    passes(subjects::read(), RW_DEPTH);
}

#[test]
fn write_lock_explored() {
    passes(subjects::write(), RW_DEPTH);
}

#[test]
fn semaphore_explored() {
    passes(subjects::semaphore(), SEMAPHORE_DEPTH);
}

#[test]
fn downgrade_explored() {
    passes(subjects::downgrade(), DOWNGRADE_DEPTH);
}

#[test]
fn cleanup_explored() {
    passes(subjects::cleanup(), CLEANUP_DEPTH);
}

// Depths that keep the whole file well under a minute in a debug build; the long runs are
// `cargo xtask explore --depth K` (release).
const MUTEX_DEPTH: usize = 8;
const RW_DEPTH: usize = 7;
const SEMAPHORE_DEPTH: usize = 7;
const DOWNGRADE_DEPTH: usize = 7;
const CLEANUP_DEPTH: usize = 9;

/// Issue 34, defect 1: two connection losses, a lost create reply and then the lost `Exists`
/// that was to tell its czxid (17 steps). With connection losses as the only fault the whole
/// space to that depth is small; the fixed machine holds.
#[test]
fn two_connection_losses_with_a_lost_create_reply_still_hold() {
    let budget = Budget {
        disconnects: 2,
        ..NO_FAULTS
    };
    let report = explore(
        &subjects::mutex(),
        &Config {
            budget,
            ..Config::new(20)
        },
    );
    clean(&report);
    assert!(report.max_depth >= 17, "{report}");
}

// -- Negative controls: a planted fault per check, caught.

fn caught<M>(subject: Subject<M>, config: Config, check: Check) -> Report
where
    M: Machine + Clone + std::fmt::Debug,
    M::Output: zk_sim::explore::subjects::Holds + std::fmt::Debug,
{
    let report = explore(&subject, &config);
    println!("{report}");
    let found = report
        .found
        .as_ref()
        .unwrap_or_else(|| panic!("the planted fault was not caught: {report}"));
    assert_eq!(found.violation.check, check, "{found}");
    report
}

/// A wrapped fair-lock attempt: `plant` sees each input and the ops the real machine issued
/// in answer, and may end the attempt in its place.
#[derive(Debug, Clone)]
struct Planted {
    inner: AcquireMachine<Exclusive>,
    kind: Plant,
    /// Our node and its czxid, from the create's reply.
    ours: Option<Held>,
    /// The paths the machine asked `Exists` of.
    asked: Vec<String>,
    out: VecDeque<Op>,
    forced: Option<Outcome<Held>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Plant {
    /// Defect 1 as it was: a listing that shows our node in front while its czxid is
    /// unknown (the `Exists` asking for it was lost) fails the attempt with `Zk(Other)`,
    /// where the fixed machine asks again.
    OldCzxid,
    /// Holds one listing too early: when the machine would watch its predecessor.
    WatchAsHold,
    /// Owes no cleanups.
    NoCleanups,
    /// Drops watch events.
    DeafToWatches,
    /// Asks for its timer a second late.
    LateTimer,
    /// Every listing fails as transient: the attempt retries for ever.
    ListingsFail,
}

fn planted(kind: Plant) -> Subject<Planted> {
    subjects::mutex().wrap(move |inner| Planted {
        inner,
        kind,
        ours: None,
        asked: Vec::new(),
        out: VecDeque::new(),
        forced: None,
    })
}

impl Machine for Planted {
    type Output = Held;

    fn handle(&mut self, now: Instant, mut input: Input) {
        if self.forced.is_some() {
            return;
        }
        match (&input, self.kind) {
            (Input::Reply(Reply::Created { path, czxid }), _) => {
                self.ours = Some(Held {
                    path: path.clone(),
                    czxid: *czxid,
                });
            }
            (Input::Watch { .. }, Plant::DeafToWatches) => return,
            (Input::Reply(Reply::Children(_)), Plant::ListingsFail) => {
                input = Input::Reply(Reply::Failed(ZkError::Transient));
            }
            _ => {}
        }
        self.inner.handle(now, input);
        let mut ops = Vec::new();
        while let Some(op) = self.inner.poll_op() {
            ops.push(op);
        }
        let asks_again = ops
            .iter()
            .any(|op| matches!(op, Op::Exists { path, .. } if self.asked.contains(path)));
        let watches = ops
            .iter()
            .any(|op| matches!(op, Op::GetData { watch: true, .. }));
        match self.kind {
            Plant::OldCzxid if asks_again => {
                self.forced = Some(Outcome::Failed(Failure::Zk(ZkError::Other)));
                return;
            }
            Plant::WatchAsHold if watches && self.ours.is_some() => {
                self.forced = self.ours.clone().map(Outcome::Held);
                return;
            }
            _ => {}
        }
        for op in &ops {
            if let Op::Exists { path, .. } = op {
                self.asked.push(path.clone());
            }
        }
        self.out.extend(ops);
    }

    fn poll_op(&mut self) -> Option<Op> {
        self.out.pop_front()
    }

    fn poll_timeout(&self) -> Option<Instant> {
        if self.forced.is_some() {
            return None;
        }
        let t = self.inner.poll_timeout();
        match self.kind {
            Plant::LateTimer => t.map(|t| t + Duration::from_secs(1)),
            _ => t,
        }
    }

    fn outcome(&self) -> Option<&Outcome<Held>> {
        self.forced.as_ref().or(self.inner.outcome())
    }

    fn cleanups(&self) -> Vec<Cleanup> {
        match (self.kind, &self.forced) {
            (Plant::NoCleanups, _) | (_, Some(Outcome::Held(_))) => Vec::new(),
            _ => self.inner.cleanups(),
        }
    }
}

/// Check 3 (and issue 34's defect 1): the machine as it was before the fix fails a free
/// lock after two connection losses.
#[test]
fn the_old_czxid_defect_is_found() {
    let budget = Budget {
        disconnects: 2,
        ..NO_FAULTS
    };
    let config = Config {
        budget,
        ..Config::new(20)
    };
    let report = caught(planted(Plant::OldCzxid), config, Check::Failure);
    let found = report.found.unwrap();
    assert!(found.violation.detail.contains("Zk(Other)"), "{found}");
    println!("defect 1 at depth {}", found.steps.len());
}

/// Check 2: holding while a node is ahead.
#[test]
fn holding_one_listing_early_is_caught() {
    let config = Config {
        budget: Budget {
            foreign: 1,
            ..NO_FAULTS
        },
        ..Config::new(10)
    };
    caught(planted(Plant::WatchAsHold), config, Check::Grant);
}

/// Check 5: an abandoned attempt that owes nothing leaves its node.
#[test]
fn owing_no_cleanups_is_caught() {
    let config = Config {
        budget: Budget {
            abandons: 1,
            ..NO_FAULTS
        },
        ..Config::new(10)
    };
    caught(planted(Plant::NoCleanups), config, Check::LeftBehind);
}

/// Check 1: a waiter deaf to its watch is left with nothing to move it on.
#[test]
fn a_dropped_watch_event_is_caught_as_stuck() {
    let config = Config {
        budget: Budget {
            foreign: 1,
            ..NO_FAULTS
        },
        ..Config::new(10)
    };
    caught(planted(Plant::DeafToWatches), config, Check::Stuck);
}

/// Check 4: a timer past the deadline and its grace.
#[test]
fn a_late_timer_is_caught() {
    let config = Config::new(6).with_deadline(Some(Duration::from_secs(1)));
    let config = Config {
        budget: NO_FAULTS,
        ..config
    };
    caught(planted(Plant::LateTimer), config, Check::Deadline);
}

/// Check 6: an attempt that retries for ever on a free lock.
#[test]
fn never_holding_a_free_lock_is_caught() {
    let config = Config {
        budget: NO_FAULTS,
        ..Config::new(6)
    };
    caught(planted(Plant::ListingsFail), config, Check::Liveness);
}
