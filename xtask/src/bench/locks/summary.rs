//! From the workers' samples to what is printed: per-run summaries, medians over rounds, the
//! results table, the ratios with their spread, and the targets.

use super::*;

/// One worker's outcome.
#[derive(Debug, Clone, Copy)]
pub(super) struct Run {
    pub(super) lib: Lib,
    /// The index of its case.
    pub(super) case: usize,
    pub(super) round: u32,
    pub(super) sample: Sample,
    /// Requests the server received during the window.
    pub(super) requests: Option<u64>,
}

/// A [`Run`] in the table's units.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Summary {
    pub(super) cycles_per_sec: f64,
    pub(super) p50_us: f64,
    pub(super) p99_us: f64,
    pub(super) cpu_us_per_cycle: f64,
    pub(super) rss_mib: f64,
    pub(super) requests_per_cycle: f64,
}

impl Summary {
    pub(super) fn of(run: &Run, hz: u64) -> Summary {
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
pub(super) fn median(all: &[Summary]) -> Option<Summary> {
    let pick = |field: fn(&Summary) -> f64| crate::bench::median_by(all, field);
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
pub(super) fn median_of(results: &[Run], lib: Lib, case: usize, hz: u64) -> Option<Summary> {
    let all: Vec<Summary> = results
        .iter()
        .filter(|r| r.lib == lib && r.case == case)
        .map(|r| Summary::of(r, hz))
        .collect();
    median(&all)
}

/// One table row.
pub(super) fn row(case: &str, client: &str, s: &Summary) -> String {
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
pub(super) fn table(results: &[Run], cases: &[Case], libs: &[Lib], rounds: u32, hz: u64) -> String {
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
pub(super) fn ratios(results: &[Run], cases: &[Case], other: Lib, hz: u64) -> String {
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
pub(super) fn spread(results: &[Run], case: usize, other: Lib, hz: u64) -> String {
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

/// The cycles/s bar against Curator for case `case` of `recipe`, if the issue set one.
pub(super) fn cycles_bar(recipe: Recipe, case: &Case) -> Option<f64> {
    match recipe {
        Recipe::Mutex => match case.sessions {
            1 => Some(1.5),
            16 => Some(1.3),
            _ => None,
        },
        // An uncontended read is one round trip for us, two for Curator.
        Recipe::Rwlock if case.workload == Workload::Read => Some(1.5),
        Recipe::Rwlock => Some(1.2),
        Recipe::Multilock => Some(1.5),
        // Two awaited round trips per acquisition where Curator awaits five.
        Recipe::SemaphoreMutex if case.sessions == 1 => Some(2.5),
        Recipe::SemaphoreMutex | Recipe::Semaphore => Some(2.0),
    }
}

/// The targets against Curator (ours with an awaited release, medians), met or not.
pub(super) fn targets(recipe: Recipe, results: &[Run], cases: &[Case], hz: u64) -> String {
    let mut out = "targets (ours vs Curator, medians):\n".to_owned();
    for (c, case) in cases.iter().enumerate() {
        let (Some(ours), Some(theirs)) = (
            median_of(results, Lib::Ours, c, hz),
            median_of(results, Lib::Curator, c, hz),
        ) else {
            continue;
        };
        if let Some(bar) = cycles_bar(recipe, case) {
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
        if recipe == Recipe::Mutex {
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

pub(super) fn verdict(what: &str, ratio: f64, met: bool) -> String {
    let verdict = if met { "met" } else { "NOT met" };
    format!("  {what:<44} {ratio:>7.3}x  {verdict}\n")
}
