//! [`Ledger`]: every hold the async layer's tasks believe they have, judged from the server's
//! tree alone at the instant each begins, at every later begin, and when it ends.
//!
//! A task's claim (the node path its guard returns) only says *which* node to judge. Whether
//! the hold is real is the server's to say: the node must exist, be owned by the task's own
//! session (its ephemeral owner), and be granted by the grant rule below, written here small
//! and apart from recipes-core's predicates:
//!
//! - **exclusive** (a mutex, a semaphore mutex's lease, a multi-lock's member) and **write**:
//!   no child of the node's directory has a smaller sequence;
//! - **read**: no `__WRIT__` child has a smaller sequence (a downgrade's read node carries its
//!   write node's sequence, so it is granted beside it);
//! - **lease** of `n`: fewer than `n` children have a smaller sequence (Curator's count rule:
//!   a lease holds when the children number at most `n`; later leases only sort after it).
//!
//! A child's sequence is the text after its lock name, as Curator compares it: the last ten
//! characters when they are digits, else the whole name (a foreign child).
//!
//! A hold whose session the server has already ended is over whatever its task believes (the
//! reply that granted it was on its way when the session went: that is what fencing is for),
//! so it is noted as stale and does not count. Every hold that counts (its session lives) must
//! be granted and owned, and two counting holds the rule forbids at once (two exclusive, a
//! writer beside a reader that is not its own downgrade, more than `n` leases) are a
//! violation, computed from the tree too.
//!
//! **Meddling.** Another client (the schedule's meddler, a session of its own, as an operator
//! would) may delete a held node ([`Ledger::meddle`], recorded when its delete is sent). Its
//! holders (the holds on that very node, no other) are then excused from the rule while their
//! session lives, from the delete on and for [`TOLD_BOUND`] only: the next waiter is granted
//! legitimately, and the deleted holder holds nothing. Within that bound the holder must be
//! told ([`Ledger::told`]: its guard's `lost()` said `Deleted`), or end its hold by itself;
//! past it, a hold on the deleted node is judged as any other (a node that does not exist).
//! Once a holder of a node was told, no hold may begin on it again (a cohort handing on a
//! node it knows dead).

use std::collections::BTreeMap;
use std::time::Duration;

use tokio::time::Instant;
use zk_mem_server::MemServer;

/// How long after another client deletes a held node its holder may go untold (its guard's
/// `lost()` not yet `Deleted`, nor `Lost`), and so be excused from the grant rule. While the
/// holder's session stays connected the watch tells it within a round trip; otherwise on the
/// reconnect that restores the watch (the longest outage short of the session timeout, the
/// read deadline, a reconnect pause), or its client says `Lost` at the session timeout: within
/// the session timeout (6 s) and one second.
pub const TOLD_BOUND: Duration = Duration::from_secs(7);

/// How a hold may share its thing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Alone (a mutex, a member of a multi-lock, a semaphore mutex).
    Exclusive,
    /// With other readers, not with a writer (its own downgraded write excepted).
    Read,
    /// Alone; a reader beside it only for its own downgrade.
    Write,
    /// One of at most `n` leases.
    Lease(u32),
}

/// What a task claims: a hold of `thing` as `mode` on `node`, taken by `session`, with its
/// guard's fencing token.
#[derive(Debug, Clone, Copy)]
pub struct Claim<'a> {
    /// What is held: a lock path (or a semaphore's).
    pub thing: &'a str,
    /// How.
    pub mode: Mode,
    /// The node the guard names (`None`: the guard names none for this thing).
    pub node: Option<&'a str>,
    /// The session of the task's client (not the guard's word).
    pub session: i64,
    /// The guard's fencing token.
    pub token: i64,
    /// A cohort's local holder's place among its node's holders (0 otherwise): with the
    /// token, what must increase from holder to holder.
    pub local: u64,
}

/// One hold, as its task sees it.
#[derive(Debug, Clone)]
struct Hold {
    thing: String,
    mode: Mode,
    node: String,
    session: i64,
    /// A cohort's local holder's place among its node's holders (0 otherwise).
    local: u64,
    /// Whether it counted when it began (a hold judged not to, or stale, is not judged again).
    counted: bool,
}

/// The holds believed now, and what went wrong.
#[derive(Debug, Default)]
pub struct Ledger {
    live: BTreeMap<u64, Hold>,
    next: u64,
    /// The last exclusive token per thing (fencing tokens must increase).
    tokens: BTreeMap<String, (i64, u64)>,
    /// Violations, in order (the first is reported).
    pub violations: Vec<String>,
    /// Holds recorded.
    pub holds: u64,
    /// Holds that began after the server had ended their session (they never counted).
    pub stale: u64,
    /// Holds of a cut-off session whose guard said `Lost` in time.
    pub lost_in_time: u64,
    /// Writes fenced by a guard of an expired session, refused by the server.
    pub fenced_refused: u64,
    /// Nodes another client deleted (its delete sent then), by path.
    meddled: BTreeMap<String, Instant>,
    /// Nodes whose holder was told they are gone, by path, with when.
    told_of: BTreeMap<String, Instant>,
    /// Held nodes deleted by another client (deletes that took, or may have taken).
    pub meddles: u64,
    /// Holders of a deleted node told `Deleted` by their guard within the bound.
    pub told_deleted: u64,
    /// Holders of a deleted node whose guard said `Lost` first (no server heard for the
    /// session timeout: the lock is gone either way).
    pub told_lost: u64,
    /// Holders of a deleted node whose session ended on the server before they were told.
    pub told_expired: u64,
    /// The longest time from a delete to its holder's guard saying `Deleted`.
    pub told_worst: Duration,
    /// Of [`Ledger::told_deleted`], those told within 100 ms.
    pub told_fast: u64,
    /// Holds on a deleted node that ended by themselves before their holder was told.
    pub ended_first: u64,
    /// Judgements excused because the held node was deleted by another client (within the
    /// bound).
    pub excused: u64,
}

/// A child's sequence as Curator compares it: the text after its lock name (the last ten
/// characters when they are digits), else the whole name.
pub fn sequence(name: &str) -> &str {
    let tail = name.len().checked_sub(10).and_then(|at| name.get(at..));
    match tail {
        Some(t) if t.bytes().all(|b| b.is_ascii_digit()) => t,
        _ => name,
    }
}

/// Whether `name` in a directory of `children` is granted as `mode` by the rule above.
pub fn granted(children: &[String], name: &str, mode: Mode) -> bool {
    let ours = sequence(name);
    let ahead = |c: &&String| c.as_str() != name && sequence(c) < ours;
    match mode {
        Mode::Exclusive | Mode::Write => !children.iter().any(|c| ahead(&c)),
        Mode::Read => !children
            .iter()
            .filter(ahead)
            .any(|c| c.contains("__WRIT__")),
        Mode::Lease(n) => children.iter().filter(ahead).count() < n as usize,
    }
}

/// The directory and name of a node path.
fn split(node: &str) -> Option<(&str, &str)> {
    let (dir, name) = node.rsplit_once('/')?;
    Some((if dir.is_empty() { "/" } else { dir }, name))
}

/// What the tree says of a claimed node now.
enum Verdict {
    /// Its session lives, and the node is there, owned by it and granted (with its czxid).
    Counts(i64),
    /// Its session is gone on the server.
    Stale,
    /// Its session lives, and the node is gone: deleted by another client, no longer ago than
    /// [`TOLD_BOUND`]. Excused: the hold holds nothing, and its holder is yet to be told.
    Deleted,
    /// Its session lives, yet the node is not its granted hold: why.
    Not(String),
}

fn judge(
    server: &MemServer,
    meddled: &BTreeMap<String, Instant>,
    mode: Mode,
    node: Option<&str>,
    session: i64,
) -> Verdict {
    if !server.sessions().iter().any(|s| s.id == session) {
        return Verdict::Stale;
    }
    let Some(node) = node else {
        return Verdict::Not("the guard names no node for it".to_owned());
    };
    let Some(stat) = server.exists(node) else {
        return match meddled.get(node) {
            Some(&at) if Instant::now() <= at + TOLD_BOUND => Verdict::Deleted,
            Some(&at) => Verdict::Not(format!(
                "{node} was deleted by another client {:?} ago, past the bound of {TOLD_BOUND:?} (a holder not told in time)",
                Instant::now().duration_since(at)
            )),
            None => Verdict::Not(format!("{node} does not exist")),
        };
    };
    if stat.ephemeral_owner != session {
        return Verdict::Not(format!(
            "{node} is owned by {:#x}, not by {session:#x}",
            stat.ephemeral_owner
        ));
    }
    let Some((dir, name)) = split(node) else {
        return Verdict::Not(format!("{node} has no directory"));
    };
    let mut children = server.children(dir).unwrap_or_default();
    children.retain(|c| c == name || !leftover(meddled, dir, c));
    if !granted(&children, name, mode) {
        return Verdict::Not(format!(
            "{node} is not granted as {mode:?} among {children:?}"
        ));
    }
    Verdict::Counts(stat.czxid)
}

/// Whether child `name` of `dir` is the leftover of a deleted holder: a downgrade's read node
/// (it carries its write node's sequence) for a write node another client deleted, within
/// [`TOLD_BOUND`] of the delete. The downgrade made it before it could see its write node gone
/// and deletes it once it does (its read lock is never held: a read hold on it would be judged
/// as any, beside the next writer); until then it sorts ahead of the next writer, whose hold the
/// rule would deny for it. Excused as the deleted holder's own overlap.
fn leftover(meddled: &BTreeMap<String, Instant>, dir: &str, name: &str) -> bool {
    if !name.contains("__READ__") {
        return false;
    }
    let seq = sequence(name);
    let now = Instant::now();
    meddled.iter().any(|(node, &at)| {
        split(node).is_some_and(|(d, n)| {
            d == dir && n.contains("__WRIT__") && sequence(n) == seq && now <= at + TOLD_BOUND
        })
    })
}

/// Whether counting holds `a` and `b` of one thing may be held at once, from their nodes.
fn compatible(a: &Hold, b: &Hold) -> bool {
    let same_seq = || {
        let (an, bn) = (split(&a.node).map(|x| x.1), split(&b.node).map(|x| x.1));
        an.zip(bn).is_some_and(|(x, y)| sequence(x) == sequence(y))
    };
    match (a.mode, b.mode) {
        // Readers of one node only as a cohort's local readers, each with its own place.
        (Mode::Read, Mode::Read) => {
            a.node != b.node || (a.local > 0 && b.local > 0 && a.local != b.local)
        }
        (Mode::Lease(_), Mode::Lease(_)) => a.node != b.node,
        // A downgrade: the read node carries its write node's sequence, in one session.
        (Mode::Read, Mode::Write) | (Mode::Write, Mode::Read) => {
            a.session == b.session && a.node != b.node && same_seq()
        }
        _ => false,
    }
}

impl Ledger {
    /// Records a hold that begins now, judged from `server`'s tree, and judges again every
    /// live hold of its thing. Returns its id (for [`Ledger::end`]).
    pub fn begin(&mut self, server: &MemServer, claim: Claim<'_>) -> u64 {
        let Claim {
            thing,
            mode,
            node,
            session,
            token,
            local,
        } = claim;
        self.holds += 1;
        if let Some(told) = node.and_then(|n| self.told_of.get(n)) {
            self.violations.push(format!(
                "{thing}: a {mode:?} hold on {} began {:?} after a holder of it was told it is gone (a node known dead handed on)",
                node.unwrap_or_default(),
                Instant::now().duration_since(*told)
            ));
        }
        let counts = match judge(server, &self.meddled, mode, node, session) {
            Verdict::Counts(czxid) => {
                // (A downgrade's read hold carries its write's token: reads are not fenced
                // by their own node.)
                if czxid != token && mode != Mode::Read {
                    self.violations.push(format!(
                        "{thing}: the guard's fencing token {token} is not its node's czxid {czxid}"
                    ));
                }
                true
            }
            Verdict::Stale => {
                self.stale += 1;
                false
            }
            Verdict::Deleted => {
                self.excused += 1;
                false
            }
            Verdict::Not(why) => {
                self.violations
                    .push(format!("{thing}: a {mode:?} hold began, but {why}"));
                false
            }
        };
        let hold = Hold {
            thing: thing.to_owned(),
            mode,
            node: node.unwrap_or_default().to_owned(),
            session,
            local,
            counted: counts,
        };
        // The other live holds of this thing, judged again now: those whose session lives
        // must still be granted and owned; they count, and must be compatible with this one.
        let others: Vec<Hold> = self
            .live
            .values()
            .filter(|h| h.thing == thing && h.counted)
            .cloned()
            .collect();
        let mut counting = Vec::new();
        for other in others {
            match judge(
                server,
                &self.meddled,
                other.mode,
                Some(&other.node),
                other.session,
            ) {
                Verdict::Counts(_) => counting.push(other),
                Verdict::Stale => {}
                Verdict::Deleted => self.excused += 1,
                Verdict::Not(why) => self.violations.push(format!(
                    "{thing}: a live {:?} hold of {:#x} no longer holds: {why}",
                    other.mode, other.session
                )),
            }
        }
        if counts {
            for other in &counting {
                if !compatible(&hold, other) {
                    self.violations.push(format!(
                        "{thing}: {mode:?} hold on {} began while {:?} hold on {} was held",
                        hold.node, other.mode, other.node
                    ));
                }
            }
            if let Mode::Lease(n) = mode {
                let leases = counting.len() + 1;
                if leases > n as usize {
                    self.violations
                        .push(format!("{thing}: {leases} leases held at once, of {n}"));
                }
            }
            if matches!(mode, Mode::Exclusive | Mode::Write) {
                if let Some(last) = self.tokens.get(thing) {
                    if (token, local) <= *last {
                        self.violations.push(format!(
                            "{thing}: fencing token {:?} after {last:?}: not increasing",
                            (token, local)
                        ));
                    }
                }
                self.tokens.insert(thing.to_owned(), (token, local));
            }
        }
        server.note(|| {
            format!(
                "hold begins: {thing} {mode:?} {} by {session:#x}{}",
                hold.node,
                if counts { "" } else { " (not counted)" }
            )
        });
        self.next += 1;
        let id = self.next;
        self.live.insert(id, hold);
        id
    }

    /// The hold ends now (its release is about to start, or its guard to be dropped): while
    /// its session lives, its node must still be there, owned and granted.
    pub fn end(&mut self, server: &MemServer, id: u64) {
        let Some(hold) = self.live.remove(&id).filter(|h| h.counted) else {
            return;
        };
        let verdict = judge(
            server,
            &self.meddled,
            hold.mode,
            Some(&hold.node),
            hold.session,
        );
        match verdict {
            Verdict::Not(why) => self.violations.push(format!(
                "{}: a {:?} hold of {:#x} ended no longer holding: {why}",
                hold.thing, hold.mode, hold.session
            )),
            Verdict::Deleted => {
                self.excused += 1;
                if !self.told_of.contains_key(&hold.node) {
                    self.ended_first += 1;
                }
            }
            Verdict::Counts(_) | Verdict::Stale => {}
        }
        server.note(|| format!("hold ends: {} {}", hold.thing, hold.node));
    }

    /// Records a violation found elsewhere (a deadline overrun, a waiter failed by an outage
    /// its session survived, a node left).
    pub fn violation(&mut self, what: String) {
        self.violations.push(what);
    }

    /// How many holds are believed now.
    pub fn live(&self) -> usize {
        self.live.len()
    }

    /// Another client sends a delete of `node` now (a held node, as the tree says).
    pub fn meddle(&mut self, node: &str) {
        self.meddled.insert(node.to_owned(), Instant::now());
    }

    /// The delete of `node` sent by [`Ledger::meddle`] did not take (the node was gone
    /// already, or is still there): its holders are judged as before. Else it counts.
    pub fn meddled(&mut self, node: &str, took: bool) {
        match took {
            true => self.meddles += 1,
            false => {
                self.meddled.remove(node);
            }
        }
    }

    /// The first node of the live holds `ids` that another client deleted (gone now), with
    /// when its delete was sent.
    pub fn deleted_of(&self, server: &MemServer, ids: &[u64]) -> Option<(String, Instant)> {
        ids.iter()
            .filter_map(|id| self.live.get(id))
            .filter_map(|h| Some((h.node.clone(), *self.meddled.get(&h.node)?)))
            .filter(|(node, _)| server.exists(node).is_none())
            .min_by_key(|(_, at)| *at)
    }

    /// Whether a delete of some node of the live holds `ids` was sent by another client.
    pub fn meddled_any(&self, ids: &[u64]) -> bool {
        ids.iter()
            .filter_map(|id| self.live.get(id))
            .any(|h| self.meddled.contains_key(&h.node))
    }

    /// The holder of `node`, deleted by another client at `since`, was told so by its guard
    /// now (`Deleted`): no hold may begin on it again.
    pub fn told(&mut self, node: &str, since: Instant) {
        let now = Instant::now();
        let delay = now.duration_since(since);
        self.told_deleted += 1;
        self.told_worst = self.told_worst.max(delay);
        if delay <= Duration::from_millis(100) {
            self.told_fast += 1;
        }
        self.told_of.entry(node.to_owned()).or_insert(now);
    }

    /// The live holds of `session` (their ids), for the silent-expiry check.
    pub fn of_session(&self, session: i64) -> Vec<u64> {
        self.live
            .iter()
            .filter(|(_, h)| h.session == session)
            .map(|(&id, _)| id)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kids(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| (*n).to_owned()).collect()
    }

    #[test]
    fn the_grant_rule_by_sequence() {
        let m = kids(&["_c_a-lock-0000000003", "_c_b-lock-0000000001"]);
        assert!(granted(&m, "_c_b-lock-0000000001", Mode::Exclusive));
        assert!(!granted(&m, "_c_a-lock-0000000003", Mode::Exclusive));
        let rw = kids(&[
            "_c_a-__READ__0000000001",
            "_c_b-__WRIT__0000000002",
            "_c_c-__READ__0000000003",
            "_c_b-__READ__0000000002",
        ]);
        assert!(granted(&rw, "_c_a-__READ__0000000001", Mode::Read));
        assert!(!granted(&rw, "_c_c-__READ__0000000003", Mode::Read));
        assert!(
            granted(&rw, "_c_b-__READ__0000000002", Mode::Read),
            "a downgrade"
        );
        assert!(!granted(&rw, "_c_b-__WRIT__0000000002", Mode::Write));
        let l = kids(&[
            "x-lease-0000000005",
            "y-lease-0000000002",
            "z-lease-0000000009",
        ]);
        assert!(granted(&l, "x-lease-0000000005", Mode::Lease(2)));
        assert!(!granted(&l, "z-lease-0000000009", Mode::Lease(2)));
        assert!(granted(&l, "z-lease-0000000009", Mode::Lease(3)));
    }
}
