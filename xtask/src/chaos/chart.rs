//! The run as a picture (SVG): one row per client, grouped by recipe, shaded where it held
//! (ours blue, Curator's orange, darker for more of the slice held), the faults as bands
//! across every row with their names, and the stale writes and overlaps marked in red.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::history::{Event, Who, WriteResult};
use super::run::Applied;

/// Time slices across the chart.
const SLICES: usize = 600;
const LEFT: f64 = 190.0;
const TOP: f64 = 40.0;
const ROW: f64 = 9.0;
const WIDTH: f64 = 1200.0;

/// The chart of a run over `span` (ns on the shared clock).
pub fn svg(events: &[Event], timeline: &[Applied], span: (u64, u64), title: &str) -> String {
    let (start, end) = span;
    let length = end.saturating_sub(start).max(1);
    let slice = length.div_ceil(SLICES as u64).max(1);
    // Held time per client per slice.
    let mut rows: BTreeMap<Who, Vec<u64>> = BTreeMap::new();
    let mut rejected: Vec<(Who, u64)> = Vec::new();
    for event in events {
        let Ok(who) = Who::parse(event.who()) else {
            continue;
        };
        match event {
            Event::Hold(h) => {
                let row = rows.entry(who).or_insert_with(|| vec![0; SLICES]);
                let (from, to) = (h.from.clamp(start, end), h.to.clamp(start, end));
                let mut t = from;
                while t < to {
                    let i = usize::try_from((t - start) / slice).unwrap_or(0);
                    let slice_end = start + (i as u64 + 1) * slice;
                    let upto = to.min(slice_end);
                    if let Some(cell) = row.get_mut(i) {
                        *cell += upto - t;
                    }
                    t = upto;
                }
            }
            Event::Write(w) if !matches!(w.result, WriteResult::Accepted { .. }) => {
                rejected.push((who, w.sent));
            }
            _ => {
                rows.entry(who).or_insert_with(|| vec![0; SLICES]);
            }
        }
    }
    let height = TOP + ROW * rows.len() as f64 + 70.0;
    let x_of =
        |t: u64| LEFT + (t.saturating_sub(start)) as f64 / length as f64 * (WIDTH - LEFT - 10.0);
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height:.0}" font-family="sans-serif" font-size="10">"#
    );
    let _ = writeln!(out, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        out,
        r#"<text x="10" y="16" font-size="13">{}</text>"#,
        escape(title)
    );
    // Fault bands, each named above the chart where its name fits (two lines of names; a
    // long run's faults are too many to name each: the legend counts them).
    let mut label_end = [f64::MIN; 2];
    for a in timeline {
        let (x0, x1) = (x_of(a.from), x_of(a.to.max(a.from + slice)));
        let _ = writeln!(
            out,
            r##"<rect x="{x0:.1}" y="{TOP}" width="{:.1}" height="{:.1}" fill="#d33" fill-opacity="0.10"><title>{} on {}</title></rect>"##,
            (x1 - x0).max(1.0),
            ROW * rows.len() as f64,
            a.kind,
            escape(&a.target)
        );
        let width = a.kind.name().len() as f64 * 5.6;
        let fits = x0 + width <= WIDTH;
        if let Some(line) = label_end.iter().position(|&end| fits && x0 > end + 4.0) {
            let y = TOP - 4.0 - line as f64 * 10.0;
            let _ = writeln!(
                out,
                r##"<text x="{x0:.1}" y="{y}" fill="#a22">{}</text>"##,
                a.kind
            );
            if let Some(end) = label_end.get_mut(line) {
                *end = x0 + width;
            }
        }
    }
    // Rows.
    let mut last_recipe = None;
    for (r, (who, cells)) in rows.iter().enumerate() {
        let y = TOP + ROW * r as f64;
        if last_recipe != Some(who.recipe) {
            let _ = writeln!(
                out,
                r##"<line x1="0" x2="{WIDTH}" y1="{y}" y2="{y}" stroke="#888" stroke-width="0.5"/>"##
            );
            last_recipe = Some(who.recipe);
        }
        let _ = writeln!(
            out,
            r#"<text x="4" y="{:.1}" font-size="8">{who}</text>"#,
            y + ROW - 1.5
        );
        let colour = if who.is_ours() { "#1f5fbf" } else { "#e07b00" };
        for (i, &held) in cells.iter().enumerate() {
            if held == 0 {
                continue;
            }
            let share = (held as f64 / slice as f64).clamp(0.15, 1.0);
            let x = x_of(start + i as u64 * slice);
            let w = x_of(start + (i as u64 + 1) * slice) - x;
            let _ = writeln!(
                out,
                r#"<rect x="{x:.1}" y="{:.1}" width="{w:.2}" height="{:.1}" fill="{colour}" fill-opacity="{share:.2}"/>"#,
                y + 1.0,
                ROW - 2.0
            );
        }
    }
    // Refused writes (fenced or stale by version): red ticks on their client's row.
    let index: BTreeMap<&Who, usize> = rows.keys().enumerate().map(|(i, w)| (w, i)).collect();
    for (who, at) in &rejected {
        if let Some(&r) = index.get(who) {
            let y = TOP + ROW * r as f64;
            let x = x_of(*at);
            let _ = writeln!(
                out,
                r##"<line x1="{x:.1}" x2="{x:.1}" y1="{y:.1}" y2="{:.1}" stroke="#d00" stroke-width="1.2"/>"##,
                y + ROW
            );
        }
    }
    // Time axis, in seconds, one format.
    let axis_y = TOP + ROW * rows.len() as f64 + 14.0;
    let seconds = length as f64 / 1e9;
    let step = [
        1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0,
    ]
    .into_iter()
    .find(|s| seconds / s <= 12.0)
    .unwrap_or(7200.0);
    let mut t = 0.0;
    while t <= seconds {
        let x = x_of(start + (t * 1e9) as u64);
        let _ = writeln!(
            out,
            r#"<text x="{x:.1}" y="{axis_y:.1}" text-anchor="middle">{t:.0} s</text>"#
        );
        t += step;
    }
    let _ = writeln!(
        out,
        r##"<text x="{LEFT}" y="{:.1}">blue: ours held · orange: Curator's held (darker: more of the slice) · red bands: faults · red ticks: writes refused</text>"##,
        axis_y + 16.0
    );
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for a in timeline {
        *counts.entry(a.kind.name()).or_default() += 1;
    }
    let legend: Vec<String> = counts.iter().map(|(k, n)| format!("{n} × {k}")).collect();
    let _ = writeln!(
        out,
        r##"<text x="{LEFT}" y="{:.1}" fill="#a22">faults: {}</text>"##,
        axis_y + 30.0,
        escape(&legend.join(", "))
    );
    out.push_str("</svg>\n");
    out
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use crate::chaos::nemesis::Kind;
    use crate::interop::holds::{Hold, Mode};

    /// A long run's faults: names only where they fit (no two overlapping on a line), every
    /// fault counted in the legend.
    #[test]
    fn a_long_runs_faults_are_named_where_they_fit_and_counted() {
        const S: u64 = 1_000_000_000;
        let timeline: Vec<Applied> = (0..200u64)
            .map(|i| Applied {
                kind: Kind::ALL[(i % 8) as usize],
                target: format!("member {}", i % 3),
                from: i * 5 * S,
                to: i * 5 * S + 3 * S,
                leader_back: None,
            })
            .collect();
        let events = [Event::Hold(Hold {
            who: "rust-0.mutex.0".into(),
            n: 1,
            on: "lock".into(),
            mode: Mode::Exclusive,
            from: S,
            to: 2 * S,
            node: None,
            token: None,
        })];
        let svg = svg(&events, &timeline, (0, 1000 * S), "test");
        if let Ok(dir) = std::env::var("CHAOS_CHART_OUT") {
            std::fs::write(std::path::Path::new(&dir).join("chart-test.svg"), &svg).unwrap();
        }
        let mut ends: [f64; 2] = [f64::MIN; 2];
        let mut named = 0;
        for line in svg
            .lines()
            .filter(|l| l.starts_with("<text") && l.contains("#a22\">") && !l.contains("faults:"))
        {
            let attr = |name: &str| -> f64 {
                let after = line.split(&format!("{name}=\"")).nth(1).unwrap();
                after.split('"').next().unwrap().parse().unwrap()
            };
            let (x, y) = (attr("x"), attr("y"));
            let row = usize::from(y < TOP - 8.0);
            assert!(x > ends[row], "overlapping fault names: {line}");
            let name = line.split('>').nth(1).unwrap().split('<').next().unwrap();
            ends[row] = x + name.len() as f64 * 5.6;
            named += 1;
        }
        assert!(named > 10 && named < 200, "{named} named");
        assert!(svg.contains("faults: 25 × client-cut"), "{svg}");
    }
}
