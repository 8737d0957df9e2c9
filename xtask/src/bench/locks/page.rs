//! The report page and its charts (see `bench::report`).

use super::*;

/// The report page: the header, the tables as they were printed, and the charts.
pub(super) fn report_page(
    what: &str,
    header: &[String],
    table: &str,
    ratios: &str,
    targets: &str,
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
        "\n![cycles per second]({what}-cycles.svg)\n\n![p99 latency]({what}-p99.svg)\n\n## Results\n\n```text\n{table}```\n\n## Ratios\n\n```text\n{ratios}```\n\n## Targets\n\n```text\n{targets}```\n"
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
