//! The bench report people can look at: a Markdown page per recipe under `target/bench/`
//! (the machine, versions and settings; the medians of every library at every contention
//! level; the ratios; the targets) with grouped bar charts in plain SVG (cycles/s and p99
//! latency, one bar per library), and an index of the pages.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// A grouped bar chart: for each group (a case), one bar per series (a library).
#[derive(Debug, Clone)]
pub(crate) struct Chart {
    /// The title, drawn on top.
    pub title: String,
    /// The unit of the values, for the axis.
    pub unit: String,
    /// The group labels, left to right.
    pub groups: Vec<String>,
    /// Each series' name and its value per group (`None`: not measured).
    pub series: Vec<(String, Vec<Option<f64>>)>,
}

/// A series' colour: the same library has the same colour on every chart.
fn colour(name: &str) -> &'static str {
    match name {
        "ours" => "#1f77b4",
        "ours (drop)" => "#9ecae1",
        "curator" | "java" => "#d62728",
        "kazoo" => "#2ca02c",
        _ => "#777777",
    }
}

const WIDTH: f64 = 760.0;
const HEIGHT: f64 = 375.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 95.0;

/// The chart as a standalone SVG document.
pub(crate) fn svg(chart: &Chart) -> String {
    let max = chart
        .series
        .iter()
        .flat_map(|(_, v)| v.iter().flatten())
        .copied()
        .filter(|v| v.is_finite())
        .fold(0.0_f64, f64::max);
    let top = nice_ceiling(max);
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let groups = chart.groups.len().max(1) as f64;
    let group_w = plot_w / groups;
    let bars = chart.series.len().max(1) as f64;
    let bar_w = (group_w * 0.8 / bars).min(48.0);
    let mut out = String::new();
    let _ = write!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">"#
    );
    out.push('\n');
    let _ = writeln!(
        out,
        r#"<rect width="100%" height="100%" fill="white"/><text x="{}" y="22" text-anchor="middle" font-size="15" font-weight="bold">{}</text>"#,
        WIDTH / 2.0,
        escape(&chart.title)
    );
    // Axis and grid: five steps.
    for i in 0..=5 {
        let value = top * f64::from(i) / 5.0;
        let y = TOP + plot_h - plot_h * f64::from(i) / 5.0;
        let _ = writeln!(
            out,
            r##"<line x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            WIDTH - RIGHT,
            LEFT - 6.0,
            y + 4.0,
            short(value)
        );
    }
    let _ = writeln!(
        out,
        r#"<text x="16" y="{:.1}" transform="rotate(-90 16 {:.1})" text-anchor="middle">{}</text>"#,
        TOP + plot_h / 2.0,
        TOP + plot_h / 2.0,
        escape(&chart.unit)
    );
    for (g, label) in chart.groups.iter().enumerate() {
        let x0 = LEFT + group_w * g as f64 + (group_w - bar_w * bars) / 2.0;
        for (s, (name, values)) in chart.series.iter().enumerate() {
            let Some(value) = values.get(g).copied().flatten().filter(|v| v.is_finite()) else {
                continue;
            };
            let h = if top > 0.0 { plot_h * value / top } else { 0.0 };
            let x = x0 + bar_w * s as f64;
            let y = TOP + plot_h - h;
            let _ = writeln!(
                out,
                r#"<rect x="{x:.1}" y="{y:.1}" width="{:.1}" height="{h:.1}" fill="{}"><title>{}: {}</title></rect>"#,
                bar_w * 0.92,
                colour(name),
                escape(name),
                short(value)
            );
        }
        // A long label goes on two lines, split at its comma.
        let cx = LEFT + group_w * (g as f64 + 0.5);
        let mut lines = label.splitn(2, ", ");
        let first = lines.next().unwrap_or_default();
        let _ = write!(
            out,
            r#"<text x="{cx:.1}" y="{:.1}" text-anchor="middle">{}"#,
            TOP + plot_h + 18.0,
            escape(first)
        );
        if let Some(second) = lines.next() {
            let _ = write!(
                out,
                r#"<tspan x="{cx:.1}" dy="15">{}</tspan>"#,
                escape(second)
            );
        }
        out.push_str("</text>\n");
    }
    // Legend.
    for (s, (name, _)) in chart.series.iter().enumerate() {
        let x = LEFT + 130.0 * s as f64;
        let y = HEIGHT - 24.0;
        let _ = writeln!(
            out,
            r#"<rect x="{x:.1}" y="{:.1}" width="12" height="12" fill="{}"/><text x="{:.1}" y="{y:.1}">{}</text>"#,
            y - 10.0,
            colour(name),
            x + 17.0,
            escape(name)
        );
    }
    out.push_str("</svg>\n");
    out
}

/// A round number at or above `v` for the axis top (1, 2 or 5 times a power of ten).
fn nice_ceiling(v: f64) -> f64 {
    if v.is_nan() || v <= 0.0 {
        return 1.0;
    }
    let magnitude = 10f64.powf(v.log10().floor());
    for step in [1.0, 2.0, 5.0, 10.0] {
        if step * magnitude >= v {
            return step * magnitude;
        }
    }
    10.0 * magnitude
}

/// A value for an axis or a tooltip: no decimals from 100 up, thousands as `k`.
fn short(v: f64) -> String {
    if v == 0.0 {
        "0".to_owned()
    } else if v >= 10_000.0 {
        format!("{:.0}k", v / 1000.0)
    } else if v >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Where the reports go: `<target>/bench`.
pub(crate) fn dir() -> PathBuf {
    crate::paths::target_dir().join("bench")
}

/// Writes `<dir>/<name>.md` (with `body`, which refers to the charts by file name) and each
/// chart as `<dir>/<name>-<slug>.svg`; updates the index. Returns the page's path.
pub(crate) fn write_page(
    dir: &Path,
    name: &str,
    body: &str,
    charts: &[(&str, Chart)],
) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    for (slug, chart) in charts {
        std::fs::write(dir.join(format!("{name}-{slug}.svg")), svg(chart))?;
    }
    let page = dir.join(format!("{name}.md"));
    std::fs::write(&page, body)?;
    write_index(dir)?;
    Ok(page)
}

/// `<dir>/README.md`: a link to every page there.
fn write_index(dir: &Path) -> std::io::Result<()> {
    let mut pages: Vec<String> = std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md") && n != "README.md")
        .collect();
    pages.sort();
    let mut out = "# Benchmark reports\n\nOne page per benchmark, from its last run (`cargo xtask bench <name>`; `cargo xtask bench` runs every lock recipe).\n\n".to_owned();
    for page in pages {
        let name = page.trim_end_matches(".md");
        let _ = writeln!(out, "- [{name}]({page})");
    }
    std::fs::write(dir.join("README.md"), out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_chart_has_one_bar_per_measured_value_and_a_legend() {
        let chart = Chart {
            title: "cycles/s".into(),
            unit: "cycles/s".into(),
            groups: vec!["1 session".into(), "4 sessions".into()],
            series: vec![
                ("ours".into(), vec![Some(1500.0), Some(1200.0)]),
                ("curator".into(), vec![Some(1000.0), None]),
            ],
        };
        let svg = svg(&chart);
        assert!(svg.starts_with("<svg"));
        assert_eq!(
            svg.matches("<rect x=").count(),
            3 + 2,
            "3 bars, 2 legend keys"
        );
        assert!(svg.contains("<title>ours: 1500</title>"));
        assert!(svg.contains(">curator<"));
    }

    #[test]
    fn axis_tops_are_round() {
        assert_eq!(nice_ceiling(1834.0), 2000.0);
        assert_eq!(nice_ceiling(420.0), 500.0);
        assert_eq!(nice_ceiling(0.0), 1.0);
        assert_eq!(short(26543.0), "27k");
    }
}
