//! What the auditor prints: a readable timeline, a summary table (both text), from a
//! [`History`]; [`crate::json`] writes the same as JSON.

use std::fmt::Write;

use crate::commit::Commits;
use crate::replay::{Anomaly, EndCause, Event, EventKind, History, LockHistory, Tally};
pub use crate::replay::{Range, Summary};
use crate::time::format as time;

/// The figures of `lock` over `range`, from its events (see [`LockHistory::summary`] for
/// those tallied while replaying).
pub fn summarize(lock: &LockHistory, range: Range) -> Summary {
    let mut tally = Tally::default();
    for e in lock.events.iter().filter(|e| range.contains(e)) {
        tally.add(e);
    }
    tally.finish(&lock.live)
}

/// The figures of `lock` over `range`: those tallied while replaying when `range` is the
/// range the history kept, else from the events.
pub fn figures(history: &History, lock: &LockHistory, range: Range) -> Summary {
    if range == history.kept {
        lock.summary.clone()
    } else {
        summarize(lock, range)
    }
}

/// A session id as ZooKeeper prints it.
pub fn session(id: i64) -> String {
    format!("0x{id:x}")
}

fn ms(v: Option<i64>) -> String {
    v.map_or_else(|| "-".to_owned(), |v| format!("{v} ms"))
}

fn describe(kind: &EventKind, timeout: Option<i32>) -> String {
    match kind {
        EventKind::Queued => "queued".to_owned(),
        EventKind::Present { holding: true, .. } => "present at start, holding".to_owned(),
        EventKind::Present { holding: false, .. } => "present at start, waiting".to_owned(),
        EventKind::Granted { wait_ms } => format!("GRANTED after waiting {wait_ms} ms"),
        EventKind::Ended {
            cause,
            held,
            for_ms,
            next_grant_ms,
        } => {
            let what = if *held { "hold ended" } else { "wait ended" };
            let how = match cause {
                EndCause::OwnDelete if *held => "released by its session".to_owned(),
                EndCause::OwnDelete => "deleted by its session (gave up)".to_owned(),
                EndCause::DeletedBy(s) => format!("DELETED BY SESSION {}", session(*s)),
                EndCause::Expired => match timeout {
                    Some(t) => format!("SESSION EXPIRED (timeout {t} ms)"),
                    None => "SESSION EXPIRED".to_owned(),
                },
                EndCause::Closed => "session closed".to_owned(),
            };
            let mut line = format!("{what}: {how}");
            if let Some(f) = for_ms {
                let _ = write!(line, ", after {f} ms");
            }
            if *held {
                match next_grant_ms {
                    Some(n) => {
                        let _ = write!(line, "; next grant {n} ms later");
                    }
                    None => line.push_str("; no grant since"),
                }
            }
            line
        }
    }
}

/// The timeline: per lock, one line per event in the range.
pub fn timeline(history: &History, range: Range) -> String {
    let mut out = String::new();
    for lock in &history.locks {
        let events: Vec<&Event> = lock.events.iter().filter(|e| range.contains(e)).collect();
        if events.is_empty() {
            continue;
        }
        let _ = writeln!(out, "== {} ({})", lock.path, lock.kind.name());
        for e in events {
            let _ = writeln!(
                out,
                "{}  zxid 0x{:x}  queue {:>3}  {}  session {}  {}",
                time(e.at.time),
                e.at.zxid,
                e.queue,
                e.node,
                session(e.session),
                describe(&e.kind, history.session_timeouts.get(&e.session).copied())
            );
        }
        for l in &lock.live {
            let _ = writeln!(
                out,
                "{:24}  still there at the end: {} (session {}, {}){}",
                "",
                l.node,
                session(l.session),
                if l.held { "holding" } else { "waiting" },
                if l.orphan { "  ORPHAN" } else { "" }
            );
        }
        for stray in &lock.strays {
            let _ = writeln!(
                out,
                "{:24}  not a node of this lock, still there: {stray}",
                ""
            );
        }
        if let Some(since) = lock.empty_since {
            let _ = writeln!(
                out,
                "{:24}  empty container since {} (zxid 0x{:x})",
                "",
                time(since.time),
                since.zxid
            );
        }
        out.push('\n');
    }
    out
}

/// The summary table: one row per lock with events in the range, then the record's extent,
/// its anomalies, and what the commit rule left out or could not confirm, or that it was not
/// applied ([`Commits::statement`]).
pub fn table(history: &History, range: Range) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<40} {:<20} {:>6} {:>6} {:>5} {:>9} {:>9} {:>5} {:>5} {:>5} {:>5} {:>5} {:>4} {:>4}  expiry -> next grant",
        "lock",
        "kind",
        "queued",
        "grants",
        "maxq",
        "max wait",
        "mean wait",
        "rel",
        "del",
        "exp",
        "close",
        "aband",
        "live",
        "orph"
    );
    for lock in &history.locks {
        if !lock.events.iter().any(|e| range.contains(e)) && lock.live.is_empty() {
            continue;
        }
        let s = figures(history, lock, range);
        let delays: Vec<String> = s.expiry_to_next_grant_ms.iter().map(|d| ms(*d)).collect();
        let _ = writeln!(
            out,
            "{:<40} {:<20} {:>6} {:>6} {:>5} {:>9} {:>9} {:>5} {:>5} {:>5} {:>5} {:>5} {:>4} {:>4}  {}",
            lock.path,
            lock.kind.name(),
            s.queued,
            s.grants,
            s.max_queue,
            ms(s.max_wait_ms),
            ms(s.mean_wait_ms),
            s.released,
            s.deleted_by_other,
            s.expired,
            s.closed,
            s.abandoned,
            s.live,
            s.orphans,
            delays.join(", ")
        );
    }
    let _ = writeln!(out);
    let _ = match (history.first, history.last) {
        (Some(f), Some(l)) => writeln!(
            out,
            "record: {} transactions, zxid 0x{:x} ({}) to 0x{:x} ({}){}",
            history.txns,
            f.zxid,
            time(f.time),
            l.zxid,
            time(l.time),
            history
                .start_zxid
                .map(|z| format!(", from a snapshot at zxid 0x{z:x}"))
                .unwrap_or_else(|| ", no snapshot: nodes made before are not known".to_owned())
        ),
        _ => writeln!(out, "record: no transactions"),
    };
    for a in &history.anomalies {
        let _ = match a {
            Anomaly::Gap { after, before } => writeln!(
                out,
                "HISTORY GAP: no transactions between zxid 0x{after:x} and 0x{before:x}"
            ),
            Anomaly::UnknownNode { zxid, path } => writeln!(
                out,
                "unknown node: zxid 0x{zxid:x} deleted {path}, not in the history"
            ),
            Anomaly::Forgotten {
                zxid,
                dir,
                cversion,
                had,
            } => writeln!(
                out,
                "HISTORY LOST: zxid 0x{zxid:x} set {dir}'s children version to {cversion}, the record had {had}: the server lacked transactions before it"
            ),
            Anomaly::Overlap { zxid, dir, holders } => writeln!(
                out,
                "OVERLAP: from zxid 0x{zxid:x}, {dir} had {} holders at once: {}",
                holders.len(),
                holders.join(", ")
            ),
            Anomaly::Diverged { zxid } => {
                writeln!(out, "HISTORY LOST: members' logs differ at zxid 0x{zxid:x}")
            }
            Anomaly::Repeated { zxid } => {
                writeln!(out, "repeated zxid 0x{zxid:x} skipped (files overlap)")
            }
            Anomaly::CommittedAfterUncommitted { zxid, uncommitted } => writeln!(
                out,
                "HISTORY LOST: zxid 0x{zxid:x} logged by a majority after 0x{uncommitted:x} of \
                 its epoch was not (proposals commit in order): applied"
            ),
        };
    }
    if let Some(statement) = history.commits.as_ref().and_then(Commits::statement) {
        let _ = writeln!(out, "{statement}");
    }
    out
}
