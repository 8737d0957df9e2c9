//! The lost signal's timeliness: for every hold the servers' log shows ended by the server
//! while its holder still held (its mark deleted by its session's `closeSession`: an
//! expiry), how long the holder took to be told (`lost()` fired: the history's `LOST` line).
//! Pure, over the log judge's [`ServerEnd`]s, the clients' histories and the nemesis's pauses
//! of client processes.
//!
//! The server's time is the leader's clock in the txn header (ms), the clients' the same
//! machine's wall clock (ns). A process stopped when its session ended cannot be told before
//! it runs again, so its delay counts from its resume. A signal before the server's end is
//! **early** (the client was unsure first: a dropped connection); one more than `bound`
//! after it is **late**; a hold that went on past `bound` with no signal at all is
//! **missing**; a hold that ended within `bound` without one finished before it could be
//! told.

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use super::check::Pause;
use super::history::Event;
use super::judge::ServerEnd;

/// One library's figures.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Row {
    /// Holds the server ended while their holder held on.
    pub ended: u64,
    /// Of those, told before the server's end.
    pub early: u64,
    /// Told within the bound after it (delays kept, ms).
    pub in_time: Vec<u64>,
    /// Told later than the bound.
    pub late: u64,
    /// Never told, the hold going on past the bound.
    pub missing: u64,
    /// Never told, the hold ending within the bound.
    pub ended_first: u64,
}

/// The table: per library (`rust`, `java`).
#[derive(Debug, Clone, Default)]
pub struct Timeliness {
    /// Per library.
    pub rows: BTreeMap<String, Row>,
    /// The bound, ms.
    pub bound_ms: u64,
    /// Server ends no hold in the histories matches (a mark whose hold was not recorded).
    pub unmatched: u64,
    /// The first late or missing ones, as sentences.
    pub samples: Vec<String>,
}

impl Timeliness {
    /// Why the run fails: a hold of ours told late or never.
    pub fn failure(&self) -> Option<String> {
        let r = self.rows.get("rust")?;
        (r.late + r.missing > 0).then(|| {
            format!(
                "{} holds of ours told late and {} never, of {} the server ended (bound {} ms)",
                r.late, r.missing, r.ended, self.bound_ms
            )
        })
    }
}

/// Measures, with `bound` (ms) as the promise.
pub fn measure(
    ends: &[ServerEnd],
    events: &[Event],
    pauses: &[Pause],
    bound_ms: u64,
) -> Timeliness {
    // (who, n) -> (the hold's end, the signal's time).
    let mut holds: HashMap<(&str, u64), (u64, Option<u64>)> = HashMap::new();
    for e in events {
        match e {
            Event::Hold(h) => {
                let entry = holds.entry((h.who.as_str(), h.n)).or_insert((0, None));
                entry.0 = entry.0.max(h.to);
            }
            Event::Lost(l) => {
                let entry = holds.entry((l.who.as_str(), l.n)).or_insert((0, None));
                entry.1 = Some(entry.1.map_or(l.at, |a: u64| a.min(l.at)));
            }
            _ => {}
        }
    }
    let mut t = Timeliness {
        bound_ms,
        ..Timeliness::default()
    };
    let bound = bound_ms.saturating_mul(1_000_000);
    for end in ends {
        let Some((who, n)) = end
            .name
            .rsplit_once('-')
            .and_then(|(who, n)| Some((who, n.parse::<u64>().ok()?)))
        else {
            t.unmatched += 1;
            continue;
        };
        let Some(&(hold_to, told)) = holds.get(&(who, n)).filter(|(to, _)| *to > 0) else {
            t.unmatched += 1;
            continue;
        };
        let server_end = u64::try_from(end.time_ms)
            .unwrap_or(0)
            .saturating_mul(1_000_000);
        if hold_to <= server_end {
            continue; // over before the server ended it
        }
        let process = who.split('.').next().unwrap_or(who);
        let from = pauses
            .iter()
            .filter(|p| p.process == process && p.from <= server_end && server_end <= p.to)
            .map(|p| p.to)
            .max()
            .unwrap_or(server_end);
        let lib = who.split('-').next().unwrap_or(who).to_owned();
        let row = t.rows.entry(lib).or_default();
        row.ended += 1;
        let what = match told {
            Some(at) if at < server_end => {
                row.early += 1;
                None
            }
            Some(at) if at.saturating_sub(from) <= bound => {
                row.in_time.push(at.saturating_sub(from) / 1_000_000);
                None
            }
            Some(at) => {
                row.late += 1;
                Some(format!(
                    "{who} hold {n}: told {} ms after the server ended it (zxid {:#x})",
                    at.saturating_sub(from) / 1_000_000,
                    end.zxid
                ))
            }
            None if hold_to.saturating_sub(from) > bound => {
                row.missing += 1;
                Some(format!(
                    "{who} hold {n}: never told; held on {} ms after the server ended it \
                     (zxid {:#x})",
                    hold_to.saturating_sub(from) / 1_000_000,
                    end.zxid
                ))
            }
            None => {
                row.ended_first += 1;
                None
            }
        };
        if let Some(text) = what.filter(|_| t.samples.len() < 10) {
            t.samples.push(text);
        }
    }
    t
}

impl fmt::Display for Timeliness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "lost-signal timeliness (holds the server ended while held; bound {} ms):",
            self.bound_ms
        )?;
        writeln!(
            f,
            "{:<8} {:>6} {:>6} {:>8} {:>7} {:>7} {:>5} {:>8} {:>12}",
            "library",
            "ended",
            "early",
            "in time",
            "p50 ms",
            "max ms",
            "late",
            "missing",
            "ended first"
        )?;
        for (lib, r) in &self.rows {
            let mut d = r.in_time.clone();
            d.sort_unstable();
            let p50 = d.get(d.len() / 2).map_or("-".to_owned(), u64::to_string);
            let max = d.last().map_or("-".to_owned(), u64::to_string);
            writeln!(
                f,
                "{:<8} {:>6} {:>6} {:>8} {:>7} {:>7} {:>5} {:>8} {:>12}",
                if lib == "rust" { "ours" } else { "Curator" },
                r.ended,
                r.early,
                r.in_time.len(),
                p50,
                max,
                r.late,
                r.missing,
                r.ended_first
            )?;
        }
        if self.unmatched > 0 {
            writeln!(
                f,
                "  ({} server ends with no hold recorded)",
                self.unmatched
            )?;
        }
        for s in &self.samples {
            writeln!(f, "  {s}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use crate::chaos::check::tests::hold;
    use crate::chaos::history::Lost;

    const MS: u64 = 1_000_000;

    fn lost(who: &str, n: u64, at: u64) -> Event {
        Event::Lost(Lost {
            who: who.into(),
            n,
            at,
        })
    }

    fn end(name: &str, ms: i64) -> ServerEnd {
        ServerEnd {
            name: name.into(),
            zxid: 1,
            time_ms: ms,
        }
    }

    #[test]
    fn each_case_is_told_apart_and_only_ours_late_or_missing_fail() {
        let w = "rust-0.mutex.0";
        let events = [
            hold(w, 1, 0, 20_000 * MS),
            lost(w, 1, 9_000 * MS), // early: unsure before the server ended it
            hold(w, 2, 0, 20_000 * MS),
            lost(w, 2, 10_300 * MS),                   // 300 ms after
            hold(w, 3, 0, 5_000 * MS),                 // over before the server's end
            hold(w, 4, 0, 10_500 * MS), // ended 500 ms after, never told: ended first
            hold("java-0.mutex.0", 1, 0, 30_000 * MS), // never told, held on 20 s: missing
        ];
        let ends = [
            end("rust-0.mutex.0-1", 10_000),
            end("rust-0.mutex.0-2", 10_000),
            end("rust-0.mutex.0-3", 10_000),
            end("rust-0.mutex.0-4", 10_000),
            end("java-0.mutex.0-1", 10_000),
            end("rust-0.mutex.0-99", 10_000),
        ];
        let t = measure(&ends, &events, &[], 4_000);
        println!("{t}");
        let ours = &t.rows["rust"];
        assert_eq!(
            (
                ours.ended,
                ours.early,
                ours.in_time.clone(),
                ours.ended_first
            ),
            (3, 1, vec![300], 1)
        );
        assert_eq!((t.rows["java"].missing, t.unmatched), (1, 1));
        assert_eq!(t.failure(), None, "Curator's are reported, not judged");

        // Ours told 5 s late, or never while holding on: both fail.
        let late = [hold(w, 1, 0, 20_000 * MS), lost(w, 1, 15_000 * MS)];
        let t = measure(&ends[..1], &late, &[], 4_000);
        assert_eq!(t.rows["rust"].late, 1);
        assert!(t.failure().is_some());
        let never = [hold(w, 1, 0, 20_000 * MS)];
        assert!(measure(&ends[..1], &never, &[], 4_000).failure().is_some());
    }

    #[test]
    fn a_paused_process_is_measured_from_its_resume() {
        let w = "rust-1.rwlock.0";
        let events = [hold(w, 7, 0, 30_000 * MS), lost(w, 7, 18_100 * MS)];
        let pauses = [Pause {
            process: "rust-1".into(),
            from: 8_000 * MS,
            to: 18_000 * MS,
        }];
        let t = measure(&[end("rust-1.rwlock.0-7", 12_000)], &events, &pauses, 4_000);
        assert_eq!(t.rows["rust"].in_time, vec![100]);
        assert_eq!(t.failure(), None);
        // Unpaused, the same signal is 6 s late.
        let t = measure(&[end("rust-1.rwlock.0-7", 12_000)], &events, &[], 4_000);
        assert_eq!(t.rows["rust"].late, 1);
    }
}
