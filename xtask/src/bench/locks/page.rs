//! The report page and its charts (see `bench::report`).

use super::*;
use crate::bench::interval::MIN_ROUNDS;
use crate::bench::load::NOISY_CORE_SHARE;
use crate::bench::report::Table;
use crate::bench::slices::{FLAT_TOLERANCE, SLICE};

/// The report page's tables beyond the results.
pub(super) struct Sections<'a> {
    /// Ours against each other library, per case and metric.
    pub(super) ratios: &'a [Table],
    pub(super) targets: &'a Table,
    /// The p99 and cycles/s per place in the round's order.
    pub(super) order: &'a Table,
    /// One line per round.
    pub(super) load_summary: &'a str,
    /// One row per run.
    pub(super) load: &'a Table,
}

/// The report page: the header, the results as they were printed, the ratios, targets, order
/// effect and load as Markdown tables, and the charts.
pub(super) fn report_page(
    what: &str,
    header: &[String],
    table: &str,
    sections: &Sections<'_>,
) -> String {
    let mut out = format!(
        "# Benchmark: {what}\n\n`cargo xtask bench {what}`, ours against Curator 5.4 (and kazoo where it has the recipe), on one fresh server.\n\n"
    );
    for line in header {
        out.push_str("- ");
        out.push_str(line);
        out.push('\n');
    }
    out.push_str(&format!(
        "\n![cycles per second]({what}-cycles.svg)\n\n![p99 latency]({what}-p99.svg)\n\n## Results\n\n```text\n{table}```\n\n## Ratios\n\nEach round's ours divided by the same round's theirs; the median of those per-round ratios, their min–max, and a bootstrap 90% interval of the median (rounds resampled, seeded). With 5 rounds the bootstrap interval is the min–max (the median of 5 draws is the lowest value more than 5% of the time); it narrows from about 7 rounds on.\n\n"
    ));
    for ratios in sections.ratios {
        out.push_str(&ratios.markdown());
        out.push('\n');
    }
    out.push_str(&format!(
        "## Targets\n\nMet only when every round's ratio is on the target's side, over at least {MIN_ROUNDS} rounds.\n\n{}\n## Order\n\nEach run's p99 and cycles/s against its own library's median in its case, by its place in the round's order (the order rotates: round r starts with library r mod k). A first place above 1x for p99 means the library that runs first pays for the order; a round 1 above 1x for every library means the server was still warming up.\n\n{}\n## Machine load and warm-up\n\n```text\n{}```\n\nPer run: the 1-minute load average at the window's edges; the CPU other processes (not the worker, the server or the bench) used in the window, as a share of one core (noisy past {:.0}%); the server's requests/s in each {} ms slice of the window, and the first slice against the median of the later ones (within {:.0}%: flat, the warm-up was long enough).\n\n{}",
        sections.targets.markdown(),
        sections.order.markdown(),
        sections.load_summary,
        NOISY_CORE_SHARE * 100.0,
        SLICE.as_millis(),
        FLAT_TOLERANCE * 100.0,
        sections.load.markdown(),
    ));
    out
}

/// The cycles/s and p99 charts: one group per case, one bar per library (medians).
pub(super) fn charts(
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
