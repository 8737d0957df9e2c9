//! `cargo xtask bench failover`: how soon a stream of lock cycles comes back after a fault,
//! ours against Curator 5.4's, on a 3-member ensemble.
//!
//! It runs the chaos harness ([`crate::chaos::run::run`]) on the mutex alone, one kind of fault at
//! a time, spaced ([`crate::chaos::nemesis::spaced`]): each fault with a healthy gap before
//! and after it, `--faults` of each kind. Our worker processes and Curator's cycle the lock
//! on their own paths throughout (two processes each, two clients a process, each client
//! acquiring in turn in the four chaos styles), and every hold they report carries the time
//! its acquire returned, on the machine's one clock. For each fault and library,
//! [`recovery`] takes from those times the delay to the next hold and to the old rate.
//!
//! The kinds: the leader killed (SIGKILL, restarted after 1 to 4 s); every client cut off
//! from one member (its connections refused and cut: what a client sees when the member it
//! is connected to dies, without an election); one of our processes paused (SIGSTOP) while
//! its clients hold, past their session timeout (only our stream is judged there), and one of
//! Curator's. The chaos judges run as in `cargo xtask chaos`: a violation of ours fails the
//! bench after the report is written.
//!
//! The report (`target/bench/failover.md`): per kind and library, the faults seen and the
//! median and worst of each delay; the goal (ours no slower than Curator in every kind, and
//! within one session timeout plus the election's time) with where it stands. A leader kill
//! is split where the ensemble itself came back: the chaos runner probes the members from the
//! kill until one answers as the new leader ([`crate::chaos::run::Applied::leader_back`]),
//! which no client can beat; the report gives that time and each library's part after it, and
//! the goal of ours at most [`LEADER_KILL_SHARE`] of Curator's median beside it.

use std::error::Error;
use std::fmt::Write as _;
use std::time::Duration;

use crate::chaos::history::Event;
use crate::chaos::nemesis::{self, Kind};
use crate::chaos::run::{ChaosOptions, Outcome};
use crate::recipe::{LEASES, Recipe};

use super::report::{self, Table};

pub mod recovery;

use recovery::{Recovery, median_and_worst};

type Result<T> = std::result::Result<T, Box<dyn Error>>;

/// The share of Curator's median delay after a leader kill that ours aims at (issue 51).
pub const LEADER_KILL_SHARE: f64 = 0.8;

/// The kinds of fault measured.
pub const KINDS: [Kind; 4] = [
    Kind::LeaderKill,
    Kind::ClientMemberCut,
    Kind::OursPause,
    Kind::CuratorPause,
];

/// The kinds named in `list` (`--fault`, comma-separated), or all of [`KINDS`].
///
/// # Errors
/// A kind unknown, or not one this bench measures.
pub fn kinds(list: Option<&str>) -> Result<Vec<Kind>> {
    let Some(list) = list else {
        return Ok(KINDS.to_vec());
    };
    let kinds = Kind::parse_list(list)?;
    match kinds.iter().find(|k| !KINDS.contains(k)) {
        Some(k) => Err(format!(
            "bench failover measures {}, not {k}",
            KINDS.map(|k| k.to_string()).join(", ")
        )
        .into()),
        None => Ok(kinds),
    }
}

/// What to run.
#[derive(Debug, Clone)]
pub struct Options {
    /// The kinds of fault, each in a run of its own.
    pub kinds: Vec<Kind>,
    /// Keep every run's client histories and the members' logs (else only a failed run's).
    pub keep_histories: bool,
    /// Faults of each kind.
    pub faults: usize,
    /// The healthy time before and after each fault.
    pub gap: Duration,
    /// The clients' session timeout.
    pub session_timeout: Duration,
    /// The seed of the faults' durations and picks.
    pub seed: u64,
}

/// One kind's results for one library.
#[derive(Debug, Clone)]
struct Row {
    kind: Kind,
    lib: &'static str,
    recoveries: Vec<Recovery>,
}

/// The libraries a kind of fault is judged for: a pause hits one side's process only.
fn libs(kind: Kind) -> &'static [&'static str] {
    match kind {
        Kind::OursPause => &["rust"],
        Kind::CuratorPause => &["java"],
        _ => &["rust", "java"],
    }
}

/// One chaos run of the bench: a kind of fault, the library measured, and its processes
/// (ours, Curator's): the other library has none, so the two never share a lock's queue.
fn runs(kinds: &[Kind]) -> Vec<(Kind, &'static str, u32, u32)> {
    kinds
        .iter()
        .flat_map(|&kind| {
            libs(kind).iter().map(move |&lib| {
                let (ours, curator) = if lib == "rust" { (2, 0) } else { (0, 2) };
                (kind, lib, ours, curator)
            })
        })
        .collect()
}

/// "ours'" or "Curator's", before "run".
fn lib_possessive(lib: &str) -> &'static str {
    if lib == "rust" { "ours'" } else { "Curator's" }
}

fn lib_name(lib: &str) -> &'static str {
    if lib == "rust" { "ours" } else { "Curator" }
}

/// The run's length for `faults` faults of `kind`: the spaced schedule of that many.
fn run_for(opts: &Options, kind: Kind) -> Duration {
    let far = Duration::from_secs(24 * 3600);
    let steps = nemesis::spaced(opts.seed, kind, far, opts.session_timeout, opts.gap);
    steps
        .get(opts.faults.saturating_sub(1))
        .map_or(far, |last| last.at + last.lasts + opts.gap)
}

/// Each fault's recovery for `lib`, from a run's holds and faults.
fn recoveries(outcome: &Outcome, kind: Kind, lib: &'static str) -> Row {
    let faults: Vec<_> = outcome.timeline.iter().filter(|a| a.kind == kind).collect();
    let mut starts: Vec<u64> = outcome
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Hold(h) if h.side() == lib => Some(h.from),
            _ => None,
        })
        .collect();
    starts.sort_unstable();
    let recoveries = faults
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let until = faults.get(i + 1).map_or(outcome.span.1, |next| next.from);
            Recovery {
                ensemble_back: a
                    .leader_back
                    .map(|b| Duration::from_nanos(b.saturating_sub(a.from))),
                ..recovery::recovery(&starts, a.from, until)
            }
        })
        .collect();
    Row {
        kind,
        lib,
        recoveries,
    }
}

/// `a / b`, as a multiple.
fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64().max(f64::MIN_POSITIVE)
}

fn ms(d: Option<Duration>) -> String {
    d.map_or_else(
        || "not within the gap".to_owned(),
        |d| format!("{:.0} ms", d.as_secs_f64() * 1e3),
    )
}

/// The page's charts: per kind of fault, ours beside Curator's, the median and the worst
/// delay to the next hold (a fault not recovered within the gap is left out of the bars).
fn charts(rows: &[Row]) -> Vec<(&'static str, report::Chart)> {
    let kinds: Vec<Kind> = KINDS
        .into_iter()
        .filter(|k| rows.iter().any(|r| r.kind == *k))
        .collect();
    let seconds = |d: Option<Duration>| d.map(|d| d.as_secs_f64());
    let chart = |title: &str, worst: bool| report::Chart {
        title: title.to_owned(),
        unit: "s".to_owned(),
        groups: kinds.iter().map(ToString::to_string).collect(),
        series: ["rust", "java"]
            .iter()
            .map(|&lib| {
                let values = kinds
                    .iter()
                    .map(|&kind| {
                        let row = rows.iter().find(|r| r.kind == kind && r.lib == lib)?;
                        let next: Vec<_> = row.recoveries.iter().map(|r| r.next_hold).collect();
                        let (median, max) = median_and_worst(&next)?;
                        seconds(if worst { max } else { median })
                    })
                    .collect();
                (lib_name(lib).to_lowercase(), values)
            })
            .collect(),
    };
    vec![
        (
            "next-hold-median",
            chart(
                "from the fault to the next hold, median (lower is better)",
                false,
            ),
        ),
        (
            "next-hold-worst",
            chart(
                "from the fault to the next hold, worst (lower is better)",
                true,
            ),
        ),
    ]
}

/// The table and the goals' lines.
fn page(rows: &[Row], opts: &Options, safety: &[String]) -> String {
    let mut table = Table::new(
        &[
            "fault",
            "library",
            "faults",
            "to the next hold: median",
            "worst",
            "to the old rate: median",
            "worst",
        ],
        2,
    );
    for row in rows {
        let next: Vec<_> = row.recoveries.iter().map(|r| r.next_hold).collect();
        let rate: Vec<_> = row.recoveries.iter().map(|r| r.old_rate).collect();
        let (n50, nmax) = median_and_worst(&next).unwrap_or((None, None));
        let (r50, rmax) = median_and_worst(&rate).unwrap_or((None, None));
        table.push(vec![
            row.kind.to_string(),
            lib_name(row.lib).to_owned(),
            row.recoveries.len().to_string(),
            ms(n50),
            ms(nmax),
            ms(r50),
            ms(rmax),
        ]);
    }
    let mut out = String::new();
    let _ = writeln!(out, "# bench failover\n");
    let _ = writeln!(
        out,
        "`cargo xtask bench failover --faults {} --gap {} --seed {}`: a 3-member ensemble, the \
         mutex, two processes of two clients each; each library in a run of its own, on a \
         fresh ensemble with the same schedule of faults (on one lock, either library's next \
         hold would wait for the other's clients ahead of it in the queue); session timeout \
         {} ms; faults one at a time, {} s of health before and after each. Delays from the \
         fault's start: to the first hold granted after it, and to the first one-second window \
         with {:.0}% of the holds per second of the {} s before it.\n",
        opts.faults,
        opts.gap.as_secs(),
        opts.seed,
        opts.session_timeout.as_millis(),
        opts.gap.as_secs(),
        recovery::RATE_SHARE * 100.0,
        recovery::BASELINE.as_secs()
    );
    out.push_str(&table.markdown());
    out.push_str(
        "\n![to the next hold, median](failover-next-hold-median.svg)\n\n\
         ![to the next hold, worst](failover-next-hold-worst.svg)\n",
    );
    out.push_str(&ensemble_section(rows));
    let _ = writeln!(out, "\n## Goals\n");
    for line in goals(rows, opts) {
        let _ = writeln!(out, "- {line}");
    }
    let _ = writeln!(out, "\n## Safety (the chaos judges)\n");
    if safety.is_empty() {
        let _ = writeln!(out, "- no violation of ours in any run");
    }
    for line in safety {
        let _ = writeln!(out, "- {line}");
    }
    out
}

/// The leader kills' split: the ensemble's own recovery (a new leader answering), then the
/// clients' part, per library. Empty when no fault was probed.
fn ensemble_section(rows: &[Row]) -> String {
    let mut out = String::new();
    let mut heading = false;
    for row in rows.iter().filter(|r| r.kind == Kind::LeaderKill) {
        let back: Vec<_> = row.recoveries.iter().map(|r| r.ensemble_back).collect();
        let Some((b50, bmax)) = median_and_worst(&back) else {
            continue;
        };
        if !std::mem::replace(&mut heading, true) {
            let _ = writeln!(out, "\n## Leader kills: the ensemble, then the clients\n");
        }
        let after: Vec<_> = row
            .recoveries
            .iter()
            .map(Recovery::after_ensemble)
            .collect();
        let (a50, amax) = median_and_worst(&after).unwrap_or((None, None));
        let _ = writeln!(
            out,
            "- {} run: the ensemble back (a member answering `srvr` as the leader, probed \
             every {} ms) median {}, worst {}, over {} kills; from there to the next hold: \
             median {}, worst {}",
            lib_possessive(row.lib),
            crate::chaos::run::LEADER_PROBE_EVERY.as_millis(),
            ms(b50),
            ms(bmax),
            back.len(),
            ms(a50),
            ms(amax)
        );
    }
    out
}

/// Where each goal stands: ours no slower than Curator per kind (medians and worsts of the
/// delay to the next hold), and ours' worst within one session timeout (plus the election's
/// time, not measured apart: a kill's delay includes it).
fn goals(rows: &[Row], opts: &Options) -> Vec<String> {
    let mut out = Vec::new();
    let stat = |row: &Row| {
        let next: Vec<_> = row.recoveries.iter().map(|r| r.next_hold).collect();
        median_and_worst(&next).unwrap_or((None, None))
    };
    for kind in KINDS {
        let ours = rows.iter().find(|r| r.kind == kind && r.lib == "rust");
        let theirs = rows.iter().find(|r| r.kind == kind && r.lib == "java");
        if let (Some(o), Some(t)) = (ours, theirs) {
            let ((o50, omax), (t50, tmax)) = (stat(o), stat(t));
            let no_slower = |a: Option<Duration>, b: Option<Duration>| match (a, b) {
                (Some(a), Some(b)) => a <= b,
                (Some(_), None) => true,
                (None, _) => false,
            };
            let met = no_slower(o50, t50) && no_slower(omax, tmax);
            out.push(format!(
                "{kind}: ours no slower than Curator: {} (median {} against {}, worst {} against {})",
                if met { "met" } else { "not met" },
                ms(o50),
                ms(t50),
                ms(omax),
                ms(tmax)
            ));
            if let (Kind::LeaderKill, Some(o50), Some(t50)) = (kind, o50, t50) {
                let bound = t50.mul_f64(LEADER_KILL_SHARE);
                let median_of = |row: &Row, f: fn(&Recovery) -> Option<Duration>| {
                    let values: Vec<_> = row.recoveries.iter().map(f).collect();
                    median_and_worst(&values).and_then(|(m, _)| m)
                };
                let election = median_of(o, |r| r.ensemble_back);
                let clients = median_of(o, Recovery::after_ensemble)
                    .zip(median_of(t, Recovery::after_ensemble));
                out.push(format!(
                    "{kind}: ours at most {LEADER_KILL_SHARE}× Curator's median to the next hold: {} \
                     ({:.2}×: {} against {}){}{}",
                    if o50 <= bound { "met" } else { "not met" },
                    ratio(o50, t50),
                    ms(Some(o50)),
                    ms(Some(bound)),
                    election.map_or(String::new(), |e| format!(
                        "; the ensemble alone took median {} to have a leader again{}",
                        ms(Some(e)),
                        if e >= bound { ", past that bound before any client could act" } else { "" }
                    )),
                    clients.map_or(String::new(), |(oc, tc)| format!(
                        "; the clients' part after it: {:.2}× ({} against {})",
                        ratio(oc, tc),
                        ms(Some(oc)),
                        ms(Some(tc))
                    ))
                ));
            }
        }
        if let Some(o) = ours {
            let (_, omax) = stat(o);
            let within = omax.is_some_and(|w| w <= opts.session_timeout);
            out.push(format!(
                "{kind}: ours' worst delay to the next hold within one session timeout ({} ms, the election's time not added): {} ({})",
                opts.session_timeout.as_millis(),
                if within { "met" } else { "not met" },
                ms(omax)
            ));
        }
    }
    out
}

/// Runs every kind, writes the report, and fails on a violation of ours.
///
/// # Errors
/// A setup that fails, or a chaos judge's finding against ours.
pub fn run(opts: &Options) -> Result<()> {
    crate::deps::ensure(&[
        crate::deps::Need::Java,
        crate::deps::Need::ZooKeeper,
        crate::deps::Need::Curator,
    ])?;
    let ours_bin = super::worker::build_worker("bench failover")?;
    let classpath = crate::curator::classpath()?;
    let out_dir = crate::paths::target_dir().join("bench").join("failover");
    std::fs::create_dir_all(&out_dir)?;
    let mut rows = Vec::new();
    let mut safety = Vec::new();
    // Each library in a run of its own, on a fresh ensemble with the same schedule of faults:
    // on one lock, the two libraries' clients would wait in one queue, and either's next
    // hold would wait for the other's slowest client ahead of it in that queue.
    for (kind, lib, ours_processes, curator_processes) in runs(&opts.kinds) {
        let seconds = run_for(opts, kind).as_secs() + 1;
        eprintln!(
            "bench failover: {kind}, {}, {} faults, {seconds} s",
            lib_name(lib),
            opts.faults
        );
        let chaos = ChaosOptions {
            seconds,
            members: 3,
            seed: opts.seed,
            nemesis: vec![kind],
            ours_processes,
            curator_processes,
            clients: 2,
            leases: LEASES,
            session_timeout: opts.session_timeout,
            fence: true,
            plant: None,
            cohort: false,
            recipes: vec![Recipe::Mutex],
            // Each run's histories apart: `<kind>-<library>/histories-<seed>`.
            out_dir: out_dir.join(format!("{kind}-{}", lib_name(lib).to_lowercase())),
            spacing: Some(opts.gap),
            hold: None,
            accept_server_loss: false,
            keep_logs: opts.keep_histories,
        };
        let outcome = crate::chaos::run::run(&chaos, &ours_bin, &classpath)?;
        for why in [outcome.judge.failure(), outcome.report.failure()]
            .into_iter()
            .flatten()
        {
            safety.push(format!(
                "{kind}: {why} (histories in {})",
                outcome.dir.display()
            ));
        }
        rows.push(recoveries(&outcome, kind, lib));
        if opts.keep_histories {
            eprintln!(
                "bench failover: {kind}, {}: histories kept in {}",
                lib_name(lib),
                outcome.dir.display()
            );
        } else if safety.is_empty() {
            let _ = std::fs::remove_dir_all(&outcome.dir);
        }
    }
    let body = page(&rows, opts, &safety);
    print!("{body}");
    let path = report::write_page(&report::dir(), "failover", &body, &charts(&rows))?;
    println!("report: {}", path.display());
    if safety.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "bench failover: the chaos judges found: {}",
            safety.join("; ")
        )
        .into())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn opts() -> Options {
        Options {
            kinds: KINDS.to_vec(),
            keep_histories: false,
            faults: 10,
            gap: Duration::from_secs(8),
            session_timeout: Duration::from_secs(4),
            seed: 1,
        }
    }

    #[test]
    fn fault_kinds_are_all_by_default_or_those_named() {
        assert_eq!(kinds(None).unwrap(), KINDS);
        assert_eq!(kinds(Some("leader-kill")).unwrap(), [Kind::LeaderKill]);
        let err = kinds(Some("partition")).unwrap_err().to_string();
        assert!(err.contains("not partition"), "{err}");
        assert!(kinds(Some("leader-kil")).is_err());
    }

    #[test]
    fn a_run_is_long_enough_for_its_faults() {
        for kind in KINDS {
            let o = opts();
            let run_for = run_for(&o, kind);
            let steps = nemesis::spaced(o.seed, kind, run_for, o.session_timeout, o.gap);
            assert_eq!(steps.len(), o.faults, "{kind}");
        }
    }

    #[test]
    fn the_page_says_where_each_goal_stands() {
        let d = |ms| Some(Duration::from_millis(ms));
        let rec = |next, rate| Recovery {
            next_hold: next,
            old_rate: rate,
            ensemble_back: d(850),
        };
        let rows = vec![
            Row {
                kind: Kind::LeaderKill,
                lib: "rust",
                recoveries: vec![rec(d(900), d(1200)), rec(d(1100), d(1500))],
            },
            Row {
                kind: Kind::LeaderKill,
                lib: "java",
                recoveries: vec![rec(d(1000), d(2000)), rec(None, None)],
            },
            Row {
                kind: Kind::OursPause,
                lib: "rust",
                recoveries: vec![rec(d(6000), d(7000))],
            },
        ];
        let page = page(&rows, &opts(), &[]);
        assert!(
            page.contains("| leader-kill | ours | 2 | 1100 ms | 1100 ms | 1500 ms | 1500 ms |"),
            "{page}"
        );
        assert!(
            page.contains("| leader-kill | Curator | 2 | not within the gap |"),
            "{page}"
        );
        assert!(
            page.contains("leader-kill: ours no slower than Curator: met"),
            "{page}"
        );
        assert!(page.contains("ours-pause: ours' worst delay to the next hold within one session timeout (4000 ms, the election's time not added): not met (6000 ms)"), "{page}");
        assert!(page.contains("no violation of ours"), "{page}");
        // The leader kills' split, each library's run: the ensemble's 850 ms, then its part.
        assert!(
            page.contains(
                "- ours' run: the ensemble back (a member answering `srvr` as the leader, \
                 probed every 10 ms) median 850 ms, worst 850 ms, over 2 kills; from there to \
                 the next hold: median 250 ms, worst 250 ms"
            ),
            "{page}"
        );
        assert!(
            page.contains(
                "- Curator's run: the ensemble back (a member answering `srvr` as the leader, \
                 probed every 10 ms) median 850 ms, worst 850 ms, over 2 kills; from there to \
                 the next hold: median not within the gap, worst not within the gap"
            ),
            "{page}"
        );
    }

    #[test]
    fn a_leader_kill_is_judged_against_its_share_of_curators_median_beside_the_election() {
        let d = |ms| Some(Duration::from_millis(ms));
        let rec = |next, back| Recovery {
            next_hold: d(next),
            old_rate: None,
            ensemble_back: d(back),
        };
        let rows = |ours: u64| {
            vec![
                Row {
                    kind: Kind::LeaderKill,
                    lib: "rust",
                    recoveries: vec![rec(ours, 850), rec(ours, 900)],
                },
                Row {
                    kind: Kind::LeaderKill,
                    lib: "java",
                    recoveries: vec![rec(1000, 700), rec(1000, 750)],
                },
            ]
        };
        let page = page(&rows(1100), &opts(), &[]);
        assert!(
            page.contains(
                "leader-kill: ours at most 0.8× Curator's median to the next hold: not met \
                 (1.10×: 1100 ms against 800 ms); the ensemble alone took median 900 ms to \
                 have a leader again, past that bound before any client could act; the \
                 clients' part after it: 0.83× (250 ms against 300 ms)"
            ),
            "{page}"
        );
        // Each library's run has its own election: its part is from its own.
        assert!(
            page.contains("over 2 kills; from there to the next hold: median 250 ms, worst 250 ms"),
            "{page}"
        );
        assert!(
            page.contains("median 750 ms, worst 750 ms, over 2 kills; from there to the next hold: median 300 ms, worst 300 ms"),
            "{page}"
        );
        let page = super::page(&rows(700), &opts(), &[]);
        assert!(
            page.contains(
                "leader-kill: ours at most 0.8× Curator's median to the next hold: met (0.70×: \
                 700 ms against 800 ms); the ensemble alone took median 900 ms to have a leader \
                 again, past that bound"
            ),
            "{page}"
        );
    }

    #[test]
    fn each_library_runs_alone_and_a_pause_only_for_its_side() {
        assert_eq!(
            runs(&[Kind::LeaderKill, Kind::OursPause, Kind::CuratorPause]),
            vec![
                (Kind::LeaderKill, "rust", 2, 0),
                (Kind::LeaderKill, "java", 0, 2),
                (Kind::OursPause, "rust", 2, 0),
                (Kind::CuratorPause, "java", 0, 2),
            ]
        );
    }

    #[test]
    fn charts_show_each_kind_measured_with_both_libraries() {
        let d = |ms| Some(Duration::from_millis(ms));
        let rec = |next| Recovery {
            next_hold: next,
            old_rate: None,
            ensemble_back: None,
        };
        let rows = vec![
            Row {
                kind: Kind::LeaderKill,
                lib: "rust",
                recoveries: vec![rec(d(1000)), rec(d(3000)), rec(d(2000))],
            },
            Row {
                kind: Kind::LeaderKill,
                lib: "java",
                recoveries: vec![rec(d(500)), rec(None), rec(d(700))],
            },
            Row {
                kind: Kind::OursPause,
                lib: "rust",
                recoveries: vec![rec(d(4000))],
            },
        ];
        let charts = charts(&rows);
        let (_, median) = &charts[0];
        assert_eq!(median.groups, ["leader-kill", "ours-pause"]);
        assert_eq!(
            median.series,
            vec![
                ("ours".to_owned(), vec![Some(2.0), Some(4.0)]),
                ("curator".to_owned(), vec![Some(0.7), None]),
            ]
        );
        let (_, worst) = &charts[1];
        // Not recovered is the worst, and is left out of the bars.
        assert_eq!(worst.series[0].1, [Some(3.0), Some(4.0)]);
        assert_eq!(worst.series[1].1, [None, None]);
    }
}
