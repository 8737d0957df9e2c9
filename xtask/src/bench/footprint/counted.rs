//! Instructions and allocations per uncontended lock cycle, for each recipe.
//!
//! `zk-worker count` runs one session's lock cycles back to back against a fresh server: a
//! warm-up of [`WARMUP`] cycles, then the counted ones. Its global allocator counts the
//! counted cycles' allocations exactly. Its instructions are counted by callgrind, which counts
//! user-space instructions of the whole process: run twice, with [`SHORT`] and [`LONG`]
//! counted cycles, the difference divided by `LONG - SHORT` is one cycle's, start-up and
//! shut-down cancelled out (the same binary on the same inputs gives the same count within a
//! few hundredths of a per cent, whatever else the machine does). Kernel time (the socket
//! calls) is not in it, nor the server's: this is the client's own cost.

use std::fmt::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};

use super::Result;
use crate::zk::{ZkOptions, ZkServer};

/// Uncounted cycles before the counted ones.
pub const WARMUP: u64 = 50;
/// Counted cycles of the short run.
pub const SHORT: u64 = 200;
/// Counted cycles of the long run.
pub const LONG: u64 = 1_200;

/// The workloads counted: one uncontended cycle of each recipe.
pub const WORKLOADS: [(&str, &str); 8] = [
    ("mutex", "mutex"),
    ("read lock", "read"),
    ("write lock", "write"),
    ("semaphore mutex", "semmutex"),
    ("semaphore (3), one lease", "sem:3"),
    ("multi-lock over 2", "multi:2"),
    // What tokio and the codec alone cost for the mutex cycle's requests (`floor`).
    (FLOOR, "floor"),
    (FLOOR_TWO_TASKS, "floor-two-tasks"),
];

/// Ours dropped, beside the Rust peer whose lock only drops.
pub const MUTEX_DROPPED: &str = "mutex, guard dropped";
/// The Rust peer's row: zookeeper-client 0.11's `Client::lock`, dropped (`zkc-worker count`).
pub const PEER: &str = "zookeeper-client 0.11 mutex, dropped";

/// The floor's row: the mutex cycle's three requests with tokio and zk-proto alone.
pub const FLOOR: &str = "floor: the mutex cycle's 3 requests, tokio + zk-proto alone";
/// The same through a connection task (a channel in, a oneshot out): DESIGN.md's shape.
pub const FLOOR_TWO_TASKS: &str = "floor through a connection task (channel in, oneshot out)";

/// One workload's counts.
#[derive(Debug, Clone, PartialEq)]
pub struct Cost {
    /// What was counted (`mutex`, `read lock`, ...).
    pub case: String,
    /// User-space instructions per cycle (callgrind), or why there are none.
    pub instructions: std::result::Result<f64, String>,
    /// Heap allocations per cycle.
    pub allocations: f64,
    /// Bytes those allocations asked for, per cycle.
    pub bytes: f64,
}

/// Counts every workload of [`WORKLOADS`] against a fresh standalone server.
///
/// # Errors
/// The worker's build or a run that fails.
pub fn measure_all() -> Result<Vec<Cost>> {
    let worker = crate::bench::worker::build_worker("bench footprint")?;
    let server = ZkServer::start_with(ZkOptions::default())?;
    let connect = server.connect_string();
    let valgrind = valgrind_available();
    let mut costs = Vec::new();
    for (case, workload) in WORKLOADS {
        eprintln!("footprint: counting {case} ({workload}) ...");
        costs.push(measure(&worker, &connect, case, workload, valgrind)?);
    }
    // Like with like against the Rust peer: both dropped (its worker speaks `count` too).
    costs.push(measure(
        &worker,
        &connect,
        MUTEX_DROPPED,
        "mutex-drop",
        valgrind,
    )?);
    match crate::bench::worker::build_peer_worker("bench footprint") {
        Ok(peer) => {
            eprintln!("footprint: counting {PEER} ...");
            costs.push(measure(&peer, &connect, PEER, "mutex", valgrind)?);
        }
        Err(e) => eprintln!("footprint: zookeeper-client's row is left out: {e}"),
    }
    Ok(costs)
}

fn valgrind_available() -> bool {
    Command::new("valgrind")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Counts one workload.
fn measure(
    worker: &Path,
    connect: &str,
    case: &str,
    workload: &str,
    valgrind: bool,
) -> Result<Cost> {
    let path = format!("/footprint-{}", workload.replace(':', "-"));
    let line = run_worker(worker, connect, workload, &path, LONG, None)?;
    let counted = parse_count(&line)?;
    let instructions = if valgrind {
        let out = std::env::temp_dir().join(format!("xtask-callgrind-{}", std::process::id()));
        let mut totals = Vec::new();
        for cycles in [SHORT, LONG] {
            run_worker(worker, connect, workload, &path, cycles, Some(&out))?;
            let text = std::fs::read_to_string(&out)?;
            totals.push(parse_callgrind_total(&text)?);
        }
        let _ = std::fs::remove_file(&out);
        match totals.as_slice() {
            [short, long] => Ok(per_cycle(*short, *long)),
            _ => Err("callgrind gave no totals".to_owned()),
        }
    } else {
        Err("not counted: valgrind is not installed".to_owned())
    };
    Ok(Cost {
        case: case.to_owned(),
        instructions,
        allocations: counted.allocations as f64 / counted.cycles.max(1) as f64,
        bytes: counted.bytes as f64 / counted.cycles.max(1) as f64,
    })
}

/// Runs `zk-worker count` to its `COUNT` line, under callgrind writing to `callgrind_out`
/// when given.
fn run_worker(
    worker: &Path,
    connect: &str,
    workload: &str,
    path: &str,
    cycles: u64,
    callgrind_out: Option<&Path>,
) -> Result<String> {
    let mut cmd = match callgrind_out {
        Some(out) => {
            let mut cmd = Command::new("valgrind");
            cmd.arg("--tool=callgrind")
                .arg(format!("--callgrind-out-file={}", out.display()))
                .arg(worker);
            cmd
        }
        None => Command::new(worker),
    };
    cmd.arg("count")
        .args([connect, workload, path])
        .arg(WARMUP.to_string())
        .arg(cycles.to_string())
        .stdin(Stdio::null())
        .stderr(Stdio::null());
    let out = cmd.output()?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    match stdout.lines().find(|l| l.starts_with("COUNT ")) {
        Some(line) if out.status.success() => Ok(line.to_owned()),
        _ => Err(format!(
            "{} count {workload} failed ({}): {}",
            worker.display(),
            out.status,
            stdout.trim()
        )
        .into()),
    }
}

/// What a `COUNT` line says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counted {
    /// Cycles counted.
    pub cycles: u64,
    /// Allocations in them.
    pub allocations: u64,
    /// Bytes asked for.
    pub bytes: u64,
}

/// Parses `COUNT cycles=N allocations=A bytes=B`.
pub fn parse_count(line: &str) -> Result<Counted> {
    let field = |name: &str| -> Result<u64> {
        line.split_whitespace()
            .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| format!("no {name}= in `{line}`").into())
    };
    Ok(Counted {
        cycles: field("cycles")?,
        allocations: field("allocations")?,
        bytes: field("bytes")?,
    })
}

/// The `summary:` (or `totals:`) of a callgrind output file: instructions executed.
pub fn parse_callgrind_total(text: &str) -> Result<u64> {
    text.lines()
        .find_map(|l| {
            l.strip_prefix("summary:")
                .or_else(|| l.strip_prefix("totals:"))
        })
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .ok_or_else(|| "no summary line in the callgrind output".into())
}

/// One cycle's instructions from the short and the long run's totals.
pub fn per_cycle(short: u64, long: u64) -> f64 {
    (long as f64 - short as f64) / (LONG - SHORT) as f64
}

/// The goals checked on the mutex: instructions within [`super::FLOOR_FACTOR_TARGET`] times
/// the floor through a connection task, and below zookeeper-client's (both dropping their
/// guard: like with like); allocations at most [`super::ALLOCATIONS_TARGET`].
fn goals(costs: &[Cost]) -> String {
    let find = |case: &str| costs.iter().find(|c| c.case == case);
    let instructions = |case: &str| find(case).and_then(|c| c.instructions.as_ref().ok().copied());
    let met = |ok: bool| if ok { "met" } else { "not met" };
    let mut out = String::from(
        "
Goals (mutex):
",
    );
    let _ = writeln!(
        out,
        "- instructions within {}× the floor through a connection task: {}",
        super::FLOOR_FACTOR_TARGET,
        match (instructions("mutex"), instructions(FLOOR_TWO_TASKS)) {
            (Some(ours), Some(floor)) if floor > 0.0 => format!(
                "{:.2}× ({ours:.0} over {floor:.0}): {}",
                ours / floor,
                met(ours <= super::FLOOR_FACTOR_TARGET * floor)
            ),
            _ => "not counted".to_owned(),
        }
    );
    let _ = writeln!(
        out,
        "- instructions below zookeeper-client 0.11's, both dropping the guard: {}",
        match (instructions(MUTEX_DROPPED), instructions(PEER)) {
            (Some(ours), Some(peer)) if peer > 0.0 => format!(
                "{:.2}× ({ours:.0} against {peer:.0}): {}",
                ours / peer,
                met(ours < peer)
            ),
            _ => "not counted".to_owned(),
        }
    );
    let _ = writeln!(
        out,
        "- allocations ≤ {:.0}: {}",
        super::ALLOCATIONS_TARGET,
        match find("mutex") {
            Some(m) => format!(
                "{:.1}: {}",
                m.allocations,
                met(m.allocations <= super::ALLOCATIONS_TARGET)
            ),
            None => "not counted".to_owned(),
        }
    );
    out
}

/// The Markdown table, the goals checked on the mutex.
pub fn table(costs: &[Cost]) -> String {
    let mut out = String::from("## Per uncontended lock cycle\n\n");
    let _ = writeln!(
        out,
        "One session, cycles back to back (lock, then `release().await`), {WARMUP} uncounted \
         first. Instructions: callgrind, user space, the difference of a {LONG}- and a \
         {SHORT}-cycle run over {} cycles. Allocations: the worker's counting allocator over \
         the {LONG} cycles.\n",
        LONG - SHORT
    );
    out.push_str("| cycle | instructions | allocations | bytes allocated |\n");
    out.push_str("| --- | ---: | ---: | ---: |\n");
    for c in costs {
        let instructions = match &c.instructions {
            Ok(n) => format!("{n:.0}"),
            Err(why) => why.clone(),
        };
        let _ = writeln!(
            out,
            "| {} | {instructions} | {:.1} | {:.0} |",
            c.case, c.allocations, c.bytes
        );
    }
    let mutex = costs.iter().find(|c| c.case == "mutex");
    for (floor, what) in [
        (FLOOR, "the floor"),
        (FLOOR_TWO_TASKS, "the floor through a connection task"),
    ] {
        let floor = costs.iter().find(|c| c.case == floor);
        if let (Some(mutex), Some(floor)) = (mutex, floor) {
            if let (Ok(ours), Ok(under)) = (&mutex.instructions, &floor.instructions) {
                let _ = writeln!(
                    out,
                    "\nThe mutex cycle above {what}: {:.0} instructions, {:.1} allocations.",
                    ours - under,
                    mutex.allocations - floor.allocations
                );
            }
        }
    }
    out.push_str(&goals(costs));
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_count_line() {
        let c = parse_count("COUNT cycles=1200 allocations=22800 bytes=6000000").unwrap();
        assert_eq!(
            c,
            Counted {
                cycles: 1200,
                allocations: 22_800,
                bytes: 6_000_000
            }
        );
        assert!(parse_count("COUNT cycles=1200").is_err());
        assert!(parse_count("COUNT cycles=x allocations=1 bytes=2").is_err());
    }

    #[test]
    fn reads_callgrind_totals_and_takes_the_difference() {
        let text = "version: 1\ncreator: callgrind-3.19.0\nevents: Ir\nsummary: 58903434\ntotals: 58903434\n";
        assert_eq!(parse_callgrind_total(text).unwrap(), 58_903_434);
        assert!(parse_callgrind_total("events: Ir\n").is_err());
        assert_eq!(per_cycle(10_000_000, 55_000_000), 45_000.0);
    }

    #[test]
    fn the_table_checks_the_mutex_against_the_goals() {
        let cost = |case: &str, instructions: f64, allocations: f64| Cost {
            case: case.into(),
            instructions: Ok(instructions),
            allocations,
            bytes: 4000.0,
        };
        let costs = [
            cost("mutex", 30_000.0, 12.0),
            cost(FLOOR_TWO_TASKS, 16_000.0, 8.0),
            cost(MUTEX_DROPPED, 28_000.0, 12.0),
            cost(PEER, 40_000.0, 29.0),
        ];
        let t = table(&costs);
        assert!(t.contains("| mutex | 30000 | 12.0 | 4000 |"), "{t}");
        assert!(
            t.contains("connection task: 1.88× (30000 over 16000): met"),
            "{t}"
        );
        assert!(t.contains("guard: 0.70× (28000 against 40000): met"), "{t}");
        assert!(t.contains("allocations ≤ 15: 12.0: met"), "{t}");
        // Over twice the floor, above the peer, too many allocations.
        let costs = [
            cost("mutex", 33_000.0, 16.0),
            cost(FLOOR_TWO_TASKS, 16_000.0, 8.0),
            cost(MUTEX_DROPPED, 41_000.0, 16.0),
            cost(PEER, 40_000.0, 29.0),
        ];
        let t = table(&costs);
        assert!(t.contains("2.06× (33000 over 16000): not met"), "{t}");
        assert!(t.contains("1.02× (41000 against 40000): not met"), "{t}");
        assert!(t.contains("16.0: not met"), "{t}");
        // A count missing is said, not judged.
        let t = table(&costs[..1]);
        assert!(t.contains("connection task: not counted"), "{t}");
    }
}
