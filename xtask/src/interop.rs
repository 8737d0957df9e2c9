//! `cargo xtask interop <recipe>`: our recipes and Apache Curator 5.4's contending on one
//! path, on one fresh ZooKeeper server, checking that they exclude each other.
//!
//! - `mutex` ([`run_mutex`]): `recipe_mutex::InterProcessMutex` against Curator's
//!   `InterProcessMutex` on one lock path.
//!
//! # How `mutex` checks exclusion
//!
//! Curator's side is `java/CuratorMutexWorker.java`: one JVM, `--java-clients` threads, each
//! with its own `CuratorFramework` (its own session, `ExponentialBackoffRetry`). Ours runs
//! `--rust-clients` tasks, each with its own [`zk_client::Client`]: by default in a process of
//! its own (`lock-worker`, built in release mode), or inside this process
//! ([`RustSide::InProcess`], which the test in `recipe-mutex/tests/curator_interop.rs` uses:
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
use std::io::{BufRead, BufReader, ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
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
    /// In a process of its own: the `lock-worker` binary, built in release mode first.
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

/// What one side reports at the end of its run: `COUNTS side=<s> clients=<n>
/// acquisitions=<n> violations=<n> errors=<n>`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Clients (sessions) on this side.
    pub clients: u64,
    /// Times a client of this side took the lock.
    pub acquisitions: u64,
    /// Times a client of this side found the marker present in its critical section (or
    /// gone when it came to delete it).
    pub violations: u64,
    /// Failed acquires, releases or critical sections (logged on stderr; the loop goes on).
    pub errors: u64,
}

impl Counts {
    /// The `COUNTS` line for side `side` (`java`, `rust`).
    pub fn line(&self, side: &str) -> String {
        format!(
            "COUNTS side={side} clients={} acquisitions={} violations={} errors={}",
            self.clients, self.acquisitions, self.violations, self.errors
        )
    }

    /// Parses a `COUNTS` line; returns the side and the counts.
    ///
    /// # Errors
    /// Not a `COUNTS` line, a missing key or a value that is not a number.
    pub fn parse(line: &str) -> Result<(String, Counts)> {
        let rest = line
            .strip_prefix("COUNTS ")
            .ok_or_else(|| format!("not a COUNTS line: `{line}`"))?;
        let mut side = None;
        let mut counts = Counts::default();
        let mut seen = 0;
        for pair in rest.split_whitespace() {
            let (key, value) = pair
                .split_once('=')
                .ok_or_else(|| format!("`{pair}` is not key=value in `{line}`"))?;
            let slot = match key {
                "side" => {
                    side = Some(value.to_owned());
                    continue;
                }
                "clients" => &mut counts.clients,
                "acquisitions" => &mut counts.acquisitions,
                "violations" => &mut counts.violations,
                "errors" => &mut counts.errors,
                _ => continue,
            };
            *slot = value
                .parse()
                .map_err(|_| format!("`{key}` is not a number in `{line}`"))?;
            seen += 1;
        }
        match side {
            Some(side) if seen == 4 => Ok((side, counts)),
            _ => Err(format!("incomplete COUNTS line: `{line}`").into()),
        }
    }
}

/// What the shared log says about the order in which the lock was held.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LockOrder {
    /// Critical sections logged by Curator's clients.
    pub java_entries: u64,
    /// Critical sections logged by ours.
    pub rust_entries: u64,
    /// Consecutive critical sections where the holder went from Curator to us or back.
    pub handoffs: u64,
    /// Consecutive critical sections whose lock nodes' sequence numbers did not increase (a
    /// fair lock's holders follow the sequence; the only innocent cause is the container
    /// parent being deleted while empty and recreated, which restarts the sequence).
    pub sequence_decreases: u64,
    /// Our critical sections whose fencing token (the lock node's czxid) was not above the
    /// previous one of ours in lock order.
    pub token_regressions: u64,
    /// The log lines around the first overlaps, for the report.
    pub overlap_context: Vec<String>,
    /// Between consecutive critical sections, by who held then who: Curator then Curator,
    /// Curator then ours, ours then Curator, ours then ours: (count, total µs from one
    /// entry to the next, which includes the first one's hold).
    pub gaps: [(u64, u64); 4],
}

/// The outcome of [`run_mutex`].
#[derive(Debug, Clone)]
pub struct MutexTotals {
    /// Curator's side.
    pub java: Counts,
    /// Ours.
    pub rust: Counts,
    /// From the shared log.
    pub order: LockOrder,
    /// How long the contention ran (from `GO` to the last `COUNTS`).
    pub elapsed: Duration,
    /// The ZooKeeper server's version.
    pub server_version: String,
    /// The temporary directory of the marker and the log, kept when there were violations.
    pub kept_dir: Option<PathBuf>,
}

impl MutexTotals {
    /// Violations seen by both sides.
    pub fn violations(&self) -> u64 {
        self.java.violations + self.rust.violations
    }

    /// Why the run fails, if it does: a violation, a side that never took the lock, or our
    /// fencing tokens going backwards in lock order.
    pub fn failure(&self) -> Option<String> {
        let mut why = Vec::new();
        if self.violations() > 0 {
            why.push(format!(
                "{} violations: two holders at once",
                self.violations()
            ));
        }
        if self.java.acquisitions == 0 {
            why.push("Curator's clients never took the lock".to_owned());
        }
        if self.rust.acquisitions == 0 {
            why.push("our clients never took the lock".to_owned());
        }
        if self.order.token_regressions > 0 {
            why.push(format!(
                "our fencing tokens went backwards {} times in lock order",
                self.order.token_regressions
            ));
        }
        (!why.is_empty()).then(|| why.join("; "))
    }
}

impl fmt::Display for MutexTotals {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (j, r, o) = (&self.java, &self.rust, &self.order);
        let secs = self.elapsed.as_secs_f64().max(1e-9);
        writeln!(
            f,
            "server:  ZooKeeper {}, standalone, one fresh server",
            self.server_version
        )?;
        writeln!(
            f,
            "curator: {:>6} acquisitions ({:>6.1}/s) by {} clients, {} violations, {} errors",
            j.acquisitions,
            j.acquisitions as f64 / secs,
            j.clients,
            j.violations,
            j.errors
        )?;
        writeln!(
            f,
            "ours:    {:>6} acquisitions ({:>6.1}/s) by {} clients, {} violations, {} errors",
            r.acquisitions,
            r.acquisitions as f64 / secs,
            r.clients,
            r.violations,
            r.errors
        )?;
        writeln!(
            f,
            "log:     {} critical sections ({} Curator, {} ours), {} handoffs between Curator \
             and ours",
            o.java_entries + o.rust_entries,
            o.java_entries,
            o.rust_entries,
            o.handoffs
        )?;
        writeln!(
            f,
            "order:   lock-node sequence {} in lock order; our fencing tokens {}",
            if o.sequence_decreases == 0 {
                "always increasing".to_owned()
            } else {
                format!(
                    "decreased {} times (a recreated container parent restarts it)",
                    o.sequence_decreases
                )
            },
            if o.token_regressions == 0 {
                "always increasing".to_owned()
            } else {
                format!("went backwards {} times", o.token_regressions)
            }
        )?;
        let gap = |(n, total): (u64, u64)| {
            if n == 0 {
                "-".to_owned()
            } else {
                format!("{:.2} ms", total as f64 / n as f64 / 1e3)
            }
        };
        writeln!(
            f,
            "handoff: mean entry-to-entry (hold included): curator->curator {}, \
             curator->ours {}, ours->curator {}, ours->ours {}",
            gap(o.gaps[0]),
            gap(o.gaps[1]),
            gap(o.gaps[2]),
            gap(o.gaps[3])
        )?;
        writeln!(
            f,
            "time:    {:.1} s of contention",
            self.elapsed.as_secs_f64()
        )?;
        if !o.overlap_context.is_empty() {
            writeln!(
                f,
                "overlaps (log lines around each: holder, its count, lock node, token, flag):"
            )?;
            for line in &o.overlap_context {
                writeln!(f, "  {line}")?;
            }
        }
        if let Some(dir) = &self.kept_dir {
            writeln!(f, "kept:    {}", dir.display())?;
        }
        Ok(())
    }
}

/// Runs `cargo xtask interop <args>`.
///
/// # Errors
/// An unknown recipe, bad options, a failed setup, or a failed check (see
/// [`MutexTotals::failure`]).
pub fn run(cli: &crate::cli::Interop) -> Result<()> {
    use crate::cli::InteropRecipe;
    use crate::recipe_interop::Checked;
    let recipe = match cli.recipe {
        InteropRecipe::Mutex => {
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
        InteropRecipe::Rwlock => Checked::ReadWrite,
        InteropRecipe::Multilock => Checked::MultiLock,
        InteropRecipe::Semaphore => Checked::Semaphore(cli.leases),
        InteropRecipe::SemaphoreMutex => Checked::SemaphoreMutex,
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

/// A fresh temporary directory, removed when dropped unless kept.
pub(crate) struct TempDir {
    pub(crate) path: PathBuf,
    pub(crate) keep: bool,
}

impl TempDir {
    pub(crate) fn new(what: &str) -> std::io::Result<TempDir> {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let path = std::env::temp_dir().join(format!(
            "xtask-interop-{what}-{}-{nanos}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        fs::create_dir_all(&path)?;
        Ok(TempDir { path, keep: false })
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if !self.keep {
            let _ = fs::remove_dir_all(&self.path);
        }
    }
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
    deps::ensure(&[Need::Java, Need::ZooKeeper, Need::Curator])?;
    let classpath = java::jars(&CURATOR_JARS);
    let classes = java::compile(
        "CuratorMutexWorker",
        &[java::java_dir().join("CuratorMutexWorker.java")],
        &classpath,
    )?;
    let java_classpath = format!("{}:{classpath}", classes.display());
    let rust_worker = match &opts.rust_side {
        RustSide::ReleaseProcess => {
            eprintln!("interop mutex: building lock-worker (release)...");
            Some(crate::bench::worker::build_release_bin("lock-worker")?)
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
        .arg("CuratorMutexWorker")
        .args(java_cfg.args());
    let mut java_side = Side::Process(ProcessSide::spawn("curator", java_cmd)?);
    let mut rust_side = match &rust_worker {
        Some(bin) => {
            let mut cmd = Command::new(bin);
            cmd.args(rust_cfg.args());
            Side::Process(ProcessSide::spawn("ours", cmd)?)
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

/// One side of the contention as the harness drives it.
enum Side {
    Process(ProcessSide),
    InProcess(InProcessSide),
}

impl Side {
    /// Waits for the side to have connected all its clients.
    fn ready(&mut self, by: Instant) -> Result<()> {
        match self {
            Side::Process(p) => p.expect("READY", by).map(drop),
            Side::InProcess(s) => s.ready(by),
        }
    }

    /// Starts the side's run.
    fn go(&mut self) -> Result<()> {
        match self {
            Side::Process(p) => p.go(),
            Side::InProcess(s) => s.go(),
        }
    }

    /// Waits for the side's counts.
    fn counts(&mut self, by: Instant) -> Result<Counts> {
        match self {
            Side::Process(p) => {
                let line = p.expect("COUNTS ", by)?;
                Ok(Counts::parse(&line)?.1)
            }
            Side::InProcess(s) => s.counts(by),
        }
    }

    /// Waits for the side to end.
    fn finish(&mut self, by: Instant) -> Result<()> {
        match self {
            Side::Process(p) => p.finish(by),
            Side::InProcess(_) => Ok(()),
        }
    }
}

/// A worker process, driven by lines: `READY` and `COUNTS` from it, `GO` to it. Dropping
/// it kills the process if it still runs, and reaps it.
pub(crate) struct ProcessSide {
    name: &'static str,
    child: Child,
    /// Held open: the worker halts when it closes.
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
}

impl ProcessSide {
    pub(crate) fn spawn(name: &'static str, mut cmd: Command) -> Result<ProcessSide> {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("starting the {name} worker: {e}"))?;
        let stdin = child.stdin.take();
        let Some(stdout) = child.stdout.take() else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("the {name} worker has no stdout pipe").into());
        };
        let (tx, lines) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(ProcessSide {
            name,
            child,
            stdin,
            lines,
        })
    }

    /// The next line starting with `prefix`, echoing others to stderr.
    pub(crate) fn expect(&mut self, prefix: &str, by: Instant) -> Result<String> {
        let name = self.name;
        loop {
            let left = by.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if line.starts_with(prefix) => return Ok(line),
                Ok(line) if line.starts_with("ERROR") => {
                    return Err(format!("{name} worker: {line}").into());
                }
                Ok(line) => eprintln!("  {name}: {line}"),
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    return Err(
                        format!("{name} worker: no `{}` in time; killed", prefix.trim()).into(),
                    );
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    let status = self.child.wait()?;
                    return Err(format!(
                        "{name} worker exited ({status}) without `{}`",
                        prefix.trim()
                    )
                    .into());
                }
            }
        }
    }

    pub(crate) fn go(&mut self) -> Result<()> {
        let stdin = self.stdin.as_mut().ok_or("no stdin pipe")?;
        stdin.write_all(b"GO\n")?;
        stdin.flush()?;
        Ok(())
    }

    /// Waits for the process to exit successfully by `by`.
    pub(crate) fn finish(&mut self, by: Instant) -> Result<()> {
        loop {
            if let Some(status) = self.child.try_wait()? {
                if !status.success() {
                    return Err(format!("{} worker exited with {status}", self.name).into());
                }
                return Ok(());
            }
            if Instant::now() >= by {
                return Err(format!("{} worker did not exit in time; killed", self.name).into());
            }
            thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for ProcessSide {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
        }
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}

/// Our side in this process: a thread with a tokio runtime of its own.
struct InProcessSide {
    ready: mpsc::Receiver<std::result::Result<(), String>>,
    go: Option<mpsc::Sender<()>>,
    counts: mpsc::Receiver<Counts>,
}

impl InProcessSide {
    fn spawn(cfg: WorkerConfig) -> InProcessSide {
        let (ready_tx, ready) = mpsc::channel();
        let (go, go_rx) = mpsc::channel();
        let (counts_tx, counts) = mpsc::channel();
        thread::spawn(move || {
            let rt = match tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    let _ = ready_tx.send(Err(format!("building a tokio runtime: {e}")));
                    return;
                }
            };
            let clients = match rt.block_on(connect_clients(&cfg.connect, cfg.clients)) {
                Ok(clients) => clients,
                Err(e) => {
                    let _ = ready_tx.send(Err(e.to_string()));
                    return;
                }
            };
            let _ = ready_tx.send(Ok(()));
            if go_rx.recv().is_ok() {
                let counts = rt.block_on(run_clients(clients, &cfg));
                let _ = counts_tx.send(counts);
            } else {
                rt.block_on(close_all(clients));
            }
        });
        InProcessSide {
            ready,
            go: Some(go),
            counts,
        }
    }

    fn ready(&mut self, by: Instant) -> Result<()> {
        match self
            .ready
            .recv_timeout(by.saturating_duration_since(Instant::now()))
        {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(format!("our side: {e}").into()),
            Err(_) => Err("our side did not connect in time".into()),
        }
    }

    fn go(&mut self) -> Result<()> {
        self.go
            .take()
            .ok_or("started twice")?
            .send(())
            .map_err(|_| "our side ended before GO".into())
    }

    fn counts(&mut self, by: Instant) -> Result<Counts> {
        self.counts
            .recv_timeout(by.saturating_duration_since(Instant::now()))
            .map_err(|_| "our side did not finish in time".into())
    }
}

/// What one side's worker is told: the same for the Java worker, `lock-worker` and the
/// in-process side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerConfig {
    /// The server's connect string.
    pub connect: String,
    /// The lock path.
    pub path: String,
    /// Clients (sessions) of this side.
    pub clients: usize,
    /// How long to loop after `GO`.
    pub run_for: Duration,
    /// The marker file.
    pub marker: PathBuf,
    /// The shared log.
    pub log: PathBuf,
}

impl WorkerConfig {
    /// The command line: `<connect> <lock path> <clients> <run ms> <marker> <log>`.
    pub fn args(&self) -> Vec<String> {
        vec![
            self.connect.clone(),
            self.path.clone(),
            self.clients.to_string(),
            self.run_for.as_millis().to_string(),
            self.marker.display().to_string(),
            self.log.display().to_string(),
        ]
    }

    /// Parses what [`WorkerConfig::args`] gives.
    ///
    /// # Errors
    /// Not six arguments, or a count that is not a number.
    pub fn parse(args: &[String]) -> Result<WorkerConfig> {
        let [connect, path, clients, run_ms, marker, log] = args else {
            return Err(
                "usage: lock-worker <connect> <lock path> <clients> <run ms> <marker> <log>".into(),
            );
        };
        Ok(WorkerConfig {
            connect: connect.clone(),
            path: path.clone(),
            clients: clients.parse()?,
            run_for: Duration::from_millis(run_ms.parse()?),
            marker: PathBuf::from(marker),
            log: PathBuf::from(log),
        })
    }
}

/// Connects `n` clients to `connect`, each with a session of its own.
///
/// # Errors
/// The first client that cannot connect.
pub async fn connect_clients(connect: &str, n: usize) -> std::result::Result<Vec<Client>, String> {
    let mut clients = Vec::with_capacity(n);
    for i in 0..n {
        match Client::builder()
            .hosts(connect)
            .session_timeout(SESSION_TIMEOUT)
            .connect()
            .await
        {
            Ok(client) => clients.push(client),
            Err(e) => {
                close_all(clients).await;
                return Err(format!("client {i} could not connect to {connect}: {e}"));
            }
        }
    }
    Ok(clients)
}

async fn close_all(clients: Vec<Client>) {
    for client in clients {
        let _ = client.close().await;
    }
}

/// Our side's run: one task per client, each with its own `InterProcessMutex` on
/// `cfg.path`, looping acquire → critical section → release for `cfg.run_for`; then closes
/// the clients and returns the sum of the counts.
pub async fn run_clients(clients: Vec<Client>, cfg: &WorkerConfig) -> Counts {
    let end = Instant::now() + cfg.run_for;
    let mut tasks = Vec::new();
    for (i, client) in clients.iter().enumerate() {
        tasks.push(tokio::spawn(client_loop(
            i,
            client.clone(),
            cfg.clone(),
            end,
        )));
    }
    let mut total = Counts {
        clients: u64::try_from(clients.len()).unwrap_or(u64::MAX),
        ..Counts::default()
    };
    for task in tasks {
        match task.await {
            Ok(c) => {
                total.acquisitions += c.acquisitions;
                total.violations += c.violations;
                total.errors += c.errors;
            }
            Err(e) => {
                eprintln!("ERROR-COUNTED a client task failed: {e}");
                total.errors += 1;
            }
        }
    }
    close_all(clients).await;
    total
}

/// A small pseudo-random generator (splitmix64) for hold times.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// One client's loop until `end`.
async fn client_loop(index: usize, client: Client, cfg: WorkerConfig, end: Instant) -> Counts {
    let name = format!("rust-{index}");
    let mut counts = Counts::default();
    let error = |counts: &mut Counts, what: &str, e: &dyn fmt::Display| {
        counts.errors += 1;
        eprintln!("ERROR-COUNTED {name} {what}: {e}");
    };
    let mutex = match InterProcessMutex::new(client, &cfg.path) {
        Ok(mutex) => mutex,
        Err(e) => {
            error(&mut counts, "creating the mutex", &e);
            return counts;
        }
    };
    let mut log = match OpenOptions::new().append(true).create(true).open(&cfg.log) {
        Ok(file) => file,
        Err(e) => {
            error(&mut counts, "opening the log", &e);
            return counts;
        }
    };
    let seed = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let mut rng = Rng(seed ^ (u64::from(std::process::id()) << 32) ^ ((index as u64) << 48));
    loop {
        let now = Instant::now();
        if now >= end {
            return counts;
        }
        let guard = match mutex.try_lock_for(end - now).await {
            Ok(Some(guard)) => guard,
            Ok(None) => return counts,
            Err(e) => {
                error(&mut counts, "acquire", &e);
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        counts.acquisitions += 1;
        let node = guard
            .node_path()
            .rsplit('/')
            .next()
            .unwrap_or("?")
            .to_owned();
        let token = guard.fencing_token();

        // The critical section.
        let created = match OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&cfg.marker)
        {
            Ok(mut marker) => {
                let _ = marker.write_all(format!("{name} {node} {token}").as_bytes());
                true
            }
            Err(e) if e.kind() == ErrorKind::AlreadyExists => {
                counts.violations += 1;
                let other = fs::read_to_string(&cfg.marker)
                    .unwrap_or_else(|e| format!("(unreadable: {e})"));
                let other = if other.is_empty() {
                    "(empty: its holder has just created it)".to_owned()
                } else {
                    other
                };
                eprintln!(
                    "VIOLATION {name} holds {node} (token {token}, acquisition {}) but the \
                     marker exists, written by: {other}",
                    counts.acquisitions
                );
                false
            }
            Err(e) => {
                error(&mut counts, "creating the marker", &e);
                false
            }
        };
        let flag = if created { "ok" } else { "OVERLAP" };
        let line = format!(
            "{name} {} {node} {token} {flag} {}\n",
            counts.acquisitions,
            unix_micros()
        );
        if let Err(e) = log.write_all(line.as_bytes()) {
            error(&mut counts, "writing the log", &e);
        }
        let hold = Duration::from_micros(200 + rng.next() % 2800);
        tokio::time::sleep(hold).await;
        if created && let Err(e) = fs::remove_file(&cfg.marker) {
            counts.violations += 1;
            eprintln!(
                "VIOLATION {name} holds {node} but its marker was gone when it came to delete it: {e}"
            );
        }

        if let Err(e) = guard.release().await {
            error(&mut counts, "release", &e);
        }
    }
}

/// Microseconds since the Unix epoch (the log's clock, shared with the JVM).
fn unix_micros() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

/// Reads the shared log: `<holder> <its count> <lock node> <token or -> <ok|OVERLAP> <unix
/// µs>` per critical section, in the order the lock was held.
fn read_log(path: &Path) -> Result<LockOrder> {
    let text = match fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == ErrorKind::NotFound => String::new(),
        Err(e) => return Err(format!("reading {}: {e}", path.display()).into()),
    };
    let lines: Vec<&str> = text.lines().collect();
    let mut order = LockOrder::default();
    let mut last_side: Option<&str> = None;
    let mut last_seq: Option<i64> = None;
    let mut last_token: Option<i64> = None;
    let mut last_micros: Option<u64> = None;
    let mut overlaps = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let &[who, _n, node, token, flag, micros] = fields.as_slice() else {
            order
                .overlap_context
                .push(format!("malformed log line: {line}"));
            continue;
        };
        let side = who.split('-').next().unwrap_or(who);
        match side {
            "java" => order.java_entries += 1,
            _ => order.rust_entries += 1,
        }
        let micros: Option<u64> = micros.parse().ok();
        if let (Some(prev), Some(now), Some(prev_side)) = (last_micros, micros, last_side) {
            let kind = usize::from(prev_side != "java") * 2 + usize::from(side != "java");
            if let Some(gap) = order.gaps.get_mut(kind) {
                gap.0 += 1;
                gap.1 += now.saturating_sub(prev);
            }
        }
        last_micros = micros;
        if last_side.is_some_and(|s| s != side) {
            order.handoffs += 1;
        }
        last_side = Some(side);
        let seq = node
            .rsplit_once("lock-")
            .and_then(|(_, seq)| seq.parse::<i64>().ok());
        if let (Some(prev), Some(seq)) = (last_seq, seq)
            && seq <= prev
        {
            order.sequence_decreases += 1;
        }
        last_seq = seq.or(last_seq);
        if let Ok(token) = token.parse::<i64>() {
            if last_token.is_some_and(|prev| token <= prev) {
                order.token_regressions += 1;
            }
            last_token = Some(token);
        }
        if flag != "ok" {
            overlaps.push(i);
        }
    }
    order.overlap_context = overlap_context(&lines, &overlaps);
    Ok(order)
}

/// The log lines around the first [`OVERLAPS_SHOWN`] overlaps (at `overlaps`, indexes into
/// `lines`): three before and after each, overlaps marked `>>`, gaps as `...`.
fn overlap_context(lines: &[&str], overlaps: &[usize]) -> Vec<String> {
    let shown = overlaps.get(..OVERLAPS_SHOWN).unwrap_or(overlaps);
    let mut out = Vec::new();
    let mut upto = 0;
    for &i in shown {
        let from = i.saturating_sub(3).max(upto);
        let to = (i + 4).min(lines.len());
        if from > upto {
            out.push("...".to_owned());
        }
        for (k, line) in lines.iter().enumerate().take(to).skip(from) {
            let mark = if overlaps.contains(&k) { ">>" } else { "  " };
            out.push(format!("{mark} {line}"));
        }
        upto = to.max(upto);
    }
    if let Some(more) = overlaps.len().checked_sub(shown.len()).filter(|&n| n > 0) {
        out.push(format!("... and {more} more overlaps: see the kept log"));
    }
    out
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
