//! `cargo xtask interop <recipe>`: our recipes and Apache Curator 5.4's contending on one
//! path, on one fresh ZooKeeper server, checking that they exclude each other.
//!
//! - `mutex` ([`run_mutex`]): `recipe_mutex::InterProcessMutex` against Curator's
//!   `InterProcessMutex` on one lock path.
//!
//! # How `mutex` checks exclusion
//!
//! Curator's side is `java/CuratorRecipeWorker.java` (its `mutex` case): one JVM, `--java-clients` threads, each
//! with its own `CuratorFramework` (its own session, `ExponentialBackoffRetry`). Ours runs
//! `--rust-clients` tasks, each with its own [`zk_client::Client`]: by default in a process of
//! its own (`zk-worker interop`, built in release mode), or inside this process
//! ([`RustSide::InProcess`], which the test in `xtask/tests/curator_interop.rs` uses:
//! the exclusion checked is still across processes, Curator's JVM against us).
//!
//! Every client loops: acquire (the time left as timeout) → critical section → release. The
//! overlap detector is a marker file in a fresh temporary directory, shared by both
//! processes: in its critical section a holder creates it exclusively
//! (`OpenOptions::create_new`, `File.createNewFile`). If it already exists another holder is
//! inside: a **violation**, counted and reported with both lock nodes; the other's marker is
//! left alone. The holder then appends one line to a shared log (`O_APPEND`, so the log is
//! the order in which the lock was held), holds for a random 0.2–3 ms to widen any race,
//! deletes its marker and releases.
//!
//! Both sides connect all their clients, report ready, and start together on `GO`; they stop
//! by themselves after `--seconds` and print one `COUNTS` line ([`Counts`]). The harness
//! sums them, reads the log ([`LockOrder`]: handoffs between Curator and us, sequence
//! numbers and our fencing tokens in lock order), prints a summary and last the line
//! `violations=N`. The command fails when there was a violation, when either side never
//! took the lock, or when our fencing tokens went backwards in lock order.

use std::error::Error;
use std::fmt;
use std::fs::{self, OpenOptions};
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use recipe_mutex::InterProcessMutex;
use zk_client::Client;

use crate::deps::{self, Need};
use crate::java;
use crate::zk::ZkServer;

type Result<T> = std::result::Result<T, Box<dyn Error>>;

/// The Curator worker's classpath: Curator 5.4 (Debian's jars are not shaded; Debian's
/// Guava bundles `failureaccess`), ZooKeeper's client, and a silent SLF4J binding.
pub const CURATOR_JARS: [&str; 8] = [
    "curator-recipes",
    "curator-framework",
    "curator-client",
    "guava",
    "zookeeper",
    "zookeeper-jute",
    "slf4j-api",
    "slf4j-nop",
];

/// Session timeout of our clients (Curator's side asks for the same).
const SESSION_TIMEOUT: Duration = Duration::from_secs(10);

/// How long each side may take to start and connect its clients.
const READY_BUDGET: Duration = Duration::from_secs(90);

/// How many overlaps [`LockOrder::overlap_context`] shows.
const OVERLAPS_SHOWN: usize = 10;

/// How long each side may take beyond its run to finish (a last acquire, release, close).
const FINISH_SLACK: Duration = Duration::from_secs(60);

/// Where our side of the contention runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RustSide {
    /// In a process of its own: `zk-worker interop`, built in release mode first.
    ReleaseProcess,
    /// In a process of its own: this binary (for when it is already built).
    Process(PathBuf),
    /// In this process, on a tokio runtime of its own in a thread of its own; Curator's side
    /// is still a separate process.
    InProcess,
}

/// The options of `interop mutex`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InteropOptions {
    /// How long the clients contend, in seconds (`--seconds`, default 20).
    pub seconds: u64,
    /// Curator clients, each a session of its own in the one JVM (`--java-clients`, default 2).
    pub java_clients: usize,
    /// Our clients, each a session of its own in the one Rust process (`--rust-clients`,
    /// default 2).
    pub rust_clients: usize,
    /// The lock path (`--path`, default `/interop/mutex`).
    pub path: String,
    /// A different lock path for Curator's side only (`--java-path`): a negative control
    /// showing that the detector sees overlaps when the two sides do not share a lock.
    pub java_path: Option<String>,
    /// Where our side runs (`--in-process` for [`RustSide::InProcess`]; default
    /// [`RustSide::ReleaseProcess`]).
    pub rust_side: RustSide,
}

impl Default for InteropOptions {
    fn default() -> Self {
        InteropOptions {
            seconds: 20,
            java_clients: 2,
            rust_clients: 2,
            path: "/interop/mutex".to_owned(),
            java_path: None,
            rust_side: RustSide::ReleaseProcess,
        }
    }
}

mod process;
mod totals;
mod worker;

pub(crate) use process::TempDir;
use process::WorkerProcess;
use process::{InProcessSide, Side};
use totals::read_log;
pub use totals::{Counts, LockOrder, MutexTotals};
pub use worker::{WorkerConfig, connect_clients, process_main, run_clients};

/// Runs `cargo xtask interop <args>`.
///
/// # Errors
/// An unknown recipe, bad options, a failed setup, or a failed check (see
/// [`MutexTotals::failure`]).
pub fn run(cli: &crate::cli::Interop) -> Result<()> {
    use crate::recipe::Recipe;
    use crate::recipe_interop::Checked;
    let recipe = match cli.recipe {
        Recipe::Mutex => {
            let opts = InteropOptions {
                seconds: cli.seconds,
                java_clients: usize::from(cli.java_clients),
                rust_clients: usize::from(cli.rust_clients),
                path: cli
                    .path
                    .clone()
                    .unwrap_or_else(|| "/interop/mutex".to_owned()),
                java_path: cli.java_path.clone(),
                rust_side: if cli.in_process {
                    RustSide::InProcess
                } else {
                    RustSide::ReleaseProcess
                },
            };
            let totals = run_mutex(&opts)?;
            println!();
            print!("{totals}");
            println!("violations={}", totals.violations());
            return match totals.failure() {
                Some(why) => Err(why.into()),
                None => Ok(()),
            };
        }
        Recipe::Rwlock => Checked::ReadWrite,
        Recipe::Multilock => Checked::MultiLock,
        Recipe::Semaphore => Checked::Semaphore(cli.leases),
        Recipe::SemaphoreMutex => Checked::SemaphoreMutex,
    };
    let defaults = crate::recipe_interop::Options::new(recipe);
    let opts = crate::recipe_interop::Options {
        seconds: cli.seconds,
        java_clients: usize::from(cli.java_clients),
        rust_clients: usize::from(cli.rust_clients),
        path: cli.path.clone().unwrap_or(defaults.path),
        java_path: cli.java_path.clone(),
        ..defaults
    };
    crate::recipe_interop::run_and_report(&opts)
}

/// Makes sure Java, ZooKeeper and Curator are installed and the Curator worker
/// (`java/CuratorRecipeWorker.java`, every recipe's Curator side) is compiled; its classpath.
///
/// # Errors
/// A missing package or a failed compile.
pub(crate) fn curator_worker() -> Result<String> {
    deps::ensure(&[Need::Java, Need::ZooKeeper, Need::Curator])?;
    let classpath = java::jars(&CURATOR_JARS);
    let classes = java::compile(
        "CuratorRecipeWorker",
        &[java::java_dir().join("CuratorRecipeWorker.java")],
        &classpath,
    )?;
    Ok(format!("{}:{classpath}", classes.display()))
}

/// Runs Curator's `InterProcessMutex` against ours on one fresh server for
/// `opts.seconds` and returns what both sides counted; progress goes to stderr. It does not
/// judge the outcome: see [`MutexTotals::failure`].
///
/// # Errors
/// Missing Java, ZooKeeper or Curator, a failed build or compile, a server that does not
/// start, a side that fails to start or connect, or one that does not finish in time (it is
/// killed).
pub fn run_mutex(opts: &InteropOptions) -> Result<MutexTotals> {
    let java_classpath = curator_worker()?;
    let rust_worker = match &opts.rust_side {
        RustSide::ReleaseProcess => {
            eprintln!("interop mutex: building zk-worker (release)...");
            Some(crate::bench::worker::build_release_bin("zk-worker")?)
        }
        RustSide::Process(path) => Some(path.clone()),
        RustSide::InProcess => None,
    };

    let dir = TempDir::new("mutex")?;
    let worker = WorkerConfig {
        connect: String::new(),
        path: opts.path.clone(),
        clients: 0,
        run_for: Duration::from_secs(opts.seconds),
        marker: dir.path.join("marker"),
        log: dir.path.join("log"),
    };

    eprintln!("interop mutex: starting ZooKeeper...");
    let server = ZkServer::start()?;
    let server_version = server
        .four_letter("srvr")
        .ok()
        .and_then(|srvr| {
            srvr.lines()
                .find_map(|line| line.strip_prefix("Zookeeper version: "))
                .map(|v| v.split(',').next().unwrap_or(v).to_owned())
        })
        .unwrap_or_else(|| "unknown".to_owned());
    let java_cfg = WorkerConfig {
        connect: server.connect_string(),
        path: opts.java_path.clone().unwrap_or_else(|| opts.path.clone()),
        clients: opts.java_clients,
        ..worker.clone()
    };
    let rust_cfg = WorkerConfig {
        connect: server.connect_string(),
        clients: opts.rust_clients,
        ..worker
    };

    eprintln!(
        "interop mutex: {} Curator clients (one JVM) and {} of ours ({}) on {} for {} s",
        opts.java_clients,
        opts.rust_clients,
        if rust_worker.is_some() {
            "one process"
        } else {
            "in this process"
        },
        opts.path,
        opts.seconds
    );
    if let Some(java_path) = &opts.java_path {
        eprintln!(
            "interop mutex: NEGATIVE CONTROL: Curator locks {java_path}, ours {}: \
             overlaps are expected",
            opts.path
        );
    }
    let mut java_cmd = Command::new("java");
    java_cmd
        .arg("-cp")
        .arg(&java_classpath)
        .arg("CuratorRecipeWorker")
        .arg("mutex")
        .args(java_cfg.args());
    let mut java_side = Side::Process(WorkerProcess::spawn("curator", java_cmd)?);
    let mut rust_side = match &rust_worker {
        Some(bin) => {
            let mut cmd = Command::new(bin);
            cmd.arg("interop").args(rust_cfg.args());
            Side::Process(WorkerProcess::spawn("ours", cmd)?)
        }
        None => Side::InProcess(InProcessSide::spawn(rust_cfg)),
    };

    let ready_by = Instant::now() + READY_BUDGET;
    java_side.ready(ready_by)?;
    rust_side.ready(ready_by)?;
    let start = Instant::now();
    java_side.go()?;
    rust_side.go()?;
    let done_by = start + Duration::from_secs(opts.seconds) + FINISH_SLACK;
    let java = java_side.counts(done_by)?;
    let rust = rust_side.counts(done_by)?;
    let elapsed = start.elapsed();
    java_side.finish(done_by)?;
    rust_side.finish(done_by)?;
    drop(server);

    let order = read_log(&dir.path.join("log"))?;
    let mut dir = dir;
    let mut totals = MutexTotals {
        java,
        rust,
        order,
        elapsed,
        server_version,
        kept_dir: None,
    };
    if totals.violations() > 0 || totals.order.token_regressions > 0 {
        dir.keep = true;
        totals.kept_dir = Some(dir.path.clone());
    }
    Ok(totals)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn counts_round_trip() {
        let c = Counts {
            clients: 2,
            acquisitions: 300,
            violations: 0,
            errors: 1,
        };
        let (side, parsed) = Counts::parse(&c.line("rust")).unwrap();
        assert_eq!((side.as_str(), parsed), ("rust", c));
        assert!(Counts::parse("COUNTS side=java acquisitions=1").is_err());
    }

    #[test]
    fn log_order() {
        let dir = TempDir::new("unit").unwrap();
        let log = dir.path.join("log");
        fs::write(
            &log,
            "rust-0 1 _c_a-lock-0000000000 100 ok 1000\n\
             java-1 1 _c_b-lock-0000000001 - ok 3000\n\
             java-0 1 _c_c-lock-0000000002 - ok 4000\n\
             rust-1 1 _c_d-lock-0000000004 90 OVERLAP 8000\n\
             rust-0 2 _c_e-lock-0000000003 120 ok 8500\n",
        )
        .unwrap();
        let order = read_log(&log).unwrap();
        assert_eq!((order.java_entries, order.rust_entries), (2, 3));
        assert_eq!(order.handoffs, 2);
        assert_eq!(order.sequence_decreases, 1);
        assert_eq!(order.token_regressions, 1);
        assert_eq!(order.overlap_context.len(), 5);
        assert!(order.overlap_context[3].starts_with(">> rust-1"));
        assert_eq!(order.gaps, [(1, 1000), (1, 4000), (1, 2000), (1, 500)]);
    }
}
