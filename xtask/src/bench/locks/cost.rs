//! The counted protocol cost of each library's lock cycle: every worker run once more through
//! a [`Tap`] in front of the bench's server, and what the server was sent and answered
//! counted in the worker's window (`WINDOW_START` to `WINDOW_END`), per cycle the worker
//! completed in it.
//!
//! Per workload and library, two runs of [`COST_SECONDS`] after the bench's warm-up:
//!
//! - **alone**: 1 session, uncontended: awaited round trips, `fsync`ed writes, requests (and
//!   by opcode), bytes sent and received, each per cycle (see [`TapCounts`] for what each
//!   counts; pings and handshakes are left out);
//! - **contended**: the smallest number of sessions that always has one waiting (2; leases + 1
//!   for a semaphore): notifications per hand-off, where each cycle is one hand-off (the
//!   releasing session's successor is always waiting), so notifications / cycles.
//!
//! Nothing here is estimated: a value is what went over the wire. Values above the floor the
//! issue sets (mutex 2 awaited round trips, semaphore 3, a multi-lock's 2 `fsync`ed writes,
//! one notification per hand-off) are marked.

use std::fmt::Write as _;

use super::*;
use crate::bench::tap::{Tap, TapCounts, op_name};

/// The window of each cost run, in seconds (after the bench's warm-up for the library).
pub(super) const COST_SECONDS: f64 = 2.0;

/// The two runs of each workload and library.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Pass {
    /// 1 session.
    Alone,
    /// [`contenders`] sessions on one lock.
    Contended,
}

/// One cost run's outcome.
#[derive(Debug, Clone)]
pub(super) struct CostRun {
    pub(super) lib: Lib,
    pub(super) workload: Workload,
    pub(super) pass: Pass,
    /// Cycles completed in the window (the worker's `ops`).
    pub(super) cycles: u64,
    /// What the tap counted in the window.
    pub(super) counts: TapCounts,
}

/// The workloads of `cases`, each once, in their order.
pub(super) fn workloads(cases: &[Case]) -> Vec<Workload> {
    let mut all: Vec<Workload> = Vec::new();
    for case in cases {
        if !all.contains(&case.workload) {
            all.push(case.workload);
        }
    }
    all
}

/// The sessions of the contended pass: one more than can hold at once, so that one is always
/// waiting and every release is a hand-off.
pub(super) fn contenders(workload: Workload) -> usize {
    match workload {
        Workload::Semaphore(leases) => usize::try_from(leases).map_or(2, |n| n.saturating_add(1)),
        _ => 2,
    }
}

/// A row label for `workload`.
fn label(workload: Workload) -> String {
    match workload {
        Workload::Mutex => "mutex".to_owned(),
        Workload::Read => "read lock".to_owned(),
        Workload::Write => "write lock".to_owned(),
        Workload::ReadWriteMix(p) => format!("{p}/{} read/write mix", 100 - u32::from(p)),
        Workload::MultiLock(k) => format!("multi-lock, {k} members"),
        Workload::SemaphoreMutex => "semaphore mutex".to_owned(),
        Workload::Semaphore(n) => format!("semaphore, {n} leases"),
    }
}

/// The case a cost run stands for (for [`runs`]).
fn case_of(workload: Workload, sessions: usize) -> Case {
    Case {
        label: label(workload),
        workload,
        sessions,
    }
}

/// The libraries that run `workload` (kazoo has no read/write mix here, see [`runs`]);
/// ours awaits its release (the drop variant is not a separate protocol).
fn cost_libs(libs: &[Lib], workload: Workload) -> Vec<Lib> {
    libs.iter()
        .copied()
        .filter(|&lib| {
            !matches!(
                lib,
                Lib::OursDrop | Lib::OursCohort | Lib::OursCohorts | Lib::ZkClient
            ) && runs(lib, &case_of(workload, 2))
        })
        .collect()
}

/// The nominal length of every cost run, in the order [`run`] runs them.
pub(super) fn plan(cases: &[Case], libs: &[Lib], warmup_of: impl Fn(Lib) -> f64) -> Vec<Duration> {
    let mut all = Vec::new();
    for workload in workloads(cases) {
        for lib in cost_libs(libs, workload) {
            for _pass in [Pass::Alone, Pass::Contended] {
                all.push(
                    Duration::try_from_secs_f64(warmup_of(lib) + COST_SECONDS).unwrap_or_default(),
                );
            }
        }
    }
    all
}

/// Runs every cost run of `cases` through one tap in front of `server`. A run that fails is
/// reported on stderr and left out (the bench's measured results stand without it).
///
/// # Errors
/// The tap cannot start.
#[allow(clippy::too_many_arguments)]
pub(super) fn run(
    what: &str,
    cases: &[Case],
    libs: &[Lib],
    workers: &Workers,
    server: &ZkServer,
    warmup_of: impl Fn(Lib) -> f64,
    plan: &mut Plan,
) -> Result<Vec<CostRun>> {
    let tap = Tap::start(server.addr())?;
    let connect = tap.addr().to_string();
    let mut out = Vec::new();
    for (w, workload) in workloads(cases).into_iter().enumerate() {
        for lib in cost_libs(libs, workload) {
            for pass in [Pass::Alone, Pass::Contended] {
                let sessions = match pass {
                    Pass::Alone => 1,
                    Pass::Contended => contenders(workload),
                };
                let warmup = warmup_of(lib);
                let (i, n) = plan.step();
                eprintln!(
                    "bench {what}: run {i}/{n}: cost, {}, {}, {sessions} session(s) through a \
                     counting proxy ({warmup} s warm-up + {COST_SECONDS} s counted); about {} left",
                    label(workload),
                    lib.name(),
                    progress::human(plan.left())
                );
                let path = format!("/bench/{what}-cost/{}-{w}-{sessions}", lib.slug());
                let cmd = workers.command(
                    lib,
                    workload,
                    &connect,
                    &path,
                    sessions,
                    warmup,
                    COST_SECONDS,
                );
                let started = Instant::now();
                let budget = Duration::from_secs_f64(warmup + COST_SECONDS) + WORKER_SLACK;
                match run_tapped(cmd, budget, &tap) {
                    Ok((sample, counts)) => out.push(CostRun {
                        lib,
                        workload,
                        pass,
                        cycles: sample.ops,
                        counts,
                    }),
                    Err(e) => eprintln!(
                        "bench {what}: cost, {}, {}: {e}; left out",
                        label(workload),
                        lib.name()
                    ),
                }
                plan.on_run_done(started.elapsed());
            }
        }
    }
    Ok(out)
}

/// Runs one worker to its `RESULT` line, snapshotting the tap's counts at its `WINDOW_START`
/// and `WINDOW_END`; returns its sample and the counts of its window.
fn run_tapped(cmd: Command, budget: Duration, tap: &Tap) -> Result<(Sample, TapCounts)> {
    let (mut start, mut end) = (None, None);
    let sample = worker::run_worker(cmd, budget, |line| match line {
        "WINDOW_START" => {
            start = Some(tap.counts());
            true
        }
        "WINDOW_END" => {
            end = Some(tap.counts());
            true
        }
        _ => false,
    })?;
    match (start, end) {
        (Some(start), Some(end)) => Ok((sample, end.since(&start))),
        _ => Err("the worker printed no WINDOW_START/WINDOW_END".into()),
    }
}

/// The least a cycle of `workload` can cost, where the issue (or, for the read/write lock,
/// the mutex's protocol it shares) sets it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct Floor {
    round_trips: Option<f64>,
    fsync_writes: Option<f64>,
    notifications_per_handoff: Option<f64>,
}

pub(super) fn floor(workload: Workload) -> Floor {
    let f = |rt, writes, notes| Floor {
        round_trips: rt,
        fsync_writes: writes,
        notifications_per_handoff: notes,
    };
    match workload {
        // create + getChildren pipelined, then the delete.
        Workload::Mutex | Workload::Write => f(Some(2.0), Some(2.0), Some(1.0)),
        // Readers share: nothing is handed off, so any notification is overhead.
        Workload::Read => f(Some(2.0), Some(2.0), Some(0.0)),
        Workload::ReadWriteMix(_) => f(Some(2.0), Some(2.0), None),
        // One multi creating every member's node, one deleting them.
        Workload::MultiLock(_) => f(None, Some(2.0), Some(1.0)),
        Workload::SemaphoreMutex | Workload::Semaphore(_) => f(Some(3.0), None, Some(1.0)),
    }
}

/// `count` per cycle, or NaN without cycles.
fn per_cycle(count: u64, cycles: u64) -> f64 {
    if cycles == 0 {
        f64::NAN
    } else {
        count as f64 / cycles as f64
    }
}

/// Whether `value` is above `floor` (by more than the edges of a window can add: a cycle in
/// progress at either edge).
fn above(value: f64, floor: Option<f64>) -> bool {
    floor.is_some_and(|f| value > f * 1.02 + 0.01)
}

/// One cell: the value with `decimals`, `*` when above the floor, `-` when not measured.
fn cell(value: Option<f64>, decimals: usize, floor: Option<f64>) -> String {
    match value {
        Some(v) if v.is_finite() => {
            let mark = if above(v, floor) { "*" } else { " " };
            format!("{v:>10.decimals$}{mark}")
        }
        _ => format!("{:>10} ", "-"),
    }
}

/// The cost table: per workload, one row per metric, one column per library, and the floor.
pub(super) fn table(cases: &[Case], libs: &[Lib], all: &[CostRun]) -> String {
    let workloads = workloads(cases);
    let columns: Vec<Lib> = libs
        .iter()
        .copied()
        .filter(|&l| {
            !matches!(
                l,
                Lib::OursDrop | Lib::OursCohort | Lib::OursCohorts | Lib::ZkClient
            )
        })
        .collect();
    let mut out = format!(
        "counted protocol cost, through a counting proxy in front of the server: per cycle of 1 \
         session alone ({COST_SECONDS} s window), and per hand-off of sessions contending \
         (2; a semaphore's leases + 1); * above the floor\n{:<36}",
        "workload / per cycle"
    );
    for lib in &columns {
        let _ = write!(out, "{:>11}", lib.name());
    }
    let _ = writeln!(out, "{:>8}", "floor");
    for workload in workloads {
        let floor = floor(workload);
        let _ = writeln!(out, "{}", label(workload));
        let find = |lib: Lib, pass: Pass| {
            all.iter()
                .find(|r| r.lib == lib && r.workload == workload && r.pass == pass)
        };
        let mut row = |name: &str,
                       decimals: usize,
                       floor: Option<f64>,
                       pass: Pass,
                       value: &dyn Fn(&CostRun) -> f64| {
            let _ = write!(out, "{name:<36}");
            for &lib in &columns {
                out.push_str(&cell(find(lib, pass).map(value), decimals, floor));
            }
            match floor {
                Some(f) => {
                    let _ = writeln!(out, "{f:>7}");
                }
                None => out.push('\n'),
            }
        };
        let alone = Pass::Alone;
        row("  awaited round trips", 2, floor.round_trips, alone, &|r| {
            per_cycle(r.counts.round_trips, r.cycles)
        });
        row("  fsync'd writes", 2, floor.fsync_writes, alone, &|r| {
            per_cycle(r.counts.fsync_writes, r.cycles)
        });
        row("  requests", 2, None, alone, &|r| {
            per_cycle(r.counts.requests, r.cycles)
        });
        let mut ops: Vec<i32> = all
            .iter()
            .filter(|r| r.workload == workload && r.pass == alone)
            .flat_map(|r| r.counts.by_op.keys().copied())
            .collect();
        ops.sort_unstable();
        ops.dedup();
        for op in ops {
            row(&format!("    {}", op_name(op)), 2, None, alone, &|r| {
                per_cycle(r.counts.by_op.get(&op).copied().unwrap_or(0), r.cycles)
            });
        }
        row("  bytes sent", 0, None, alone, &|r| {
            per_cycle(r.counts.bytes_sent, r.cycles)
        });
        row("  bytes received", 0, None, alone, &|r| {
            per_cycle(r.counts.bytes_received, r.cycles)
        });
        let sessions = contenders(workload);
        row(
            &format!("  notifications/hand-off ({sessions} sess.)"),
            2,
            floor.notifications_per_handoff,
            Pass::Contended,
            &|r| per_cycle(r.counts.notifications, r.cycles),
        );
        row(
            &format!("  requests/cycle ({sessions} sess.)"),
            2,
            None,
            Pass::Contended,
            &|r| per_cycle(r.counts.requests, r.cycles),
        );
    }
    out.push_str(
        "hand-off: a release that lets a waiting session in; with one session always waiting \
         every cycle is one, so notifications / cycles (a read lock's readers share and hand \
         nothing off: floor 0; a mix's cycles are reads and writes: no floor). The locks are \
         held for no time: a waiter whose check finds its predecessor already gone takes the \
         lock without a notification, so the count can be below 1; the reads that cost show \
         in requests/cycle. Floors from the issue: mutex 2 awaited round trips (and 2 writes), \
         semaphore 3, a multi-lock's 2 fsync'd writes, 1 notification per hand-off; the \
         read/write lock's are the mutex's.\n",
    );
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn counted(lib: Lib, pass: Pass, cycles: u64, rt: u64, writes: u64, notes: u64) -> CostRun {
        let mut counts = TapCounts {
            round_trips: rt,
            fsync_writes: writes,
            requests: 3 * cycles,
            notifications: notes,
            bytes_sent: 300 * cycles,
            ..TapCounts::default()
        };
        counts.by_op.insert(zk_proto::OpCode::Create.code(), cycles);
        CostRun {
            lib,
            workload: Workload::Mutex,
            pass,
            cycles,
            counts,
        }
    }

    #[test]
    fn the_table_marks_what_is_above_the_floor() {
        let cases = cases(Recipe::Mutex, &[1, 4]);
        let all = [
            counted(Lib::Ours, Pass::Alone, 100, 200, 200, 0),
            counted(Lib::Curator, Pass::Alone, 100, 500, 200, 0),
            counted(Lib::Ours, Pass::Contended, 100, 0, 0, 100),
            counted(Lib::Curator, Pass::Contended, 100, 0, 0, 101),
        ];
        let table = table(&cases, &Lib::ALL, &all);
        let line = |start: &str| {
            table
                .lines()
                .find(|l| l.starts_with(start))
                .unwrap()
                .split_whitespace()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            table.matches("\nmutex\n").count(),
            1,
            "one block per workload:\n{table}"
        );
        assert_eq!(
            line("  awaited"),
            ["awaited", "round", "trips", "2.00", "5.00*", "-", "2"]
        );
        assert_eq!(
            line("  fsync"),
            ["fsync'd", "writes", "2.00", "2.00", "-", "2"]
        );
        assert_eq!(line("    create"), ["create", "1.00", "1.00", "-"]);
        assert_eq!(line("  bytes sent"), ["bytes", "sent", "300", "300", "-"]);
        // 1.01 notifications per hand-off is an edge of the window, not above the floor.
        assert_eq!(
            line("  notifications"),
            [
                "notifications/hand-off",
                "(2",
                "sess.)",
                "1.00",
                "1.01",
                "-",
                "1"
            ]
        );
    }

    #[test]
    fn passes_and_contenders() {
        assert_eq!(contenders(Workload::Semaphore(3)), 4);
        assert_eq!(contenders(Workload::Mutex), 2);
        let cases = cases(Recipe::Rwlock, &[]);
        assert_eq!(
            workloads(&cases),
            [Workload::Read, Workload::Write, Workload::ReadWriteMix(90)]
        );
        // kazoo runs no mix; ours (drop) is not a protocol of its own.
        assert_eq!(
            cost_libs(&Lib::ALL, Workload::ReadWriteMix(90)),
            [Lib::Ours, Lib::Curator]
        );
        assert_eq!(plan(&cases, &Lib::ALL, |_| 1.0).len(), 2 * (3 + 3 + 2));
        assert!(per_cycle(5, 0).is_nan());
        assert!(!above(2.01, Some(2.0)) && above(2.1, Some(2.0)) && !above(9.0, None));
    }
}
