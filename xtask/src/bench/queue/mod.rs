//! `cargo xtask bench queue`: N waiters queued on one mutex, drained one by one, ours against
//! Curator 5.4's `InterProcessMutex`.
//!
//! For each N (`--waiters`, default 10, 100, 1,000 and 10,000), each library and each
//! spread (all N in one process, then N over 4 processes), on a fresh standalone server:
//!
//! 1. the bench takes the lock with a session of its own (our `InterProcessMutex`: Curator's
//!    nodes and ours queue together, so it stands in front of either library's waiters);
//! 2. it starts the worker processes, each with one session and its share of the N waiters,
//!    each waiter a `lock()` of its own (ours: a task with its own `InterProcessMutex` on the
//!    one `Client`, [`ours`]; Curator's: a thread with its own `InterProcessMutex` on the one
//!    `CuratorFramework`, `java/CuratorQueue.java`; the cohort: tasks sharing one
//!    `CohortMutex`, so one node per process); each worker says `QUEUED` once the server
//!    holds a lock node for every one of its waiters, with its resident set before and after;
//! 3. it releases its hold and tells the workers when (`GO <ns>`); each holder releases as
//!    soon as it holds, so the queue drains one waiter at a time, and each worker lists its
//!    holds (when `lock()` returned, when release was called) and ends with `RESULT`
//!    ([`lines`]).
//!
//! From the holds of every process, merged on the machine's one real-time clock, the bench
//! takes the hand-offs (one holder's release call to the next holder's `lock()` returning,
//! [`drain::Drain`]): the time to drain the queue, their p50 and p99, and the medians of the
//! first and last tenth of the drain (the longest and the shortest queues behind). Memory per
//! waiter is what the waiters added to their processes' resident sets (`VmRSS` at `QUEUED`
//! less `VmRSS` before the first waiter) over N. Curator's JVM may fail to start N threads:
//! the worker then says where it stopped and the case goes on with the waiters it has.
//!
//! Server bytes and notifications per hand-off come from a tapping proxy between the workers
//! and the server, counted from the release to the end of the drain, when the tap is
//! available (`bench::tap`); otherwise the report says they were not counted.
//!
//! The report (`target/bench/queue.md`) has the table, the targets (memory per waiter at most
//! 1/20 of Curator's; the hand-off's growth with N no faster than Curator's; one notification
//! per hand-off) and charts of the hand-off's p50 and p99 against N. Nothing is asserted:
//! this reports.

use std::error::Error;
use std::time::{Duration, Instant};

use super::progress;
use crate::deps::{self, Need};

pub mod drain;
pub mod lines;
pub mod ours;
mod page;
mod run;

type Result<T> = std::result::Result<T, Box<dyn Error>>;

/// The queue lengths measured when `--waiters` is not given.
pub const DEFAULT_WAITERS: [usize; 4] = [10, 100, 1_000, 10_000];
/// The spreads: every waiter in one process, and the same waiters over four.
const PROCESSES: [usize; 2] = [1, 4];

/// The command line of `bench queue`.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// The queue lengths (`--waiters 10,100,1000,10000`).
    pub waiters: Vec<usize>,
    /// The server's `forceSync` (`--force-sync`, default on).
    pub force_sync: bool,
}

/// The libraries compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lib {
    /// recipe-mutex on zk-client: tasks on one session.
    Ours,
    /// Curator 5.4's `InterProcessMutex`: threads on one `CuratorFramework`.
    Curator,
    /// recipe-mutex's `CohortMutex` (issue 38): tasks on one session sharing one cohort,
    /// one node per process in the server's queue.
    OursCohort,
}

impl Lib {
    const ALL: [Lib; 3] = [Lib::Ours, Lib::Curator, Lib::OursCohort];

    fn name(self) -> &'static str {
        match self {
            Lib::Ours => "ours",
            Lib::Curator => "curator",
            Lib::OursCohort => "cohort",
        }
    }
}

/// One case: a queue of `waiters` over `processes` worker processes of `lib`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Case {
    lib: Lib,
    waiters: usize,
    processes: usize,
}

impl Case {
    /// `N=1,000, 4 processes`.
    fn label(&self) -> String {
        format!(
            "N={}, {}",
            thousands(self.waiters),
            processes_label(self.processes)
        )
    }

    /// The time a run of this case may take, everything included: starting the workers
    /// (JVMs), forming the queue (each waiter lists the lock's children once, so the bytes
    /// grow as N²) and draining it.
    fn budget(&self) -> Duration {
        Duration::from_secs(60) + Duration::from_millis(60).saturating_mul(wide(self.waiters))
    }

    /// A guess of the run's length, for the time left.
    fn nominal(&self) -> Duration {
        let start = match self.lib {
            Lib::Ours | Lib::OursCohort => Duration::from_secs(3),
            Lib::Curator => Duration::from_secs(5),
        };
        start + Duration::from_millis(8).saturating_mul(wide(self.waiters))
    }
}

fn wide(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

fn processes_label(n: usize) -> String {
    if n == 1 {
        "1 process".to_owned()
    } else {
        format!("{n} processes")
    }
}

/// `10,000` (also `bench many`'s).
pub(crate) fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, d) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(d);
    }
    out
}

/// Every case in the order they run: by N, then spread, then library.
fn cases(waiters: &[usize]) -> Vec<Case> {
    let mut all = Vec::new();
    for &n in waiters {
        for processes in PROCESSES {
            for lib in Lib::ALL {
                all.push(Case {
                    lib,
                    waiters: n,
                    processes,
                });
            }
        }
    }
    all
}

/// Runs `cargo xtask bench queue [--waiters ...]`.
///
/// # Errors
/// Missing Java, ZooKeeper or Curator, a failed build or compile. A case that fails (a
/// worker's error, the budget spent) is reported in the table and the others go on.
pub fn run(opts: &Options) -> Result<()> {
    let started = Instant::now();
    deps::ensure(&[Need::Java, Need::ZooKeeper, Need::Curator])?;
    let workers = run::Workers {
        rust: super::worker::build_worker("bench queue")?,
        java_classpath: crate::curator::classpath()?,
    };
    let cases = cases(&opts.waiters);
    let outcomes = progress::run_cases(
        "bench queue",
        &cases,
        Case::nominal,
        |case| {
            format!(
                "{}, {} (fresh server; at most {})",
                case.label(),
                case.lib.name(),
                progress::human(case.budget())
            )
        },
        |case| run::case(&workers, case, opts.force_sync),
    );
    page::report(&outcomes, opts, started.elapsed());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cases_run_by_n_then_spread_then_library() {
        let all = cases(&[10, 100]);
        assert_eq!(all.len(), 12);
        let first: Vec<(usize, usize, Lib)> = all
            .iter()
            .take(4)
            .map(|c| (c.waiters, c.processes, c.lib))
            .collect();
        assert_eq!(
            first,
            [
                (10, 1, Lib::Ours),
                (10, 1, Lib::Curator),
                (10, 1, Lib::OursCohort),
                (10, 4, Lib::Ours),
            ]
        );
        let labels: Vec<String> = all.iter().map(Case::label).collect();
        assert_eq!(labels.get(6).map(String::as_str), Some("N=100, 1 process"));
        assert_eq!(
            labels.get(9).map(String::as_str),
            Some("N=100, 4 processes")
        );
    }

    #[test]
    fn labels_group_thousands() {
        assert_eq!(thousands(10), "10");
        assert_eq!(thousands(1_000), "1,000");
        assert_eq!(thousands(10_000), "10,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }

    #[test]
    fn budgets_grow_with_the_queue() {
        let case = |waiters| Case {
            lib: Lib::Curator,
            waiters,
            processes: 1,
        };
        assert_eq!(case(10).budget(), Duration::from_millis(60_600));
        assert_eq!(case(10_000).budget(), Duration::from_secs(660));
    }
}
