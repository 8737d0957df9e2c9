//! The report of `bench queue`: the table printed and written to `target/bench/queue.md`, the
//! targets, and charts of the hand-off against N (`bench::report`).

use std::fmt::Write as _;
use std::time::Duration;

use super::drain::bytes_per_waiter;
use super::run::Outcome;
use super::{Case, Lib, Options, progress, thousands};
use crate::bench::report;
use crate::bench::versions::{jar_version, java_version};

/// One case and what it gave: its outcome, or why it failed.
type Row = (Case, std::result::Result<Outcome, String>);

/// The numbers of one case that worked.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Figures {
    waiters: u64,
    drained: usize,
    drain_ms: f64,
    p50_ms: f64,
    p99_ms: f64,
    first_tenth_ms: f64,
    last_tenth_ms: f64,
    bytes_per_waiter: Option<f64>,
    bytes_per_handoff: Option<f64>,
    requests_per_handoff: Option<f64>,
    notifications_per_handoff: Option<f64>,
    overlaps: usize,
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

impl Figures {
    fn of(o: &Outcome) -> Figures {
        let h = o.drain.histogram();
        let (first, last) = o.drain.first_and_last_tenth_p50();
        let handoffs = o.drain.handoffs.len();
        let per_handoff = |v: u64| (handoffs > 0).then(|| v as f64 / handoffs as f64);
        Figures {
            waiters: o.waiters(),
            drained: handoffs,
            drain_ms: ms(o.drain.drain_ns),
            p50_ms: ms(h.percentile(50)),
            p99_ms: ms(h.percentile(99)),
            first_tenth_ms: ms(first),
            last_tenth_ms: ms(last),
            bytes_per_waiter: bytes_per_waiter(&o.queued),
            bytes_per_handoff: o.traffic.and_then(|t| per_handoff(t.bytes)),
            requests_per_handoff: o.traffic.and_then(|t| per_handoff(t.requests)),
            notifications_per_handoff: o.traffic.and_then(|t| per_handoff(t.notifications)),
            overlaps: o.drain.overlaps,
        }
    }
}

fn figures(rows: &[Row], lib: Lib, waiters: usize, processes: usize) -> Option<Figures> {
    rows.iter()
        .find(|(c, _)| c.lib == lib && c.waiters == waiters && c.processes == processes)
        .and_then(|(_, o)| o.as_ref().ok())
        .map(Figures::of)
}

/// The table: one line per case.
fn table(rows: &[Row]) -> String {
    let mut out = format!(
        "{:<24} {:<8} {:>7} {:>7} {:>10} {:>9} {:>9} {:>9} {:>9} {:>10} {:>10} {:>6} {:>7}\n",
        "case",
        "library",
        "waiters",
        "drained",
        "drain ms",
        "p50 ms",
        "p99 ms",
        "1st 10%",
        "last 10%",
        "B/waiter",
        "B/hand-off",
        "req.",
        "notif."
    );
    let opt = |v: Option<f64>, decimals: usize| {
        v.map_or_else(|| "n/c".to_owned(), |v| format!("{v:.decimals$}"))
    };
    for (case, outcome) in rows {
        let _ = write!(out, "{:<24} {:<8} ", case.label(), case.lib.name());
        match outcome {
            Err(e) => {
                let _ = writeln!(out, "failed: {}", e.lines().next().unwrap_or_default());
            }
            Ok(o) => {
                let f = Figures::of(o);
                let _ = write!(
                    out,
                    "{:>7} {:>7} {:>10.1} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>10} {:>10} {:>6} {:>7}",
                    f.waiters,
                    f.drained,
                    f.drain_ms,
                    f.p50_ms,
                    f.p99_ms,
                    f.first_tenth_ms,
                    f.last_tenth_ms,
                    opt(f.bytes_per_waiter, 0),
                    opt(f.bytes_per_handoff, 0),
                    opt(f.requests_per_handoff, 2),
                    opt(f.notifications_per_handoff, 2),
                );
                let mut notes = Vec::new();
                if f.waiters < o.asked.iter().sum::<usize>() as u64 {
                    notes.push(format!(
                        "only {} threads started",
                        thousands(f.waiters as usize)
                    ));
                }
                if o.children != o.queued.iter().map(|q| q.nodes as usize).sum::<usize>() + 1 {
                    notes.push(format!("{} children before the release", o.children));
                }
                if f.overlaps > 0 {
                    notes.push(format!("{} overlapping holds", f.overlaps));
                }
                let reported: u64 = o.results.iter().map(|r| r.drained).sum();
                if f.drained as u64 != f.waiters || reported != f.waiters {
                    notes.push(format!(
                        "{} holds listed, {reported} reported, for {} waiters",
                        f.drained, f.waiters
                    ));
                }
                if !notes.is_empty() {
                    let _ = write!(out, "  ({})", notes.join("; "));
                }
                out.push('\n');
            }
        }
    }
    out
}

/// The targets against Curator, case by case.
fn targets(rows: &[Row], opts: &Options) -> String {
    let mut out = String::new();
    let (Some(&lo), Some(&hi)) = (opts.waiters.iter().min(), opts.waiters.iter().max()) else {
        return out;
    };
    for processes in super::PROCESSES {
        let spread = super::processes_label(processes);
        for &n in &opts.waiters {
            let ours = figures(rows, Lib::Ours, n, processes).and_then(|f| f.bytes_per_waiter);
            let theirs = figures(rows, Lib::Curator, n, processes).and_then(|f| f.bytes_per_waiter);
            let _ = writeln!(
                out,
                "memory per waiter, N={}, {spread}: {}",
                thousands(n),
                match (ours, theirs) {
                    (Some(o), Some(c)) if c > 0.0 => format!(
                        "ours {o:.0} B, Curator {c:.0} B: {:.3}× (target ≤ 0.05×): {}",
                        o / c,
                        verdict(o / c <= 0.05)
                    ),
                    _ => "not measured".to_owned(),
                }
            );
        }
        if lo < hi {
            let growth = |lib| {
                let a = figures(rows, lib, lo, processes)?.p50_ms;
                let b = figures(rows, lib, hi, processes)?.p50_ms;
                (a > 0.0).then(|| b / a)
            };
            let _ = writeln!(
                out,
                "hand-off p50 growth from N={} to N={}, {spread}: {}",
                thousands(lo),
                thousands(hi),
                match (growth(Lib::Ours), growth(Lib::Curator)) {
                    (Some(o), Some(c)) => format!(
                        "ours {o:.2}×, Curator {c:.2}× (target: ours no faster than Curator's, \
                         or none at all, ≤ 1×): {}",
                        verdict(o <= c.max(1.0))
                    ),
                    _ => "not measured".to_owned(),
                }
            );
        }
        // The growth named: the least-squares slope of the hand-off's p50 against N.
        let slopes: Vec<String> = Lib::ALL
            .into_iter()
            .filter_map(|lib| {
                let points: Vec<(f64, f64)> = opts
                    .waiters
                    .iter()
                    .filter_map(|&n| Some((n as f64, figures(rows, lib, n, processes)?.p50_ms)))
                    .collect();
                let slope = slope(&points)?;
                // Said with the N it stands on when a case failed.
                let over = match points.len() == opts.waiters.len() {
                    true => String::new(),
                    false => format!(
                        " (N={} only)",
                        points
                            .iter()
                            .map(|p| thousands(p.0 as usize))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                };
                Some(format!(
                    "{} {:+.3} ms per 1,000 waiters{over}",
                    lib.name(),
                    slope * 1_000.0
                ))
            })
            .collect();
        if !slopes.is_empty() {
            let _ = writeln!(
                out,
                "hand-off p50 against N (least-squares slope over N={}), {spread}: {}",
                opts.waiters
                    .iter()
                    .map(|&n| thousands(n))
                    .collect::<Vec<_>>()
                    .join(", "),
                slopes.join(", ")
            );
        }
        for &n in &opts.waiters {
            let notes =
                figures(rows, Lib::Ours, n, processes).and_then(|f| f.notifications_per_handoff);
            let _ = writeln!(
                out,
                "notifications per hand-off, ours, N={}, {spread}: {}",
                thousands(n),
                match notes {
                    Some(v) => format!("{v:.3} (target exactly 1): {}", verdict(v == 1.0)),
                    None => "not counted (no tap between the workers and the server)".to_owned(),
                }
            );
        }
    }
    out
}

/// The least-squares slope of `points` (x, y): `None` with fewer than two distinct x.
fn slope(points: &[(f64, f64)]) -> Option<f64> {
    let n = points.len() as f64;
    if points.len() < 2 {
        return None;
    }
    let (mx, my) = (
        points.iter().map(|p| p.0).sum::<f64>() / n,
        points.iter().map(|p| p.1).sum::<f64>() / n,
    );
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    (sxx > 0.0).then(|| sxy / sxx)
}

fn verdict(met: bool) -> &'static str {
    if met { "met" } else { "NOT met" }
}

/// The charts: hand-off p50 and p99, and memory per waiter, against N (one group per N and
/// spread, N growing tenfold from group to group: a log scale), ours beside Curator.
fn charts(rows: &[Row], opts: &Options) -> Vec<(&'static str, report::Chart)> {
    let mut keys = Vec::new();
    for &n in &opts.waiters {
        for processes in super::PROCESSES {
            keys.push((n, processes));
        }
    }
    let groups: Vec<String> = keys
        .iter()
        .map(|&(n, p)| format!("N={}, {}", thousands(n), super::processes_label(p)))
        .collect();
    let series = |field: fn(&Figures) -> Option<f64>| -> Vec<(String, Vec<Option<f64>>)> {
        Lib::ALL
            .iter()
            .map(|&lib| {
                let values = keys
                    .iter()
                    .map(|&(n, p)| figures(rows, lib, n, p).and_then(|f| field(&f)))
                    .collect();
                (lib.name().to_owned(), values)
            })
            .collect()
    };
    let chart = |title: &str, unit: &str, field| report::Chart {
        title: title.to_owned(),
        unit: unit.to_owned(),
        groups: groups.clone(),
        series: series(field),
    };
    vec![
        (
            "handoff-p50",
            chart(
                "hand-off p50 against queue length N (lower is better)",
                "ms",
                |f| Some(f.p50_ms),
            ),
        ),
        (
            "handoff-p99",
            chart(
                "hand-off p99 against queue length N (lower is better)",
                "ms",
                |f| Some(f.p99_ms),
            ),
        ),
        (
            "memory",
            chart(
                "memory per waiter, RSS growth / N (lower is better)",
                "bytes",
                |f| f.bytes_per_waiter,
            ),
        ),
    ]
}

/// Prints the table and the targets, and writes the report page with its charts.
pub(super) fn report(rows: &[Row], opts: &Options, took: Duration) {
    let header = [
        crate::bench::versions::machine(),
        format!(
            "server:  ZooKeeper standalone, forceSync={}, a fresh server per case",
            if opts.force_sync { "yes" } else { "no" }
        ),
        "ours:    recipe-mutex on zk-client, one session, a tokio task per waiter (current-thread \
         runtime), release build; release awaited"
            .to_owned(),
        format!(
            "curator: Curator {} InterProcessMutex, one CuratorFramework, a thread per waiter, {}, \
             JVM defaults",
            jar_version("curator-recipes").unwrap_or_else(|| "5.4".to_owned()),
            java_version()
        ),
        "setup:   the bench holds the lock (a session of its own), the N waiters queue behind it, \
         it releases; every holder releases as soon as it holds; the workers reach the server \
         through a counting proxy (bench::tap: a copy per chunk, both libraries alike); no CPU \
         pinning"
            .to_owned(),
        format!(
            "time:    {} wall-clock for this bench, builds and server starts included",
            progress::human(took)
        ),
        "columns: drain = bench's release to the last release; p50/p99 of a hand-off (a release \
         call to the next lock() returning, across processes); 1st/last 10% = median hand-off of \
         the first and last tenth of the drain; B/waiter = RSS growth from before the waiters to \
         QUEUED, over N; B/hand-off, req. and notif. = bytes both ways (pings and handshakes left \
         out), requests and watch notifications between the workers and the server from the \
         bench's release to the last RESULT (the workers' closeSession included; the first \
         hand-off's delete is the bench's, not counted), over the hand-offs"
            .to_owned(),
    ];
    let table = table(rows);
    let targets = targets(rows, opts);
    println!();
    for line in &header {
        println!("{line}");
    }
    println!();
    print!("{table}");
    println!();
    print!("{targets}");
    let mut page = String::from(
        "# Benchmark: queue\n\n`cargo xtask bench queue`: N waiters on one mutex, drained one by one, \
         ours against Curator 5.4.\n\n",
    );
    for line in &header {
        let _ = writeln!(page, "- {line}");
    }
    let _ = write!(
        page,
        "\n![hand-off p50](queue-handoff-p50.svg)\n\n![hand-off p99](queue-handoff-p99.svg)\n\n\
         ![memory per waiter](queue-memory.svg)\n\n## Results\n\n```text\n{table}```\n\n\
         ## Targets\n\n```text\n{targets}```\n"
    );
    match report::write_page(&report::dir(), "queue", &page, &charts(rows, opts)) {
        Ok(path) => println!("\nreport: {} (charts beside it)", path.display()),
        Err(e) => eprintln!("bench queue: could not write the report: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::slope;

    #[test]
    fn the_slope_is_least_squares_and_needs_two_distinct_points() {
        let s = slope(&[(10.0, 1.0), (100.0, 1.9), (1_000.0, 10.9)]).expect("a slope");
        assert!((s - 0.01).abs() < 1e-9, "{s}");
        assert_eq!(slope(&[(10.0, 1.0)]), None);
        assert_eq!(slope(&[(10.0, 1.0), (10.0, 2.0)]), None);
    }
}
