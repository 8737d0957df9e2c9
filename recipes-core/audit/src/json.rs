//! The history as JSON, written by hand (no serde): one object with the record's extent, the
//! anomalies, what the commit rule decided (`commits`: `null` when no logs were merged), and
//! per lock its summary, events and live nodes.

use std::fmt::Write;

use crate::commit::{Commits, Witnessed};
use crate::replay::{Anomaly, EndCause, EventKind, History};
use crate::report::{Range, figures, session};

/// `s` as a JSON string, quotes included: `"` and `\` escaped, control characters as
/// `\n`, `\r`, `\t`, `\b`, `\f` or `\u00XX`; everything else as is (JSON text is UTF-8).
///
/// ```
/// use zk_lock_audit::json::string;
/// assert_eq!(string("a\"b\\c\n\u{1}é"), r#""a\"b\\c\n\u0001é""#);
/// ```
pub fn string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn opt(v: Option<i64>) -> String {
    v.map_or_else(|| "null".to_owned(), |v| v.to_string())
}

/// `c` as a JSON object: the rule's inputs, whether it was applied, the counts, the first
/// zxids of each kind with their counts, and its statement ([`Commits::statement`]).
fn commits(o: &mut String, c: &Commits) {
    let list = |w: &[Witnessed]| {
        w.iter()
            .map(|w| {
                format!(
                    "{{\"zxid\":{},\"logged\":{},\"witnesses\":{}}}",
                    w.zxid, w.logged, w.witnesses
                )
            })
            .collect::<Vec<_>>()
            .join(",")
    };
    let _ = write!(
        o,
        "{{\"ensemble\":{},\"given\":{},\"applied\":{},\"uncommitted\":{},\"first_uncommitted\":[{}],\"unconfirmed\":{},\"first_unconfirmed\":[{}],\"statement\":{}}}",
        c.ensemble,
        c.given,
        c.applied,
        c.uncommitted,
        list(&c.first_uncommitted),
        c.unconfirmed,
        list(&c.first_unconfirmed),
        c.statement()
            .map_or_else(|| "null".to_owned(), |s| string(&s))
    );
}

/// The history's events within `range`, as one JSON document.
pub fn to_json(history: &History, range: Range) -> String {
    let mut o = String::new();
    o.push('{');
    let _ = write!(
        o,
        "\"start_zxid\":{},\"txns\":{},",
        opt(history.start_zxid),
        history.txns
    );
    for (name, stamp) in [("first", history.first), ("last", history.last)] {
        match stamp {
            Some(s) => {
                let _ = write!(o, "\"{name}\":{{\"zxid\":{},\"time\":{}}},", s.zxid, s.time);
            }
            None => {
                let _ = write!(o, "\"{name}\":null,");
            }
        }
    }
    o.push_str("\"anomalies\":[");
    for (i, a) in history.anomalies.iter().enumerate() {
        if i > 0 {
            o.push(',');
        }
        let _ = match a {
            Anomaly::Gap { after, before } => {
                write!(o, "{{\"gap\":{{\"after\":{after},\"before\":{before}}}}}")
            }
            Anomaly::UnknownNode { zxid, path } => write!(
                o,
                "{{\"unknown_node\":{{\"zxid\":{zxid},\"path\":{}}}}}",
                string(path)
            ),
            Anomaly::Forgotten {
                zxid,
                dir,
                cversion,
                had,
            } => write!(
                o,
                "{{\"forgotten\":{{\"zxid\":{zxid},\"dir\":{},\"cversion\":{cversion},\"had\":{had}}}}}",
                string(dir)
            ),
            Anomaly::Overlap { zxid, dir, holders } => {
                let names: Vec<String> = holders.iter().map(|h| string(h)).collect();
                write!(
                    o,
                    "{{\"overlap\":{{\"zxid\":{zxid},\"dir\":{},\"holders\":[{}]}}}}",
                    string(dir),
                    names.join(",")
                )
            }
            Anomaly::Diverged { zxid } => write!(o, "{{\"diverged\":{{\"zxid\":{zxid}}}}}"),
            Anomaly::Repeated { zxid } => write!(o, "{{\"repeated\":{{\"zxid\":{zxid}}}}}"),
            Anomaly::CommittedAfterUncommitted { zxid, uncommitted } => write!(
                o,
                "{{\"committed_after_uncommitted\":{{\"zxid\":{zxid},\"uncommitted\":{uncommitted}}}}}"
            ),
        };
    }
    o.push_str("],\"commits\":");
    match &history.commits {
        Some(c) => commits(&mut o, c),
        None => o.push_str("null"),
    }
    o.push_str(",\"locks\":[");
    let mut first_lock = true;
    for lock in &history.locks {
        if !lock.events.iter().any(|e| range.contains(e)) && lock.live.is_empty() {
            continue;
        }
        if !first_lock {
            o.push(',');
        }
        first_lock = false;
        let s = figures(history, lock, range);
        let _ = write!(
            o,
            "{{\"path\":{},\"kind\":{},",
            string(&lock.path),
            string(lock.kind.name())
        );
        let delays: Vec<String> = s.expiry_to_next_grant_ms.iter().map(|d| opt(*d)).collect();
        let _ = write!(
            o,
            "\"summary\":{{\"queued\":{},\"grants\":{},\"max_queue\":{},\"max_wait_ms\":{},\"mean_wait_ms\":{},\"released\":{},\"deleted_by_other\":{},\"expired\":{},\"closed\":{},\"abandoned\":{},\"expiry_to_next_grant_ms\":[{}],\"live\":{},\"orphans\":{}}},",
            s.queued,
            s.grants,
            s.max_queue,
            opt(s.max_wait_ms),
            opt(s.mean_wait_ms),
            s.released,
            s.deleted_by_other,
            s.expired,
            s.closed,
            s.abandoned,
            delays.join(","),
            s.live,
            s.orphans
        );
        o.push_str("\"events\":[");
        let mut first = true;
        for e in lock.events.iter().filter(|e| range.contains(e)) {
            if !first {
                o.push(',');
            }
            first = false;
            let _ = write!(
                o,
                "{{\"zxid\":{},\"time\":{},\"node\":{},\"session\":{},\"queue\":{},",
                e.at.zxid,
                e.at.time,
                string(&e.node),
                string(&session(e.session)),
                e.queue
            );
            let _ = match &e.kind {
                EventKind::Queued => write!(o, "\"event\":\"queued\"}}"),
                EventKind::Present { made, holding } => write!(
                    o,
                    "\"event\":\"present\",\"czxid\":{},\"holding\":{holding}}}",
                    made.zxid
                ),
                EventKind::Granted { wait_ms } => {
                    write!(o, "\"event\":\"granted\",\"wait_ms\":{wait_ms}}}")
                }
                EventKind::Ended {
                    cause,
                    held,
                    for_ms,
                    next_grant_ms,
                } => {
                    let by = match cause {
                        EndCause::DeletedBy(s) => string(&session(*s)),
                        _ => "null".to_owned(),
                    };
                    let timeout = history.session_timeouts.get(&e.session).copied();
                    write!(
                        o,
                        "\"event\":\"ended\",\"cause\":{},\"deleted_by\":{by},\"held\":{held},\"for_ms\":{},\"next_grant_ms\":{},\"session_timeout_ms\":{}}}",
                        string(cause.name()),
                        opt(*for_ms),
                        opt(*next_grant_ms),
                        opt(timeout.map(i64::from))
                    )
                }
            };
        }
        o.push_str("],\"live\":[");
        for (i, l) in lock.live.iter().enumerate() {
            if i > 0 {
                o.push(',');
            }
            let _ = write!(
                o,
                "{{\"node\":{},\"session\":{},\"held\":{},\"orphan\":{}}}",
                string(&l.node),
                string(&session(l.session)),
                l.held,
                l.orphan
            );
        }
        let strays: Vec<String> = lock.strays.iter().map(|n| string(n)).collect();
        let _ = write!(o, "],\"strays\":[{}", strays.join(","));
        o.push_str("],\"empty_container_since\":");
        match lock.empty_since {
            Some(s) => {
                let _ = write!(o, "{{\"zxid\":{},\"time\":{}}}", s.zxid, s.time);
            }
            None => o.push_str("null"),
        }
        o.push('}');
    }
    o.push_str("]}");
    o
}
