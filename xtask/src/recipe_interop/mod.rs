//! `cargo xtask interop rwlock|multilock|semaphore|semaphore-mutex`: our read/write lock,
//! multi-lock, semaphore or semaphore mutex and Curator 5.4's on the same paths, on one fresh
//! server, checking that they exclude each other (or, for a semaphore, that no more than N
//! leases are held among both).
//!
//! Curator's side is `java/CuratorRecipeWorker.java` (one JVM, a session per client thread);
//! ours runs in this process, a [`zk_client::Client`] per task. Every client loops: acquire
//! (the time left as timeout) → enter → hold 0.2–3 ms → leave → release, checking its
//! critical section with marker files in a fresh directory both processes share:
//!
//! - read/write lock: a writer creates `W` exclusively (present: two writers) and then finds
//!   no `R-*`; a reader creates `R-<name>` and then finds no `W`. If both hold at once, one of
//!   them sees the other's file. Ours also downgrades (write → read → release write): it
//!   creates its `R-` before deleting its `W`. Curator's side never downgrades (its 5.4
//!   downgrade lets a queued writer in: CURATOR-621).
//! - multi-lock over `<path>/0`, `<path>/1`, `<path>/2`: a random subset each time, in the
//!   canonical order; each member held creates `M-<k>` exclusively.
//! - semaphore of N leases (`--leases N`, 3 by default) and semaphore mutex (N = 1): each
//!   lease held creates the first `S-<k>` (k < N) that does not exist; none left means more
//!   than N holders. Ours sometimes asks for 2 leases at once (all or none, under one hold
//!   of the inner lock); Curator's side asks for one: Curator takes several one at a time,
//!   holding the first while it waits for the inner lock, which deadlocks within seconds
//!   with a few clients (seen here: 0 Curator acquisitions in 8 s).
//!
//! A broken rule is a **violation**; both sides count them. `--java-path P` gives Curator
//! another path: a negative control that must report violations.

use std::error::Error;
use std::fs::{self, OpenOptions};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use recipe_multilock::InterProcessMultiLock;
use recipe_rwlock::InterProcessReadWriteLock;
use recipe_semaphore::{InterProcessSemaphoreMutex, InterProcessSemaphoreV2};
use zk_client::Client;

use crate::interop::{Counts, TempDir, connect_clients};
use crate::worker_process::WorkerProcess;
use crate::zk::ZkServer;

type Result<T> = std::result::Result<T, Box<dyn Error>>;

mod multilock;
mod rwlock;
mod semaphore;

use multilock::multi_loop;
use rwlock::rw_loop;
use semaphore::{semaphore_loop, semaphore_mutex_loop};

/// How long the sides may take to connect all their clients.
const READY_BUDGET: Duration = Duration::from_secs(90);

/// How long after the run the sides may take to report.
const FINISH_SLACK: Duration = Duration::from_secs(60);

/// The members of the multi-lock under the lock path.
const MEMBERS: usize = 3;

/// Which recipe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Checked {
    /// `InterProcessReadWriteLock`.
    ReadWrite,
    /// `InterProcessMultiLock`.
    MultiLock,
    /// `InterProcessSemaphoreV2` with this many leases.
    Semaphore(u32),
    /// `InterProcessSemaphoreMutex`.
    SemaphoreMutex,
}

impl Checked {
    fn name(self) -> &'static str {
        match self {
            Checked::ReadWrite => "rwlock",
            Checked::MultiLock => "multilock",
            Checked::Semaphore(_) => "semaphore",
            Checked::SemaphoreMutex => "semaphore-mutex",
        }
    }

    fn leases(self) -> u32 {
        match self {
            Checked::Semaphore(n) => n,
            _ => 1,
        }
    }
}

/// What a run is given.
#[derive(Debug, Clone)]
pub struct Options {
    /// The recipe.
    pub recipe: Checked,
    /// Seconds of contention.
    pub seconds: u64,
    /// Curator's clients.
    pub java_clients: usize,
    /// Ours.
    pub rust_clients: usize,
    /// The lock path.
    pub path: String,
    /// Curator's lock path, if not ours (a negative control).
    pub java_path: Option<String>,
}

impl Options {
    /// Defaults for `recipe`: 20 s, 2 + 2 clients.
    pub fn new(recipe: Checked) -> Self {
        Self {
            recipe,
            seconds: 20,
            java_clients: 2,
            rust_clients: 2,
            path: format!("/interop/{}", recipe.name()),
            java_path: None,
        }
    }
}

/// What both sides counted.
#[derive(Debug, Clone, Default)]
pub struct Totals {
    /// Curator's side.
    pub java: Counts,
    /// Ours.
    pub rust: Counts,
    /// Our downgrades (read/write lock).
    pub downgrades: u64,
}

impl Totals {
    /// Violations on either side.
    pub fn violations(&self) -> u64 {
        self.java.violations + self.rust.violations
    }
}

/// Runs the check of `opts` and prints the totals; an error if the sides overlapped (unless
/// `java_path` makes it a negative control) or a side never held.
///
/// # Errors
/// As [`run`], and the failures above.
pub fn run_and_report(opts: &Options) -> Result<()> {
    let what = opts.recipe.name();
    let totals = run(opts)?;
    println!(
        "\ninterop {what}: Curator {} acquisitions ({} errors), ours {} ({} errors, {} downgrades)",
        totals.java.acquisitions,
        totals.java.errors,
        totals.rust.acquisitions,
        totals.rust.errors,
        totals.downgrades
    );
    println!("violations={}", totals.violations());
    if opts.java_path.is_none() && totals.violations() > 0 {
        return Err("Curator and ours overlapped".into());
    }
    if totals.java.acquisitions == 0 || totals.rust.acquisitions == 0 {
        return Err("a side never took the lock".into());
    }
    Ok(())
}

/// Runs Curator's recipe against ours for `opts.seconds` on a fresh server.
///
/// # Errors
/// Missing Java, ZooKeeper or Curator, a failed compile, a server that does not start, a side
/// that fails to start, connect or finish in time.
pub fn run(opts: &Options) -> Result<Totals> {
    let classpath = crate::interop::curator_worker()?;
    let dir = TempDir::new(opts.recipe.name())?;
    let server = ZkServer::start()?;
    let run_for = Duration::from_secs(opts.seconds);
    let mut java = Command::new("java");
    java.arg("-cp")
        .arg(&classpath)
        .arg("CuratorRecipeWorker")
        .arg(opts.recipe.name())
        .arg(server.connect_string())
        .arg(opts.java_path.as_deref().unwrap_or(&opts.path))
        .arg(opts.java_clients.to_string())
        .arg(run_for.as_millis().to_string())
        .arg(&dir.path)
        .arg(opts.recipe.leases().to_string());
    let mut java = WorkerProcess::spawn("curator", java)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let clients = runtime
        .block_on(connect_clients(&server.connect_string(), opts.rust_clients))
        .map_err(|e| -> Box<dyn Error> { e.into() })?;
    java.expect("READY", Instant::now() + READY_BUDGET)?;
    java.go()?;
    let end = tokio::time::Instant::now() + run_for;
    let ours = runtime.block_on(ours(opts, clients, end, dir.path.clone()));
    let done_by = Instant::now() + FINISH_SLACK;
    let line = java.expect("COUNTS ", done_by)?;
    let (_, java_counts) = Counts::parse(&line)?;
    java.finish(done_by)?;
    drop(server);
    Ok(Totals {
        java: java_counts,
        rust: ours.0,
        downgrades: ours.1,
    })
}

async fn ours(
    opts: &Options,
    clients: Vec<Client>,
    end: tokio::time::Instant,
    dir: PathBuf,
) -> (Counts, u64) {
    let mut tasks = Vec::new();
    for (i, client) in clients.iter().enumerate() {
        let (client, dir, path) = (client.clone(), dir.clone(), opts.path.clone());
        let name = format!("rust-{i}");
        let seed = 0x9e37_79b9_7f4a_7c15_u64 ^ (i as u64 + 1) ^ u64::from(std::process::id());
        tasks.push(match opts.recipe {
            Checked::ReadWrite => tokio::spawn(rw_loop(name, client, path, end, dir, seed)),
            Checked::MultiLock => tokio::spawn(multi_loop(name, client, path, end, dir, seed)),
            Checked::Semaphore(n) => {
                tokio::spawn(semaphore_loop(name, client, path, n, end, dir, seed))
            }
            Checked::SemaphoreMutex => {
                tokio::spawn(semaphore_mutex_loop(name, client, path, end, dir, seed))
            }
        });
    }
    let mut total = Counts {
        clients: clients.len() as u64,
        ..Counts::default()
    };
    let mut downgrades = 0;
    for task in tasks {
        match task.await {
            Ok((c, d)) => {
                total.acquisitions += c.acquisitions;
                total.violations += c.violations;
                total.errors += c.errors;
                downgrades += d;
            }
            Err(e) => {
                eprintln!("ERROR-COUNTED a client task failed: {e}");
                total.errors += 1;
            }
        }
    }
    for client in clients {
        let _ = client.close().await;
    }
    (total, downgrades)
}

fn next(rng: &mut u64) -> u64 {
    *rng ^= *rng << 13;
    *rng ^= *rng >> 7;
    *rng ^= *rng << 17;
    *rng
}

async fn hold(rng: &mut u64) {
    tokio::time::sleep(Duration::from_micros(200 + next(rng) % 2800)).await;
}

fn violation(counts: &mut Counts, what: String) {
    counts.violations += 1;
    eprintln!("VIOLATION {what}");
}

fn error(counts: &mut Counts, name: &str, what: &str, e: &dyn std::fmt::Display) {
    counts.errors += 1;
    eprintln!("ERROR-COUNTED {name} {what}: {e}");
}

/// Creates `path` exclusively; false if it exists.
fn create_new(path: &Path) -> std::io::Result<bool> {
    match OpenOptions::new().write(true).create_new(true).open(path) {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(e),
    }
}
