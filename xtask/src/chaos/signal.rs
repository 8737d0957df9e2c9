//! The lost signal's timeliness: for every hold the servers' log shows ended while its
//! holder still held, how long the holder took to be told (`lost()` fired: the history's
//! `LOST` line). Two tables: holds the server ended (the mark deleted by its session's
//! `closeSession`: an expiry), against a bound of a session timeout; and holds whose lock
//! node a session other than its owner deleted (the nemesis's `delete-held`, an operator's
//! `deleteall`, another client's bug), against [`DELETED_BOUND_MS`]. Pure, over the log
//! judge's [`ServerEnd`]s and [`DeletedEnd`]s, the clients' histories and the nemesis's
//! pauses of client processes. Curator's rows are measured beside ours and never fail a run
//! (Curator has no such signal).
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
use super::judge::{DeletedEnd, ServerEnd};

/// How soon a holder of ours must be told that another session deleted its node, ms. A
/// connected session hears of it from the data watch every hold keeps on its node: one
/// commit and one notification after the delete (a delete-held fault runs alone, so the
/// holder's connection is up). Measured: two 45 s runs of `cargo xtask chaos --nemesis
/// delete-held` (release workers, 2 cores, three members, two JVM workers beside) told ours
/// at 7 ms median, 83 and 36 ms at worst; a second leaves headroom for a loaded machine and
/// still tells a watch that fires from none.
pub const DELETED_BOUND_MS: u64 = 1_000;

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

/// The tables: per library (`rust`, `java`).
#[derive(Debug, Clone, Default)]
pub struct Timeliness {
    /// Holds the server ended, per library.
    pub rows: BTreeMap<String, Row>,
    /// Their bound, ms.
    pub bound_ms: u64,
    /// Holds whose node another session deleted, per library.
    pub deleted: BTreeMap<String, Row>,
    /// Their bound, ms.
    pub deleted_bound_ms: u64,
    /// Of those deletes, how many were by a client's session rather than the operator's.
    pub deleted_by_clients: u64,
    /// Ends (either table's) no hold in the histories matches (a mark whose hold was not
    /// recorded).
    pub unmatched: u64,
    /// The first late or missing ones, as sentences.
    pub samples: Vec<String>,
}

impl Timeliness {
    /// What fails the run: holds of ours told late or never, in either table.
    pub fn findings(&self) -> Vec<String> {
        let mut why = Vec::new();
        if let Some(r) = self.rows.get("rust").filter(|r| r.late + r.missing > 0) {
            why.push(format!(
                "{} holds of ours told late and {} never, of {} the server ended (bound {} ms)",
                r.late, r.missing, r.ended, self.bound_ms
            ));
        }
        if let Some(r) = self.deleted.get("rust") {
            let bound = self.deleted_bound_ms;
            if r.late > 0 {
                why.push(format!(
                    "{} holds of ours told late, of {} whose node another session deleted \
                     (bound {bound} ms)",
                    r.late, r.ended
                ));
            }
            if r.missing > 0 {
                why.push(format!(
                    "{} holds of ours never told, of {} whose node another session deleted \
                     (bound {bound} ms)",
                    r.missing, r.ended
                ));
            }
        }
        why
    }

    /// Why the run fails: a hold of ours told late or never.
    pub fn failure(&self) -> Option<String> {
        let why = self.findings();
        (!why.is_empty()).then(|| why.join(", "))
    }
}

/// One end of a hold, from the log: the mark's name, where and when.
struct End<'a> {
    name: &'a str,
    zxid: i64,
    time_ms: i64,
}

/// Measures, with `bound_ms` as the promise for the holds the server ended and
/// `deleted_bound_ms` for those whose node another session deleted.
pub fn measure(
    ends: &[ServerEnd],
    deleted: &[DeletedEnd],
    events: &[Event],
    pauses: &[Pause],
    bound_ms: u64,
    deleted_bound_ms: u64,
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
        deleted_bound_ms,
        ..Timeliness::default()
    };
    let server: Vec<End<'_>> = ends
        .iter()
        .map(|e| End {
            name: &e.name,
            zxid: e.zxid,
            time_ms: e.time_ms,
        })
        .collect();
    let mut rows = std::mem::take(&mut t.rows);
    t.table(
        &server,
        &holds,
        pauses,
        bound_ms,
        &mut rows,
        "the server ended it",
    );
    t.rows = rows;
    // A hold ends with the first of its nodes deleted (a multi-lock's members: one delete
    // each).
    let mut first: BTreeMap<&str, &DeletedEnd> = BTreeMap::new();
    for d in deleted {
        let e = first.entry(d.name.as_str()).or_insert(d);
        if d.zxid < e.zxid {
            *e = d;
        }
    }
    t.deleted_by_clients = first.values().filter(|d| !d.by_operator).count() as u64;
    let mut by_delete: Vec<End<'_>> = first
        .values()
        .map(|d| End {
            name: &d.name,
            zxid: d.zxid,
            time_ms: d.time_ms,
        })
        .collect();
    by_delete.sort_by_key(|e| e.zxid);
    let mut rows = std::mem::take(&mut t.deleted);
    t.table(
        &by_delete,
        &holds,
        pauses,
        deleted_bound_ms,
        &mut rows,
        "another session deleted its node",
    );
    t.deleted = rows;
    t
}

impl Timeliness {
    /// One table's rows, from its ends.
    fn table(
        &mut self,
        ends: &[End<'_>],
        holds: &HashMap<(&str, u64), (u64, Option<u64>)>,
        pauses: &[Pause],
        bound_ms: u64,
        rows: &mut BTreeMap<String, Row>,
        what: &str,
    ) {
        let t = self;
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
            let row = rows.entry(lib).or_default();
            row.ended += 1;
            let sample = match told {
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
                        "{who} hold {n}: told {} ms after {what} (zxid {:#x})",
                        at.saturating_sub(from) / 1_000_000,
                        end.zxid
                    ))
                }
                None if hold_to.saturating_sub(from) > bound => {
                    row.missing += 1;
                    Some(format!(
                        "{who} hold {n}: never told; held on {} ms after {what} (zxid {:#x})",
                        hold_to.saturating_sub(from) / 1_000_000,
                        end.zxid
                    ))
                }
                None => {
                    row.ended_first += 1;
                    None
                }
            };
            if let Some(text) = sample.filter(|_| t.samples.len() < 10) {
                t.samples.push(text);
            }
        }
    }
}

impl fmt::Display for Timeliness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "lost-signal timeliness (holds the server ended while held; bound {} ms):",
            self.bound_ms
        )?;
        write_rows(f, &self.rows)?;
        if !self.deleted.is_empty() {
            writeln!(
                f,
                "lost signal after a delete (holds whose node another session deleted, {} of \
                 them by a client's; bound {} ms; Curator's reported, not judged):",
                self.deleted_by_clients, self.deleted_bound_ms
            )?;
            write_rows(f, &self.deleted)?;
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

/// One table: a header and a line per library.
fn write_rows(f: &mut fmt::Formatter<'_>, rows: &BTreeMap<String, Row>) -> fmt::Result {
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
    for (lib, r) in rows {
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
    Ok(())
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
        let t = measure(&ends, &[], &events, &[], 4_000, 1_000);
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
        let t = measure(&ends[..1], &[], &late, &[], 4_000, 1_000);
        assert_eq!(t.rows["rust"].late, 1);
        assert!(t.failure().is_some());
        let never = [hold(w, 1, 0, 20_000 * MS)];
        assert!(
            measure(&ends[..1], &[], &never, &[], 4_000, 1_000)
                .failure()
                .is_some()
        );
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
        let t = measure(
            &[end("rust-1.rwlock.0-7", 12_000)],
            &[],
            &events,
            &pauses,
            4_000,
            1_000,
        );
        assert_eq!(t.rows["rust"].in_time, vec![100]);
        assert_eq!(t.failure(), None);
        // Unpaused, the same signal is 6 s late.
        let t = measure(
            &[end("rust-1.rwlock.0-7", 12_000)],
            &[],
            &events,
            &[],
            4_000,
            1_000,
        );
        assert_eq!(t.rows["rust"].late, 1);
    }

    fn deleted(name: &str, ms: i64, zxid: i64, by_operator: bool) -> DeletedEnd {
        DeletedEnd {
            name: name.into(),
            node: "/chaos/mutex/_c_x-lock-0000000001".into(),
            zxid,
            time_ms: ms,
            deleter: 0x400,
            by_operator,
        }
    }

    /// Issue 48: holds whose node another session deleted, in a table of their own with its
    /// own bound: ours told within it pass, late or never fail the run with that finding;
    /// Curator's are measured beside and never fail it; a multi-lock's hold counts once.
    #[test]
    fn holds_whose_node_was_deleted_are_timed_against_their_own_bound() {
        let (o, m) = ("rust-0.mutex.0", "rust-1.multilock.0");
        let events = [
            hold(o, 1, 0, 20_000 * MS),
            lost(o, 1, 10_004 * MS),    // told 4 ms after the delete
            hold(o, 2, 0, 10_002 * MS), // over 2 ms after it, untold: ended first
            hold(o, 3, 0, 9_000 * MS),  // over before it
            // A multi-lock's hold: two members deleted, told 30 ms after the first.
            hold(m, 1, 0, 20_000 * MS),
            hold(m, 1, 0, 20_000 * MS),
            lost(m, 1, 10_030 * MS),
            hold("java-0.mutex.0", 1, 0, 16_000 * MS), // never told: Curator's, reported
        ];
        let deletes = [
            deleted("rust-0.mutex.0-1", 10_000, 10, true),
            deleted("rust-0.mutex.0-2", 10_000, 11, true),
            deleted("rust-0.mutex.0-3", 10_000, 12, true),
            deleted("rust-1.multilock.0-1", 10_000, 13, true),
            deleted("rust-1.multilock.0-1", 10_020, 14, true),
            deleted("java-0.mutex.0-1", 10_000, 15, false),
        ];
        let t = measure(&[], &deletes, &events, &[], 4_000, 1_000);
        println!("{t}");
        let ours = &t.deleted["rust"];
        let mut told = ours.in_time.clone();
        told.sort_unstable();
        assert_eq!((ours.ended, told, ours.ended_first), (3, vec![4, 30], 1));
        assert_eq!(t.deleted["java"].missing, 1);
        assert_eq!(t.deleted_by_clients, 1);
        assert!(t.rows.is_empty(), "the server ended none");
        assert_eq!(t.failure(), None, "Curator's are reported, not judged");
        assert!(t.to_string().contains("lost signal after a delete"));

        // Ours never told, holding on 6 s after the delete (no watch on its node): exactly
        // that finding.
        let never = [hold(o, 1, 0, 16_000 * MS)];
        let t = measure(&[], &deletes[..1], &never, &[], 4_000, 1_000);
        assert_eq!(t.deleted["rust"].missing, 1);
        assert_eq!(
            t.findings(),
            ["1 holds of ours never told, of 1 whose node another session deleted (bound 1000 ms)"]
        );
        // Told 1.5 s after: late under this bound, in time under the expiries' 4 s.
        let late = [hold(o, 1, 0, 16_000 * MS), lost(o, 1, 11_500 * MS)];
        let t = measure(&[], &deletes[..1], &late, &[], 4_000, 1_000);
        assert_eq!(t.deleted["rust"].late, 1);
        assert!(
            t.failure()
                .unwrap()
                .contains("1 holds of ours told late, of 1 whose node")
        );
        let t = measure(&[], &deletes[..1], &late, &[], 4_000, 2_000);
        assert_eq!(
            (t.deleted["rust"].in_time.clone(), t.failure()),
            (vec![1_500], None)
        );
    }
}
