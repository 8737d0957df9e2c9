//! `cargo xtask interop <recipe>`: one of our recipes and Apache Curator 5.4's contending on
//! the same paths, on one fresh ZooKeeper server, in two processes, checked against what the
//! recipe promises.
//!
//! # How a run goes
//!
//! Curator's side is `java/CuratorInterop.java` (`CuratorWorker interop`): one JVM,
//! `--java-clients` threads, each with its own `CuratorFramework` (its own session,
//! `ExponentialBackoffRetry`). Ours runs
//! `--rust-clients` tasks, each with its own [`zk_client::Client`] ([`ours`]): by default in
//! a process of its own (`zk-worker interop`, built in release mode), or inside this process
//! ([`RustSide::InProcess`], which `xtask/tests/curator_interop.rs` uses: the exclusion
//! checked is still across processes, Curator's JVM against us). Both workers take the same
//! arguments in the same order ([`WorkerConfig::args`]).
//!
//! Every client loops: acquire (the time left as timeout) → hold for a random 0.2–3 ms →
//! release, and records each hold: what it held, how, and when it began (after the acquire
//! returned) and ended (before the release was called), on one clock both processes share
//! ([`holds`]). Both sides connect all their clients, report `READY`, start together on
//! `GO`, stop by themselves after `--seconds`, write their holds to the run's directory and
//! print one `COUNTS` line ([`Counts`]).
//!
//! The harness then reads every hold and runs the recipe's checker ([`check`]): at most one
//! holder (the mutex, each member of the multi-lock over `<path>/0..2`), readers or one writer
//! (the read/write lock; our downgrades overlap only their own write), at most N leases (the
//! semaphore, `--leases N`; the semaphore mutex, N = 1). A recorded hold lies inside the real
//! one, so two recorded holds that overlap were really held together: a **violation**. For
//! the mutex it also reads the lock order ([`LockOrder`]: hand-offs between Curator and us,
//! lock-node sequence numbers, our fencing tokens increasing). It prints the totals and last
//! the line `violations=N`. The run fails on a violation, on a side that never acquired, on an
//! acquisition whose hold was not recorded, or on our fencing tokens going backwards; with
//! `--java-path P` (Curator on another path, a negative control) it fails when the checker
//! sees **no** violation. With `--cut-every-ms M` our clients go through a fault proxy that
//! cuts their connections every M ms (the sessions survive, the machines recover their
//! nodes): exclusion must hold across the reconnects.

use std::error::Error;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::recipe::Recipe;
use crate::zk::ZkServer;

type Result<T> = std::result::Result<T, Box<dyn Error>>;

pub mod check;
pub mod holds;
pub mod order;
pub mod ours;
mod report;
mod sides;

use crate::worker_process::WorkerProcess;
pub use check::Rule;
pub use order::LockOrder;
pub use ours::{WorkerConfig, connect_clients, process_main, run_clients};
pub use report::{Counts, Totals};
pub(crate) use sides::TempDir;
use sides::{InProcessSide, Side};

/// Session timeout of our clients (Curator's side asks for the same).
const SESSION_TIMEOUT: Duration = Duration::from_secs(10);

/// How long each side may take to start and connect its clients.
const READY_BUDGET: Duration = Duration::from_secs(90);

/// How long each side may take beyond its run to finish (a last acquire, release, close).
const FINISH_SLACK: Duration = Duration::from_secs(60);

/// Where our side of the contention runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RustSide {
    /// In a process of its own: `zk-worker interop`, built in release mode first.
    ReleaseProcess,
    /// In a process of its own: this `zk-worker` binary (for when it is already built).
    Process(std::path::PathBuf),
    /// In this process, on a tokio runtime of its own in a thread of its own; Curator's side
    /// is still a separate process.
    InProcess,
}

/// The options of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InteropOptions {
    /// The recipe.
    pub recipe: Recipe,
    /// How long the clients contend, in seconds (`--seconds`, default 20).
    pub seconds: u64,
    /// Curator clients, each a session of its own in the one JVM (`--java-clients`, default 2).
    pub java_clients: usize,
    /// Our clients, each a session of its own (`--rust-clients`, default 2).
    pub rust_clients: usize,
    /// The lock path (`--path`, default `/interop/<recipe>`).
    pub path: String,
    /// A different lock path for Curator's side only (`--java-path`): a negative control
    /// showing that the checker sees overlaps when the two sides do not share a lock.
    pub java_path: Option<String>,
    /// The semaphore's leases (`--leases`, default 3; 1 for the other recipes).
    pub leases: u32,
    /// Where our side runs (`--in-process` for [`RustSide::InProcess`]; default
    /// [`RustSide::ReleaseProcess`]).
    pub rust_side: RustSide,
    /// Our clients connect through a fault proxy that cuts every connection this often
    /// (`--cut-every-ms`): the sessions survive and reconnect, and exclusion must hold.
    pub cut_every: Option<Duration>,
    /// The mutex and the read/write lock (`--cohort`): our clients are tasks of one session
    /// sharing one `CohortMutex` or `CohortReadWriteLock`.
    pub cohort: bool,
}

impl InteropOptions {
    /// The defaults for `recipe`: 20 s, 2 + 2 clients, `/interop/<recipe>`, 3 leases for the
    /// semaphore, ours in a release process.
    pub fn new(recipe: Recipe) -> Self {
        InteropOptions {
            recipe,
            seconds: 20,
            java_clients: 2,
            rust_clients: 2,
            path: format!("/interop/{}", recipe.name()),
            java_path: None,
            leases: if recipe == Recipe::Semaphore {
                crate::recipe::LEASES
            } else {
                1
            },
            rust_side: RustSide::ReleaseProcess,
            cut_every: None,
            cohort: false,
        }
    }
}

/// Runs `cargo xtask interop <args>`: prints the totals and `violations=N`.
///
/// # Errors
/// A failed setup, or a failed check (see [`Totals::failure`]).
pub fn run(cli: &crate::cli::Interop) -> Result<()> {
    let defaults = InteropOptions::new(cli.recipe);
    let opts = InteropOptions {
        seconds: cli.seconds,
        java_clients: usize::from(cli.java_clients),
        rust_clients: usize::from(cli.rust_clients),
        path: cli.path.clone().unwrap_or(defaults.path),
        java_path: cli.java_path.clone(),
        leases: if cli.recipe == Recipe::Semaphore {
            cli.leases
        } else {
            1
        },
        rust_side: if cli.in_process {
            RustSide::InProcess
        } else {
            RustSide::ReleaseProcess
        },
        cut_every: cli.cut_every_ms.map(Duration::from_millis),
        cohort: cli.cohort,
        ..defaults
    };
    if opts.cohort && !matches!(opts.recipe, Recipe::Mutex | Recipe::Rwlock) {
        return Err("--cohort is the mutex's and the read/write lock's only".into());
    }
    let totals = run_interop(&opts)?;
    println!();
    print!("{totals}");
    println!("violations={}", totals.violations());
    match totals.failure() {
        Some(why) => Err(why.into()),
        None => Ok(()),
    }
}

/// Runs Curator's recipe against ours on one fresh server for `opts.seconds` and checks the
/// holds both sides recorded; progress goes to stderr. It does not judge the outcome: see
/// [`Totals::failure`].
///
/// # Errors
/// Missing Java, ZooKeeper or Curator, a failed build or compile, a server that does not
/// start, a side that fails to start or connect, one that does not finish in time (it is
/// killed), or holds that cannot be read.
pub fn run_interop(opts: &InteropOptions) -> Result<Totals> {
    let what = opts.recipe.name();
    let java_classpath = crate::curator::classpath()?;
    let rust_worker = match &opts.rust_side {
        RustSide::ReleaseProcess => Some(crate::bench::worker::build_worker(&format!(
            "interop {what}"
        ))?),
        RustSide::Process(path) => Some(path.clone()),
        RustSide::InProcess => None,
    };

    let mut dir = TempDir::new(what)?;
    eprintln!("interop {what}: starting ZooKeeper...");
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
    // Our side through a fault proxy that cuts its connections, if asked.
    let proxy = match opts.cut_every {
        Some(_) => Some(crate::FaultProxy::start(server.addr())?),
        None => None,
    };
    let rust_cfg = WorkerConfig {
        recipe: opts.recipe,
        connect: proxy
            .as_ref()
            .map_or_else(|| server.connect_string(), |p| p.addr().to_string()),
        path: opts.path.clone(),
        clients: opts.rust_clients,
        run_for: Duration::from_secs(opts.seconds),
        dir: dir.path.clone(),
        leases: opts.leases,
        cohort: opts.cohort,
    };
    let java_cfg = WorkerConfig {
        connect: server.connect_string(),
        path: opts.java_path.clone().unwrap_or_else(|| opts.path.clone()),
        clients: opts.java_clients,
        cohort: false,
        ..rust_cfg.clone()
    };

    eprintln!(
        "interop {what}: {} Curator clients (one JVM) and {} of ours ({}) on {} for {} s",
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
            "interop {what}: NEGATIVE CONTROL: Curator on {java_path}, ours on {}: \
             violations are expected",
            opts.path
        );
    }
    let mut java_cmd = Command::new("java");
    java_cmd
        .arg("-cp")
        .arg(&java_classpath)
        .arg(crate::curator::MAIN)
        .arg("interop")
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
    let run_end = start + Duration::from_secs(opts.seconds);
    let cuts = match (&proxy, opts.cut_every) {
        (Some(proxy), Some(every)) => cut_until(proxy, every, run_end),
        _ => 0,
    };
    let done_by = run_end + FINISH_SLACK;
    let java = java_side.counts(done_by)?;
    let rust = rust_side.counts(done_by)?;
    let elapsed = start.elapsed();
    java_side.finish(done_by)?;
    rust_side.finish(done_by)?;
    drop(server);

    drop(proxy);
    let holds = holds::read_holds(&dir.path)?;
    let mut totals = Totals::new(
        opts.recipe,
        Rule::of(opts.recipe, opts.leases),
        opts.java_path.is_some(),
        (java, rust),
        &holds,
        elapsed,
        server_version,
    )?;
    totals.cuts = cuts;
    if totals.failure().is_some() {
        dir.keep = true;
        totals.kept_dir = Some(dir.path.clone());
    }
    Ok(totals)
}

/// Cuts every connection through `proxy` every `every` until `end`; how many times.
fn cut_until(proxy: &crate::FaultProxy, every: Duration, end: Instant) -> u64 {
    let mut cuts = 0;
    loop {
        let next = Instant::now() + every;
        if next >= end {
            std::thread::sleep(end.saturating_duration_since(Instant::now()));
            return cuts;
        }
        std::thread::sleep(every);
        proxy.cut();
        cuts += 1;
    }
}
