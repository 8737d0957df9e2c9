//! The chaos checker: pure, over what the workers recorded ([`Event`]), the client processes'
//! pauses from the nemesis timeline, and the nodes found left at the end. What it checks:
//!
//! - **Exclusion**, recipe by recipe, with the interop's rules ([`Rule`]), over holds cut
//!   where their node may have gone: a hold ends at its `LOST` (the client was told), and a
//!   hold across a pause of its process that could have outlived the session (at least two
//!   thirds of the session timeout: the server expires a session it has not heard from for
//!   the timeout, and a client pings every third) ends half a timeout into that pause, before
//!   the earliest expiry; a pause during the acquire counts too (a hold decided before the
//!   pause and returned after it is as stale: it ends where it begins); and a hold whose
//!   lock node the operator deleted (the servers' log says which and when: the nemesis's
//!   `delete-held`) ends at the delete, where the next waiter is rightly let in (only that
//!   hold, on that node, and only from then on). Within those bounds a node existed and the
//!   holder was right to believe it held: two that overlap are an **overlap**, a broken lock.
//! - **The register** of each lock (and of each multi-lock member): the accepted writes, in
//!   the register's version order, each from a hold. A **lost update** is an accepted write
//!   that read less than the accepted write before it had written. A **stale write** is a
//!   write by a hold after a newer hold (one that began later) had a write accepted: one
//!   sent after that write's reply is an *attempted* stale write, and it is *rejected*
//!   (ours: by the fence; Curator's: by the version) or *accepted*; an accepted write
//!   ordered after a newer hold's accepted write is an accepted stale write whatever the
//!   times say.
//! - **Every acquire ended**: held, timed out, cancelled or failed, by the deadline given
//!   (the run's end and the session timeout).
//! - **The lost signal**: each hold of ours across a pause of its process of one and a half
//!   session timeouts, whose session the servers' log shows ended while it held (a leader
//!   change during the pause renews every session's timeout, so the pause alone does not
//!   decide), and that wrote after the pause (the write was refused, so the holder waited
//!   for the signal), has its `LOST`; such a hold that did nothing after the pause is counted
//!   as unobserved.
//! - **No node left**: the harness lists the lock paths' children once every worker has
//!   stopped acquiring and released (their sessions still open).
//!
//! Exclusion and the registers are decided by the log judge (`super::judge`), from the
//! servers' record: what the histories show of them (an overlap, a lost update or accepted
//! stale write of ours) is reported beside it ([`Report::clients_view`]), not judged here.
//! The run fails ([`Report::failure`]) on what only the clients can show: a stuck acquire
//! of ours, a missing lost signal of ours, or a node of ours left (or of a session no client
//! recorded). Curator's lost signals, stuck acquires and nodes left are counted beside
//! ours, not judged.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::time::Duration;

use super::history::{AcquireEnd, Event, Who, Write, WriteResult};
use crate::interop::check::{Rule, check as sweep};
use crate::interop::holds::Hold;
use crate::recipe::Recipe;

/// Failed writes' kinds that say the write was not applied.
const NOT_APPLIED: [&str; 5] = [
    "SessionExpired",
    "Closed",
    "NotConnected",
    "SessionExpiredException",
    "SessionLost",
];

/// A count a row keeps.
type Count = fn(&Row) -> u64;

/// How many samples of each finding the report keeps.
const SAMPLES: usize = 5;

/// A client process paused (SIGSTOP) from `from` to `to` (ns on the shared clock).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pause {
    /// The process: `rust-1`, `java-0`.
    pub process: String,
    /// When it was stopped.
    pub from: u64,
    /// When it was resumed.
    pub to: u64,
}

/// A node found under a lock path at the end, while every client's session still lived.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeftNode {
    /// Its path.
    pub path: String,
    /// Its owner session.
    pub owner: i64,
    /// The zxid that created it.
    pub czxid: i64,
}

/// A hold whose lock node the operator deleted, from the servers' log: from then on its
/// holder may still believe it holds while the next waiter rightly does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperatorDelete {
    /// The holder (`rust-0.mutex.1`).
    pub who: String,
    /// Its acquisition's count.
    pub n: u64,
    /// Which of the hold's records the node was (`member-<k>` for a multi-lock's member);
    /// `None`: every record of the hold (it held one node).
    pub on: Option<String>,
    /// When (the delete's time on the servers' clock, ns since the Unix epoch).
    pub at: u64,
}

/// The operator's deletes among the log judge's held nodes deleted by another session: the
/// mark names the hold (`<who>-<n>`), the node's directory the multi-lock's member.
pub fn operator_deletes(ends: &[super::judge::DeletedEnd]) -> Vec<OperatorDelete> {
    ends.iter()
        .filter(|d| d.by_operator)
        .filter_map(|d| {
            let (who, n) = d.name.rsplit_once('-')?;
            let (dir, _) = super::judge::tree::split(&d.node);
            let member = (0..super::layout::MEMBERS)
                .find(|&k| super::layout::member_path(k) == dir)
                .map(|k| format!("member-{k}"));
            Some(OperatorDelete {
                who: who.to_owned(),
                n: n.parse().ok()?,
                on: member,
                at: u64::try_from(d.time_ms).ok()?.saturating_mul(1_000_000),
            })
        })
        .collect()
}

/// What the checker is given.
#[derive(Debug, Clone)]
pub struct Input<'a> {
    /// Every worker's lines.
    pub events: &'a [Event],
    /// The client processes' pauses.
    pub pauses: &'a [Pause],
    /// The clients' session timeout.
    pub session_timeout: Duration,
    /// The semaphore's leases.
    pub leases: u32,
    /// By when every acquire must have ended (ns).
    pub acquire_deadline: u64,
    /// Nodes found under the lock paths at the end.
    pub nodes_left: &'a [LeftNode],
    /// The history the servers' log judge found ZooKeeper lost, if it did: a node made in
    /// that stretch, or deleted there by the log, is in a history the servers did not keep (a
    /// delete of it may be what they lost), so it is reported, not judged. Nodes made before
    /// it and not deleted in it, or made after it, are judged.
    pub servers_lost: Option<&'a super::judge::LostStretch>,
    /// Holds whose node the operator deleted ([`operator_deletes`]).
    pub operator_deletes: &'a [OperatorDelete],
    /// The marks (`<who>-<n>`) whose session the servers ended while the mark stood, from
    /// their log (`super::judge::Verdict::ended_by_server`): a pause past the session
    /// timeout is a missing lost signal only where the servers' record shows the session
    /// ended. (A leader change during the pause gives every session a fresh timeout: such a
    /// hold stands, and its writes are rightly accepted.)
    pub ended_by_server: &'a [String],
}

/// One recipe and library's counts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Row {
    /// Acquisitions that held.
    pub cycles: u64,
    /// Holds recorded (a multi-lock's member each; a semaphore's lease each).
    pub holds: u64,
    /// Holds of this library that began while the rule forbade it.
    pub overlaps: u64,
    /// Holds cut short by a lost signal or a long pause of their process.
    pub cut_holds: u64,
    /// Holds whose client's session was replaced between the acquire's call and the hold's
    /// end (cut there).
    pub session_cut: u64,
    /// Holds cut where the operator deleted their node.
    pub deleted_cut: u64,
    /// Register writes.
    pub writes: u64,
    /// Accepted writes that read less than the write before them wrote.
    pub lost_updates: u64,
    /// Writes sent after a newer hold's write was accepted.
    pub stale_attempted: u64,
    /// Of those, refused (by the fence or the version).
    pub stale_rejected: u64,
    /// Stale writes the register took.
    pub stale_accepted: u64,
    /// Writes refused by our fence (stale or not: the hold's node was gone).
    pub fenced: u64,
    /// Acquires that did not end by the deadline.
    pub stuck: u64,
    /// Holds whose session expired during a pause (the servers' log shows it ended), that
    /// wrote after it, without a lost signal (the write failed or was fenced, so the signal
    /// was due).
    pub lost_missing: u64,
    /// Holds whose session expired during a pause (as above), that did nothing after it that
    /// would have shown the loss, without a lost signal: reported, not judged.
    pub lost_unobserved: u64,
    /// Acquisitions by style and outcome (`drop/held`, `timeout/timeout`, ...).
    pub outcomes: BTreeMap<String, u64>,
}

/// What the checker found.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// Per recipe and library (`rust`, `java`).
    pub rows: BTreeMap<(Recipe, String), Row>,
    /// The first findings of each kind, as sentences.
    pub samples: Vec<String>,
    /// Nodes left, each with the client whose session owns it (`?` when no client recorded
    /// that session).
    pub nodes_left: Vec<(String, String)>,
    /// Nodes left whose life ended in history the servers lost (see
    /// [`Input::servers_lost`]), with their client: reported, not judged.
    pub left_in_lost_history: Vec<(String, String)>,
    /// Lines that did not fit (a write without its hold): a harness or worker bug.
    pub malformed: Vec<String>,
}

impl Report {
    /// Why the run fails, if it does.
    pub fn failure(&self) -> Option<String> {
        let mut why = Vec::new();
        let judged: [(Count, &str); 2] = [
            (|r| r.stuck, "acquires of ours that never ended"),
            (
                |r| r.lost_missing,
                "holds of ours lost without a lost signal",
            ),
        ];
        for (count, what) in judged {
            let n: u64 = self
                .rows
                .iter()
                .filter(|((_, lib), _)| lib == "rust")
                .map(|(_, r)| count(r))
                .sum();
            if n > 0 {
                why.push(format!("{n} {what}"));
            }
        }
        let ours_left = self
            .nodes_left
            .iter()
            .filter(|(_, who)| !who.starts_with("java-"))
            .count();
        if ours_left > 0 {
            why.push(format!("{ours_left} nodes of ours left"));
        }
        if !self.malformed.is_empty() {
            why.push(format!("{} records that do not fit", self.malformed.len()));
        }
        (!why.is_empty()).then(|| why.join(", "))
    }

    /// What the clients' histories say against exclusion and the registers: overlapping
    /// holds (whoever began them), lost updates and accepted stale writes of ours. Reported
    /// beside the log judge's verdict, which decides them from the servers' record (these
    /// cut holds where a client may no longer hold; the log cuts nothing): not a failure of
    /// the run.
    pub fn clients_view(&self) -> Option<String> {
        let mut why = Vec::new();
        let seen: [(Count, bool, &str); 3] = [
            (|r| r.overlaps, false, "overlapping holds"),
            (|r| r.lost_updates, true, "lost updates of ours"),
            (|r| r.stale_accepted, true, "stale writes of ours accepted"),
        ];
        for (count, ours_only, what) in seen {
            let n: u64 = self
                .rows
                .iter()
                .filter(|((_, lib), _)| !ours_only || lib == "rust")
                .map(|(_, r)| count(r))
                .sum();
            if n > 0 {
                why.push(format!("{n} {what}"));
            }
        }
        (!why.is_empty()).then(|| why.join(", "))
    }

    fn sample(&mut self, text: String) {
        if self.samples.len() < SAMPLES * 4 {
            self.samples.push(text);
        }
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{:<16} {:<8} {:>7} {:>7} {:>8} {:>12} {:>7} {:>6} {:>17} {:>7} {:>6} {:>6}",
            "recipe",
            "library",
            "cycles",
            "holds",
            "overlaps",
            "cut/sess/del",
            "writes",
            "lost",
            "stale att/rej/acc",
            "fenced",
            "stuck",
            "no-sig"
        )?;
        for ((recipe, lib), r) in &self.rows {
            writeln!(
                f,
                "{:<16} {:<8} {:>7} {:>7} {:>8} {:>12} {:>7} {:>6} {:>17} {:>7} {:>6} {:>6}",
                recipe.name(),
                if lib == "rust" { "ours" } else { "Curator" },
                r.cycles,
                r.holds,
                r.overlaps,
                format!("{}/{}/{}", r.cut_holds, r.session_cut, r.deleted_cut),
                r.writes,
                r.lost_updates,
                format!(
                    "{}/{}/{}",
                    r.stale_attempted, r.stale_rejected, r.stale_accepted
                ),
                r.fenced,
                r.stuck,
                r.lost_missing
            )?;
        }
        writeln!(
            f,
            "(cut/sess/del: holds cut at a lost signal or a long pause / at their session's \
             replacement / where the operator deleted their node; stale: writes after a newer holder's, attempted/rejected/accepted; \
             no-sig: holds whose session expired in a pause (by the servers' log), with no lost signal)"
        )?;
        writeln!(f, "acquires by style/outcome:")?;
        for ((recipe, lib), r) in &self.rows {
            let outcomes: Vec<String> =
                r.outcomes.iter().map(|(k, v)| format!("{k} {v}")).collect();
            writeln!(
                f,
                "  {:<16} {:<8} {}",
                recipe.name(),
                if lib == "rust" { "ours" } else { "Curator" },
                outcomes.join(", ")
            )?;
        }
        writeln!(f, "nodes left: {}", self.nodes_left.len())?;
        for (node, who) in self.nodes_left.iter().take(SAMPLES) {
            writeln!(f, "  left: {node}, by {who}")?;
        }
        if !self.left_in_lost_history.is_empty() {
            writeln!(
                f,
                "nodes left made or deleted in history the servers lost (not judged): {}",
                self.left_in_lost_history.len()
            )?;
            for (node, who) in self.left_in_lost_history.iter().take(SAMPLES) {
                writeln!(f, "  left: {node}, by {who}")?;
            }
        }
        for s in &self.samples {
            writeln!(f, "  {s}")?;
        }
        for m in &self.malformed {
            writeln!(f, "  does not fit: {m}")?;
        }
        Ok(())
    }
}

/// Checks a run.
pub fn check(input: &Input<'_>) -> Report {
    let sessions: HashMap<i64, &str> = input
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Session(s) => Some((s.id, s.who.as_str())),
            _ => None,
        })
        .collect();
    let named = |n: &LeftNode| {
        let who = sessions.get(&n.owner).map_or("?", |w| *w);
        (
            format!("{} (session {:#x}, czxid {:#x})", n.path, n.owner, n.czxid),
            who.to_owned(),
        )
    };
    let in_lost = |n: &&LeftNode| {
        input
            .servers_lost
            .is_some_and(|l| l.covers(&n.path, n.czxid))
    };
    let mut report = Report {
        nodes_left: input
            .nodes_left
            .iter()
            .filter(|n| !in_lost(n))
            .map(named)
            .collect(),
        left_in_lost_history: input.nodes_left.iter().filter(in_lost).map(named).collect(),
        ..Report::default()
    };
    let t = u64::try_from(input.session_timeout.as_nanos()).unwrap_or(u64::MAX);
    let mut holds: Vec<(Who, Hold)> = Vec::new();
    let server_ended: std::collections::HashSet<(&str, u64)> = input
        .ended_by_server
        .iter()
        .filter_map(|name| {
            let (who, n) = name.rsplit_once('-')?;
            Some((who, n.parse().ok()?))
        })
        .collect();
    let mut lost: HashMap<(&str, u64), u64> = HashMap::new();
    // Each client's sessions in time order: when one replaced another.
    let mut session_changes: HashMap<&str, Vec<u64>> = HashMap::new();
    let mut last_session: HashMap<&str, i64> = HashMap::new();
    let mut writes: Vec<(Who, &Write)> = Vec::new();
    for event in input.events {
        let Ok(who) = Who::parse(event.who()) else {
            report.malformed.push(event.to_string());
            continue;
        };
        let row = report
            .rows
            .entry((who.recipe, who.lib.clone()))
            .or_default();
        match event {
            Event::Hold(h) => {
                row.holds += 1;
                holds.push((who, h.clone()));
            }
            Event::Acquire(a) => {
                if a.outcome == AcquireEnd::Held {
                    row.cycles += 1;
                }
                let outcome = match &a.outcome {
                    AcquireEnd::Failed(kind) => format!("error:{kind}"),
                    other => format!("{other:?}").to_lowercase(),
                };
                *row.outcomes
                    .entry(format!("{}/{outcome}", a.style.name()))
                    .or_default() += 1;
                let stuck = a.outcome == AcquireEnd::Unfinished
                    || a.end.is_none_or(|end| end > input.acquire_deadline);
                if stuck {
                    row.stuck += 1;
                    report.sample(format!("stuck acquire: {event}"));
                }
            }
            Event::Write(w) => {
                row.writes += 1;
                if w.result == WriteResult::Fenced {
                    row.fenced += 1;
                }
                writes.push((who, w));
            }
            Event::Session(s) => {
                let previous = last_session.insert(s.who.as_str(), s.id);
                if previous.is_some_and(|p| p != s.id) {
                    session_changes
                        .entry(s.who.as_str())
                        .or_default()
                        .push(s.at);
                }
            }
            Event::Lost(l) => {
                let at = lost.entry((l.who.as_str(), l.n)).or_insert(l.at);
                *at = (*at).min(l.at);
            }
        }
    }

    // When each acquire that held was called.
    let acquired: HashMap<(&str, u64), u64> = input
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Acquire(a) if a.outcome == AcquireEnd::Held => {
                Some(((a.who.as_str(), a.n), a.start))
            }
            _ => None,
        })
        .collect();
    // Holds cut where their node may have gone.
    let mut cut: Vec<(Who, Hold)> = Vec::with_capacity(holds.len());
    for (who, hold) in &holds {
        let mut to = hold.to;
        if let Some(&at) = lost.get(&(hold.who.as_str(), hold.n)) {
            to = to.min(at.max(hold.from));
        }
        // The acquire that led to the hold began here: what happened from then on (a session
        // replaced, a pause) may have taken the hold's node before the hold even began.
        let asked = acquired
            .get(&(hold.who.as_str(), hold.n))
            .copied()
            .unwrap_or(hold.from);
        // A session replaced between the acquire's call and the hold's end: the session the
        // acquire began in ended, and what it decided may be gone (seen in a long run: Curator
        // acquires that returned across their session's replacement, while a newer holder
        // held); the hold is cut there, to nothing if that was before it began.
        let changed = session_changes
            .get(hold.who.as_str())
            .and_then(|changes| changes.iter().copied().find(|&t| t >= asked && t < hold.to));
        if let Some(t) = changed {
            to = to.min(t.max(hold.from));
            report
                .rows
                .entry((who.recipe, who.lib.clone()))
                .or_default()
                .session_cut += 1;
        }
        // A pause from the acquire's call on: a hold decided before a pause and returned
        // after it is as stale as one held across it.
        let process = who.process_name();
        let mut expired_by: Option<u64> = None;
        for p in input.pauses.iter().filter(|p| p.process == process) {
            let long = p.to.saturating_sub(p.from);
            if p.from >= asked && p.from < hold.to && long.saturating_mul(3) >= t.saturating_mul(2)
            {
                to = to.min((p.from + t / 2).max(hold.from));
                if long.saturating_mul(2) >= t.saturating_mul(3) {
                    expired_by = Some(expired_by.map_or(p.to, |e: u64| e.min(p.to)));
                }
            }
        }
        let row = report
            .rows
            .entry((who.recipe, who.lib.clone()))
            .or_default();
        // The operator deleted this hold's node: from then on the next waiter rightly holds.
        let deleted = input
            .operator_deletes
            .iter()
            .filter(|d| d.who == hold.who && d.n == hold.n)
            .filter(|d| d.on.as_ref().is_none_or(|on| *on == hold.on))
            .map(|d| d.at)
            .min();
        if let Some(at) = deleted.filter(|&at| at < to) {
            to = at.max(hold.from);
            row.deleted_cut += 1;
        }
        if to < hold.to {
            row.cut_holds += 1;
        }
        let signalled = lost.contains_key(&(hold.who.as_str(), hold.n));
        let ended = server_ended.contains(&(hold.who.as_str(), hold.n));
        if let Some(resumed) = expired_by.filter(|_| !signalled && ended) {
            let wrote_after = writes
                .iter()
                .any(|(_, w)| w.who == hold.who && w.n == hold.n && w.sent >= resumed);
            if wrote_after {
                row.lost_missing += 1;
                if who.is_ours() {
                    report.sample(format!(
                        "no lost signal for a hold whose session expired: {hold}"
                    ));
                }
            } else {
                row.lost_unobserved += 1;
            }
        }
        cut.push((who.clone(), Hold { to, ..hold.clone() }));
    }

    // Exclusion, recipe by recipe.
    let mut by_recipe: BTreeMap<Recipe, Vec<Hold>> = BTreeMap::new();
    // A hold cut to nothing (stale from its start) is not counted.
    for (who, hold) in cut.iter().filter(|(_, h)| h.to > h.from) {
        by_recipe.entry(who.recipe).or_default().push(hold.clone());
    }
    for (recipe, holds) in &by_recipe {
        match sweep(Rule::of(*recipe, input.leases), holds) {
            Ok(verdict) => {
                for c in &verdict.conflicts {
                    report.sample(format!(
                        "overlap on {}: {} began while {} held",
                        recipe.name(),
                        c.later,
                        c.earlier
                    ));
                }
                // Attribute each overlap to the library of the hold that began (the kept
                // conflicts say which; the rest go to the first's).
                let mut left = verdict.violations;
                for c in &verdict.conflicts {
                    let lib = c.later.side().to_owned();
                    report.rows.entry((*recipe, lib)).or_default().overlaps += 1;
                    left -= 1;
                }
                if left > 0 {
                    let lib = verdict
                        .conflicts
                        .first()
                        .map_or("rust".to_owned(), |c| c.later.side().to_owned());
                    report.rows.entry((*recipe, lib)).or_default().overlaps += left;
                }
            }
            Err(e) => report.malformed.push(e),
        }
    }

    // The registers.
    let began: HashMap<(&str, u64), u64> = holds.iter().fold(HashMap::new(), |mut m, (_, h)| {
        let from = m.entry((h.who.as_str(), h.n)).or_insert(h.from);
        *from = (*from).min(h.from);
        m
    });
    let mut by_reg: BTreeMap<&str, Vec<(&Who, &Write, u64)>> = BTreeMap::new();
    for (who, w) in &writes {
        match began.get(&(w.who.as_str(), w.n)) {
            Some(&from) => by_reg
                .entry(w.reg.as_str())
                .or_default()
                .push((who, w, from)),
            None => report
                .malformed
                .push(format!("a write without its hold: {w:?}")),
        }
    }
    for list in by_reg.values() {
        check_register(list, &mut report);
    }
    report
}

/// One register's writes (each with its hold's beginning).
fn check_register(list: &[(&Who, &Write, u64)], report: &mut Report) {
    let mut accepted: Vec<(u64, &Who, &Write, u64)> = list
        .iter()
        .filter_map(|&(who, w, from)| match w.result {
            WriteResult::Accepted { version } => Some((version, who, w, from)),
            _ => None,
        })
        .collect();
    accepted.sort_by_key(|a| a.0);
    // Lost updates: each accepted write read at least what the one before it wrote.
    // A lost update is the older hold's doing: either it wrote inside the newer one's read and
    // write (prev older), or it read before the newer one wrote and wrote after (w older).
    for pair in accepted.windows(2) {
        let [(_, prev_who, prev, prev_from), (_, w_who, w, w_from)] = pair else {
            continue;
        };
        if w.read <= prev.read {
            let who = if prev_from < w_from { prev_who } else { w_who };
            let row = report
                .rows
                .entry((who.recipe, who.lib.clone()))
                .or_default();
            row.lost_updates += 1;
            report.sample(format!(
                "lost update on {}: {} read {} after {} wrote {} (counted against {})",
                w.reg,
                w.who,
                w.read,
                prev.who,
                prev.read + 1,
                who
            ));
        }
    }
    // Stale writes, by the register's order: an accepted write after a newer hold's.
    let mut newest_from = 0u64;
    let mut stale_by_order: Vec<u64> = Vec::new();
    for &(version, _, _, from) in &accepted {
        if from < newest_from {
            stale_by_order.push(version);
        }
        newest_from = newest_from.max(from);
    }
    // Stale writes, by time: sent after a newer hold's write was accepted.
    for &(who, w, from) in list {
        let after_newer = accepted
            .iter()
            .any(|&(_, _, other, other_from)| other_from > from && other.replied < w.sent);
        let by_order = matches!(w.result, WriteResult::Accepted { version } if stale_by_order.contains(&version));
        if !after_newer && !by_order {
            continue;
        }
        let row = report
            .rows
            .entry((who.recipe, who.lib.clone()))
            .or_default();
        row.stale_attempted += 1;
        match &w.result {
            WriteResult::Accepted { .. } => {
                row.stale_accepted += 1;
                report.sample(format!(
                    "stale write accepted on {}: {} (hold {}) wrote {} after a newer hold's write",
                    w.reg,
                    w.who,
                    w.n,
                    w.read + 1
                ));
            }
            WriteResult::Fenced | WriteResult::BadVersion => row.stale_rejected += 1,
            // Refused without being applied: the session had ended (ours: SessionExpired,
            // Closed; Curator's: SessionExpiredException). A lost connection may or may not
            // have applied it: neither.
            WriteResult::Failed(kind) if NOT_APPLIED.contains(&kind.as_str()) => {
                row.stale_rejected += 1;
            }
            WriteResult::Failed(_) => {}
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
pub(super) mod tests;
