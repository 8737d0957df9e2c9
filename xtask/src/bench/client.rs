//! `cargo xtask bench client`: zk-client against the plain Java ZooKeeper client, on one fresh
//! standalone server (default options: `forceSync` on, as in production).
//!
//! Two workloads, each run by each client in a worker process of its own, one after another:
//!
//! - (a) sequential create + delete round trips of a persistent node (one op = one pair);
//! - (b) `get_data` of a 1 KiB node with 100 requests in flight at all times.
//!
//! Ours is `zk-worker bench` (built here in release mode; a current-thread tokio runtime),
//! Java's is `java/JavaClientBench.java` (the async API, JVM defaults). Each warms up
//! unmeasured (Java longer, for its JIT), then measures for `--seconds`; before all that, the
//! server's own JVM is warmed up with each workload, so that going first costs nothing. With
//! `--rounds R` every worker runs R times, the order alternating, and the ratios use medians:
//! on a small machine the server and its disk drift more between runs than the clients differ. Each worker reports
//! a [`Sample`]: ops/s, p50 and p99 latency, its own CPU time in the window (from
//! `/proc/self/stat`) and its peak RSS (`VmHWM`). The table shows both clients and the ratios
//! ours/Java, against the targets: (b) ops/s at least 1.2× Java's, (a) p50 no worse, CPU per
//! op at most half, peak RSS at most a tenth. Nothing is asserted: this reports.
//!
//! With `--tls` the server also serves a TLS client port (certificates made for the run, TLS
//! 1.2 as the server's default, no client certificate) and our worker runs a third time over
//! it (`ours-tls`), on the same server in the same rounds: a last table gives the cost of TLS
//! as ours-tls / ours. (The server then uses the Netty connection factory for both ports,
//! as it must for TLS, so the plain figures are not comparable with a run without `--tls`.)

use std::error::Error;
use std::process::Command;
use std::time::{Duration, Instant};

use super::procfs;
use super::progress::{self, Plan};
use super::sample::Sample;
use super::versions::java_version;
use super::worker::{build_worker, millis, run_worker};
use crate::deps::{self, Need};
use crate::java;
use crate::zk::{ZkOptions, ZkServer};

type Result<T> = std::result::Result<T, Box<dyn Error>>;

/// The classpath of the Java client: ZooKeeper's client, jute, and a silent SLF4J binding.
const JAVA_JARS: [&str; 4] = ["zookeeper", "zookeeper-jute", "slf4j-api", "slf4j-nop"];

/// How long a worker may take beyond its warm-up and window (start, connect, drain, close).
const WORKER_SLACK: Duration = Duration::from_secs(90);

/// The command line of `bench client`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    /// The measured window of each worker, in seconds (`--seconds`, default 10).
    pub seconds: f64,
    /// Our worker's unmeasured warm-up, in seconds (`--rust-warmup`, default 1).
    pub rust_warmup: f64,
    /// Java's unmeasured warm-up, in seconds (`--java-warmup`, default 3: JIT compilation).
    pub java_warmup: f64,
    /// Before any measurement, our worker runs each workload this long, unmeasured, so that
    /// the server's JVM is warmed up for whichever client goes first (`--server-warmup`,
    /// default 3).
    pub server_warmup: f64,
    /// How many times each client runs each workload (`--rounds`, default 1). Rounds
    /// alternate which client goes first, and the ratios use each metric's median, which
    /// tames the server's and the disk's drift over a run.
    pub rounds: u32,
    /// Also run our client over TLS (`--tls`).
    pub tls: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            seconds: 10.0,
            rust_warmup: 1.0,
            java_warmup: 3.0,
            server_warmup: 3.0,
            rounds: 1,
            tls: false,
        }
    }
}

/// Which client a worker runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Ours,
    Java,
    /// Ours over TLS.
    OursTls,
}

impl Side {
    fn name(self) -> &'static str {
        match self {
            Side::Ours => "ours",
            Side::Java => "java",
            Side::OursTls => "ours-tls",
        }
    }
}

/// The environment variable giving our worker a CA file: it then connects over TLS.
pub const TLS_CA_ENV: &str = "ZK_BENCH_TLS_CA";

/// The two workloads: the worker's argument and the table's label.
const WORKLOADS: [(&str, &str); 2] = [
    ("create", "(a) create+delete, sequential"),
    ("get", "(b) get_data 1 KiB, 100 in flight"),
];

/// Runs `cargo xtask bench client [options]`.
///
/// # Errors
/// Bad arguments, missing Java or ZooKeeper, a failed build or compile, a server that does
/// not start, or a worker that fails or overruns (it is killed).
pub fn run(opts: &Options) -> Result<()> {
    let opts = *opts;
    let started = Instant::now();
    deps::ensure(&[Need::Java, Need::ZooKeeper])?;

    let rust_worker = build_worker("bench client")?;
    let classpath = java::jars(&JAVA_JARS);
    let classes = java::compile(
        "JavaClientBench",
        &[
            java::java_dir().join("JavaClientBench.java"),
            java::java_dir().join("BenchSupport.java"),
        ],
        &classpath,
    )?;
    let java_classpath = format!("{}:{classpath}", classes.display());

    eprintln!("bench client: starting ZooKeeper (forceSync on)...");
    let mut zk_opts = ZkOptions::default();
    if opts.tls {
        zk_opts = zk_opts.tls(crate::zk::TlsOptions::default());
    }
    let server = ZkServer::start_with(zk_opts)?;
    let tls_target = match (
        server.ensemble().secure_connect_string(),
        server.ensemble().pki(),
    ) {
        (Some(hosts), Some(pki)) => Some((hosts, pki.ca_path())),
        _ => None,
    };
    let sides: Vec<Side> = if tls_target.is_some() {
        vec![Side::Ours, Side::Java, Side::OursTls]
    } else {
        vec![Side::Ours, Side::Java]
    };
    let srvr = server.four_letter("srvr")?;
    let version = srvr
        .lines()
        .find_map(|line| line.strip_prefix("Zookeeper version: "))
        .unwrap_or("unknown")
        .to_owned();
    let hz = procfs::clock_ticks_per_second();

    let warmup_of = |side| match side {
        Side::Ours | Side::OursTls => opts.rust_warmup,
        Side::Java => opts.java_warmup,
    };
    let mut plan = Plan::new(plan(&opts, &sides, warmup_of));
    let say = |plan: &Plan, what_runs: String| {
        let (i, n) = plan.step();
        eprintln!(
            "bench client: run {i}/{n}: {what_runs}; about {} left",
            progress::human(plan.left())
        );
    };

    if opts.server_warmup > 0.0 {
        for (workload, label) in WORKLOADS {
            say(
                &plan,
                format!(
                    "server warm-up, {label}, ours ({} s, not measured)",
                    opts.server_warmup
                ),
            );
            let run_started = Instant::now();
            let mut cmd = Command::new(&rust_worker);
            cmd.arg("bench")
                .arg(server.connect_string())
                .arg(workload)
                .arg("0")
                .arg(millis(opts.server_warmup).to_string())
                .arg(format!("/bench-warmup-{workload}"));
            let budget = Duration::from_secs_f64(opts.server_warmup) + WORKER_SLACK;
            run_worker(cmd, budget, |_| false)
                .map_err(|e| format!("{label}, server warm-up: {e}"))?;
            plan.on_run_done(run_started.elapsed());
        }
    }

    let mut results: Vec<Run> = Vec::new();
    for (round, (workload, label)) in
        (1..=opts.rounds).flat_map(|round| WORKLOADS.into_iter().map(move |w| (round, w)))
    {
        let mut order = sides.clone();
        if round % 2 == 0 {
            order.reverse();
        }
        for side in order {
            let path = format!("/bench-{}-{workload}", side.name());
            let mut hosts = server.connect_string();
            let warmup = warmup_of(side);
            let mut cmd = match side {
                Side::Ours => {
                    let mut cmd = Command::new(&rust_worker);
                    cmd.arg("bench");
                    cmd
                }
                Side::OursTls => {
                    let mut cmd = Command::new(&rust_worker);
                    cmd.arg("bench");
                    if let Some((secure, ca)) = &tls_target {
                        cmd.env(TLS_CA_ENV, ca);
                        hosts.clone_from(secure);
                    }
                    cmd
                }
                Side::Java => {
                    let mut cmd = Command::new("java");
                    cmd.arg("-cp").arg(&java_classpath).arg("JavaClientBench");
                    cmd
                }
            };
            cmd.arg(hosts)
                .arg(workload)
                .arg(millis(warmup).to_string())
                .arg(millis(opts.seconds).to_string())
                .arg(&path);
            say(
                &plan,
                format!(
                    "round {round}/{}, {label}, {} ({warmup} s warm-up + {} s measured)",
                    opts.rounds,
                    side.name(),
                    opts.seconds
                ),
            );
            let run_started = Instant::now();
            let budget = Duration::from_secs_f64(warmup + opts.seconds) + WORKER_SLACK;
            let sample = run_worker(cmd, budget, |_| false)
                .map_err(|e| format!("{label}, {} worker: {e}", side.name()))?;
            plan.on_run_done(run_started.elapsed());
            results.push(Run {
                label,
                side,
                round,
                sample,
            });
        }
    }
    drop(server);

    println!();
    println!("{}", super::versions::machine());
    println!("server:  ZooKeeper {version}, standalone, forceSync=yes, one fresh server");
    if opts.tls {
        println!(
            "tls:     a TLS client port too (Netty connection factory for both ports, TLS 1.2, \
             no client certificate); ours-tls = zk-client with rustls (ring)"
        );
    }
    println!("ours:    zk-client, tokio current-thread runtime, release build");
    println!(
        "java:    {} client (async API), {}, JVM defaults",
        version.split('-').next().unwrap_or(&version),
        java_version()
    );
    println!(
        "window:  {} s measured per worker; warm-up {} s ours, {} s Java; one process each; \
         server warmed up {} s per workload first; {} round(s), order alternating",
        opts.seconds, opts.rust_warmup, opts.java_warmup, opts.server_warmup, opts.rounds
    );
    println!(
        "time:    {} wall-clock for this bench, from its start to this report (the worker \
         build, the Java compile, the server's start, every warm-up and window)",
        progress::human(started.elapsed())
    );
    println!();
    print!("{}", table(&results, &sides, opts.rounds, hz));
    println!();
    print!("{}", ratios(&results, hz));
    if opts.tls {
        println!();
        print!("{}", tls_cost(&results, hz));
    }
    Ok(())
}

/// The nominal length (warm-up plus window) of every worker run, in the order they run: the
/// server's warm-up per workload, then per round, workload and client.
fn plan(opts: &Options, sides: &[Side], warmup_of: impl Fn(Side) -> f64) -> Vec<Duration> {
    let secs = |s: f64| Duration::try_from_secs_f64(s).unwrap_or_default();
    let mut all = Vec::new();
    if opts.server_warmup > 0.0 {
        all.extend(WORKLOADS.iter().map(|_| secs(opts.server_warmup)));
    }
    for round in 1..=opts.rounds {
        for _workload in WORKLOADS {
            let mut order = sides.to_vec();
            if round % 2 == 0 {
                order.reverse();
            }
            all.extend(
                order
                    .into_iter()
                    .map(|side| secs(warmup_of(side) + opts.seconds)),
            );
        }
    }
    all
}

/// One worker's outcome.
#[derive(Debug, Clone, Copy)]
struct Run {
    label: &'static str,
    side: Side,
    round: u32,
    sample: Sample,
}

/// A [`Sample`] in the table's units.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Summary {
    ops_per_sec: f64,
    p50_us: f64,
    p99_us: f64,
    cpu_s: f64,
    cpu_us_per_op: f64,
    cpu_total_s: f64,
    rss_mib: f64,
}

impl Summary {
    fn of(s: &Sample, hz: u64) -> Summary {
        let ticks = hz as f64;
        Summary {
            ops_per_sec: s.ops_per_sec(),
            p50_us: s.p50_ns as f64 / 1e3,
            p99_us: s.p99_ns as f64 / 1e3,
            cpu_s: s.cpu_window_ticks as f64 / ticks,
            cpu_us_per_op: s.cpu_us_per_op(hz),
            cpu_total_s: s.cpu_total_ticks as f64 / ticks,
            rss_mib: s.hwm_kib as f64 / 1024.0,
        }
    }
}

/// The median of each field over `all` (the upper one for an even count), so that one slow
/// round does not decide; `None` when empty. Each field's median may come from another round.
fn median(all: &[Summary]) -> Option<Summary> {
    let pick = |field: fn(&Summary) -> f64| crate::bench::median_by(all, field);
    Some(Summary {
        ops_per_sec: pick(|s| s.ops_per_sec)?,
        p50_us: pick(|s| s.p50_us)?,
        p99_us: pick(|s| s.p99_us)?,
        cpu_s: pick(|s| s.cpu_s)?,
        cpu_us_per_op: pick(|s| s.cpu_us_per_op)?,
        cpu_total_s: pick(|s| s.cpu_total_s)?,
        rss_mib: pick(|s| s.rss_mib)?,
    })
}

/// The summaries of one workload and client, in round order.
fn summaries(results: &[Run], label: &str, side: Side, hz: u64) -> Vec<Summary> {
    results
        .iter()
        .filter(|r| r.label == label && r.side == side)
        .map(|r| Summary::of(&r.sample, hz))
        .collect()
}

/// One table row.
fn row(label: &str, client: &str, s: &Summary) -> String {
    format!(
        "{:<34} {:<12} {:>10.0} {:>9.1} {:>9.1} {:>8.2} {:>9.2} {:>10.2} {:>9.1}\n",
        label,
        client,
        s.ops_per_sec,
        s.p50_us,
        s.p99_us,
        s.cpu_s,
        s.cpu_us_per_op,
        s.cpu_total_s,
        s.rss_mib,
    )
}

/// The results table: per workload and client, one row per round, then (with several
/// rounds) the medians.
fn table(results: &[Run], sides: &[Side], rounds: u32, hz: u64) -> String {
    let mut out = format!(
        "{:<34} {:<12} {:>10} {:>9} {:>9} {:>8} {:>9} {:>10} {:>9}\n",
        "workload",
        "client",
        "ops/s",
        "p50 µs",
        "p99 µs",
        "CPU s",
        "CPU µs/op",
        "CPU tot s",
        "RSS MiB"
    );
    for (_, label) in WORKLOADS {
        for &side in sides {
            for run in results
                .iter()
                .filter(|r| r.label == label && r.side == side)
            {
                let client = if rounds > 1 {
                    format!("{} #{}", side.name(), run.round)
                } else {
                    side.name().to_owned()
                };
                out.push_str(&row(label, &client, &Summary::of(&run.sample, hz)));
            }
            if rounds > 1 {
                if let Some(m) = median(&summaries(results, label, side, hz)) {
                    out.push_str(&row(label, &format!("{} med", side.name()), &m));
                }
            }
        }
    }
    out
}

/// The ratios ours/Java per workload (of the medians), and whether each target is met.
fn ratios(results: &[Run], hz: u64) -> String {
    let mut out = format!(
        "{:<34} {:>9} {:>9} {:>9} {:>12} {:>9}\n",
        "ratio ours/java", "ops/s", "p50", "p99", "CPU µs/op", "RSS"
    );
    let mut verdicts = Vec::new();
    for (i, (_, label)) in WORKLOADS.iter().enumerate() {
        let (Some(ours), Some(theirs)) = (
            median(&summaries(results, label, Side::Ours, hz)),
            median(&summaries(results, label, Side::Java, hz)),
        ) else {
            continue;
        };
        let ops = ours.ops_per_sec / theirs.ops_per_sec;
        let p50 = ours.p50_us / theirs.p50_us;
        let p99 = ours.p99_us / theirs.p99_us;
        let cpu = ours.cpu_us_per_op / theirs.cpu_us_per_op;
        let rss = ours.rss_mib / theirs.rss_mib;
        out.push_str(&format!(
            "{label:<34} {ops:>8.2}x {p50:>8.2}x {p99:>8.2}x {cpu:>11.2}x {rss:>8.3}x\n"
        ));
        let tag = if i == 0 { "(a)" } else { "(b)" };
        if i == 1 {
            verdicts.push(target(
                &format!("{tag} ops/s >= 1.2x Java"),
                ops,
                ops >= 1.2,
            ));
        } else {
            verdicts.push(target(&format!("{tag} p50 <= Java"), p50, p50 <= 1.0));
        }
        verdicts.push(target(
            &format!("{tag} CPU/op <= 0.5x Java"),
            cpu,
            cpu <= 0.5,
        ));
        verdicts.push(target(
            &format!("{tag} peak RSS <= 0.1x Java"),
            rss,
            rss <= 0.1,
        ));
    }
    out.push_str("\ntargets:\n");
    for verdict in verdicts {
        out.push_str(&verdict);
    }
    out
}

/// What TLS costs our client: ours-tls / ours per workload (of the medians).
fn tls_cost(results: &[Run], hz: u64) -> String {
    let mut out = format!(
        "{:<34} {:>9} {:>9} {:>9} {:>12} {:>9}\n",
        "TLS cost ours-tls/ours", "ops/s", "p50", "p99", "CPU µs/op", "RSS"
    );
    for (_, label) in WORKLOADS {
        let (Some(tls), Some(plain)) = (
            median(&summaries(results, label, Side::OursTls, hz)),
            median(&summaries(results, label, Side::Ours, hz)),
        ) else {
            continue;
        };
        out.push_str(&format!(
            "{label:<34} {:>8.2}x {:>8.2}x {:>8.2}x {:>11.2}x {:>8.3}x\n",
            tls.ops_per_sec / plain.ops_per_sec,
            tls.p50_us / plain.p50_us,
            tls.p99_us / plain.p99_us,
            tls.cpu_us_per_op / plain.cpu_us_per_op,
            tls.rss_mib / plain.rss_mib,
        ));
    }
    out
}

fn target(what: &str, ratio: f64, met: bool) -> String {
    let verdict = if met { "met" } else { "NOT met" };
    format!("  {what:<30} {ratio:>7.3}x  {verdict}\n")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn medians_are_taken_field_by_field() {
        let s = |ops, p50_ns, cpu_window_ticks| {
            let sample = Sample {
                ops,
                measure_ms: 1000,
                p50_ns,
                cpu_window_ticks,
                ..Sample::default()
            };
            Summary::of(&sample, 100)
        };
        // CPU per op: 10 ms / 10, 40 ms / 40, 60 ms / 20 = 1000, 1000, 3000 µs.
        let m = median(&[s(10, 300, 1), s(40, 100, 4), s(20, 200, 6)]).unwrap();
        assert_eq!(
            (m.ops_per_sec, m.p50_us, m.cpu_us_per_op),
            (20.0, 0.2, 1000.0)
        );
        assert_eq!(median(&[s(1, 1, 0), s(3, 3, 0)]).unwrap().ops_per_sec, 3.0);
        assert_eq!(median(&[]), None);
    }
}
