//! `cargo xtask bench mutex|rwlock|multilock|semaphore`: our lock recipes against Curator 5.4's and
//! kazoo's, on one fresh standalone server (default options: `forceSync` on, as in
//! production).
//!
//! - `mutex`: `InterProcessMutex` against Curator's and kazoo's `Lock`, at each `--sessions`
//!   count (default 1, 4 and 16), also releasing by drop;
//! - `rwlock`: `InterProcessReadWriteLock`, readers only at 4 and 16 sessions, writers only at
//!   4, and a 90/10 read/write mix at 16, against Curator's and kazoo's `ReadLock`/`WriteLock`;
//! - `multilock`: `InterProcessMultiLock` over 2 and 4 member paths at 4 sessions, against
//!   Curator's (kazoo has none);
//! - `semaphore`: `InterProcessSemaphoreMutex` at 1 and 4 sessions and
//!   `InterProcessSemaphoreV2` of 3 leases (one per cycle) at 4 and 16, against Curator's and
//!   kazoo's `Semaphore` (kazoo's own protocol: one node per lease under a lock).
//!
//! What follows is said of the mutex; the other recipes run the same way, one case (a workload
//! at a session count) after the other.
//!
//! For each session count (`--sessions`, default 1, 4 and 16), each library runs in a worker
//! process of its own: that many contenders, each with its own session (its own client) and
//! its own lock object, all on one lock path (`/bench/mutex/<library>-<sessions>`), each
//! looping acquire → release as fast as it can. One cycle's latency runs from before the
//! acquire to after the release returns.
//!
//! - ours: `zk-bench-worker <connect> mutex ...` (built here in release mode; a current-thread
//!   tokio runtime, one `zk_client::Client` per contender); the release is
//!   `guard.release().await`, which awaits the delete as Curator's `release()` does;
//! - ours (drop): the same, releasing by dropping the guard (the delete goes out in the
//!   background);
//! - curator: `java/CuratorMutexBench.java`, one `CuratorFramework` per contender, one thread
//!   each, JVM defaults;
//! - kazoo: `python/kazoo_lock_bench.py` on `/usr/bin/python3`, one `KazooClient` per
//!   contender, one thread each, `client.Lock(path)`.
//!
//! Every worker warms up unmeasured (Java longer, for its JIT), then measures for `--seconds`.
//! It prints `WINDOW_START` and `WINDOW_END` at the window's edges; the bench reads the
//! server's `zk_packets_received` (`mntr`) at each, so that the requests each cycle costs the
//! server are known (session pings of waiting contenders included). Before all that the
//! server's JVM is warmed up with our worker at each session count. With `--rounds R` every
//! worker runs R times, the order of the libraries alternating, and the ratios use medians.
//!
//! Each worker reports a [`Sample`]: cycles, p50/p99 latency, its own CPU time in the window
//! (`/proc/self/stat`) and its peak RSS (`VmHWM`). The report shows every library, the ratios
//! ours/Curator and ours/kazoo, and the targets against Curator: cycles/s at least 1.5× at one
//! session and 1.3× at 16, p99 no worse, CPU per cycle at most 0.2×, peak RSS at most a tenth.
//! Nothing is asserted: this reports.

use std::error::Error;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::thread;
use std::time::{Duration, Instant};

use super::pin::Pinning;
use super::procfs;
use super::report;
use super::sample::Sample;
use super::worker::{self, millis};
use crate::deps::{self, Need};
use crate::interop::CURATOR_JARS;
use crate::java;
use crate::zk::{ZkOptions, ZkServer};

type Result<T> = std::result::Result<T, Box<dyn Error>>;

/// The Python that has kazoo (Debian's `python3-kazoo`).
const PYTHON: &str = "/usr/bin/python3";

/// How long a worker may take beyond its warm-up and window (start, connect all its
/// sessions, finish the cycles in progress, close).
const WORKER_SLACK: Duration = Duration::from_secs(120);

/// The command line of `bench mutex`.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// The measured window of each worker, in seconds (`--seconds`, default 10).
    pub seconds: f64,
    /// How many times each worker runs (`--rounds`, default 1); the order of the libraries
    /// alternates, and the ratios use each metric's median.
    pub rounds: u32,
    /// The numbers of contending sessions (`--sessions 1,4,16`).
    pub sessions: Vec<usize>,
    /// Our workers' unmeasured warm-up, in seconds (`--rust-warmup`, default 1).
    pub rust_warmup: f64,
    /// Curator's unmeasured warm-up, in seconds (`--java-warmup`, default 5: JIT).
    pub java_warmup: f64,
    /// kazoo's unmeasured warm-up, in seconds (`--kazoo-warmup`, default 1).
    pub kazoo_warmup: f64,
    /// Before any measurement, our worker runs this long at each session count, unmeasured,
    /// so that the server's JVM is warmed up for whichever library goes first
    /// (`--server-warmup`, default 2).
    pub server_warmup: f64,
    /// The server's `forceSync` (`--force-sync on|off`, default on, as in production). Off
    /// takes the disk out of the picture (a write then costs a round trip, not an `fsync`),
    /// to see what the protocol itself costs.
    pub force_sync: bool,
    /// Server and workers on different CPUs (`--pin on|off`, default on).
    pub pin: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            seconds: 10.0,
            rounds: 1,
            sessions: vec![1, 4, 16],
            rust_warmup: 1.0,
            java_warmup: 5.0,
            kazoo_warmup: 1.0,
            server_warmup: 2.0,
            force_sync: true,
            pin: true,
        }
    }
}

/// The recipe measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bench {
    /// `InterProcessMutex`.
    Mutex,
    /// `InterProcessReadWriteLock`.
    ReadWrite,
    /// `InterProcessMultiLock`.
    MultiLock,
    /// `InterProcessSemaphoreMutex` and `InterProcessSemaphoreV2`.
    Semaphore,
}

/// One measured case: a workload at a session count.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Case {
    label: String,
    /// The workers' workload argument (`mutex`, `read`, `write`, `rwmix:90`, `multi:2`).
    workload: &'static str,
    sessions: usize,
}

impl Bench {
    fn name(self) -> &'static str {
        match self {
            Bench::Mutex => "mutex",
            Bench::ReadWrite => "rwlock",
            Bench::MultiLock => "multilock",
            Bench::Semaphore => "semaphore",
        }
    }

    /// The libraries compared.
    fn libs(self) -> &'static [Lib] {
        match self {
            Bench::Mutex => &Lib::ALL,
            Bench::ReadWrite => &[Lib::Ours, Lib::Curator, Lib::Kazoo],
            Bench::Semaphore => &Lib::ALL,
            Bench::MultiLock => &[Lib::Ours, Lib::Curator],
        }
    }

    fn cases(self, sessions: &[usize]) -> Vec<Case> {
        let case = |label: &str, workload, sessions| Case {
            label: label.to_owned(),
            workload,
            sessions,
        };
        match self {
            Bench::Mutex => sessions
                .iter()
                .map(|&n| case(&sessions_label(n), "mutex", n))
                .collect(),
            Bench::ReadWrite => vec![
                case("readers, 4 sessions", "read", 4),
                case("readers, 16 sessions", "read", 16),
                case("writers, 4 sessions", "write", 4),
                case("90/10 mix, 16 sessions", "rwmix:90", 16),
            ],
            Bench::MultiLock => vec![
                case("2 members, 4 sessions", "multi:2", 4),
                case("4 members, 4 sessions", "multi:4", 4),
            ],
            Bench::Semaphore => vec![
                case("semaphore-mutex, 1 session", "semmutex", 1),
                case("semaphore-mutex, 4 sessions", "semmutex", 4),
                case("3 leases, 4 sessions", "sem:3", 4),
                case("3 leases, 16 sessions", "sem:3", 16),
            ],
        }
    }
}

/// Whether `lib` runs `case`. kazoo's `ReadLock`/`WriteLock` taken alternately by each
/// contender (the 90/10 mix) did not finish here: at 16 sessions a contender was still
/// blocked 60 s after the window (seen with kazoo 2.8.0); it runs the pure cases only.
fn runs(lib: Lib, case: &Case) -> bool {
    !(lib == Lib::Kazoo && case.workload.starts_with("rwmix"))
}

/// The libraries compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lib {
    /// recipe-mutex, `guard.release().await`.
    Ours,
    /// recipe-mutex, releasing by dropping the guard.
    OursDrop,
    /// Curator 5.4's `InterProcessMutex`.
    Curator,
    /// kazoo's `Lock`.
    Kazoo,
}

impl Lib {
    const ALL: [Lib; 4] = [Lib::Ours, Lib::OursDrop, Lib::Curator, Lib::Kazoo];

    fn name(self) -> &'static str {
        match self {
            Lib::Ours => "ours",
            Lib::OursDrop => "ours (drop)",
            Lib::Curator => "curator",
            Lib::Kazoo => "kazoo",
        }
    }

    /// Its part of the lock path.
    fn slug(self) -> &'static str {
        match self {
            Lib::Ours => "ours",
            Lib::OursDrop => "ours-drop",
            Lib::Curator => "curator",
            Lib::Kazoo => "kazoo",
        }
    }
}

/// What the workers are run with.
struct Workers {
    rust: PathBuf,
    java_classpath: String,
    kazoo_script: PathBuf,
    pinning: Option<Pinning>,
}

impl Workers {
    /// The command line of `lib`'s worker with `sessions` contenders on `path`.
    #[allow(clippy::too_many_arguments)]
    fn command(
        &self,
        lib: Lib,
        workload: &str,
        connect: &str,
        path: &str,
        sessions: usize,
        warmup: f64,
        seconds: f64,
    ) -> Command {
        let (warmup, measure) = (millis(warmup).to_string(), millis(seconds).to_string());
        match lib {
            Lib::Ours | Lib::OursDrop => {
                let mut cmd = Pinning::command(self.pinning.as_ref(), &self.rust);
                let workload = if lib == Lib::OursDrop {
                    format!("{workload}-drop")
                } else {
                    workload.to_owned()
                };
                cmd.arg(connect)
                    .arg(workload)
                    .arg(warmup)
                    .arg(measure)
                    .arg(path)
                    .arg(sessions.to_string());
                cmd
            }
            Lib::Curator => {
                let mut cmd = Pinning::command(self.pinning.as_ref(), "java");
                cmd.arg("-cp")
                    .arg(&self.java_classpath)
                    .arg("CuratorMutexBench");
                cmd.arg(connect)
                    .arg(path)
                    .arg(sessions.to_string())
                    .arg(warmup)
                    .arg(measure)
                    .arg(workload);
                cmd
            }
            Lib::Kazoo => {
                let mut cmd = Pinning::command(self.pinning.as_ref(), PYTHON);
                cmd.arg(&self.kazoo_script)
                    .arg(connect)
                    .arg(path)
                    .arg(sessions.to_string())
                    .arg(warmup)
                    .arg(measure)
                    .arg(workload);
                cmd
            }
        }
    }
}

/// Runs `cargo xtask bench mutex|rwlock|multilock [options]`.
///
/// # Errors
/// Bad arguments, missing Java, ZooKeeper, Curator or kazoo, a failed build or compile, a
/// server that does not start, or a worker that fails or overruns (it is killed).
pub fn run(bench: Bench, opts: &Options) -> Result<()> {
    let cases = bench.cases(&opts.sessions);
    let libs = bench.libs();
    let what = bench.name();
    deps::ensure(&[Need::Java, Need::ZooKeeper, Need::Curator, Need::Kazoo])?;

    eprintln!("bench {what}: building zk-bench-worker (release)...");
    let rust = worker::build_release_bin("zk-bench-worker")?;
    let classpath = java::jars(&CURATOR_JARS);
    let classes = java::compile(
        "CuratorMutexBench",
        &[
            java::java_dir().join("CuratorMutexBench.java"),
            java::java_dir().join("BenchSupport.java"),
        ],
        &classpath,
    )?;
    let workers = Workers {
        rust,
        java_classpath: format!("{}:{classpath}", classes.display()),
        kazoo_script: Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("python")
            .join("kazoo_lock_bench.py"),
        pinning: if opts.pin { Pinning::plan() } else { None },
    };

    let sync = if opts.force_sync { "on" } else { "off" };
    eprintln!("bench {what}: starting ZooKeeper (forceSync {sync})...");
    let server = ZkServer::start_with(ZkOptions::default().force_sync(opts.force_sync))?;
    if let (Some(p), Some(pid)) = (workers.pinning.as_ref(), server.pid()) {
        if let Err(e) = p.pin_server(pid) {
            eprintln!("bench {what}: could not pin the server ({e}); going on unpinned");
        }
    }
    let version = server
        .four_letter("srvr")?
        .lines()
        .find_map(|line| line.strip_prefix("Zookeeper version: "))
        .map_or("unknown", |v| v.split(',').next().unwrap_or(v))
        .to_owned();
    let hz = procfs::clock_ticks_per_second();
    let connect = server.connect_string();
    let started = Instant::now();

    if opts.server_warmup > 0.0 {
        for (i, case) in cases.iter().enumerate() {
            eprintln!(
                "bench {what}: warming the server up: ours, {} ({} s, not measured)...",
                case.label, opts.server_warmup
            );
            let cmd = workers.command(
                Lib::Ours,
                case.workload,
                &connect,
                &format!("/bench/{what}-warmup/ours-{i}"),
                case.sessions,
                0.0,
                opts.server_warmup,
            );
            let budget = Duration::from_secs_f64(opts.server_warmup) + WORKER_SLACK;
            run_worker(cmd, budget, &server)
                .map_err(|e| format!("server warm-up, {}: {e}", case.label))?;
        }
    }

    let mut results: Vec<Run> = Vec::new();
    for round in 1..=opts.rounds {
        let mut order = libs.to_vec();
        if round % 2 == 0 {
            order.reverse();
        }
        for (c, case) in cases.iter().enumerate() {
            for &lib in &order {
                if !runs(lib, case) {
                    continue;
                }
                let warmup = match lib {
                    Lib::Ours | Lib::OursDrop => opts.rust_warmup,
                    Lib::Curator => opts.java_warmup,
                    Lib::Kazoo => opts.kazoo_warmup,
                };
                let path = format!("/bench/{what}/{}-{c}", lib.slug());
                let cmd = workers.command(
                    lib,
                    case.workload,
                    &connect,
                    &path,
                    case.sessions,
                    warmup,
                    opts.seconds,
                );
                eprintln!(
                    "bench {what}: round {round}/{}: {}: {} ({warmup} s warm-up, {} s \
                     measured)...",
                    opts.rounds,
                    case.label,
                    lib.name(),
                    opts.seconds
                );
                let budget = Duration::from_secs_f64(warmup + opts.seconds) + WORKER_SLACK;
                let (sample, requests) = run_worker(cmd, budget, &server)
                    .map_err(|e| format!("{}, {} worker: {e}", case.label, lib.name()))?;
                results.push(Run {
                    lib,
                    case: c,
                    round,
                    sample,
                    requests,
                });
            }
        }
    }
    let elapsed = started.elapsed();
    drop(server);

    let cpus = thread::available_parallelism().map_or(0, |n| n.get());
    let model = cpu_model().unwrap_or_else(|| "unknown CPU".to_owned());
    let sync = if opts.force_sync { "yes" } else { "no" };
    let mut header = vec![
        format!("machine: {cpus} CPUs (nproc), {model}"),
        format!("server:  ZooKeeper {version}, standalone, forceSync={sync}, one fresh server"),
        Pinning::describe(workers.pinning.as_ref()),
        format!(
            "ours:    recipe-{what} on zk-client, tokio current-thread runtime, release build; \
             \"ours\" awaits guard.release(), \"ours (drop)\" drops the guard"
        ),
        format!(
            "curator: Curator {} {what} recipe (acquire/release), {}, JVM defaults",
            jar_version("curator-recipes").unwrap_or_else(|| "5.4".to_owned()),
            java_version()
        ),
    ];
    if bench.libs().contains(&Lib::Kazoo) {
        let recipe = match bench {
            Bench::Semaphore => "Semaphore (its own protocol, not Curator's)",
            Bench::ReadWrite => "ReadLock / WriteLock",
            _ => "Lock",
        };
        header.push(format!(
            "kazoo:   kazoo {} {recipe} (acquire/release), {}, threading handler",
            kazoo_version().unwrap_or_else(|| "?".to_owned()),
            python_version()
        ));
    }
    header.push(
        "setup:   one session (client) per contender, all contenders of a library in one \
         process, one lock path per library and session count; session timeout 10 s"
            .to_owned(),
    );
    header.push(format!(
        "window:  {} s measured per worker; warm-up {} s ours, {} s Curator, {} s kazoo; \
         server warmed up {} s per session count first; {} round(s), order alternating; \
         {:.0} s in all",
        opts.seconds,
        opts.rust_warmup,
        opts.java_warmup,
        opts.kazoo_warmup,
        opts.server_warmup,
        opts.rounds,
        elapsed.as_secs_f64()
    ));
    header.push(
        "columns: cycles/s over all contenders; p50/p99 of one acquire+release cycle; client \
         CPU (utime+stime of the worker) per cycle; peak RSS (VmHWM); server requests \
         (zk_packets_received, pings included) per cycle"
            .to_owned(),
    );
    println!();
    for line in &header {
        println!("{line}");
    }
    let results_table = table(&results, &cases, libs, opts.rounds, hz);
    let mut comparisons = ratios(&results, &cases, Lib::Curator, hz);
    if libs.contains(&Lib::Kazoo) {
        comparisons.push('\n');
        comparisons.push_str(&ratios(&results, &cases, Lib::Kazoo, hz));
    }
    let verdicts = targets(bench, &results, &cases, hz);
    println!();
    print!("{results_table}");
    println!();
    print!("{comparisons}");
    println!();
    print!("{verdicts}");
    let page = report_page(what, &header, &results_table, &comparisons, &verdicts);
    let charts = charts(&results, &cases, libs, hz);
    let charts: Vec<(&str, report::Chart)> = vec![("cycles", charts.0), ("p99", charts.1)];
    match report::write_page(&report::dir(), what, &page, &charts) {
        Ok(path) => println!("\nreport: {} (charts beside it)", path.display()),
        Err(e) => eprintln!("bench {what}: could not write the report: {e}"),
    }
    Ok(())
}

/// The report page: the header, the tables as they were printed, and the charts.
fn report_page(what: &str, header: &[String], table: &str, ratios: &str, targets: &str) -> String {
    let mut out = format!(
        "# Benchmark: {what}\n\n`cargo xtask bench {what}`, ours against Curator 5.4 (and kazoo where it has the recipe), on one fresh server.\n\n"
    );
    for line in header {
        out.push_str("- ");
        out.push_str(line);
        out.push('\n');
    }
    out.push_str(&format!(
        "\n![cycles per second]({what}-cycles.svg)\n\n![p99 latency]({what}-p99.svg)\n\n## Results\n\n```text\n{table}```\n\n## Ratios\n\n```text\n{ratios}```\n\n## Targets\n\n```text\n{targets}```\n"
    ));
    out
}

/// The cycles/s and p99 charts: one group per case, one bar per library (medians).
fn charts(
    results: &[Run],
    cases: &[Case],
    libs: &[Lib],
    hz: u64,
) -> (report::Chart, report::Chart) {
    let groups: Vec<String> = cases.iter().map(|c| c.label.clone()).collect();
    let series = |field: fn(&Summary) -> f64| -> Vec<(String, Vec<Option<f64>>)> {
        libs.iter()
            .map(|&lib| {
                let values = (0..cases.len())
                    .map(|c| median_of(results, lib, c, hz).map(|s| field(&s)))
                    .collect();
                (lib.name().to_owned(), values)
            })
            .collect()
    };
    (
        report::Chart {
            title: "cycles per second (higher is better)".into(),
            unit: "cycles/s".into(),
            groups: groups.clone(),
            series: series(|s| s.cycles_per_sec),
        },
        report::Chart {
            title: "p99 latency of a cycle (lower is better)".into(),
            unit: "µs".into(),
            groups,
            series: series(|s| s.p99_us),
        },
    )
}

/// The server's `zk_packets_received`, or `None` (with a warning) if `mntr` does not say.
fn packets_received(server: &ZkServer) -> Option<u64> {
    match server.mntr() {
        Ok(mntr) => {
            let value = mntr.get("zk_packets_received").and_then(|v| v.parse().ok());
            if value.is_none() {
                eprintln!("  warning: no zk_packets_received in mntr");
            }
            value
        }
        Err(e) => {
            eprintln!("  warning: mntr failed: {e}");
            None
        }
    }
}

/// Runs one worker to its `RESULT` line within `budget`, reading the server's request counter
/// at its `WINDOW_START` and `WINDOW_END`, and waits for it to exit. Returns its sample and the
/// requests the server received in its window.
fn run_worker(cmd: Command, budget: Duration, server: &ZkServer) -> Result<(Sample, Option<u64>)> {
    let (mut before, mut after) = (None, None);
    let sample = worker::run_worker(cmd, budget, |line| match line {
        "WINDOW_START" => {
            before = packets_received(server);
            true
        }
        "WINDOW_END" => {
            after = packets_received(server);
            true
        }
        _ => false,
    })?;
    let requests = match (before, after) {
        (Some(b), Some(a)) => Some(a.saturating_sub(b)),
        _ => None,
    };
    Ok((sample, requests))
}

/// One worker's outcome.
#[derive(Debug, Clone, Copy)]
struct Run {
    lib: Lib,
    /// The index of its case.
    case: usize,
    round: u32,
    sample: Sample,
    /// Requests the server received during the window.
    requests: Option<u64>,
}

/// A [`Run`] in the table's units.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Summary {
    cycles_per_sec: f64,
    p50_us: f64,
    p99_us: f64,
    cpu_us_per_cycle: f64,
    rss_mib: f64,
    requests_per_cycle: f64,
}

impl Summary {
    fn of(run: &Run, hz: u64) -> Summary {
        let s = &run.sample;
        let requests_per_cycle = match run.requests {
            Some(r) if s.ops > 0 => r as f64 / s.ops as f64,
            _ => f64::NAN,
        };
        Summary {
            cycles_per_sec: s.ops_per_sec(),
            p50_us: s.p50_ns as f64 / 1e3,
            p99_us: s.p99_ns as f64 / 1e3,
            cpu_us_per_cycle: s.cpu_us_per_op(hz),
            rss_mib: s.hwm_kib as f64 / 1024.0,
            requests_per_cycle,
        }
    }
}

/// The median of each field over `all` (the upper one for an even count), so that one slow
/// round does not decide; `None` when empty. Each field's median may come from another round.
fn median(all: &[Summary]) -> Option<Summary> {
    let pick = |field: fn(&Summary) -> f64| {
        let mut values: Vec<f64> = all.iter().map(field).collect();
        values.sort_unstable_by(f64::total_cmp);
        values.get(values.len() / 2).copied()
    };
    Some(Summary {
        cycles_per_sec: pick(|s| s.cycles_per_sec)?,
        p50_us: pick(|s| s.p50_us)?,
        p99_us: pick(|s| s.p99_us)?,
        cpu_us_per_cycle: pick(|s| s.cpu_us_per_cycle)?,
        rss_mib: pick(|s| s.rss_mib)?,
        requests_per_cycle: pick(|s| s.requests_per_cycle)?,
    })
}

/// The median summary of `lib` in case `case` over the rounds.
fn median_of(results: &[Run], lib: Lib, case: usize, hz: u64) -> Option<Summary> {
    let all: Vec<Summary> = results
        .iter()
        .filter(|r| r.lib == lib && r.case == case)
        .map(|r| Summary::of(r, hz))
        .collect();
    median(&all)
}

/// One table row.
fn row(case: &str, client: &str, s: &Summary) -> String {
    format!(
        "{:<24} {:<16} {:>10.1} {:>10.1} {:>10.1} {:>12.1} {:>9.1} {:>9.2}\n",
        case,
        client,
        s.cycles_per_sec,
        s.p50_us,
        s.p99_us,
        s.cpu_us_per_cycle,
        s.rss_mib,
        s.requests_per_cycle,
    )
}

/// The results table: per case and library, one row per round, then (with several rounds)
/// the medians.
fn table(results: &[Run], cases: &[Case], libs: &[Lib], rounds: u32, hz: u64) -> String {
    let mut out = format!(
        "{:<24} {:<16} {:>10} {:>10} {:>10} {:>12} {:>9} {:>9}\n",
        "case", "library", "cycles/s", "p50 µs", "p99 µs", "CPU µs/cyc", "RSS MiB", "req/cyc"
    );
    for (c, case) in cases.iter().enumerate() {
        for &lib in libs {
            for run in results.iter().filter(|r| r.lib == lib && r.case == c) {
                let client = if rounds > 1 {
                    format!("{} #{}", lib.name(), run.round)
                } else {
                    lib.name().to_owned()
                };
                out.push_str(&row(&case.label, &client, &Summary::of(run, hz)));
            }
            if rounds > 1 {
                if let Some(m) = median_of(results, lib, c, hz) {
                    out.push_str(&row(&case.label, &format!("{} med", lib.name()), &m));
                }
            }
        }
    }
    out
}

/// The ratios ours/`other` (medians) per case.
fn ratios(results: &[Run], cases: &[Case], other: Lib, hz: u64) -> String {
    let mut out = format!(
        "{:<24} {:>9} {:>9} {:>9} {:>11} {:>9} {:>9}   {}\n",
        format!("ratio ours/{}", other.name()),
        "cycles/s",
        "p50",
        "p99",
        "CPU/cycle",
        "RSS",
        "req/cyc",
        "spread over rounds (cycles/s, CPU/cycle)"
    );
    for (c, case) in cases.iter().enumerate() {
        let (Some(ours), Some(theirs)) = (
            median_of(results, Lib::Ours, c, hz),
            median_of(results, other, c, hz),
        ) else {
            continue;
        };
        out.push_str(&format!(
            "{:<24} {:>8.2}x {:>8.2}x {:>8.2}x {:>10.3}x {:>8.3}x {:>8.2}x   {}\n",
            case.label,
            ours.cycles_per_sec / theirs.cycles_per_sec,
            ours.p50_us / theirs.p50_us,
            ours.p99_us / theirs.p99_us,
            ours.cpu_us_per_cycle / theirs.cpu_us_per_cycle,
            ours.rss_mib / theirs.rss_mib,
            ours.requests_per_cycle / theirs.requests_per_cycle,
            spread(results, c, other, hz),
        ));
    }
    out
}

/// The lowest and highest ratio of one round's ours to the same round's `other`, for
/// cycles/s and CPU per cycle: how far one round can be trusted.
fn spread(results: &[Run], case: usize, other: Lib, hz: u64) -> String {
    let of = |lib: Lib, round: u32| {
        results
            .iter()
            .find(|r| r.lib == lib && r.case == case && r.round == round)
            .map(|r| Summary::of(r, hz))
    };
    let rounds: Vec<u32> = results.iter().map(|r| r.round).collect();
    let (mut cycles, mut cpu) = (Vec::new(), Vec::new());
    for round in rounds
        .iter()
        .copied()
        .collect::<std::collections::BTreeSet<_>>()
    {
        if let (Some(o), Some(t)) = (of(Lib::Ours, round), of(other, round)) {
            cycles.push(o.cycles_per_sec / t.cycles_per_sec);
            cpu.push(o.cpu_us_per_cycle / t.cpu_us_per_cycle);
        }
    }
    let range = |v: &[f64]| {
        let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        format!("{lo:.2}-{hi:.2}")
    };
    if cycles.len() < 2 {
        return "(one round)".to_owned();
    }
    format!("{}x, {}x", range(&cycles), range(&cpu))
}

fn sessions_label(n: usize) -> String {
    if n == 1 {
        "1 session".to_owned()
    } else {
        format!("{n} sessions")
    }
}

/// The cycles/s bar against Curator for case `case` of `bench`, if the issue set one.
fn cycles_bar(bench: Bench, case: &Case) -> Option<f64> {
    match bench {
        Bench::Mutex => match case.sessions {
            1 => Some(1.5),
            16 => Some(1.3),
            _ => None,
        },
        // An uncontended read is one round trip for us, two for Curator.
        Bench::ReadWrite if case.workload == "read" => Some(1.5),
        Bench::ReadWrite => Some(1.2),
        Bench::MultiLock => Some(1.5),
        // Two awaited round trips per acquisition where Curator awaits five.
        Bench::Semaphore if case.workload == "semmutex" && case.sessions == 1 => Some(2.5),
        Bench::Semaphore => Some(2.0),
    }
}

/// The targets against Curator (ours with an awaited release, medians), met or not.
fn targets(bench: Bench, results: &[Run], cases: &[Case], hz: u64) -> String {
    let mut out = "targets (ours vs Curator, medians):\n".to_owned();
    for (c, case) in cases.iter().enumerate() {
        let (Some(ours), Some(theirs)) = (
            median_of(results, Lib::Ours, c, hz),
            median_of(results, Lib::Curator, c, hz),
        ) else {
            continue;
        };
        if let Some(bar) = cycles_bar(bench, case) {
            let ratio = ours.cycles_per_sec / theirs.cycles_per_sec;
            let what = format!("{}: cycles/s >= {bar}x", case.label);
            out.push_str(&verdict(&what, ratio, ratio >= bar));
        }
        let p99 = ours.p99_us / theirs.p99_us;
        out.push_str(&verdict(
            &format!("{}: p99 <= Curator's", case.label),
            p99,
            p99 <= 1.0,
        ));
        if bench == Bench::Mutex {
            let cpu = ours.cpu_us_per_cycle / theirs.cpu_us_per_cycle;
            out.push_str(&verdict(
                &format!("{}: CPU/cycle <= 0.2x", case.label),
                cpu,
                cpu <= 0.2,
            ));
            let rss = ours.rss_mib / theirs.rss_mib;
            out.push_str(&verdict(
                &format!("{}: peak RSS <= 0.1x", case.label),
                rss,
                rss <= 0.1,
            ));
        }
    }
    out
}

fn verdict(what: &str, ratio: f64, met: bool) -> String {
    let verdict = if met { "met" } else { "NOT met" };
    format!("  {what:<44} {ratio:>7.3}x  {verdict}\n")
}

/// The CPU model from `/proc/cpuinfo`.
fn cpu_model() -> Option<String> {
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    info.lines()
        .find_map(|line| line.strip_prefix("model name"))
        .and_then(|rest| rest.split_once(':'))
        .map(|(_, model)| model.trim().to_owned())
}

/// The version in the name of the file behind `/usr/share/java/<name>.jar` (a symlink to
/// `<name>-<version>.jar` on Debian).
fn jar_version(name: &str) -> Option<String> {
    let target = std::fs::read_link(java::jar(name)).ok()?;
    let file = target.file_name()?.to_str()?;
    file.strip_prefix(&format!("{name}-"))?
        .strip_suffix(".jar")
        .map(str::to_owned)
}

/// The first line of `java -version`.
fn java_version() -> String {
    Command::new("java")
        .arg("-version")
        .output()
        .ok()
        .and_then(|out| {
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .next()
                .map(str::to_owned)
        })
        .unwrap_or_else(|| "java".to_owned())
}

/// kazoo's version, from the Python that runs it.
fn kazoo_version() -> Option<String> {
    let out = Command::new(PYTHON)
        .args([
            "-c",
            "import kazoo.version; print(kazoo.version.__version__)",
        ])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// `Python 3.x.y` of [`PYTHON`].
fn python_version() -> String {
    Command::new(PYTHON)
        .arg("--version")
        .output()
        .ok()
        .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_owned())
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| "python3".to_owned())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn requests_per_cycle_and_medians() {
        let run = |ops, requests| Run {
            lib: Lib::Ours,
            case: 0,
            round: 1,
            sample: Sample {
                ops,
                measure_ms: 1000,
                ..Sample::default()
            },
            requests,
        };
        let a = Summary::of(&run(100, Some(300)), 100);
        assert_eq!((a.cycles_per_sec, a.requests_per_cycle), (100.0, 3.0));
        assert!(
            Summary::of(&run(100, None), 100)
                .requests_per_cycle
                .is_nan()
        );
        let b = Summary::of(&run(200, Some(1000)), 100);
        let c = Summary::of(&run(300, Some(1200)), 100);
        let m = median(&[a, b, c]).unwrap();
        assert_eq!((m.cycles_per_sec, m.requests_per_cycle), (200.0, 4.0));
    }
}
