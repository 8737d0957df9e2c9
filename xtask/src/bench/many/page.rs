//! The report of `bench many`: the table printed and written to `target/bench/many.md`,
//! ours against Curator per case, where a per-lock cost grows with N, and the goals.

use std::fmt::Write as _;
use std::time::Duration;

use super::run::Outcome;
use super::{CURATOR_POOL, Case, Lib, Options, Shape, progress, thousands};
use crate::bench::report::{self, Table};
use crate::bench::versions::{jar_version, java_version};

/// One case and what it gave: its outcome, or why it failed.
type Row = (Case, std::result::Result<Outcome, String>);

/// A per-lock figure is said to grow faster than N when it rises by more than this from one
/// N to the next, counted from [`GROWTH_FLOOR_N`] (below it, fixed costs and the resident
/// set's page granularity dominate).
const GROWTH_FACTOR: f64 = 1.5;
/// The smallest N a growth is judged from.
const GROWTH_FLOOR_N: usize = 100;

/// The numbers of one case that worked, per lock (or per session) where it says so.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Figures {
    acquire_ms: f64,
    release_ms: f64,
    /// Resident-set growth from `READY` to `ACQUIRED`, in bytes, over N.
    bytes_per_lock: f64,
    /// Live-heap growth from `READY` to `ACQUIRED`, in bytes, over N: what the held locks
    /// keep (see [`super::lines`]).
    heap_per_lock: f64,
    threads: u64,
    acquire_requests_per_lock: f64,
    release_requests_per_lock: f64,
    acquire_bytes_per_lock: f64,
    acquire_round_trips: u64,
}

impl Figures {
    fn of(n: usize, o: &Outcome) -> Figures {
        let n = n.max(1) as f64;
        let growth_kib = o.acquired.rss_kib.saturating_sub(o.ready.rss_kib);
        Figures {
            acquire_ms: o.acquired.ns as f64 / 1e6,
            release_ms: o.released.ns as f64 / 1e6,
            bytes_per_lock: growth_kib as f64 * 1024.0 / n,
            heap_per_lock: o.acquired.heap_kib.saturating_sub(o.ready.heap_kib) as f64 * 1024.0 / n,
            threads: o.acquired.threads,
            acquire_requests_per_lock: o.acquire.requests as f64 / n,
            release_requests_per_lock: o.release.requests as f64 / n,
            acquire_bytes_per_lock: o.acquire.bytes as f64 / n,
            acquire_round_trips: o.acquire.round_trips,
        }
    }

    /// Acquire time per lock, in µs.
    fn acquire_us_per_lock(&self, n: usize) -> f64 {
        self.acquire_ms * 1e3 / n.max(1) as f64
    }

    /// Release time per lock, in µs.
    fn release_us_per_lock(&self, n: usize) -> f64 {
        self.release_ms * 1e3 / n.max(1) as f64
    }
}

fn figures(rows: &[Row], shape: Shape, n: usize, lib: Lib) -> Option<Figures> {
    rows.iter()
        .find(|(c, _)| c.shape == shape && c.n == n && c.lib == lib)
        .and_then(|(c, o)| o.as_ref().ok().map(|o| Figures::of(c.n, o)))
}

/// The steps where a per-lock figure rises faster than N: each `(smaller N, larger N,
/// factor)` for consecutive `points` (sorted by N) from [`GROWTH_FLOOR_N`] whose per-lock
/// value grew by more than [`GROWTH_FACTOR`].
fn faster_than_n(points: &[(usize, f64)]) -> Vec<(usize, usize, f64)> {
    let mut sorted = points.to_vec();
    sorted.sort_by_key(|p| p.0);
    sorted
        .windows(2)
        .filter_map(|pair| {
            let [(lo, a), (hi, b)] = pair else {
                return None;
            };
            (*lo >= GROWTH_FLOOR_N && *a > 0.0 && b / a > GROWTH_FACTOR).then(|| (*lo, *hi, b / a))
        })
        .collect()
}

/// `ours / curator`, when both are there and Curator's is not zero.
fn ratio(ours: Option<f64>, curator: Option<f64>) -> Option<f64> {
    match (ours, curator) {
        (Some(o), Some(c)) if c > 0.0 => Some(o / c),
        _ => None,
    }
}

fn cell(v: Option<f64>, decimals: usize) -> String {
    v.map_or_else(|| "–".to_owned(), |v| format!("{v:.decimals$}"))
}

fn verdict(met: bool) -> &'static str {
    if met { "met" } else { "NOT met" }
}

/// The page's charts: per case, ours beside Curator's.
fn charts(rows: &[Row], opts: &Options) -> Vec<(&'static str, report::Chart)> {
    let cases: Vec<(Shape, usize)> = shapes(opts)
        .into_iter()
        .flat_map(|(shape, counts)| counts.iter().map(move |&n| (shape, n)))
        .collect();
    let groups: Vec<String> = cases
        .iter()
        .map(|&(shape, n)| {
            Case {
                shape,
                n,
                lib: Lib::Ours,
            }
            .label()
        })
        .collect();
    let chart = |title: &str, unit: &str, field: Metric| report::Chart {
        title: title.to_owned(),
        unit: unit.to_owned(),
        groups: groups.clone(),
        series: Lib::ALL
            .iter()
            .map(|&lib| {
                let values = cases
                    .iter()
                    .map(|&(shape, n)| figures(rows, shape, n, lib).map(|f| field(&f, n)))
                    .collect();
                (lib.name().to_owned(), values)
            })
            .collect(),
    };
    vec![
        (
            "acquire",
            chart(
                "time to acquire all, per lock (lower is better)",
                "µs",
                |f, n| f.acquire_us_per_lock(n),
            ),
        ),
        (
            "heap",
            chart(
                "live heap per held lock or session (lower is better)",
                "B",
                |f, _| f.heap_per_lock,
            ),
        ),
        (
            "resident",
            chart(
                "resident set per held lock or session (lower is better)",
                "B",
                |f, _| f.bytes_per_lock,
            ),
        ),
        (
            "requests",
            chart(
                "requests per lock to acquire (lower is better)",
                "requests",
                |f, _| f.acquire_requests_per_lock,
            ),
        ),
    ]
}

/// The table: one row per case.
fn table(rows: &[Row]) -> Table {
    let mut t = Table::new(
        &[
            "case",
            "library",
            "acquire all ms",
            "release all ms",
            "RSS ready MiB",
            "RSS held MiB",
            "RSS released MiB",
            "B per lock",
            "heap B per lock",
            "threads",
            "req/lock acq.",
            "req/lock rel.",
            "B/lock acq. (wire)",
            "awaited RTs acq.",
            "handshakes acq.",
            "server watches held",
        ],
        2,
    );
    for (case, outcome) in rows {
        let mut row = vec![case.label(), case.lib.name().to_owned()];
        match outcome {
            Err(e) => row.push(format!("failed: {}", e.lines().next().unwrap_or_default())),
            Ok(o) => {
                let f = Figures::of(case.n, o);
                row.extend([
                    format!("{:.1}", f.acquire_ms),
                    format!("{:.1}", f.release_ms),
                    format!("{:.1}", o.ready.rss_kib as f64 / 1024.0),
                    format!("{:.1}", o.acquired.rss_kib as f64 / 1024.0),
                    format!("{:.1}", o.released.rss_kib as f64 / 1024.0),
                    format!("{:.0}", f.bytes_per_lock),
                    format!("{:.0}", f.heap_per_lock),
                    f.threads.to_string(),
                    format!("{:.2}", f.acquire_requests_per_lock),
                    format!("{:.2}", f.release_requests_per_lock),
                    format!("{:.0}", f.acquire_bytes_per_lock),
                    f.acquire_round_trips.to_string(),
                    o.acquire.handshakes.to_string(),
                    o.watches.map_or_else(|| "–".to_owned(), |w| w.to_string()),
                ]);
            }
        }
        t.push(row);
    }
    t
}

/// Ours over Curator's, case by case.
fn ratios(rows: &[Row], opts: &Options) -> Table {
    let mut t = Table::new(
        &[
            "case",
            "acquire all",
            "release all",
            "memory per lock/session",
            "heap per lock/session",
            "threads",
        ],
        1,
    );
    for (shape, counts) in shapes(opts) {
        for &n in counts {
            let (o, c) = (
                figures(rows, shape, n, Lib::Ours),
                figures(rows, shape, n, Lib::Curator),
            );
            let r = |field: fn(&Figures) -> f64| ratio(o.map(|f| field(&f)), c.map(|f| field(&f)));
            let label = Case {
                shape,
                n,
                lib: Lib::Ours,
            }
            .label();
            t.push(vec![
                label,
                cell(r(|f| f.acquire_ms), 3),
                cell(r(|f| f.release_ms), 3),
                cell(r(|f| f.bytes_per_lock), 3),
                cell(r(|f| f.heap_per_lock), 3),
                cell(r(|f| f.threads as f64), 3),
            ]);
        }
    }
    t
}

fn shapes(opts: &Options) -> [(Shape, &Vec<usize>); 2] {
    [
        (Shape::Locks, &opts.locks),
        (Shape::Sessions, &opts.sessions),
    ]
}

/// A per-lock figure of a case with N locks.
type Metric = fn(&Figures, usize) -> f64;

/// Where a per-lock (per-session) cost grows faster than N, for each library.
fn growth(rows: &[Row], opts: &Options) -> String {
    let mut out = String::new();
    let metrics: [(&str, Metric); 5] = [
        ("acquire time per lock", |f, n| f.acquire_us_per_lock(n)),
        ("release time per lock", |f, n| f.release_us_per_lock(n)),
        ("memory per lock", |f, _| f.bytes_per_lock),
        ("heap per lock", |f, _| f.heap_per_lock),
        ("wire bytes per acquire", |f, _| f.acquire_bytes_per_lock),
    ];
    for (shape, counts) in shapes(opts) {
        for lib in Lib::ALL {
            for (name, metric) in metrics {
                let points: Vec<(usize, f64)> = counts
                    .iter()
                    .filter_map(|&n| Some((n, metric(&figures(rows, shape, n, lib)?, n))))
                    .collect();
                if points.len() < 2 {
                    continue;
                }
                let steps = faster_than_n(&points);
                let values: Vec<String> = points
                    .iter()
                    .map(|(n, v)| format!("{}: {v:.1}", thousands(*n)))
                    .collect();
                let _ = writeln!(
                    out,
                    "{} shape, {}, {name} (N: value): {}{}",
                    shape.name(),
                    lib.name(),
                    values.join(", "),
                    if steps.is_empty() {
                        String::new()
                    } else {
                        let s: Vec<String> = steps
                            .iter()
                            .map(|(lo, hi, k)| {
                                format!("{}→{} ×{k:.2}", thousands(*lo), thousands(*hi))
                            })
                            .collect();
                        format!("  GROWS FASTER THAN N: {}", s.join(", "))
                    }
                );
            }
        }
    }
    out
}

/// The requests per lock of each case by opcode: acquire, then release.
fn by_op(rows: &[Row]) -> String {
    let per_lock = |ops: &[(String, u64)], n: usize| -> String {
        ops.iter()
            .map(|(op, count)| format!("{op} {:.2}", *count as f64 / n.max(1) as f64))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut out = String::new();
    for (case, outcome) in rows {
        if let Ok(o) = outcome {
            let _ = writeln!(
                out,
                "{}, {}: acquire: {}; release: {}",
                case.label(),
                case.lib.name(),
                per_lock(&o.acquire.by_op, case.n),
                per_lock(&o.release.by_op, case.n)
            );
        }
    }
    out
}

/// The issue's goals and where each stands.
fn goals(rows: &[Row], opts: &Options) -> String {
    let mut out = String::new();
    // 1. Bytes: flat per lock as N grows (N locks cost N times one lock's bytes, pipelined).
    let points: Vec<(usize, f64, u64)> = opts
        .locks
        .iter()
        .filter_map(|&n| {
            let f = figures(rows, Shape::Locks, n, Lib::Ours)?;
            Some((n, f.acquire_bytes_per_lock, f.acquire_round_trips))
        })
        .collect();
    let _ = writeln!(
        out,
        "1. acquiring N free locks costs at most N pipelined round trips' worth of bytes: {}",
        match (points.first(), points.iter().map(|p| p.1).reduce(f64::max)) {
            (Some(&(n0, b0, _)), Some(max)) if b0 > 0.0 => format!(
                "ours {} (wire bytes per lock; awaited round trips for all N: {}); the largest \
                 {:.2}× the N={}'s: {}",
                points
                    .iter()
                    .map(|(n, b, _)| format!("N={}: {b:.0} B", thousands(*n)))
                    .collect::<Vec<_>>()
                    .join(", "),
                points
                    .iter()
                    .map(|(n, _, rt)| format!("{rt} at N={}", thousands(*n)))
                    .collect::<Vec<_>>()
                    .join(", "),
                max / b0,
                thousands(n0),
                verdict(max / b0 <= 1.1)
            ),
            _ => "not measured".to_owned(),
        }
    );
    // 2. O(N) memory and time, no quadratic term.
    let ours_growth: Vec<String> = growth(rows, opts)
        .lines()
        .filter(|l| l.contains(", ours,") && l.contains("GROWS FASTER"))
        .map(str::to_owned)
        .collect();
    let _ = writeln!(
        out,
        "2. O(N) memory, no quadratic term anywhere (no per-lock figure of ours rising more than \
         {GROWTH_FACTOR}× from one N ≥ {GROWTH_FLOOR_N} to the next): {}",
        if ours_growth.is_empty() {
            "met over the N measured".to_owned()
        } else {
            format!("NOT met: {}", ours_growth.join("; "))
        }
    );
    // 3. Memory per held lock and per session.
    let mut memory = Vec::new();
    for (shape, counts) in shapes(opts) {
        for &n in counts {
            let (o, c) = (
                figures(rows, shape, n, Lib::Ours),
                figures(rows, shape, n, Lib::Curator),
            );
            let rss = ratio(o.map(|f| f.bytes_per_lock), c.map(|f| f.bytes_per_lock));
            let heap = ratio(o.map(|f| f.heap_per_lock), c.map(|f| f.heap_per_lock));
            let label = Case {
                shape,
                n,
                lib: Lib::Ours,
            }
            .label();
            let judged = |r: Option<f64>| match r {
                Some(r) => format!("{r:.3}× ({})", verdict(r <= 0.05)),
                None => "not measured".to_owned(),
            };
            memory.push(format!(
                "{label}: resident {}, live heap {}",
                judged(rss),
                judged(heap)
            ));
        }
    }
    let _ = writeln!(
        out,
        "3. memory per held lock and per session ≤ 1/20 of Curator's (≤ 0.05×): {}",
        memory.join("; ")
    );
    // 4. 100,000 held locks in one process.
    let _ = writeln!(
        out,
        "4. 100,000 held locks in one process within the machine: {}",
        match rows
            .iter()
            .find(|(c, _)| c.shape == Shape::Locks && c.n == 100_000 && c.lib == Lib::Ours)
        {
            None => "not run (`--locks 100000`)".to_owned(),
            Some((_, Err(e))) => format!("NOT met: {}", e.lines().next().unwrap_or_default()),
            Some((_, Ok(o))) => format!(
                "met: held in {:.1} s, RSS {:.0} MiB, {} threads",
                o.acquired.ns as f64 / 1e9,
                o.acquired.rss_kib as f64 / 1024.0,
                o.acquired.threads
            ),
        }
    );
    out
}

/// Prints the tables, the growth and the goals, and writes the report page.
pub(super) fn report(rows: &[Row], opts: &Options, took: Duration) {
    let header = [
        crate::bench::versions::machine(),
        format!(
            "server:  ZooKeeper standalone, forceSync={}, a fresh server per case; limits: \
             maxClientCnxns=0 (unlimited; the test kit's setting for every server), \
             jute.maxbuffer left at its default (no reply lists more than one lock node); \
             nothing else raised",
            if opts.force_sync { "yes" } else { "no" }
        ),
        "ours:    recipe-mutex on zk-client, a tokio task per lock (current-thread runtime), \
         release build; every lock() in flight at once; locks shape: one Client; sessions \
         shape: a Client per lock, connected after GO"
            .to_owned(),
        format!(
            "curator: Curator {} InterProcessMutex, {}, JVM defaults; a fixed pool of \
             {CURATOR_POOL} threads runs the acquires (each thread releases the locks it \
             acquired: Curator's mutex belongs to its thread); locks shape: one \
             CuratorFramework; sessions shape: a CuratorFramework per lock, started in the pool \
             after GO",
            jar_version("curator-recipes").unwrap_or_else(|| "5.4".to_owned()),
            java_version()
        ),
        format!(
            "time:    {} wall-clock for this bench, builds and server starts included",
            progress::human(took)
        ),
        "columns: acquire all = GO to the last lock taken (sessions shape: connecting \
         included); release all = RELEASE to the last release returning; RSS ready = the \
         worker before its first lock (locks shape: its session connected; sessions shape: no \
         session); B per lock = RSS growth from ready to all held, over N (per session in the \
         sessions shape; the resident set keeps what the allocator held on to from the burst of \
         acquiring, in-flight tasks or threads and buffers, so this bounds a held lock's cost \
         from above, for both libraries; RSS released = with nothing held, sessions still \
         open: what stayed); heap B per lock = live-heap growth from ready to all held, over N \
         (ours: bytes allocated and not freed, counted by the worker's allocator; Curator's: the \
         JVM heap in use after System.gc()): what the held locks keep, the burst left out; \
         threads = the worker's with all held; req/lock, B/lock (both ways) \
         and awaited round trips = counted by a proxy between worker and server (bench::tap), \
         pings and handshakes left out; handshakes acq. = connect handshakes while acquiring \
         (more than S: sessions that reconnected)"
            .to_owned(),
    ];
    let table = table(rows);
    let ratios = ratios(rows, opts);
    let growth = growth(rows, opts);
    let goals = goals(rows, opts);
    let by_op = by_op(rows);
    println!();
    for line in &header {
        println!("{line}");
    }
    println!();
    print!("{}", table.text());
    println!("\nours / Curator's:");
    print!("{}", ratios.text());
    println!("\nrequests per lock by opcode:");
    print!("{by_op}");
    println!("\nper-lock figures against N:");
    print!("{growth}");
    println!();
    print!("{goals}");
    let mut page = String::from(
        "# Benchmark: many\n\n`cargo xtask bench many`: one process taking many distinct \
         locks at once, over one session or a session each, ours against Curator 5.4 \
         (issue 35, item 1).\n\n",
    );
    for line in &header {
        let _ = writeln!(page, "- {line}");
    }
    let _ = write!(
        page,
        "\n![acquire time per lock](many-acquire.svg)\n\n![live heap per held lock or session](many-heap.svg)\n\n\
         ![resident set per held lock or session](many-resident.svg)\n\n\
         ![requests per lock](many-requests.svg)\n\n## Results\n\n{}\n## Ours / Curator's\n\n{}\n## Requests per lock by opcode\n\n```text\n{by_op}```\n\n\
         ## Per-lock figures against N\n\n\
         ```text\n{growth}```\n\n## Goals\n\n```text\n{goals}```\n",
        table.markdown(),
        ratios.markdown()
    );
    match report::write_page(&report::dir(), "many", &page, &charts(rows, opts)) {
        Ok(path) => println!("\nreport: {}", path.display()),
        Err(e) => eprintln!("bench many: could not write the report: {e}"),
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::super::lines::{Acquired, Ready, Released};
    use super::super::run::Traffic;
    use super::*;

    fn outcome(ready_kib: u64, held_kib: u64, acquire_ns: u64, requests: u64) -> Outcome {
        Outcome {
            ready: Ready {
                rss_kib: ready_kib,
                heap_kib: ready_kib / 2,
                threads: 2,
            },
            acquired: Acquired {
                ns: acquire_ns,
                held: 1000,
                rss_kib: held_kib,
                heap_kib: held_kib / 2,
                threads: 2,
            },
            released: Released {
                ns: 2_000_000,
                rss_kib: held_kib,
                heap_kib: ready_kib / 2,
            },
            acquire: Traffic {
                requests,
                bytes: 100_000,
                round_trips: 3,
                handshakes: 0,
                by_op: vec![("create".to_owned(), 1000)],
            },
            release: Traffic {
                requests: 1000,
                ..Traffic::default()
            },
            watches: Some(1000),
        }
    }

    #[test]
    fn figures_divide_by_n() {
        let f = Figures::of(1000, &outcome(4000, 5000, 50_000_000, 2000));
        assert!((f.bytes_per_lock - 1024.0).abs() < 1e-9);
        assert!((f.heap_per_lock - 512.0).abs() < 1e-9);
        assert!((f.acquire_ms - 50.0).abs() < 1e-9);
        assert!((f.acquire_us_per_lock(1000) - 50.0).abs() < 1e-9);
        assert!((f.release_us_per_lock(1000) - 2.0).abs() < 1e-9);
        assert!((f.acquire_requests_per_lock - 2.0).abs() < 1e-9);
        assert!((f.release_requests_per_lock - 1.0).abs() < 1e-9);
        assert!((f.acquire_bytes_per_lock - 100.0).abs() < 1e-9);
        // A resident set or a heap that shrank adds nothing.
        let shrank = Figures::of(1000, &outcome(5000, 4000, 1, 0));
        assert_eq!(shrank.bytes_per_lock, 0.0);
        assert_eq!(shrank.heap_per_lock, 0.0);
    }

    #[test]
    fn ratios_need_both_sides() {
        assert_eq!(ratio(Some(1.0), Some(20.0)), Some(0.05));
        assert_eq!(ratio(Some(1.0), Some(0.0)), None);
        assert_eq!(ratio(None, Some(1.0)), None);
        assert_eq!(cell(None, 2), "–");
        assert_eq!(cell(Some(0.123_4), 2), "0.12");
    }

    #[test]
    fn growth_faster_than_n_is_flagged_from_the_floor() {
        // Fixed costs below the floor: 10 → 100 shrinks or rises, neither judged.
        let flat = [(10, 50.0), (100, 5.0), (1_000, 4.0), (10_000, 4.4)];
        assert!(faster_than_n(&flat).is_empty());
        let quadratic = [(100, 1.0), (10, 9.0), (1_000, 10.0), (10_000, 100.0)];
        let steps = faster_than_n(&quadratic);
        assert_eq!(steps.len(), 2);
        let spans: Vec<(usize, usize)> = steps.iter().map(|s| (s.0, s.1)).collect();
        assert_eq!(spans, [(100, 1_000), (1_000, 10_000)]);
        assert!(steps.iter().all(|s| (s.2 - 10.0).abs() < 1e-9));
        assert!(faster_than_n(&[(100, 0.0), (1_000, 5.0)]).is_empty());
    }

    #[test]
    fn charts_put_ours_beside_curators_per_case_and_say_what_is_missing() {
        let opts = Options {
            locks: vec![1000],
            sessions: vec![10],
            force_sync: true,
        };
        let case = |shape, n, lib| Case { shape, n, lib };
        let rows: Vec<Row> = vec![
            (
                case(Shape::Locks, 1000, Lib::Ours),
                Ok(outcome(4000, 5000, 50_000_000, 6000)),
            ),
            (
                case(Shape::Locks, 1000, Lib::Curator),
                Ok(outcome(4000, 6000, 100_000_000, 7000)),
            ),
            (case(Shape::Sessions, 10, Lib::Ours), Err("failed".into())),
        ];
        let charts = charts(&rows, &opts);
        let names: Vec<&str> = charts.iter().map(|(name, _)| *name).collect();
        assert_eq!(names, ["acquire", "heap", "resident", "requests"]);
        let (_, requests) = &charts[3];
        assert_eq!(requests.groups.len(), 2);
        assert_eq!(
            requests.series,
            vec![
                ("ours".to_owned(), vec![Some(6.0), None]),
                ("curator".to_owned(), vec![Some(7.0), None]),
            ]
        );
        let (_, acquire) = &charts[0];
        assert_eq!(acquire.series[0].1[0], Some(50.0), "µs per lock");
    }
}
