//! The bench report people can look at: a Markdown page per recipe under `target/bench/`
//! (the machine, versions and settings; the medians of every library at every contention
//! level; the ratios; the targets) with grouped bar charts in plain SVG (cycles/s and p99
//! latency, one bar per library, each with its value written above it), and an index of the
//! pages.

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
const TOP: f64 = 46.0;
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
    let numbers = NumberFormat::for_axis(top);
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
            numbers.tick(value)
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
            let width = bar_w * 0.92;
            let label = numbers.value(value);
            let _ = writeln!(
                out,
                r#"<rect x="{x:.1}" y="{y:.1}" width="{width:.1}" height="{h:.1}" fill="{}"><title>{}: {label}</title></rect>"#,
                colour(name),
                escape(name),
            );
            let _ = writeln!(
                out,
                r#"<text class="value" x="{:.1}" y="{:.1}" text-anchor="middle" font-size="{:.1}">{label}</text>"#,
                x + width / 2.0,
                y - 4.0,
                label_size(&label, width),
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

/// How one chart writes its numbers, chosen once from its axis top: every tick of the axis
/// in one form (never `500` beside `1.5k`), and every bar's value in the same unit.
///
/// Below 10 000 numbers are plain with thousands separators (`1,200`), from 10 000 up all in
/// thousands (`20k`). Ticks carry the decimals their step needs (`0.2`, `0.4`, ... or `0`,
/// `400`, ...), all the same count; bar values carry about three significant digits of the
/// axis top (`1,834` under 2,000, `42.3` under 50, `8.3k` under 10k).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct NumberFormat {
    /// Written in thousands, with a `k`.
    thousands: bool,
    tick_decimals: usize,
    value_decimals: usize,
}

impl NumberFormat {
    /// The form of an axis from 0 to `top` in five steps (`top` as [`nice_ceiling`] gives).
    fn for_axis(top: f64) -> NumberFormat {
        let thousands = top >= 10_000.0;
        let scaled = if thousands { top / 1000.0 } else { top };
        // Digits after the point that a number of this size needs: 0 from 1 up, 1 for 0.1 to
        // 0.9, and so on (the epsilon keeps 0.1 from reading as 0.0999...).
        let decimals_for = |v: f64| -> usize {
            if !(v.is_finite() && v > 0.0) {
                return 0;
            }
            let needed = (-v.log10() - 1e-6).ceil();
            if needed > 0.0 { needed as usize } else { 0 }
        };
        let tick_decimals = decimals_for(scaled / 5.0);
        // Three significant digits of the top: 0 decimals from 100 up, 1 from 10, 2 from 1.
        let value_decimals = decimals_for(scaled / 100.0).max(tick_decimals);
        NumberFormat {
            thousands,
            tick_decimals,
            value_decimals,
        }
    }

    /// A tick of the axis.
    fn tick(self, v: f64) -> String {
        self.write(v, self.tick_decimals)
    }

    /// A bar's value.
    fn value(self, v: f64) -> String {
        self.write(v, self.value_decimals)
    }

    fn write(self, v: f64, decimals: usize) -> String {
        if self.thousands {
            format!("{}k", grouped(v / 1000.0, decimals))
        } else {
            grouped(v, decimals)
        }
    }
}

/// `v` with `decimals` digits after the point and its whole part in groups of three:
/// `12,345.6`.
fn grouped(v: f64, decimals: usize) -> String {
    let fixed = format!("{:.*}", decimals, v.abs());
    let (whole, fraction) = fixed.split_at(fixed.find('.').unwrap_or(fixed.len()));
    let mut out = String::with_capacity(fixed.len() + whole.len() / 3 + 1);
    if v < 0.0 && fixed.bytes().any(|b| b.is_ascii_digit() && b != b'0') {
        out.push('-');
    }
    for (i, digit) in whole.chars().enumerate() {
        if i > 0 && (whole.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(digit);
    }
    out.push_str(fraction);
    out
}

/// The font size of a bar's value: 10 when it fits the bar's width, smaller (down to 7) when
/// it does not (a digit is about 0.6 of the font size wide).
fn label_size(label: &str, width: f64) -> f64 {
    let chars = label.chars().count().max(1) as f64;
    (width / (0.6 * chars)).clamp(7.0, 10.0)
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A table of strings, written as aligned text for the terminal ([`Table::text`]) or as a
/// Markdown table for the report page ([`Table::markdown`]): one table, two renderings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Table {
    /// The column headers.
    pub headers: Vec<String>,
    /// The rows; a row shorter than the headers leaves its last cells empty.
    pub rows: Vec<Vec<String>>,
    /// How many leading columns are text (left-aligned); the others are numbers.
    pub text_columns: usize,
}

impl Table {
    /// An empty table with these headers, its first `text_columns` columns left-aligned.
    pub(crate) fn new(headers: &[&str], text_columns: usize) -> Table {
        Table {
            headers: headers.iter().map(|&h| h.to_owned()).collect(),
            rows: Vec::new(),
            text_columns,
        }
    }

    /// Adds a row.
    pub(crate) fn push(&mut self, row: Vec<String>) {
        self.rows.push(row);
    }

    fn cell(row: &[String], i: usize) -> &str {
        row.get(i).map_or("", String::as_str)
    }

    /// Aligned text, two spaces between columns, each line ending in a newline.
    pub(crate) fn text(&self) -> String {
        let widths: Vec<usize> = (0..self.headers.len())
            .map(|i| {
                std::iter::once(&self.headers)
                    .chain(&self.rows)
                    .map(|row| Self::cell(row, i).chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let mut out = String::new();
        for row in std::iter::once(&self.headers).chain(&self.rows) {
            let mut line = String::new();
            for (i, &width) in widths.iter().enumerate() {
                let cell = Self::cell(row, i);
                if i > 0 {
                    line.push_str("  ");
                }
                if i < self.text_columns {
                    let _ = write!(line, "{cell:<width$}");
                } else {
                    let _ = write!(line, "{cell:>width$}");
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }

    /// A Markdown table (`|` in a cell escaped), each line ending in a newline.
    pub(crate) fn markdown(&self) -> String {
        let line = |row: &[String]| {
            let cells: Vec<String> = (0..self.headers.len())
                .map(|i| Self::cell(row, i).replace('|', "\\|"))
                .collect();
            format!("| {} |\n", cells.join(" | "))
        };
        let mut out = line(&self.headers);
        let rule: Vec<&str> = (0..self.headers.len())
            .map(|i| if i < self.text_columns { "---" } else { "---:" })
            .collect();
        let _ = writeln!(out, "| {} |", rule.join(" | "));
        for row in &self.rows {
            out.push_str(&line(row));
        }
        out
    }
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
        assert!(svg.contains("<title>ours: 1,500</title>"));
        assert!(svg.contains(">curator<"));
        let values: Vec<&str> = svg
            .lines()
            .filter(|l| l.starts_with(r#"<text class="value""#))
            .filter_map(|l| l.split('>').nth(1)?.strip_suffix("</text"))
            .collect();
        assert_eq!(values, ["1,500", "1,000", "1,200"], "one value per bar");
        let ticks: Vec<&str> = svg
            .lines()
            .filter(|l| l.starts_with("<line"))
            .filter_map(|l| l.rsplit_once("\">")?.1.strip_suffix("</text>"))
            .collect();
        assert_eq!(ticks, ["0", "400", "800", "1,200", "1,600", "2,000"]);
    }

    #[test]
    fn a_table_is_aligned_text_or_markdown() {
        let mut t = Table::new(&["case", "ratio"], 1);
        t.push(vec!["1 session".into(), "1.62x".into()]);
        t.push(vec!["16 | x".into()]);
        assert_eq!(t.text(), "case       ratio\n1 session  1.62x\n16 | x\n");
        assert_eq!(
            t.markdown(),
            "| case | ratio |\n| --- | ---: |\n| 1 session | 1.62x |\n| 16 \\| x |  |\n"
        );
    }

    #[test]
    fn axis_tops_are_round() {
        assert_eq!(nice_ceiling(1834.0), 2000.0);
        assert_eq!(nice_ceiling(420.0), 500.0);
        assert_eq!(nice_ceiling(0.0), 1.0);
    }

    fn ticks(top: f64) -> Vec<String> {
        let f = NumberFormat::for_axis(top);
        (0..=5).map(|i| f.tick(top * f64::from(i) / 5.0)).collect()
    }

    #[test]
    fn every_tick_of_an_axis_is_written_alike() {
        assert_eq!(
            ticks(2000.0),
            ["0", "400", "800", "1,200", "1,600", "2,000"]
        );
        assert_eq!(
            ticks(5000.0),
            ["0", "1,000", "2,000", "3,000", "4,000", "5,000"]
        );
        assert_eq!(ticks(10_000.0), ["0k", "2k", "4k", "6k", "8k", "10k"]);
        assert_eq!(ticks(50_000.0), ["0k", "10k", "20k", "30k", "40k", "50k"]);
        assert_eq!(ticks(5.0), ["0", "1", "2", "3", "4", "5"]);
        assert_eq!(ticks(1.0), ["0.0", "0.2", "0.4", "0.6", "0.8", "1.0"]);
        assert_eq!(ticks(0.2), ["0.00", "0.04", "0.08", "0.12", "0.16", "0.20"]);
        // Whatever the top: one suffix and one count of decimals per axis.
        for exp in -3..8 {
            for step in [1.0, 2.0, 5.0] {
                let top = step * 10f64.powi(exp);
                let all = ticks(top);
                let decimals = |t: &String| t.trim_end_matches('k').split('.').nth(1).map(str::len);
                let kinds: std::collections::BTreeSet<_> = all
                    .iter()
                    .map(|t| (t.ends_with('k'), decimals(t)))
                    .collect();
                assert_eq!(kinds.len(), 1, "top {top}: {all:?}");
            }
        }
    }

    #[test]
    fn bar_values_share_the_axis_unit_with_three_digits() {
        let value = |top: f64, v: f64| NumberFormat::for_axis(top).value(v);
        assert_eq!(value(2000.0, 1834.4), "1,834");
        assert_eq!(value(500.0, 423.6), "424");
        assert_eq!(value(50.0, 42.345), "42.3");
        assert_eq!(value(5.0, 4.2345), "4.23");
        assert_eq!(value(10_000.0, 8345.0), "8.3k");
        assert_eq!(value(10_000.0, 345.0), "0.3k");
        assert_eq!(value(200_000.0, 123_456.0), "123k");
        assert_eq!(value(2_000_000.0, 1_234_567.0), "1,235k");
        assert_eq!(value(0.5, 0.123), "0.123");
    }

    #[test]
    fn thousands_are_grouped() {
        assert_eq!(grouped(0.0, 0), "0");
        assert_eq!(grouped(999.0, 0), "999");
        assert_eq!(grouped(1234.0, 0), "1,234");
        assert_eq!(grouped(1_234_567.891, 2), "1,234,567.89");
        assert_eq!(grouped(-1234.5, 1), "-1,234.5");
        assert_eq!(grouped(-0.01, 1), "0.0");
    }

    #[test]
    fn a_value_too_wide_for_its_bar_is_written_smaller() {
        assert_eq!(label_size("1,834", 44.0), 10.0);
        assert!(label_size("12,345.6", 30.0) < 10.0);
        assert_eq!(label_size("12,345.6", 5.0), 7.0);
    }
}
