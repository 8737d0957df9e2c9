//! One lock cycle cut into stages, from the worker's own timestamps and the `tracing` events
//! the client and the lock emitted during the cycle. Pure: times are nanoseconds since the
//! run's start, handed in; nothing here reads a clock.
//!
//! The events used (all at `debug` or `info`, with the crates' feature `tracing`):
//!
//! | [`Kind`] | message | emitted by | where |
//! |---|---|---|---|
//! | `LockAttempt` | "lock attempt" | recipe-mutex's driver, the lock's task | start of `acquire` |
//! | `Request` | "request" (`xid`) | zk-client's session, the IO task | `Session::submit`: the request left the channel and its bytes are queued |
//! | `Reply` | "reply" (`xid`) | zk-client's session, the IO task | a reply decoded and matched to its request |
//! | `Waiting` | "waiting: watching a node" | the driver, the lock's task | the machine set a watch on its predecessor |
//! | `LockHeld` | "lock held" (`handed_over`) | the driver, the lock's task | the machine holds, before `drive` returns |
//!
//! The stages, which add up to the cycle (`lock()` called → `release()` returned):
//!
//! - `a` lock() called → "lock attempt";
//! - `b` → the create's "request" (the command reached the IO task);
//! - `c` → the last acquire reply (server, kernel and loopback time: the create and the
//!   listing, pipelined); when the lock waited behind another holder, `c` ends at "waiting"
//!   and the rest goes to `w`;
//! - `w` "waiting" → the last acquire reply: the wait for the predecessor (its watch round
//!   trip, its hold and release, the notification, the listing again); 0 when not waited;
//! - `d` → "lock held": the reply handed from the IO task to the lock's task (a task switch)
//!   and the machine and driver on it;
//! - `e` → lock() returned: the driver's return path and the guard;
//! - `f` lock() returned → the delete's "request" (the worker's call of `release()`, the
//!   release's bookkeeping, the command through the channel to the IO task);
//! - `g` → the delete's "reply" (server, kernel and loopback);
//! - `h` → release() returned (the reply handed to the release's future, its wake-up).
//!
//! There is no event between the IO task's reply and the driver's reading of it, so `d`
//! holds both the wake-up of the lock's task and the machine; no event marks the IO task's
//! write to the socket either, so `b` and `c` meet at the request's queueing.

use std::fmt;

/// What an event of the client or the lock says happened: the events [`breakdown`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The driver starts an attempt ("lock attempt").
    LockAttempt,
    /// The IO task queued a request with this xid ("request").
    Request {
        /// The request's xid.
        xid: i64,
    },
    /// The IO task matched a reply to the request with this xid ("reply").
    Reply {
        /// The request's xid.
        xid: i64,
    },
    /// The machine watches its predecessor ("waiting: watching a node").
    Waiting,
    /// The machine holds ("lock held").
    LockHeld {
        /// It waited behind a predecessor whose release handed it the lock.
        handed_over: bool,
    },
}

/// One event of a cycle: when (ns since the run's start) and what.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event {
    /// Nanoseconds since the run's start.
    pub at: u64,
    /// What happened.
    pub kind: Kind,
}

/// The worker's own timestamps of one cycle, in nanoseconds since the run's start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Marks {
    /// Before `lock()` was called.
    pub lock_called: u64,
    /// After `lock().await` returned.
    pub lock_returned: u64,
    /// After `release().await` returned.
    pub release_returned: u64,
}

/// A stage of a cycle (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// `a`: lock() called → "lock attempt".
    Call,
    /// `b`: → the create's "request".
    Submit,
    /// `c`: → the last acquire reply (or "waiting").
    Server,
    /// `w`: "waiting" → the last acquire reply.
    Queue,
    /// `d`: → "lock held".
    Machine,
    /// `e`: → lock() returned.
    Return,
    /// `f`: lock() returned → the delete's "request".
    DeleteSubmit,
    /// `g`: → the delete's "reply".
    DeleteServer,
    /// `h`: → release() returned.
    ReleaseReturn,
}

impl Stage {
    /// Every stage, in the cycle's order.
    pub const ALL: [Stage; 9] = [
        Stage::Call,
        Stage::Submit,
        Stage::Server,
        Stage::Queue,
        Stage::Machine,
        Stage::Return,
        Stage::DeleteSubmit,
        Stage::DeleteServer,
        Stage::ReleaseReturn,
    ];

    /// Its letter, in the report and on the `CYCLE` line.
    pub fn key(self) -> &'static str {
        match self {
            Stage::Call => "a",
            Stage::Submit => "b",
            Stage::Server => "c",
            Stage::Queue => "w",
            Stage::Machine => "d",
            Stage::Return => "e",
            Stage::DeleteSubmit => "f",
            Stage::DeleteServer => "g",
            Stage::ReleaseReturn => "h",
        }
    }

    /// What it spans, for the report.
    pub fn label(self) -> &'static str {
        match self {
            Stage::Call => "lock() → lock attempt",
            Stage::Submit => "→ create request (IO task)",
            Stage::Server => "→ last acquire reply (server)",
            Stage::Queue => "waiting → last reply (queue)",
            Stage::Machine => "→ lock held (wake-up, machine)",
            Stage::Return => "→ lock() returned",
            Stage::DeleteSubmit => "release() → delete request",
            Stage::DeleteServer => "→ delete reply (server)",
            Stage::ReleaseReturn => "→ release() returned",
        }
    }

    /// Whose time it is: the server's (with the kernel and loopback), the queue's, or ours.
    pub fn owner(self) -> &'static str {
        match self {
            Stage::Server | Stage::DeleteServer => "server",
            Stage::Queue => "queue",
            _ => "ours",
        }
    }

    fn index(self) -> usize {
        Stage::ALL.iter().position(|&s| s == self).unwrap_or(0)
    }
}

/// One cycle's stages, in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stages {
    ns: [u64; 9],
    /// The lock waited behind a predecessor ("lock held" said `handed_over`).
    pub handed_over: bool,
}

impl Stages {
    /// The time spent in `stage`.
    pub fn get(&self, stage: Stage) -> u64 {
        self.ns.get(stage.index()).copied().unwrap_or(0)
    }

    fn set(&mut self, stage: Stage, ns: u64) {
        if let Some(slot) = self.ns.get_mut(stage.index()) {
            *slot = ns;
        }
    }

    /// The whole cycle: the sum of the stages.
    pub fn total(&self) -> u64 {
        self.ns.iter().sum()
    }
}

/// A stage boundary whose event was not found in the cycle, or events out of order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missing {
    /// No "lock attempt" between lock() called and returned.
    LockAttempt,
    /// No "request" after the attempt.
    CreateRequest,
    /// No "lock held" after the create's request.
    LockHeld,
    /// No "reply" between the create's request and "lock held".
    AcquireReply,
    /// No "request" between lock() returned and release() returned.
    DeleteRequest,
    /// No "reply" with the delete's xid.
    DeleteReply,
    /// The worker's marks go backwards.
    Marks,
}

impl Missing {
    /// A one-word name, for the worker's summary line.
    pub fn name(self) -> &'static str {
        match self {
            Missing::LockAttempt => "lock-attempt",
            Missing::CreateRequest => "create-request",
            Missing::LockHeld => "lock-held",
            Missing::AcquireReply => "acquire-reply",
            Missing::DeleteRequest => "delete-request",
            Missing::DeleteReply => "delete-reply",
            Missing::Marks => "marks",
        }
    }
}

/// The stages of one cycle from its `marks` and the `events` of its lock's task and its
/// session's IO task (in any order; events outside the cycle are ignored).
///
/// # Errors
/// The first boundary whose event is missing.
pub fn breakdown(marks: &Marks, events: &[Event]) -> Result<Stages, Missing> {
    let Marks {
        lock_called,
        lock_returned,
        release_returned,
    } = *marks;
    if !(lock_called <= lock_returned && lock_returned <= release_returned) {
        return Err(Missing::Marks);
    }
    let mut sorted: Vec<Event> = events
        .iter()
        .copied()
        .filter(|e| (lock_called..=release_returned).contains(&e.at))
        .collect();
    sorted.sort_by_key(|e| e.at);
    let acquire = |from: u64| {
        sorted
            .iter()
            .filter(move |e| (from..=lock_returned).contains(&e.at))
    };

    let attempt = acquire(lock_called)
        .find(|e| e.kind == Kind::LockAttempt)
        .ok_or(Missing::LockAttempt)?
        .at;
    let create = acquire(attempt)
        .find(|e| matches!(e.kind, Kind::Request { .. }))
        .ok_or(Missing::CreateRequest)?
        .at;
    let (held, handed_over) = acquire(create)
        .filter_map(|e| match e.kind {
            Kind::LockHeld { handed_over } => Some((e.at, handed_over)),
            _ => None,
        })
        .next_back()
        .ok_or(Missing::LockHeld)?;
    let last_reply = acquire(create)
        .filter(|e| e.at <= held && matches!(e.kind, Kind::Reply { .. }))
        .map(|e| e.at)
        .next_back()
        .ok_or(Missing::AcquireReply)?;
    let waiting = acquire(create)
        .find(|e| e.kind == Kind::Waiting && e.at <= last_reply)
        .map(|e| e.at);

    let release = |from: u64| {
        sorted
            .iter()
            .filter(move |e| (from..=release_returned).contains(&e.at))
    };
    let (delete, delete_xid) = release(lock_returned)
        .find_map(|e| match e.kind {
            Kind::Request { xid } => Some((e.at, xid)),
            _ => None,
        })
        .ok_or(Missing::DeleteRequest)?;
    let deleted = release(delete)
        .find(|e| e.kind == Kind::Reply { xid: delete_xid })
        .ok_or(Missing::DeleteReply)?
        .at;

    let server_end = waiting.unwrap_or(last_reply);
    let mut stages = Stages {
        handed_over,
        ..Stages::default()
    };
    // Every boundary is at or after the one before it (each was searched from it), so no
    // difference underflows; saturating all the same.
    let spans = [
        (Stage::Call, lock_called, attempt),
        (Stage::Submit, attempt, create),
        (Stage::Server, create, server_end),
        (Stage::Queue, server_end, last_reply),
        (Stage::Machine, last_reply, held),
        (Stage::Return, held, lock_returned),
        (Stage::DeleteSubmit, lock_returned, delete),
        (Stage::DeleteServer, delete, deleted),
        (Stage::ReleaseReturn, deleted, release_returned),
    ];
    for (stage, from, to) in spans {
        stages.set(stage, to.saturating_sub(from));
    }
    Ok(stages)
}

/// One cycle as the worker reports it: its contender, when it started, and its stages.
///
/// One line each: `CYCLE contender=0 at=123456 handed=0 a=.. b=.. c=.. w=.. d=.. e=.. f=..
/// g=.. h=..` (nanoseconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cycle {
    /// The contender (0-based) that ran it.
    pub contender: usize,
    /// When lock() was called, in nanoseconds since the run's start.
    pub at: u64,
    /// Its stages.
    pub stages: Stages,
}

impl fmt::Display for Cycle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "CYCLE contender={} at={} handed={}",
            self.contender,
            self.at,
            u8::from(self.stages.handed_over)
        )?;
        for stage in Stage::ALL {
            write!(f, " {}={}", stage.key(), self.stages.get(stage))?;
        }
        Ok(())
    }
}

impl Cycle {
    /// Reads a `CYCLE` line.
    ///
    /// # Errors
    /// Not a `CYCLE` line, or a field missing, unknown or not a number.
    pub fn parse(line: &str) -> Result<Cycle, String> {
        let mut known = vec!["contender", "at", "handed"];
        known.extend(Stage::ALL.iter().map(|s| s.key()));
        let fields = crate::line::Fields::parse(line, "CYCLE")?.only(&known)?;
        let mut stages = Stages {
            handed_over: fields.number("handed")? != 0,
            ..Stages::default()
        };
        for stage in Stage::ALL {
            stages.set(stage, fields.number(stage.key())?);
        }
        Ok(Cycle {
            contender: usize::try_from(fields.number("contender")?)
                .map_err(|e| format!("contender: {e}"))?,
            at: fields.number("at")?,
            stages,
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn ev(at: u64, kind: Kind) -> Event {
        Event { at, kind }
    }

    const fn marks(lock_called: u64, lock_returned: u64, release_returned: u64) -> Marks {
        Marks {
            lock_called,
            lock_returned,
            release_returned,
        }
    }

    /// An uncontended cycle: create and children pipelined, held, delete.
    fn uncontended() -> Vec<Event> {
        vec![
            ev(110, Kind::LockAttempt),
            ev(130, Kind::Request { xid: 7 }),
            ev(131, Kind::Request { xid: 8 }),
            ev(900, Kind::Reply { xid: 7 }),
            ev(950, Kind::Reply { xid: 8 }),
            ev(990, Kind::LockHeld { handed_over: false }),
            ev(1040, Kind::Request { xid: 9 }),
            ev(1700, Kind::Reply { xid: 9 }),
        ]
    }

    #[test]
    fn an_uncontended_cycle_has_every_stage_and_they_add_up() {
        let s = breakdown(&marks(100, 1000, 1720), &uncontended()).unwrap();
        let got: Vec<u64> = Stage::ALL.iter().map(|&st| s.get(st)).collect();
        assert_eq!(got, [10, 20, 820, 0, 40, 10, 40, 660, 20]);
        assert_eq!(s.total(), 1720 - 100);
        assert!(!s.handed_over);
    }

    #[test]
    fn events_in_any_order_and_outside_the_cycle_do_not_matter() {
        let mut events = uncontended();
        events.reverse();
        // The previous cycle's delete reply, and the next cycle's attempt.
        events.push(ev(90, Kind::Reply { xid: 6 }));
        events.push(ev(1800, Kind::LockAttempt));
        let s = breakdown(&marks(100, 1000, 1720), &events).unwrap();
        assert_eq!(s.get(Stage::Call), 10);
        assert_eq!(s.get(Stage::ReleaseReturn), 20);
        assert_eq!(s.total(), 1620);
    }

    #[test]
    fn a_waited_cycle_puts_the_wait_in_the_queue_stage() {
        let events = [
            ev(110, Kind::LockAttempt),
            ev(130, Kind::Request { xid: 7 }),
            ev(131, Kind::Request { xid: 8 }),
            ev(900, Kind::Reply { xid: 7 }),
            ev(950, Kind::Reply { xid: 8 }),
            ev(960, Kind::Waiting),
            ev(970, Kind::Request { xid: 9 }),
            ev(1500, Kind::Reply { xid: 9 }),
            ev(5000, Kind::Request { xid: 10 }),
            ev(5600, Kind::Reply { xid: 10 }),
            ev(5650, Kind::LockHeld { handed_over: true }),
            ev(5700, Kind::Request { xid: 11 }),
            ev(6300, Kind::Reply { xid: 11 }),
        ];
        let s = breakdown(&marks(100, 5660, 6310), &events).unwrap();
        assert_eq!(s.get(Stage::Server), 960 - 130);
        assert_eq!(s.get(Stage::Queue), 5600 - 960);
        assert_eq!(s.get(Stage::Machine), 50);
        assert_eq!(s.get(Stage::DeleteServer), 600);
        assert_eq!(s.total(), 6310 - 100);
        assert!(s.handed_over);
    }

    #[test]
    fn the_delete_reply_is_found_by_its_xid() {
        let mut events = uncontended();
        // A reply to something else comes first (another request of the session).
        events.push(ev(1100, Kind::Reply { xid: 3 }));
        let s = breakdown(&marks(100, 1000, 1720), &events).unwrap();
        assert_eq!(s.get(Stage::DeleteServer), 660);
    }

    #[test]
    fn a_missing_boundary_is_named() {
        let all = uncontended();
        let without = |drop: fn(&Kind) -> bool| -> Vec<Event> {
            all.iter().copied().filter(|e| !drop(&e.kind)).collect()
        };
        let m = marks(100, 1000, 1720);
        assert_eq!(
            breakdown(&m, &without(|k| *k == Kind::LockAttempt)),
            Err(Missing::LockAttempt)
        );
        assert_eq!(
            breakdown(&m, &without(|k| matches!(k, Kind::Request { .. }))),
            Err(Missing::CreateRequest)
        );
        assert_eq!(
            breakdown(&m, &without(|k| matches!(k, Kind::LockHeld { .. }))),
            Err(Missing::LockHeld)
        );
        assert_eq!(
            breakdown(&m, &without(|k| matches!(k, Kind::Reply { xid: 7 | 8 }))),
            Err(Missing::AcquireReply)
        );
        assert_eq!(
            breakdown(&m, &without(|k| *k == Kind::Request { xid: 9 })),
            Err(Missing::DeleteRequest)
        );
        assert_eq!(
            breakdown(&m, &without(|k| *k == Kind::Reply { xid: 9 })),
            Err(Missing::DeleteReply)
        );
        assert_eq!(breakdown(&marks(100, 50, 1720), &all), Err(Missing::Marks));
        assert_eq!(breakdown(&m, &[]), Err(Missing::LockAttempt));
    }

    #[test]
    fn a_cycle_line_reads_back() {
        let stages = breakdown(&marks(100, 1000, 1720), &uncontended()).unwrap();
        let cycle = Cycle {
            contender: 3,
            at: 100,
            stages,
        };
        let line = cycle.to_string();
        assert!(line.starts_with("CYCLE contender=3 at=100 handed=0 a=10 b=20 c=820 w=0 "));
        assert_eq!(Cycle::parse(&line), Ok(cycle));
        assert!(Cycle::parse("CYCLE contender=1").is_err());
        assert!(Cycle::parse(&format!("{line} z=1")).is_err());
        assert!(Cycle::parse("RESULT ops=1").is_err());
    }
}
