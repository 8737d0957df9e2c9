//! `cargo xtask bench many`: many distinct locks held at once by one process, ours against
//! Curator 5.4's `InterProcessMutex` (issue 35, item 1).
//!
//! Two shapes, each case on a fresh standalone server:
//!
//! - **locks** (`--locks`, default 10, 100, 1,000 and 10,000; up to 100,000): one process,
//!   one session, N distinct locks (`/many/<case>/lock-<i>`), as a scheduler locking every
//!   job it runs. Ours: N tasks on one `zk_client::Client`, every `lock()` in flight at once
//!   ([`ours`]). Curator's: what a Curator user would write, one `CuratorFramework` and a
//!   fixed pool of 64 threads running the N `acquire()` calls (`java/CuratorMany.java`; a
//!   thread releases the locks it acquired, as Curator's `InterProcessMutex` requires).
//! - **sessions** (`--sessions`, default 10, 100 and 1,000): one process, S sessions, each
//!   taking one lock of its own. Ours: S tasks, each connecting its own `Client`; Curator's:
//!   S `CuratorFramework`s started and locked from the same fixed pool of 64 threads.
//!
//! The bench and a worker talk in lines ([`lines`]): the worker says `READY` with its
//! resident set (`VmRSS`) and threads; on `GO` it takes every lock and says `ACQUIRED` with
//! the time from `GO` to the last lock taken, its resident set and threads then; on `RELEASE`
//! it releases them all and says `RELEASED` with that time; on `CLOSE` it closes its
//! sessions and exits. Memory per held lock (or per session) is the resident set's growth
//! from `READY` to `ACQUIRED` over N: for the locks shape `READY` comes with the one session
//! connected, for the sessions shape before any. The worker reaches the server through the
//! counting proxy (`bench::tap`, both libraries alike), whose counts between the bench's
//! lines give the requests, bytes and awaited round trips per lock of each phase (pings and
//! handshakes left out).
//!
//! The server's limits: the test kit's servers already allow unlimited connections per
//! client address (`maxClientCnxns=0`), which the sessions shape needs; no reply here lists
//! more than one lock node, so `jute.maxbuffer` is left at its default. The report
//! (`target/bench/many.md`, written by `page`) says so, with the table, ours against Curator per case,
//! where a cost per lock grows with N (a per-lock figure rising from one N to the next
//! tenfold one: a cost growing faster than N), and the goals. Nothing is asserted: this
//! reports.

use std::error::Error;
use std::time::{Duration, Instant};

use super::progress;
use super::queue::thousands;
use crate::deps::{self, Need};

pub mod lines;
pub mod ours;
mod page;
mod run;

type Result<T> = std::result::Result<T, Box<dyn Error>>;

/// The lock counts of the locks shape when `--locks` is not given.
pub const DEFAULT_LOCKS: [usize; 4] = [10, 100, 1_000, 10_000];
/// The session counts of the sessions shape when `--sessions` is not given.
pub const DEFAULT_SESSIONS: [usize; 3] = [10, 100, 1_000];
/// Curator's fixed thread pool.
pub const CURATOR_POOL: usize = 64;

/// The command line of `bench many`.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// Lock counts of the locks shape (`--locks 10,100,1000,10000`).
    pub locks: Vec<usize>,
    /// Session counts of the sessions shape (`--sessions 10,100,1000`).
    pub sessions: Vec<usize>,
    /// The server's `forceSync` (`--force-sync`, default on).
    pub force_sync: bool,
}

/// What one process takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// N distinct locks over one session.
    Locks,
    /// S sessions, each taking one lock.
    Sessions,
}

impl Shape {
    /// The worker's argument: `locks` or `sessions`.
    pub fn name(self) -> &'static str {
        match self {
            Shape::Locks => "locks",
            Shape::Sessions => "sessions",
        }
    }

    /// The shape named by a worker's argument.
    pub fn parse(name: &str) -> Option<Shape> {
        match name {
            "locks" => Some(Shape::Locks),
            "sessions" => Some(Shape::Sessions),
            _ => None,
        }
    }
}

/// The libraries compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lib {
    /// recipe-mutex on zk-client: tasks on a current-thread runtime.
    Ours,
    /// Curator 5.4's `InterProcessMutex`: a fixed pool of [`CURATOR_POOL`] threads.
    Curator,
}

impl Lib {
    const ALL: [Lib; 2] = [Lib::Ours, Lib::Curator];

    fn name(self) -> &'static str {
        match self {
            Lib::Ours => "ours",
            Lib::Curator => "curator",
        }
    }
}

/// One case: `n` locks (or sessions) of `shape` taken by one process of `lib`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Case {
    shape: Shape,
    n: usize,
    lib: Lib,
}

impl Case {
    /// `1,000 locks, 1 session` or `100 sessions`.
    fn label(&self) -> String {
        match self.shape {
            Shape::Locks => format!("{} locks, 1 session", thousands(self.n)),
            Shape::Sessions => format!("{} sessions", thousands(self.n)),
        }
    }

    /// The time each step of a run may take (the worker's budget): generous, since a case
    /// that fails on time says less than a slow one.
    fn budget(&self) -> Duration {
        Duration::from_secs(120) + Duration::from_millis(20).saturating_mul(wide(self.n))
    }

    /// A guess of the run's length, for the time left.
    fn nominal(&self) -> Duration {
        let start = match self.lib {
            Lib::Ours => Duration::from_secs(2),
            Lib::Curator => Duration::from_secs(4),
        };
        start + Duration::from_millis(2).saturating_mul(wide(self.n))
    }
}

fn wide(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Every case in the order they run: the locks shape by N, then the sessions shape by S,
/// ours then Curator's for each.
fn cases(opts: &Options) -> Vec<Case> {
    let shapes = [
        (Shape::Locks, &opts.locks),
        (Shape::Sessions, &opts.sessions),
    ];
    let mut all = Vec::new();
    for (shape, counts) in shapes {
        for &n in counts {
            for lib in Lib::ALL {
                all.push(Case { shape, n, lib });
            }
        }
    }
    all
}

/// Runs `cargo xtask bench many [--locks ...] [--sessions ...]`.
///
/// # Errors
/// Missing Java, ZooKeeper or Curator, a failed build or compile. A case that fails (a
/// worker's error, the budget spent) is reported in the table and the others go on.
pub fn run(opts: &Options) -> Result<()> {
    let started = Instant::now();
    deps::ensure(&[Need::Java, Need::ZooKeeper, Need::Curator])?;
    let workers = run::Workers {
        rust: super::worker::build_worker("bench many")?,
        java_classpath: run::curator_classpath()?,
    };
    let cases = cases(opts);
    let outcomes = progress::run_cases(
        "bench many",
        &cases,
        Case::nominal,
        |case| {
            format!(
                "{}, {} (fresh server; each step at most {})",
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
    fn cases_run_locks_then_sessions_ours_first() {
        let all = cases(&Options {
            locks: vec![10, 100],
            sessions: vec![10],
            force_sync: true,
        });
        let got: Vec<(Shape, usize, Lib)> = all.iter().map(|c| (c.shape, c.n, c.lib)).collect();
        assert_eq!(
            got,
            [
                (Shape::Locks, 10, Lib::Ours),
                (Shape::Locks, 10, Lib::Curator),
                (Shape::Locks, 100, Lib::Ours),
                (Shape::Locks, 100, Lib::Curator),
                (Shape::Sessions, 10, Lib::Ours),
                (Shape::Sessions, 10, Lib::Curator),
            ]
        );
        let labels: Vec<String> = all.iter().map(Case::label).collect();
        assert_eq!(
            labels.get(2).map(String::as_str),
            Some("100 locks, 1 session")
        );
        assert_eq!(labels.get(4).map(String::as_str), Some("10 sessions"));
    }

    #[test]
    fn shapes_round_trip_their_names() {
        for shape in [Shape::Locks, Shape::Sessions] {
            assert_eq!(Shape::parse(shape.name()), Some(shape));
        }
        assert_eq!(Shape::parse("lock"), None);
    }
}
