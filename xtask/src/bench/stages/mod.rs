//! `cargo xtask bench stages [--seconds N]`: where one mutex cycle's time goes (issue 27,
//! item 1). Is the mutex's tail at one session ours, the server's, or the bench's (a server
//! still warming up)?
//!
//! A fresh standalone server (`forceSync` on, as the lock benches run it; pinned to CPU 0
//! and the worker to the others, as they do unless `--pin off`), then the `zk-stages` worker
//! (`src/bin/zk-stages/`), built in release mode with xtask's feature `log` (the recipes' and
//! the client's `tracing` events) into `target/stages`, twice: one session, then four
//! sessions contending on one lock. Each runs `--seconds` of `lock().await` →
//! `guard.release().await` cycles, measured from the very first cycle (no warm-up: the
//! server's first seconds are part of what is looked at; the four-session run finds the
//! server warmed by the first), and times each cycle stage by stage from its own events
//! ([`breakdown`]: a lock() called → "lock attempt", b → the create's request in the IO task,
//! c → the last acquire reply (server), w the wait behind another holder, d → "lock held",
//! e → lock() returned, f → the delete's request, g → its reply (server), h → release()
//! returned).
//!
//! [`tail`] then gives, per run: the p50, p99, p99.9 and max of each stage and of the cycle;
//! the stages of the slowest 1% of cycles against all cycles (medians, and the mean extra
//! time per stage, which adds up to the slow cycles' extra); the slowest 20 cycles with their
//! times since the start and the stage that grew most; and the cycle's spread second by
//! second (a warm-up shows in the first seconds, a log roll or snapshot as a periodic bump).
//! Printed, and written to `target/bench/stages.md`.
//!
//! The events cost something (an `Instant`, a mutex and a push per event, about ten per
//! cycle), so these cycles run a little slower than `bench mutex`'s; what is compared is
//! the stages among themselves, within one run.

pub mod breakdown;
pub mod tail;

use std::error::Error;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use self::breakdown::{Cycle, Stage};
use self::tail::Summary;
use super::load::{Snapshot, WindowLoad};
use super::pin::Pinning;
use super::procfs;
use super::report::{self, Table};
use super::worker::{self, millis};
use crate::deps::{self, Need};
use crate::paths::target_dir;
use crate::worker_process::WorkerProcess;

type Result<T> = std::result::Result<T, Box<dyn Error>>;

/// The session counts run: one (the tail in question), then four contending.
pub const SESSIONS: [usize; 2] = [1, 4];

/// How long a worker may take beyond its run (start, connect, finish, cut the cycles).
const WORKER_SLACK: Duration = Duration::from_secs(120);

/// Cycles that start in the first this many seconds are also left out of one line of the
/// report, to see the tail without the server's warm-up.
const WARM_UP_SECONDS: u64 = 2;

/// The command line of `bench stages`.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// How long each run lasts, in seconds (`--seconds`).
    pub seconds: f64,
    /// The server's `forceSync` (`--force-sync`, default on).
    pub force_sync: bool,
    /// Server and worker on different CPUs (`--pin`, default on).
    pub pin: bool,
}

/// One run's results.
struct Run {
    sessions: usize,
    summary: Summary,
    /// The summary of the cycles after the first [`WARM_UP_SECONDS`].
    warm: Summary,
    skipped: u64,
    why: String,
    events: u64,
    /// The machine's load during the run (others: every process but the worker, the
    /// server and the bench).
    load: WindowLoad,
}

/// Runs `cargo xtask bench stages`.
///
/// # Errors
/// Missing Java or ZooKeeper, a failed build, a server that does not start, or a worker
/// that fails or overruns (it is killed).
pub fn run(opts: &Options) -> Result<()> {
    deps::ensure(&[Need::Java, Need::ZooKeeper])?;
    let target = target_dir().join("stages");
    eprintln!(
        "bench stages: building zk-stages in release mode with feature log (cargo build \
         --release -p xtask --bin zk-stages --no-default-features --features log \
         --target-dir {})",
        target.display()
    );
    let bin = worker::build_release_bin_with("zk-stages", &["log"], &target)?;
    let pinning = if opts.pin { Pinning::plan() } else { None };
    let (server, version) = super::start_server("stages", opts.force_sync, pinning.as_ref())?;
    let connect = server.connect_string();

    let mut runs = Vec::new();
    for sessions in SESSIONS {
        eprintln!(
            "bench stages: {} mutex cycles for {} s from the first one",
            sessions_label(sessions),
            opts.seconds
        );
        let mut cmd = Pinning::command(pinning.as_ref(), &bin);
        cmd.arg(&connect)
            .arg(format!("/bench/stages/{sessions}"))
            .arg(sessions.to_string())
            .arg(millis(opts.seconds).to_string());
        let deadline = Instant::now() + Duration::from_secs_f64(opts.seconds) + WORKER_SLACK;
        let mut cycles: Vec<Cycle> = Vec::new();
        let mut unreadable: Option<String> = None;
        let before = Snapshot::take(server.pid());
        let started = Instant::now();
        let mut worker = WorkerProcess::spawn("stages", cmd)?;
        let end = worker.expect_with("STAGES ", deadline, |line| {
            if !line.starts_with("CYCLE ") {
                return false;
            }
            match Cycle::parse(line) {
                Ok(cycle) => cycles.push(cycle),
                Err(e) => {
                    unreadable.get_or_insert(e);
                }
            }
            true
        })?;
        let after = Snapshot::take(server.pid());
        let elapsed = started.elapsed();
        worker.finish(deadline)?;
        if let Some(e) = unreadable {
            return Err(format!("stages worker: {e}").into());
        }
        let fields = crate::line::Fields::parse(&end, "STAGES")?;
        let load = WindowLoad::between(
            &before,
            &after,
            fields.number("cpu_ticks")?,
            elapsed,
            procfs::clock_ticks_per_second(),
        );
        if load.noisy() {
            eprintln!(
                "bench stages: noisy run: other processes used {} of a core (load average {})",
                load.describe_others(),
                load.describe_load_average()
            );
        }
        let warm: Vec<Cycle> = cycles
            .iter()
            .copied()
            .filter(|c| c.at >= WARM_UP_SECONDS * 1_000_000_000)
            .collect();
        runs.push(Run {
            sessions,
            summary: tail::summarize(&cycles),
            warm: tail::summarize(&warm),
            skipped: fields.number("skipped")?,
            why: fields.text("why")?.to_owned(),
            events: fields.number("events")?,
            load,
        });
    }
    drop(server);

    let header = [
        super::versions::machine(),
        format!(
            "server:  ZooKeeper {version}, standalone, forceSync={}, one fresh server for both runs",
            if opts.force_sync { "yes" } else { "no" }
        ),
        Pinning::describe(pinning.as_ref()),
        format!(
            "ours:    recipe-mutex on zk-client with feature tracing (a collecting subscriber), \
             tokio current-thread runtime, release build; {} s per run from the first cycle",
            opts.seconds
        ),
    ];
    let mut text = String::new();
    let mut page = String::from("# Where a mutex cycle's time goes\n\n");
    let _ = writeln!(
        page,
        "`cargo xtask bench stages --seconds {}` (issue 27, item 1). Stages from the client's \
         and the lock's `tracing` events and the worker's own timestamps; see \
         `xtask/src/bench/stages/breakdown.rs` for what each spans. Times in µs.\n",
        opts.seconds
    );
    page.push_str("```text\n");
    for line in &header {
        let _ = writeln!(text, "{line}");
        let _ = writeln!(page, "{line}");
    }
    page.push_str("```\n");
    for run in &runs {
        let (t, md) = render(run);
        text.push_str(&t);
        page.push_str(&md);
    }
    println!("\n{text}");
    let path = report::write_page(&report::dir(), "stages", &page, &[])?;
    println!("bench stages: report {}", path.display());
    Ok(())
}

fn sessions_label(n: usize) -> String {
    if n == 1 {
        "1 session".to_owned()
    } else {
        format!("{n} sessions")
    }
}

/// Microseconds with one decimal.
fn us(ns: u64) -> String {
    format!("{:.1}", ns as f64 / 1000.0)
}

/// One run as terminal text and as Markdown.
fn render(run: &Run) -> (String, String) {
    let s = &run.summary;
    let title = format!(
        "{}: {} cycles ({} handed over), {} skipped{}, {} events; other processes used {} of a \
         core (load average {})",
        sessions_label(run.sessions),
        s.cycles,
        s.handed_over,
        run.skipped,
        if run.skipped > 0 {
            format!(" (first: {} missing)", run.why)
        } else {
            String::new()
        },
        run.events,
        run.load.describe_others(),
        run.load.describe_load_average()
    );
    let mut stages = Table::new(
        &[
            "stage",
            "spans",
            "whose",
            "p50",
            "p99",
            "p99.9",
            "max",
            "slow 1% p50",
            "slow 1% extra (mean)",
        ],
        3,
    );
    let extra_total: f64 = s.stages.iter().map(|r| r.slow_extra_mean).sum();
    for row in &s.stages {
        if row.stage == Stage::Queue && s.handed_over == 0 {
            continue;
        }
        stages.push(vec![
            row.stage.key().to_owned(),
            row.stage.label().to_owned(),
            row.stage.owner().to_owned(),
            us(row.all.p50),
            us(row.all.p99),
            us(row.all.p999),
            us(row.all.max),
            us(row.slow_p50),
            format!("{:.1}", row.slow_extra_mean / 1000.0),
        ]);
    }
    stages.push(vec![
        "cycle".to_owned(),
        "lock() called → release() returned".to_owned(),
        String::new(),
        us(s.total.p50),
        us(s.total.p99),
        us(s.total.p999),
        us(s.total.max),
        us(s.slow_total_p50),
        format!("{:.1}", extra_total / 1000.0),
    ]);
    let w = &run.warm.total;
    let without = format!(
        "without the first {WARM_UP_SECONDS} s ({} cycles): cycle p50 {}, p99 {}, p99.9 {}, max {} µs",
        run.warm.cycles,
        us(w.p50),
        us(w.p99),
        us(w.p999),
        us(w.max)
    );
    let share = |owner: &str| {
        let sum: f64 = s
            .stages
            .iter()
            .filter(|r| r.stage.owner() == owner)
            .map(|r| r.slow_extra_mean)
            .sum();
        if extra_total > 0.0 {
            100.0 * sum / extra_total
        } else {
            0.0
        }
    };
    let verdict = format!(
        "the slowest 1% ({} cycles, median {} µs against {} µs for all) spend their extra \
         time: server (c, g) {:.0}%, ours (a, b, d, e, f, h) {:.0}%, queue (w) {:.0}%",
        s.slow_count,
        us(s.slow_total_p50),
        us(s.total.p50),
        share("server"),
        share("ours"),
        share("queue")
    );
    let mut slowest = Table::new(&["#", "at (s)", "contender", "cycle", "grew most", "by"], 0);
    for (i, c) in s.slowest.iter().enumerate() {
        slowest.push(vec![
            (i + 1).to_string(),
            format!("{:.3}", c.at as f64 / 1e9),
            c.contender.to_string(),
            us(c.total),
            c.worst.key().to_owned(),
            us(c.worst_excess),
        ]);
    }
    let mut seconds = Table::new(&["second", "cycles", "p50", "p99", "max"], 0);
    for sec in &s.seconds {
        seconds.push(vec![
            sec.second.to_string(),
            sec.cycles.to_string(),
            us(sec.total.p50),
            us(sec.total.p99),
            us(sec.total.max),
        ]);
    }
    let text = format!(
        "\n{title}\n{}{verdict}\n{without}\nslowest {} cycles (µs; \"grew most\": the stage \
         furthest above its own median, by how much):\n{}cycle by second since the start (µs):\n{}",
        stages.text(),
        s.slowest.len(),
        slowest.text(),
        seconds.text()
    );
    let md = format!(
        "\n## {title}\n\n{}\n{verdict}.\n\n{without}.\n\n### The slowest {} cycles\n\n\
         \"grew most\": the stage furthest above its own median, and by how much (µs).\n\n{}\n\
         ### The cycle, second by second since the start (µs)\n\n{}",
        stages.markdown(),
        s.slowest.len(),
        slowest.markdown(),
        seconds.markdown()
    );
    (text, md)
}
