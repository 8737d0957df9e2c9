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
//! - ours: `zk-worker bench <connect> mutex ...` (built here in release mode; a current-thread
//!   tokio runtime, one `zk_client::Client` per contender); the release is
//!   `guard.release().await`, which awaits the delete as Curator's `release()` does;
//! - ours (drop): the same, releasing by dropping the guard (the delete goes out in the
//!   background);
//! - curator: `java/CuratorBench.java` (`CuratorWorker bench`), one `CuratorFramework` per contender, one thread
//!   each, JVM defaults;
//! - kazoo: `python/kazoo_lock_bench.py` on `/usr/bin/python3`, one `KazooClient` per
//!   contender, one thread each, `client.Lock(path)`.
//!
//! Every worker warms up unmeasured (Java longer, for its JIT), then measures for `--seconds`.
//! It prints `WINDOW_START` and `WINDOW_END` at the window's edges; the bench reads the
//! server's `zk_packets_received` (`mntr`) at each, so that the requests each cycle costs the
//! server are known (session pings of waiting contenders included). Before all that the
//! server's JVM is warmed up with our worker at each session count. With `--rounds R`
//! (default [`DEFAULT_ROUNDS`]) every worker runs R times; the order of the libraries rotates
//! (round r starts with library r mod k), so that no library always runs first, and the
//! report gives each library's place per round and whether the first place costs (its p99
//! and cycles/s against its own median, per place).
//!
//! Each ratio ours/theirs is taken per round (the same round's two runs) and reported as the
//! median over the rounds, the min–max and a bootstrap 90% interval of the median
//! (`bench::interval`). A target is met only when every round's ratio is on its side over at
//! least 5 rounds; with fewer it is not shown.
//!
//! During every window the bench records the machine's load (`bench::load`: the load average
//! at its edges, and the CPU that processes other than the worker, the server and the bench
//! used; a run whose others used more than 10% of one core is noisy) and the server's request
//! rate every 500 ms (`bench::slices`): a first slice more than 10% off the later ones says
//! the warm-up was too short. Both are reported per run, with round 1's warm-up check on
//! stdout.
//!
//! Each worker reports a [`Sample`]: cycles, p50/p99 latency, its own CPU time in the window
//! (`/proc/self/stat`) and its peak RSS (`VmHWM`). The report shows every library, the ratios
//! ours/Curator and ours/kazoo, and the targets against Curator: cycles/s at least 1.5× at one
//! session and 1.3× at 16, p99 no worse, CPU per cycle at most 0.2×, peak RSS at most a tenth.
//! Nothing is asserted: this reports.
//!
//! Then (unless `--no-cost`) each library runs each workload twice more through a counting
//! proxy in front of the server (`cost`): alone, for what one cycle costs on the wire
//! (awaited round trips, `fsync`ed writes, requests, bytes), and with sessions contending, for
//! the notifications per hand-off; the report and stdout carry that table too.

use std::error::Error;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::thread;
use std::time::{Duration, Instant};

use super::pin::Pinning;
use super::procfs;
use super::progress::{self, Plan};
use super::report;
use super::sample::Sample;
use super::worker::{self, millis};
use crate::deps::{self, Need};
use crate::recipe::Recipe;
use crate::recipe::Workload;
use crate::zk::ZkServer;

type Result<T> = std::result::Result<T, Box<dyn Error>>;

pub(crate) use super::versions::PYTHON;

/// The rounds when `--rounds` is not given: the fewest that can meet a target.
pub const DEFAULT_ROUNDS: u32 = 5;

/// How long a worker may take beyond its warm-up and window (start, connect all its
/// sessions, finish the cycles in progress, close).
const WORKER_SLACK: Duration = Duration::from_secs(120);

/// The command line of `bench mutex`.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// The measured window of each worker, in seconds (`--seconds`, default 10).
    pub seconds: f64,
    /// How many times each worker runs (`--rounds`, default [`DEFAULT_ROUNDS`]); the order
    /// of the libraries rotates, and the ratios are taken per round.
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
    /// The counted-cost pass (`cost`) after the measured runs (off with `--no-cost`).
    pub cost: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            seconds: 10.0,
            rounds: DEFAULT_ROUNDS,
            sessions: vec![1, 4, 16],
            rust_warmup: 1.0,
            java_warmup: 5.0,
            kazoo_warmup: 1.0,
            server_warmup: 8.0,
            force_sync: true,
            pin: true,
            cost: true,
        }
    }
}

/// One measured case: a workload at a session count.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Case {
    label: String,
    /// The workers' workload (its argument: `mutex`, `read`, `write`, `rwmix:90`, `multi:2`).
    workload: Workload,
    sessions: usize,
}

/// The libraries compared on `recipe` (kazoo has no multi-lock; its semaphore of one stands
/// for the semaphore mutex).
fn libs(recipe: Recipe) -> &'static [Lib] {
    match recipe {
        Recipe::Mutex => &Lib::MUTEX,
        Recipe::Semaphore | Recipe::SemaphoreMutex => &Lib::ALL,
        Recipe::Rwlock => &[Lib::Ours, Lib::Curator, Lib::Kazoo],
        Recipe::Multilock => &[Lib::Ours, Lib::Curator],
    }
}

/// The cases of `recipe` (the mutex's at the session counts given).
fn cases(recipe: Recipe, sessions: &[usize]) -> Vec<Case> {
    let case = |label: &str, workload, sessions| Case {
        label: label.to_owned(),
        workload,
        sessions,
    };
    match recipe {
        Recipe::Mutex => sessions
            .iter()
            .map(|&n| case(&sessions_label(n), Workload::Mutex, n))
            .collect(),
        Recipe::Rwlock => vec![
            case("readers, 4 sessions", Workload::Read, 4),
            case("readers, 16 sessions", Workload::Read, 16),
            case("writers, 4 sessions", Workload::Write, 4),
            case("90/10 mix, 16 sessions", Workload::ReadWriteMix(90), 16),
        ],
        Recipe::Multilock => vec![
            case("2 members, 4 sessions", Workload::MultiLock(2), 4),
            case("4 members, 4 sessions", Workload::MultiLock(4), 4),
        ],
        Recipe::SemaphoreMutex => vec![
            case("1 session", Workload::SemaphoreMutex, 1),
            case("4 sessions", Workload::SemaphoreMutex, 4),
        ],
        Recipe::Semaphore => vec![
            case("3 leases, 4 sessions", Workload::Semaphore(3), 4),
            case("3 leases, 16 sessions", Workload::Semaphore(3), 16),
        ],
    }
}

/// The order of the libraries in round `round` (from 1): `libs` rotated left by `round - 1`,
/// so that round r starts with library (r - 1) mod k and over k rounds each runs first once.
fn order(libs: &[Lib], round: u32) -> Vec<Lib> {
    let mut order = libs.to_vec();
    if !order.is_empty() {
        let shift = usize::try_from(round.saturating_sub(1)).unwrap_or(0) % order.len();
        order.rotate_left(shift);
    }
    order
}

/// Whether `lib` runs `case`. kazoo's `ReadLock`/`WriteLock` taken alternately by each
/// contender (the 90/10 mix) did not finish here: at 16 sessions a contender was still
/// blocked 60 s after the window (seen with kazoo 2.8.0); it runs the pure cases only.
fn runs(lib: Lib, case: &Case) -> bool {
    !(lib == Lib::Kazoo && matches!(case.workload, Workload::ReadWriteMix(_)))
}

/// How many sessions (cohorts) [`Lib::OursCohorts`] spreads its contenders over.
const SPREAD: usize = 4;

/// The libraries compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lib {
    /// recipe-mutex, `guard.release().await`.
    Ours,
    /// recipe-mutex, releasing by dropping the guard.
    OursDrop,
    /// recipe-mutex's `CohortMutex` (lock cohorting, issue 38): the contenders are tasks of
    /// one session sharing one cohort, `guard.release().await`.
    OursCohort,
    /// The same spread over [`SPREAD`] sessions, each with its own cohort: as many
    /// participants in the server's queue, as that many processes would be.
    OursCohorts,
    /// zookeeper-client 0.11's `Client::lock` (kezhuw's, the Rust client a user would pick
    /// instead): its lock is released by dropping it (the delete goes out in the background),
    /// so it compares with [`Lib::OursDrop`].
    ZkClient,
    /// Curator 5.4's `InterProcessMutex`.
    Curator,
    /// kazoo's `Lock`.
    Kazoo,
}

impl Lib {
    const ALL: [Lib; 4] = [Lib::Ours, Lib::OursDrop, Lib::Curator, Lib::Kazoo];
    /// The mutex's: [`Lib::ALL`], the cohorts and the Rust peer.
    const MUTEX: [Lib; 7] = [
        Lib::Ours,
        Lib::OursDrop,
        Lib::OursCohort,
        Lib::OursCohorts,
        Lib::ZkClient,
        Lib::Curator,
        Lib::Kazoo,
    ];

    fn name(self) -> &'static str {
        match self {
            Lib::Ours => "ours",
            Lib::OursDrop => "ours (drop)",
            Lib::OursCohort => "ours (cohort)",
            Lib::OursCohorts => "ours (4 cohorts)",
            Lib::ZkClient => "zookeeper-client (drop)",
            Lib::Curator => "curator",
            Lib::Kazoo => "kazoo",
        }
    }

    /// Its part of the lock path.
    fn slug(self) -> &'static str {
        match self {
            Lib::Ours => "ours",
            Lib::OursDrop => "ours-drop",
            Lib::OursCohort => "ours-cohort",
            Lib::OursCohorts => "ours-cohorts",
            Lib::ZkClient => "zookeeper-client",
            Lib::Curator => "curator",
            Lib::Kazoo => "kazoo",
        }
    }
}

/// Runs `cargo xtask bench mutex|rwlock|multilock [options]`.
///
/// # Errors
/// Bad arguments, missing Java, ZooKeeper, Curator or kazoo, a failed build or compile, a
/// server that does not start, or a worker that fails or overruns (it is killed).
pub fn run(recipe: Recipe, opts: &Options) -> Result<()> {
    let started = Instant::now();
    let cases = cases(recipe, &opts.sessions);
    let mut libs = libs(recipe).to_vec();
    let what = recipe.name();
    deps::ensure(&[Need::Java, Need::ZooKeeper, Need::Curator, Need::Kazoo])?;

    let rust = worker::build_worker(&format!("bench {what}"))?;
    // The Rust peer, where this recipe has it; without it (no registry) the run goes on.
    let peer = match libs.contains(&Lib::ZkClient) {
        true => match worker::build_peer_worker(&format!("bench {what}")) {
            Ok(path) => Some(path),
            Err(e) => {
                eprintln!("bench {what}: zookeeper-client's side is left out: {e}");
                libs.retain(|&l| l != Lib::ZkClient);
                None
            }
        },
        false => None,
    };
    let libs = libs.as_slice();
    let java_classpath = crate::curator::classpath()?;
    let workers = Workers {
        rust,
        peer,
        java_classpath,
        kazoo_script: Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("python")
            .join("kazoo_lock_bench.py"),
        pinning: if opts.pin { Pinning::plan() } else { None },
    };

    let (server, version) = super::start_server(what, opts.force_sync, workers.pinning.as_ref())?;
    let hz = procfs::clock_ticks_per_second();
    let connect = server.connect_string();

    let warmup_of = |lib| match lib {
        Lib::Ours | Lib::OursDrop | Lib::OursCohort | Lib::OursCohorts | Lib::ZkClient => {
            opts.rust_warmup
        }
        Lib::Curator => opts.java_warmup,
        Lib::Kazoo => opts.kazoo_warmup,
    };
    let mut nominal = plan(&cases, libs, opts, warmup_of);
    if opts.cost {
        nominal.extend(cost::plan(&cases, libs, warmup_of));
    }
    let mut plan = Plan::new(nominal);
    let say = |plan: &Plan, what_runs: String| {
        let (i, n) = plan.step();
        eprintln!(
            "bench {what}: run {i}/{n}: {what_runs}; about {} left",
            progress::human(plan.left())
        );
    };

    if opts.server_warmup > 0.0 {
        for (i, case) in cases.iter().enumerate() {
            say(
                &plan,
                format!(
                    "server warm-up, {}, ours ({} s, not measured)",
                    case.label, opts.server_warmup
                ),
            );
            let run_started = Instant::now();
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
            run_worker(cmd, budget, &server, hz)
                .map_err(|e| format!("server warm-up, {}: {e}", case.label))?;
            plan.on_run_done(run_started.elapsed());
        }
    }

    let mut results: Vec<Run> = Vec::new();
    let mut orders: Vec<(u32, Vec<Lib>)> = Vec::new();
    for round in 1..=opts.rounds {
        let order = order(libs, round);
        let names: Vec<&str> = order.iter().map(|l| l.name()).collect();
        eprintln!(
            "bench {what}: round {round}/{}: order {}",
            opts.rounds,
            names.join(", ")
        );
        orders.push((round, order.clone()));
        for (c, case) in cases.iter().enumerate() {
            let in_case = order.iter().copied().filter(|&lib| runs(lib, case));
            for (position, lib) in in_case.enumerate() {
                let warmup = warmup_of(lib);
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
                say(
                    &plan,
                    format!(
                        "round {round}/{}, {}, {} ({warmup} s warm-up + {} s measured)",
                        opts.rounds,
                        case.label,
                        lib.name(),
                        opts.seconds
                    ),
                );
                let run_started = Instant::now();
                let budget = Duration::from_secs_f64(warmup + opts.seconds) + WORKER_SLACK;
                let measured = run_worker(cmd, budget, &server, hz)
                    .map_err(|e| format!("{}, {} worker: {e}", case.label, lib.name()))?;
                plan.on_run_done(run_started.elapsed());
                if let Some(others) = measured.load.others_cores.filter(|_| measured.load.noisy()) {
                    eprintln!(
                        "bench {what}: noisy window: other processes used {:.0}% of a core \
                         (load average {})",
                        others * 100.0,
                        measured.load.describe_load_average()
                    );
                }
                results.push(Run {
                    lib,
                    case: c,
                    round,
                    position,
                    sample: measured.sample,
                    requests: measured.requests,
                    load: measured.load,
                    slices: measured.slices,
                });
            }
        }
    }
    let cost_runs = if opts.cost {
        cost::run(what, &cases, libs, &workers, &server, warmup_of, &mut plan)?
    } else {
        Vec::new()
    };
    drop(server);

    let sync = if opts.force_sync { "yes" } else { "no" };
    let mut header = vec![
        super::versions::machine(),
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
    if libs.contains(&Lib::Kazoo) {
        let kazoo_recipe = match recipe {
            Recipe::Semaphore => "Semaphore (its own protocol, not Curator's)",
            Recipe::SemaphoreMutex => "Semaphore of 1 (its own protocol, not Curator's)",
            Recipe::Rwlock => "ReadLock / WriteLock",
            _ => "Lock",
        };
        header.push(format!(
            "kazoo:   kazoo {} {kazoo_recipe} (acquire/release), {}, threading handler",
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
         server warmed up {} s per case first; {} round(s), the order rotating (round r \
         starts with library r mod k)",
        opts.seconds,
        opts.rust_warmup,
        opts.java_warmup,
        opts.kazoo_warmup,
        opts.server_warmup,
        opts.rounds,
    ));
    header.push(format!(
        "time:    {} wall-clock for this bench, from its start to this report (the worker \
         build, the server's start, every warm-up and window)",
        progress::human(started.elapsed())
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
    let mut comparisons = vec![ratios(&results, &cases, Lib::Curator, hz)];
    if libs.contains(&Lib::Kazoo) {
        comparisons.push(ratios(&results, &cases, Lib::Kazoo, hz));
    }
    if libs.contains(&Lib::ZkClient) {
        // Like with like: both dropped; and ours awaited against theirs dropped.
        comparisons.push(ratios_of(
            &results,
            &cases,
            Lib::OursDrop,
            Lib::ZkClient,
            hz,
        ));
        comparisons.push(ratios(&results, &cases, Lib::ZkClient, hz));
    }
    for cohort in [Lib::OursCohort, Lib::OursCohorts] {
        if libs.contains(&cohort) {
            comparisons.push(ratios_of(&results, &cases, cohort, Lib::Ours, hz));
            comparisons.push(ratios_of(&results, &cases, cohort, Lib::Curator, hz));
        }
    }
    let verdicts = targets(recipe, &results, &cases, hz);
    let order_table = order_effect(&results, hz);
    let load_lines = load_summary(&results, &orders);
    let warmup_lines = warmup_check(&results, &cases);
    println!();
    print!("{results_table}");
    for table in &comparisons {
        println!();
        print!("{}", table.text());
    }
    println!(
        "\nratios per round (ours and theirs of the same round); median, min–max and a bootstrap 90% interval of the median over the rounds"
    );
    println!();
    print!("{}", verdicts.text());
    println!(
        "a target is met only when every round's ratio is on its side, over at least {} rounds \
         (noisy runs: ours' and Curator's whose window others' CPU made noisy)",
        crate::bench::interval::MIN_ROUNDS
    );
    println!();
    print!("{}", order_table.text());
    println!();
    print!("{load_lines}");
    println!();
    print!("{warmup_lines}");
    let mut page = report_page(
        what,
        &header,
        &results_table,
        &Sections {
            ratios: &comparisons,
            targets: &verdicts,
            order: &order_table,
            load_summary: &load_lines,
            load: &load_table(&results, &cases),
        },
    );
    if opts.cost {
        let cost_table = cost::table(&cases, libs, &cost_runs);
        println!();
        print!("{cost_table}");
        page.push_str(&format!(
            "\n## Counted protocol cost\n\n```text\n{cost_table}```\n"
        ));
    }
    let charts = charts(&results, &cases, libs, hz);
    let charts: Vec<(&str, report::Chart)> = vec![("cycles", charts.0), ("p99", charts.1)];
    match report::write_page(&report::dir(), what, &page, &charts) {
        Ok(path) => println!("\nreport: {} (charts beside it)", path.display()),
        Err(e) => eprintln!("bench {what}: could not write the report: {e}"),
    }
    Ok(())
}

/// The nominal length (warm-up plus window) of every worker run of a bench, in the order they
/// run: the server's warm-up per case, then per round, case and library.
fn plan(
    cases: &[Case],
    libs: &[Lib],
    opts: &Options,
    warmup_of: impl Fn(Lib) -> f64,
) -> Vec<Duration> {
    let secs = |s: f64| Duration::try_from_secs_f64(s).unwrap_or_default();
    let mut all = Vec::new();
    if opts.server_warmup > 0.0 {
        all.extend(cases.iter().map(|_| secs(opts.server_warmup)));
    }
    for round in 1..=opts.rounds {
        let order = order(libs, round);
        for case in cases {
            for &lib in order.iter().filter(|&&lib| runs(lib, case)) {
                all.push(secs(warmup_of(lib) + opts.seconds));
            }
        }
    }
    all
}

fn sessions_label(n: usize) -> String {
    if n == 1 {
        "1 session".to_owned()
    } else {
        format!("{n} sessions")
    }
}

mod cost;
mod page;
mod summary;
mod workers;

use page::{Sections, charts, report_page};
use workers::{Workers, run_worker};

use super::versions::{jar_version, java_version, kazoo_version, python_version};
#[cfg(test)]
use summary::median;
use summary::{
    Run, Summary, load_summary, load_table, median_of, order_effect, ratios, ratios_of, table,
    targets, warmup_check,
};

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn requests_per_cycle_and_medians() {
        let run = |ops, requests| Run {
            lib: Lib::Ours,
            case: 0,
            round: 1,
            position: 0,
            sample: Sample {
                ops,
                measure_ms: 1000,
                ..Sample::default()
            },
            requests,
            load: crate::bench::load::WindowLoad::default(),
            slices: Vec::new(),
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

    #[test]
    fn the_order_rotates_so_that_each_library_runs_first_in_turn() {
        let names =
            |round| -> Vec<&str> { order(&Lib::ALL, round).iter().map(|l| l.name()).collect() };
        assert_eq!(names(1), ["ours", "ours (drop)", "curator", "kazoo"]);
        assert_eq!(names(2), ["ours (drop)", "curator", "kazoo", "ours"]);
        assert_eq!(names(4), ["kazoo", "ours", "ours (drop)", "curator"]);
        assert_eq!(names(5), names(1));
        let firsts: std::collections::BTreeSet<&str> = (1..=4).map(|r| names(r)[0]).collect();
        assert_eq!(firsts.len(), 4, "each library first once in 4 rounds");
        assert!(order(&[], 3).is_empty());
        // The plan follows the rotation: Curator's longer warm-up moves round by round.
        let opts = Options {
            rounds: 2,
            server_warmup: 0.0,
            ..Options::default()
        };
        let cases = cases(Recipe::Multilock, &[]);
        let plan = plan(&cases, libs(Recipe::Multilock), &opts, |lib| {
            if lib == Lib::Curator { 5.0 } else { 1.0 }
        });
        let secs: Vec<u64> = plan.iter().map(|d| d.as_secs()).collect();
        assert_eq!(secs, [11, 15, 11, 15, 15, 11, 15, 11]);
    }

    /// Runs of ours and Curator in one case over `rounds`, ours' cycles/s and p99 per round
    /// given, Curator's 1000 cycles/s and a p99 of 1 ms.
    fn paired(ours: &[(u64, u64)]) -> Vec<Run> {
        let mut all = Vec::new();
        for (i, &(ops, p99_us)) in ours.iter().enumerate() {
            let round = u32::try_from(i).unwrap() + 1;
            let run = |lib, ops, p99_us: u64| Run {
                lib,
                case: 0,
                round,
                position: 0,
                sample: Sample {
                    ops,
                    measure_ms: 1000,
                    p50_ns: 500_000,
                    p99_ns: p99_us * 1000,
                    cpu_window_ticks: 10,
                    hwm_kib: 1024,
                    ..Sample::default()
                },
                requests: Some(ops * 3),
                load: crate::bench::load::WindowLoad::default(),
                slices: Vec::new(),
            };
            all.push(run(Lib::Ours, ops, p99_us));
            all.push(run(Lib::Curator, 1000, 1000));
        }
        all
    }

    fn verdicts(results: &[Run]) -> Vec<String> {
        let cases = cases(Recipe::Mutex, &[1]);
        targets(Recipe::Mutex, results, &cases, 100)
            .rows
            .iter()
            .map(|row| format!("{} {}", row[0], row[5]))
            .collect()
    }

    #[test]
    fn targets_need_every_round_of_five() {
        // cycles/s 1.6x, 1.7x, 1.5x, 1.9x, 1.55x of Curator's; p99 at or under Curator's.
        let good = paired(&[
            (1600, 900),
            (1700, 1000),
            (1500, 800),
            (1900, 950),
            (1550, 990),
        ]);
        assert_eq!(
            verdicts(&good)[..2],
            ["1 session: cycles/s >= 1x met", "1 session: p99 <= 1x met"]
        );
        // One round's p99 over Curator's: not met, though the median is under.
        let one_slow = paired(&[
            (1600, 900),
            (1700, 1100),
            (1500, 800),
            (1900, 950),
            (1550, 990),
        ]);
        assert_eq!(
            verdicts(&one_slow)[1],
            "1 session: p99 <= 1x not met (rounds on both sides)"
        );
        // Four rounds: not shown.
        assert_eq!(
            verdicts(&good[..8])[0],
            "1 session: cycles/s >= 1x not shown (4 rounds < 5)"
        );
        let cases = cases(Recipe::Mutex, &[1]);
        let ratios = ratios(&good, &cases, Lib::Curator, 100);
        let cycles = &ratios.rows[0];
        assert_eq!(cycles[..4], ["1 session", "cycles/s", "1.60x", "1.50–1.90"]);
        assert_eq!(cycles[5], "5");
        let text = ratios.text();
        assert!(text.starts_with("ours/curator"), "{text}");
    }

    #[test]
    fn the_order_effect_compares_each_place_with_its_own_median() {
        // Ours' p99 is 2 ms when it runs first (round 1), 1 ms otherwise.
        let mut all = paired(&[(1000, 2000), (1000, 1000), (1000, 1000)]);
        for run in &mut all {
            run.position = usize::from((run.round != 1) ^ (run.lib == Lib::Curator));
        }
        let t = summary::order_effect(&all, 100);
        let first = &t.rows[0];
        assert_eq!(first[..3], ["1st in its round", "3", "1.000x"]);
        assert_eq!(first[3], "1.00–2.00");
        // Round 1 by itself: ours 2x its median, Curator 1x.
        let round_1 = t.rows.iter().find(|r| r[0] == "round 1").unwrap();
        assert_eq!(round_1[..4], ["round 1", "2", "2.000x", "1.00–2.00"]);
        assert_eq!(summary::ordinal(2), "2nd");
        assert_eq!(summary::ordinal(11), "11th");
        assert_eq!(summary::ordinal(23), "23rd");
    }
}
