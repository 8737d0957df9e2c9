//! The chaos run judged from the servers' own record: every member's transaction log
//! ([`logs`]), merged by zxid and replayed into the tree's history ([`tree`]), then judged in
//! zxid order from the log alone, whatever any client believed.
//!
//! Every hold leaves its **mark** on the server (a hold of ours whose mark failed, an
//! **unmarked record**) and every register write names the hold it was made under ([`marks`]
//! has the formats). The verdicts, per recipe and library:
//!
//! - **granted**: at the zxid of every mark, each lock node it names exists, is owned by the
//!   mark's session, carries the token the mark says (its czxid) and is granted by the
//!   recipe's rule ([`rules`], written here: first by sequence for a mutex, a multi-lock's
//!   member and a write lock; no write node before it for a read lock; fewer than N live
//!   leases before it for a semaphore's lease). At the zxid of every register write, the
//!   node it names exists, carries its token, is granted, and a live mark names it in the
//!   write's mode (the
//!   write goes through the worker's store session, so the holder is known by its mark:
//!   whose session owns the node was checked when the mark was made).
//! - **claims**: a mark names the lock and the mode it holds ([`marks`]): each node it names
//!   is a node of that lock, and holds that mode by its directory and name (`exclusive` a
//!   `lock-` node, `read` a `__READ__` node, `write` a `__WRIT__` one, `lease` a lease). Each
//!   register is tied to one lock ([`Config::register_locks`]): a write names that lock, is
//!   made under a node of it, in a mode that fits its node and is not `read` (readers share
//!   the lock), and a live mark of that node in that mode stands for it (below). A claim
//!   that does not fit is a violation (`claims`); the write counts as not granted for the
//!   register's next write.
//! - **exclusion**: at every zxid the live marks of each lock directory satisfy its
//!   exclusion (one holder; no reader beside a writer; at most N leases), a mark claiming
//!   `write` counting as a writer whatever its node's name. A breach is blamed
//!   on each mark whose node the rule does not grant at that zxid, except where the record
//!   shows who took that node away: deleted by a session neither its owner nor the
//!   operator's, it is that session's library that let the next holder in (the new mark is
//!   blamed if no mark is ungranted).
//! - **foreign deletes**: a lock node deleted by a session other than its owner (and not
//!   the operator's, below) is a violation of the deleter's library, whether the node held or
//!   waited. A session's library is what its registration or its marks say; one that said
//!   neither is Curator's (ours register every session before it touches a lock, and one
//!   that did not is a judge error).
//! - **tokens**: each register's accepted writes, in zxid (= version) order, carry tokens
//!   that never decrease.
//! - **lost updates**: each accepted write's value is the previous value plus one; a breach
//!   is blamed on the write, or on the one before if that one was not granted.
//! - **inner lock**: a semaphore's lease is created by a session whose node in the inner
//!   lock (`<path>/locks`) is granted.
//! - **accounted holds** (given the workers' own list of holds of ours, with
//!   [`Verdict::account`]): every hold of ours left its mark, or an unmarked record (its
//!   mark failed) whose holder was told it lost the hold within the bound (a session
//!   timeout, in a chaos run) after the failure. A hold that left neither, or whose holder
//!   was never told or told late, is a violation of ours: a hold the marks cannot judge is
//!   still one its holder must have been told it did not have.
//!
//! No rule cuts a hold: the marks live exactly as long as the server kept them. One excusal,
//! by the record: a lock node deleted by the **operator** (a session the run names in
//! [`Config::operators`]: the nemesis's own, deleting held nodes as an operator's `deleteall`
//! would) lets the next waiter in while its old holder may still believe it holds; from the
//! delete's zxid on, the old holder's mark (made before the delete) is left out of its
//! directory's exclusion and counted as **excused**. Nothing else about it is excused: a
//! mark or register write naming the deleted node is judged as before (a stale write of ours
//! accepted is a violation). Every held node a session other than its owner deleted
//! (operator or not) is listed ([`Verdict::ended_by_delete`]) for the lost signal's
//! timeliness.
//!
//! What the judge cannot read is an error, never a pass: a member with no log files, an
//! empty committed history, members disagreeing on a zxid, a zxid in no log, a replay that
//! does not fit (a create of a live path, a register's data version ahead of the log's: the
//! logs lack a committed write), a node under the marks that is not ephemeral or does not
//! parse, or whose data is set (an unmarked record's aside). When the servers show they lost committed transactions (a version set again at
//! or below what the log had reached), the judgement stops at the start of the epoch that
//! parted from the log and drops what it found from there ([`Verdict::server_loss`]); the run
//! is then **inconclusive** and fails unless it accepts the loss
//! ([`Config::accept_server_loss`]). The report says how many txns, marks and writes it
//! judged.
//! [`Verdict::failure`] fails on any violation of ours, any error, and an unaccepted server
//! loss; Curator's violations are counted beside.

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use zk_proto::txnlog::TxnEntry;

pub mod logs;
pub mod marks;
pub mod rules;
pub mod tree;

#[cfg(test)]
mod tests;

use marks::{Held, Mark, Mode};
use rules::Kind;
use tree::{Change, Tree};

use super::layout;
use crate::recipe::Recipe;

/// How many violations the report prints.
const SHOWN: usize = 12;

/// One lock directory the judge knows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockDir {
    /// The recipe's name, the report's row.
    pub label: String,
    /// The directory whose children are the lock nodes.
    pub dir: String,
    /// Its grant rule.
    pub kind: Kind,
    /// For a semaphore's leases: the inner lock's directory.
    pub inner: Option<String>,
    /// Whether a node the rule grants is promptly held and marked by its owner (a mutex's,
    /// a read/write lock's): one granted and never marked for longer than
    /// [`Config::idle_bound_ms`] is a waiter that missed its turn. Not a multi-lock's
    /// member (held while the next member is waited for), nor a semaphore's inner lock or
    /// leases (marked under another node).
    pub marked_when_granted: bool,
}

/// Where the judge looks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// The marks' parent.
    pub marks: String,
    /// The registers' parent.
    pub registers: String,
    /// The lock directories.
    pub locks: Vec<LockDir>,
    /// Each register (its name under `registers`) with the lock it is tied to (a path):
    /// written only under that lock's nodes.
    pub register_locks: BTreeMap<String, String>,
    /// How long a node may stay granted and unmarked before it counts as a waiter that
    /// missed its turn (ms, on the servers' clock); `None`: not judged. A chaos run gives the
    /// longest stretch of faults plus two session timeouts.
    pub idle_bound_ms: Option<i64>,
    /// The operator's sessions (the nemesis's own, recorded when it opened them): their
    /// deletes of lock nodes are the operator's, not a recipe's.
    pub operators: Vec<i64>,
    /// Whether a run whose servers lost committed transactions passes when nothing judged up
    /// to the loss fails it. By default such a run is inconclusive, and fails
    /// ([`Verdict::failure`]): what came after the loss was not judged.
    pub accept_server_loss: bool,
}

impl Config {
    /// A chaos run's layout ([`layout`]) for `recipes`, with `leases` for the semaphore.
    pub fn chaos(recipes: &[Recipe], leases: u32) -> Config {
        let mut locks = Vec::new();
        let dir = |label: &str, dir: String, kind| LockDir {
            label: label.to_owned(),
            dir,
            kind,
            inner: None,
            marked_when_granted: false,
        };
        for &recipe in recipes {
            let (label, path) = (recipe.name(), layout::lock_path(recipe));
            match recipe {
                Recipe::Mutex => locks.push(LockDir {
                    marked_when_granted: true,
                    ..dir(label, path, Kind::Exclusive)
                }),
                Recipe::Rwlock => locks.push(LockDir {
                    marked_when_granted: true,
                    ..dir(label, path, Kind::ReadWrite)
                }),
                Recipe::Multilock => locks.extend(
                    (0..layout::MEMBERS)
                        .map(|k| dir(label, layout::member_path(k), Kind::Exclusive)),
                ),
                Recipe::Semaphore | Recipe::SemaphoreMutex => {
                    let n = if recipe == Recipe::Semaphore {
                        leases
                    } else {
                        1
                    };
                    locks.push(dir(label, format!("{path}/locks"), Kind::Exclusive));
                    locks.push(LockDir {
                        inner: Some(format!("{path}/locks")),
                        ..dir(label, format!("{path}/leases"), Kind::Leases { n })
                    });
                }
            }
        }
        Config {
            marks: marks::MARKS.to_owned(),
            registers: layout::REGISTERS.to_owned(),
            locks,
            register_locks: layout::register_locks(recipes).into_iter().collect(),
            idle_bound_ms: None,
            operators: Vec::new(),
            accept_server_loss: false,
        }
    }
}

/// One recipe and library's counts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Row {
    /// Marks made (holds seen by the server).
    pub marks: u64,
    /// Register writes accepted.
    pub writes: u64,
    /// Marks and writes whose node was missing, not the marker's, or not granted, and writes
    /// no live mark stood for.
    pub not_granted: u64,
    /// Breaches of the lock's exclusion by the live marks blamed on this row.
    pub exclusion: u64,
    /// Tokens that did not match their node's czxid, or went down in a register.
    pub tokens: u64,
    /// Accepted writes whose value was not the previous one plus one.
    pub lost_updates: u64,
    /// Leases created without the inner lock.
    pub no_inner: u64,
    /// Nodes granted and left unmarked past the bound: a waiter that missed its turn.
    pub missed_turns: u64,
    /// Lock nodes owned by another session that a session of this library deleted (the
    /// operator's deletes aside): whatever the node was doing, only its owner may remove it.
    pub foreign_deletes: u64,
    /// Marks and register writes whose claim does not fit: a node not of the lock named, a
    /// mode its node does not hold (a `write` claimed on a read node), a register written
    /// under a node not of its own lock or under a `read` hold.
    pub claims: u64,
    /// Holds of ours (as their workers recorded them) that left neither their mark nor an
    /// unmarked record whose holder was told it lost the hold within the bound
    /// ([`Verdict::account`]).
    pub unaccounted: u64,
    /// Marks left out of their directory's exclusion because the operator deleted the node
    /// they held (from the delete on): not a violation, the operator's doing.
    pub excused: u64,
}

impl Row {
    /// Every violation counted.
    pub fn violations(&self) -> u64 {
        self.not_granted
            + self.exclusion
            + self.tokens
            + self.lost_updates
            + self.no_inner
            + self.missed_turns
            + self.foreign_deletes
            + self.claims
            + self.unaccounted
    }
}

/// The history the servers lost: from the first zxid they forgot to where their state
/// parted from the log ([`tree::Forgotten`]'s `since` and `parted`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LostStretch {
    /// The first zxid the servers forgot.
    pub from: i64,
    /// Where their state parted from the log: their own history again from here on.
    pub to: i64,
    /// The nodes (path, czxid) the log shows deleted in the stretch: deletes the servers
    /// may have lost.
    pub deleted: Vec<(String, i64)>,
}

impl LostStretch {
    /// Whether the node at `path` made at `czxid` lived its end in the lost history: made
    /// there, or deleted there by the log (so a node left by it may be the servers' loss,
    /// not a client's). A node made before and not deleted there, or made after, is not.
    pub fn covers(&self, path: &str, czxid: i64) -> bool {
        (self.from..self.to).contains(&czxid)
            || self.deleted.iter().any(|(p, c)| p == path && *c == czxid)
    }
}

/// An unmarked record ([`marks`]): a hold that could not leave its mark.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnmarkedHold {
    /// Where the record was made or last set.
    pub zxid: i64,
    /// How long after the failure the holder was told it lost the hold, if it was (ms).
    pub lost_after_ms: Option<u64>,
}

/// A hold of ours as its worker recorded it, to be accounted for ([`Verdict::account`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OurHold {
    /// The name its mark was to have (`<who>-<n>`: the client and its acquisition's count).
    pub name: String,
    /// Its recipe's label (the report's row).
    pub label: String,
}

/// One violation found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// Where in the log.
    pub zxid: i64,
    /// The recipe.
    pub label: String,
    /// `rust`, `java`, or `?` (not known).
    pub lib: String,
    /// What.
    pub text: String,
}

/// A mark the server deleted with its session (`closeSession`, an expiry's or a close's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerEnd {
    /// The mark's name (`<who>-<n>`: the holder and its acquisition's count).
    pub name: String,
    /// The zxid of the `closeSession`.
    pub zxid: i64,
    /// Its time as the leader wrote it, ms since the Unix epoch.
    pub time_ms: i64,
}

/// A held lock node (one a live mark named) deleted by a session other than its owner: an
/// operator's delete, or another client's. One per mark that named it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeletedEnd {
    /// The mark's name (`<who>-<n>`: the holder and its acquisition's count).
    pub name: String,
    /// The lock node deleted (its full path).
    pub node: String,
    /// The zxid of the delete.
    pub zxid: i64,
    /// Its time as the leader wrote it, ms since the Unix epoch.
    pub time_ms: i64,
    /// The session that deleted it.
    pub deleter: i64,
    /// Whether that session is the operator's ([`Config::operators`]).
    pub by_operator: bool,
}

/// What the judge found.
#[derive(Debug, Clone, Default)]
pub struct Verdict {
    /// Transactions replayed (those that changed something).
    pub txns: u64,
    /// The first and last zxids read.
    pub span: Option<(i64, i64)>,
    /// Transactions left out as never committed (logged by a minority of the members).
    pub uncommitted: usize,
    /// Per recipe and library.
    pub rows: BTreeMap<(String, String), Row>,
    /// Every violation, in zxid order.
    pub violations: Vec<Violation>,
    /// Where the servers showed they lost committed transactions (their state parted from
    /// their logs): the judgement stops there, and what it found from where they parted is
    /// dropped. ZooKeeper's bug, not a lock's; the run is judged up to there, and is
    /// inconclusive (it fails) unless it accepts the loss ([`Config::accept_server_loss`]).
    pub server_loss: Option<tree::Forgotten>,
    /// Transactions not judged after a server loss.
    pub unjudged: usize,
    /// The history the servers lost, with the nodes it made or deleted, when they lost some.
    pub lost_stretch: Option<LostStretch>,
    /// Whether the run accepts a server loss ([`Config::accept_server_loss`]).
    pub server_loss_accepted: bool,
    /// Every mark's name (its path under the marks: `<who>-<n>`), registrations and
    /// unmarked records aside.
    pub marked: std::collections::BTreeSet<String>,
    /// The unmarked records, by the name of the mark their hold could not make.
    pub unmarked: BTreeMap<String, UnmarkedHold>,
    /// Holds of ours accounted for by [`Verdict::account`] (`None`: not accounted).
    pub accounted: Option<usize>,
    /// Which row counter each violation went to (with `violations`, in its order).
    counted: Vec<fn(&mut Row) -> &mut u64>,
    /// Marks the server ended itself, with their session (expired, or closed with the hold
    /// still on): for the lost-signal timeliness, which the clients' side measures.
    pub ended_by_server: Vec<ServerEnd>,
    /// Held nodes deleted by a session other than their owner, in zxid order: for the lost
    /// signal's timeliness, and (the operator's) for the clients' checker to cut the old
    /// holder's hold where its node went.
    pub ended_by_delete: Vec<DeletedEnd>,
    /// What keeps the log from being judged as a whole: unreadable files, members
    /// disagreeing, zxids in no log, a replay that does not fit, data that does not parse.
    pub errors: Vec<String>,
}

impl Verdict {
    /// Why the run fails, if it does: a violation of ours, or an error of the judge's.
    pub fn failure(&self) -> Option<String> {
        let ours = self.violations.iter().filter(|v| v.lib == "rust").count();
        let mut why = Vec::new();
        if ours > 0 {
            why.push(format!("{ours} violations of ours in the servers' log"));
        }
        if !self.errors.is_empty() {
            why.push(format!("{} log judge errors", self.errors.len()));
        }
        if let Some(loss) = self
            .server_loss
            .as_ref()
            .filter(|_| !self.server_loss_accepted)
        {
            why.push(format!(
                "inconclusive: the servers lost committed transactions (from zxid {:#x}; {} \
                 txns not judged)",
                loss.since, self.unjudged
            ));
        }
        (!why.is_empty()).then(|| why.join(", "))
    }

    /// Accounts for every hold of ours in `holds` (the workers' own list, one per
    /// acquisition that held; a name listed twice counts once): each has its mark on the
    /// record, or an unmarked record whose holder was told it lost the hold at most
    /// `bound_ms` after the failure; any other is a violation of ours (`unaccounted`).
    /// After a server loss nothing is accounted (marks from the parting on were not read):
    /// [`Verdict::accounted`] stays `None`, and the report says so.
    pub fn account(&mut self, holds: &[OurHold], bound_ms: u64) {
        if self.server_loss.is_some() {
            return;
        }
        let end = self.span.map_or(0, |(_, b)| b);
        let mut seen = std::collections::HashSet::new();
        for hold in holds {
            if !seen.insert(hold.name.as_str()) || self.marked.contains(&hold.name) {
                continue;
            }
            let (zxid, text) = match self.unmarked.get(&hold.name) {
                Some(u) => match u.lost_after_ms {
                    Some(ms) if ms <= bound_ms => continue,
                    Some(ms) => (
                        u.zxid,
                        format!(
                            "hold {} left no mark; its holder was told it lost the hold {ms} ms \
                             after the failure (bound {bound_ms} ms)",
                            hold.name
                        ),
                    ),
                    None => (
                        u.zxid,
                        format!(
                            "hold {} left no mark, and its holder was never told it lost the hold",
                            hold.name
                        ),
                    ),
                },
                None => (
                    end,
                    format!(
                        "hold {} left neither its mark nor an unmarked record",
                        hold.name
                    ),
                ),
            };
            self.violate(zxid, &hold.label, "rust", |r| &mut r.unaccounted, text);
        }
        self.accounted = Some(seen.len());
        self.sort();
    }

    /// The violations back in zxid order, each with its counter.
    fn sort(&mut self) {
        let mut both: Vec<_> = std::mem::take(&mut self.violations)
            .into_iter()
            .zip(std::mem::take(&mut self.counted))
            .collect();
        both.sort_by_key(|(v, _)| v.zxid);
        (self.violations, self.counted) = both.into_iter().unzip();
    }

    /// Marks and register writes judged, over every recipe and library.
    pub fn judged(&self) -> (u64, u64) {
        self.rows
            .values()
            .fold((0, 0), |(m, w), r| (m + r.marks, w + r.writes))
    }

    fn row(&mut self, label: &str, lib: &str) -> &mut Row {
        self.rows
            .entry((label.to_owned(), lib.to_owned()))
            .or_default()
    }

    fn violate(
        &mut self,
        zxid: i64,
        label: &str,
        lib: &str,
        count: fn(&mut Row) -> &mut u64,
        text: String,
    ) {
        *count(self.row(label, lib)) += 1;
        self.counted.push(count);
        self.violations.push(Violation {
            zxid,
            label: label.to_owned(),
            lib: lib.to_owned(),
            text,
        });
    }
}

impl Verdict {
    /// Every violation and judge error, one per line (the report shows the first few).
    pub fn all_findings(&self) -> String {
        let mut text = String::new();
        for v in &self.violations {
            text.push_str(&format!(
                "zxid {:#x} {} {}: {}\n",
                v.zxid, v.label, v.lib, v.text
            ));
        }
        for e in &self.errors {
            text.push_str(&format!("judge error: {e}\n"));
        }
        text
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (a, b) = self.span.unwrap_or_default();
        let (marks, writes) = self.judged();
        writeln!(
            f,
            "log judge: {} txns judged ({marks} marks, {writes} register writes), zxids \
             {a:#x}..{b:#x} (every member's log, merged; {} logged by a minority left out, \
             never committed)",
            self.txns, self.uncommitted
        )?;
        writeln!(
            f,
            "{:<16} {:<5} {:>7} {:>7} {:>11} {:>9} {:>6} {:>5} {:>8} {:>6} {:>7} {:>6} {:>6} {:>7}",
            "recipe",
            "lib",
            "marks",
            "writes",
            "not-granted",
            "exclusion",
            "tokens",
            "lost",
            "no-inner",
            "missed",
            "foreign",
            "claim",
            "unacct",
            "excused"
        )?;
        for ((label, lib), r) in &self.rows {
            writeln!(
                f,
                "{label:<16} {lib:<5} {:>7} {:>7} {:>11} {:>9} {:>6} {:>5} {:>8} {:>6} {:>7} {:>6} {:>6} {:>7}",
                r.marks,
                r.writes,
                r.not_granted,
                r.exclusion,
                r.tokens,
                r.lost_updates,
                r.no_inner,
                r.missed_turns,
                r.foreign_deletes,
                r.claims,
                r.unaccounted,
                r.excused
            )?;
        }
        let deletes = |operator: bool| {
            let mut nodes: Vec<&str> = self
                .ended_by_delete
                .iter()
                .filter(|d| d.by_operator == operator)
                .map(|d| d.node.as_str())
                .collect();
            nodes.sort_unstable();
            nodes.dedup();
            nodes.len()
        };
        match self.accounted {
            Some(n) => writeln!(
                f,
                "  holds of ours accounted for: {n}, each by its mark or by an unmarked record \
                 and the lost signal ({} unmarked records)",
                self.unmarked.len()
            )?,
            None if self.server_loss.is_some() => writeln!(
                f,
                "  holds of ours not accounted for: the servers lost history"
            )?,
            None => {}
        }
        let (operator, others) = (deletes(true), deletes(false));
        if operator + others > 0 {
            writeln!(
                f,
                "  held nodes deleted by another session: {operator} by the operator (excused: \
                 the marks counted in `excused`), {others} by a client"
            )?;
        }
        if let Some(loss) = &self.server_loss {
            writeln!(
                f,
                "  THE SERVERS LOST COMMITTED TRANSACTIONS: at zxid {:#x} the {} of {} went back \
                 to {} where the logs (a majority of members) had reached {} ({} first logged at \
                 {:#x}): the leader of epoch {:#x} took office without the history from there, \
                 which the servers had served; judged up to {:#x}, where its epoch began, {} \
                 txns from there not judged",
                loss.zxid,
                loss.what,
                loss.path,
                loss.version,
                loss.had,
                loss.version,
                loss.since,
                loss.zxid >> 32,
                loss.parted,
                self.unjudged
            )?;
            writeln!(
                f,
                "  {}",
                if self.server_loss_accepted {
                    "the loss is accepted: the run is judged up to there"
                } else {
                    "INCONCLUSIVE: the run fails (a run may accept a server loss)"
                }
            )?;
        }
        for v in self.violations.iter().take(SHOWN) {
            writeln!(f, "  zxid {:#x} {} {}: {}", v.zxid, v.label, v.lib, v.text)?;
        }
        if self.violations.len() > SHOWN {
            writeln!(f, "  ... {} more", self.violations.len() - SHOWN)?;
        }
        for e in self.errors.iter().take(SHOWN) {
            writeln!(f, "  judge error: {e}")?;
        }
        if self.errors.len() > SHOWN {
            writeln!(f, "  ... {} more judge errors", self.errors.len() - SHOWN)?;
        }
        Ok(())
    }
}

/// Reads every member's data dir, merges, and judges.
///
/// # Errors
/// A data dir that cannot be listed or read.
pub fn judge_dirs(data_dirs: &[std::path::PathBuf], cfg: &Config) -> std::io::Result<Verdict> {
    let members = data_dirs
        .iter()
        .map(|d| logs::read_member(d))
        .collect::<std::io::Result<Vec<_>>>()?;
    Ok(judge_members(&members, cfg))
}

/// Merges the members' logs and judges them.
pub fn judge_members(members: &[logs::MemberLog], cfg: &Config) -> Verdict {
    let merged = logs::merge(members);
    let mut verdict = judge(&merged.entries, cfg);
    verdict.uncommitted = merged.uncommitted.len();
    for (m, member) in members.iter().enumerate() {
        if member.files == 0 {
            verdict.errors.push(format!(
                "member {m}: no log files (its data dir holds no record to judge)"
            ));
        }
        verdict
            .errors
            .extend(member.errors.iter().map(|e| format!("member {m}: {e}")));
    }
    if merged.entries.is_empty() {
        verdict.errors.push(
            "the committed history is empty (no transaction logged by a majority of the \
             members): nothing to judge"
                .to_owned(),
        );
    }
    verdict.errors.extend(merged.errors);
    verdict
}

/// A live mark.
#[derive(Debug, Clone)]
struct Live {
    session: i64,
    mark: Mark,
    /// The zxid that made it.
    zxid: i64,
}

/// A register's last accepted write.
#[derive(Debug, Clone)]
struct Last {
    value: u64,
    token: Option<i64>,
    lib: String,
    granted: bool,
    /// Where it was written, and by which session (0 for the initial value).
    zxid: i64,
    session: i64,
}

/// The judge's state through the replay.
struct Judge<'c> {
    cfg: &'c Config,
    tree: Tree,
    marks: BTreeMap<String, Live>,
    registers: HashMap<String, Last>,
    /// The library of each session that made a mark or registered.
    libs: HashMap<i64, String>,
    /// When each registered session registered.
    registered: HashMap<i64, i64>,
    /// The first lock node each session created or deleted: zxid, and what it did
    /// (`created <path>`, `deleted <path>`).
    first_node: HashMap<i64, (i64, String)>,
    /// Violations found before their session's library is known (leases made without the
    /// inner lock, missed turns): zxid, session, label, what, the row's counter; blamed at
    /// the end on the session's library, once its registration or marks have said it.
    #[allow(clippy::type_complexity)]
    blamed_later: Vec<(i64, i64, String, String, fn(&mut Row) -> &mut u64)>,
    /// Nodes of `marked_when_granted` directories granted and not marked yet: since when
    /// (zxid, time ms).
    granted_since: HashMap<String, (i64, i64)>,
    /// Nodes a mark has named.
    claimed: std::collections::HashSet<String>,
    /// Lock nodes the operator deleted: the zxid of the delete and the node's czxid.
    operator_deleted: HashMap<String, (i64, i64)>,
    /// Marks already counted as excused.
    excused: std::collections::HashSet<String>,
    verdict: Verdict,
}

/// Judges a history (entries in zxid order, as [`logs::merge`] gives them).
pub fn judge(entries: &[TxnEntry], cfg: &Config) -> Verdict {
    let mut j = Judge {
        cfg,
        tree: Tree::default(),
        marks: BTreeMap::new(),
        registers: HashMap::new(),
        libs: HashMap::new(),
        registered: HashMap::new(),
        first_node: HashMap::new(),
        blamed_later: Vec::new(),
        granted_since: HashMap::new(),
        claimed: std::collections::HashSet::new(),
        operator_deleted: HashMap::new(),
        excused: std::collections::HashSet::new(),
        verdict: Verdict::default(),
    };
    for entry in entries {
        let zxid = entry.zxid();
        j.verdict.span = Some(match j.verdict.span {
            None => (zxid, zxid),
            Some((a, _)) => (a, zxid),
        });
        if entry.body.changed_nothing() {
            continue;
        }
        let changes = j.tree.apply(entry);
        if let Some(f) = j.tree.forgotten.clone() {
            // The servers' state parted from their logs (they lost committed transactions):
            // nothing from where it parted on can be judged against the log.
            j.verdict.unjudged = entries.iter().filter(|e| e.zxid() >= f.parted).count();
            // This epoch's txns before the one that showed it were judged against the log's
            // history too: not counted.
            let after = entries
                .iter()
                .filter(|e| (f.parted..zxid).contains(&e.zxid()) && !e.body.changed_nothing())
                .count();
            j.verdict.txns = j
                .verdict
                .txns
                .saturating_sub(u64::try_from(after).unwrap_or(u64::MAX));
            j.verdict.server_loss = Some(f);
            break;
        }
        j.verdict.txns += 1;
        for change in changes {
            j.react(entry, &change);
        }
    }
    for (zxid, session, label, text, count) in std::mem::take(&mut j.blamed_later) {
        // Ours register every session before using it (checked below): one that neither
        // registered nor marked is one Curator made on its own.
        let lib = j.lib_of(session);
        j.verdict.violate(zxid, &label, &lib, count, text);
    }
    for (session, (zxid, what)) in &j.first_node {
        if j.libs.get(session).is_some_and(|l| l == "rust")
            && j.registered.get(session).is_none_or(|r| r > zxid)
        {
            j.verdict.errors.push(format!(
                "zxid {zxid:#x}: session {session:#x} of ours {what} before it registered"
            ));
        }
    }
    j.verdict.server_loss_accepted = cfg.accept_server_loss;
    if let Some(f) = &j.verdict.server_loss {
        let (from, to) = (f.since, f.parted);
        let deleted = j
            .tree
            .lives
            .iter()
            .filter(|n| n.deleted.is_some_and(|d| (from..to).contains(&d)))
            .map(|n| (n.path.clone(), n.czxid))
            .collect();
        j.verdict.lost_stretch = Some(LostStretch { from, to, deleted });
    }
    if let Some(since) = j.verdict.server_loss.as_ref().map(|f| f.parted) {
        // Judged against a history the servers no longer had: dropped, and uncounted.
        let violations = std::mem::take(&mut j.verdict.violations);
        let counted = std::mem::take(&mut j.verdict.counted);
        for (v, count) in violations.into_iter().zip(counted) {
            if v.zxid < since {
                j.verdict.counted.push(count);
                j.verdict.violations.push(v);
            } else {
                let n = count(j.verdict.row(&v.label, &v.lib));
                *n = n.saturating_sub(1);
            }
        }
    }
    j.verdict.sort();
    let anomalies = std::mem::take(&mut j.tree.anomalies);
    j.verdict.errors.extend(anomalies);
    j.verdict
}

impl Judge<'_> {
    fn lock_dir(&self, dir: &str) -> Option<&LockDir> {
        self.cfg.locks.iter().find(|l| l.dir == dir)
    }

    fn under<'p>(path: &'p str, root: &str) -> Option<&'p str> {
        path.strip_prefix(root)?
            .strip_prefix('/')
            .filter(|r| !r.is_empty())
    }

    fn react(&mut self, entry: &TxnEntry, change: &Change) {
        let zxid = entry.zxid();
        if let Change::Created(path) | Change::Deleted(path) = change {
            self.track_turns(entry, path, matches!(change, Change::Deleted(_)));
        }
        match change {
            Change::Created(path) if Self::under(path, &self.cfg.marks).is_some() => {
                self.mark_created(zxid, path);
            }
            Change::Deleted(path) if self.lock_dir(tree::split(path).0).is_some() => {
                self.lock_node_deleted(entry, path);
            }
            Change::Deleted(path) => {
                let closed = matches!(entry.body, zk_proto::txnlog::TxnBody::CloseSession(_));
                if self.marks.remove(path).is_some() && closed {
                    if let Some(name) = Self::under(path, &self.cfg.marks) {
                        self.verdict.ended_by_server.push(ServerEnd {
                            name: name.to_owned(),
                            zxid,
                            time_ms: entry.header.time,
                        });
                    }
                }
            }
            Change::Created(path) => {
                let (dir, _) = tree::split(path);
                if let Some(l) = self.lock_dir(dir).cloned() {
                    self.first_node
                        .entry(entry.session_id())
                        .or_insert_with(|| (zxid, format!("created {path}")));
                    if let Some(inner) = &l.inner {
                        self.lease_created(zxid, entry.session_id(), &l, inner, path);
                    }
                } else if Self::under(path, &self.cfg.registers).is_some() {
                    // The initial value.
                    let data = self
                        .tree
                        .node(path)
                        .map(|n| n.data.clone())
                        .unwrap_or_default();
                    if let Some(v) = marks::parse_register(&data) {
                        self.registers.insert(
                            path.clone(),
                            Last {
                                value: v.value,
                                token: None,
                                lib: "?".into(),
                                granted: true,
                                zxid,
                                session: 0,
                            },
                        );
                    }
                }
            }
            Change::DataSet(path) if Self::under(path, &self.cfg.registers).is_some() => {
                self.written(zxid, entry.session_id(), path);
            }
            Change::DataSet(path) => {
                let hold = Self::under(path, &self.cfg.marks)
                    .and_then(|name| name.strip_prefix(marks::UNMARKED))
                    .map(str::to_owned);
                match hold {
                    Some(hold) => self.unmarked_record(zxid, path, hold),
                    None if Self::under(path, &self.cfg.marks).is_some() => {
                        self.verdict.errors.push(format!(
                            "zxid {zxid:#x}: {path} set under the marks (only an unmarked \
                             record's data changes)"
                        ));
                    }
                    None => {}
                }
            }
        }
    }

    /// A lock node deleted at `entry`: when a session other than its owner deleted it, each
    /// live mark naming it (with its token) ended there; when that session is the operator's,
    /// the node is remembered for the excusal.
    fn lock_node_deleted(&mut self, entry: &TxnEntry, path: &str) {
        let (zxid, deleter) = (entry.zxid(), entry.session_id());
        let Some(life) = self.tree.lives.iter().rev().find(|n| n.path == path) else {
            return;
        };
        if life.owner == Some(deleter) {
            return; // its owner's delete or closeSession
        }
        let (czxid, owner) = (life.czxid, life.owner);
        let by_operator = self.cfg.operators.contains(&deleter);
        if by_operator {
            self.operator_deleted.insert(path.to_owned(), (zxid, czxid));
        } else if let Some(owner) = owner {
            // Another client's node: only its owner (or the operator) may take it away.
            self.first_node
                .entry(deleter)
                .or_insert_with(|| (zxid, format!("deleted {path}")));
            let label = self
                .lock_dir(tree::split(path).0)
                .map_or_else(|| "?".to_owned(), |l| l.label.clone());
            let lib = self.lib_of(deleter);
            let text = format!(
                "{path} of session {owner:#x} (czxid {czxid:#x}) deleted by session {deleter:#x}"
            );
            self.verdict
                .violate(zxid, &label, &lib, |r| &mut r.foreign_deletes, text);
        }
        for (mark, live) in &self.marks {
            let named = live
                .mark
                .holds
                .iter()
                .any(|h| h.node == path && h.token == czxid);
            if let Some(name) = Self::under(mark, &self.cfg.marks).filter(|_| named) {
                self.verdict.ended_by_delete.push(DeletedEnd {
                    name: name.to_owned(),
                    node: path.to_owned(),
                    zxid,
                    time_ms: entry.header.time,
                    deleter,
                    by_operator,
                });
            }
        }
    }

    /// Whether `held`, named by a mark made at `marked`, is excused at `zxid`: the operator
    /// deleted that very node (its token is the deleted node's czxid) after the mark was made
    /// and at or before `zxid`.
    fn excused_at(&self, held: &Held, marked: i64, zxid: i64) -> bool {
        self.operator_deleted
            .get(&held.node)
            .is_some_and(|&(deleted, czxid)| {
                czxid == held.token && marked < deleted && deleted <= zxid
            })
    }

    /// ` (deleted by the operator's session S at zxid Z)` when the operator deleted `node`.
    fn operator_how(&self, node: &str) -> String {
        self.operator_deleted
            .get(node)
            .map_or_else(String::new, |(z, _)| {
                format!(" (deleted by the operator at zxid {z:#x})")
            })
    }

    /// How a node that is gone went: the zxid and session of its delete.
    fn gone_how(&self, node: &str) -> String {
        let life = self.tree.lives.iter().rev().find(|n| n.path == node);
        match life.map(|n| (n.deleted, n.deleted_by)) {
            Some((Some(z), Some(s))) => format!(" (deleted at zxid {z:#x} by session {s:#x})"),
            Some((Some(z), None)) => format!(" (deleted at zxid {z:#x})"),
            _ => String::new(),
        }
    }

    /// The library of `session` as far as the record has said by now. Ours register every
    /// session before it touches a lock (checked at the end, with [`Judge::first_node`]), so
    /// a session that has neither registered nor marked is Curator's.
    fn lib_of(&self, session: i64) -> String {
        self.libs
            .get(&session)
            .map_or_else(|| "java".to_owned(), String::clone)
    }

    /// The session that took `held`'s node away from its holder, when the record shows one
    /// other than the node's owner: that node's life (by its token) deleted by a session
    /// neither its owner (a release before the unmark is the holder's own doing) nor the
    /// operator's (whose deletes are excused from the delete on, and not before the mark).
    /// Before or after the mark was made: a holder that marks plainly (Curator's) may mark
    /// a node taken from it after it was granted.
    fn vanished_by(&self, held: &Held) -> Option<i64> {
        let life = self
            .tree
            .lives
            .iter()
            .rev()
            .find(|n| n.path == held.node && n.czxid == held.token)?;
        let by = life.deleted_by?;
        (life.owner != Some(by) && !self.cfg.operators.contains(&by)).then_some(by)
    }

    /// Whether a hold's claim fits `held`'s node: it is a node of `lock` and holds `mode` by
    /// its directory's kind and its name; else why not. (A node in no lock directory the
    /// judge knows is [`Judge::check_held`]'s finding.)
    fn check_claim(&self, lock: &str, mode: Mode, held: &Held) -> Result<(), String> {
        if !marks::is_of(&held.node, lock) {
            return Err(format!(
                "{} is not a node of the lock {lock} it names",
                held.node
            ));
        }
        let (dir, name) = tree::split(&held.node);
        match self.lock_dir(dir) {
            Some(l) if !rules::fits(l.kind, mode, name) => Err(format!(
                "{} claimed on {}, which does not hold it",
                mode.as_str(),
                held.node
            )),
            _ => Ok(()),
        }
    }

    /// Whether `held`'s node is live, carries its token, and is granted; else why not.
    fn check_held(&self, held: &Held, owner: Option<i64>) -> Result<&LockDir, String> {
        let (dir, name) = tree::split(&held.node);
        let Some(l) = self.lock_dir(dir) else {
            return Err(format!(
                "{} is in no lock directory the judge knows",
                held.node
            ));
        };
        let Some(node) = self.tree.node(&held.node) else {
            return Err(format!("{} does not exist", held.node));
        };
        if let Some(s) = owner {
            if node.owner != Some(s) {
                return Err(format!(
                    "{} is owned by session {:#x?}, not the marker's {s:#x}",
                    held.node, node.owner
                ));
            }
        }
        if node.czxid != held.token {
            return Err(format!(
                "{} has czxid {:#x}, token {:#x} given",
                held.node, node.czxid, held.token
            ));
        }
        if !rules::granted(l.kind, self.tree.children(dir), name) {
            let order: Vec<&str> = self.tree.children(dir).collect();
            return Err(format!("{name} is not granted among {order:?}"));
        }
        Ok(l)
    }

    fn label_of(&self, held: &[Held]) -> String {
        held.iter()
            .find_map(|h| self.lock_dir(tree::split(&h.node).0))
            .map_or_else(|| "?".to_owned(), |l| l.label.clone())
    }

    /// An unmarked record made or set at `zxid` ([`marks`]): kept by its hold's name for
    /// [`Verdict::account`].
    fn unmarked_record(&mut self, zxid: i64, path: &str, hold: String) {
        let data = self
            .tree
            .node(path)
            .map(|n| n.data.clone())
            .unwrap_or_default();
        match marks::parse_unmarked(&data) {
            Some(u) => {
                self.verdict.unmarked.insert(
                    hold,
                    UnmarkedHold {
                        zxid,
                        lost_after_ms: u.lost_after_ms,
                    },
                );
            }
            None => {
                let data = String::from_utf8_lossy(&data).into_owned();
                self.verdict.errors.push(format!(
                    "zxid {zxid:#x}: unmarked record {path} with data {data:?}"
                ));
            }
        }
    }

    fn mark_created(&mut self, zxid: i64, path: &str) {
        let Some(node) = self.tree.node(path) else {
            return;
        };
        let Some(session) = node.owner else {
            // A mark lives as long as its holder's session, or it stands for a hold that
            // ended: one that is not ephemeral is no mark the judge can read.
            let data = String::from_utf8_lossy(&node.data).into_owned();
            self.verdict.errors.push(format!(
                "zxid {zxid:#x}: {path} (data {data:?}) under the marks is not ephemeral"
            ));
            return;
        };
        if let Some(lib) = marks::parse_session(&node.data) {
            self.libs.insert(session, lib);
            self.registered.entry(session).or_insert(zxid);
            return;
        }
        let name = Self::under(path, &self.cfg.marks)
            .unwrap_or(path)
            .to_owned();
        if let Some(hold) = name.strip_prefix(marks::UNMARKED) {
            let hold = hold.to_owned();
            self.unmarked_record(zxid, path, hold);
            return;
        }
        let Some(mark) = marks::parse_mark(&node.data) else {
            let data = String::from_utf8_lossy(&node.data).into_owned();
            self.verdict
                .errors
                .push(format!("zxid {zxid:#x}: mark {path} with data {data:?}"));
            return;
        };
        let label = self.label_of(&mark.holds);
        self.verdict.row(&label, &mark.lib).marks += 1;
        self.verdict.marked.insert(name);
        for held in &mark.holds {
            self.granted_since.remove(&held.node);
            self.claimed.insert(held.node.clone());
        }
        self.libs.insert(session, mark.lib.clone());
        for held in &mark.holds {
            if let Err(why) = self.check_claim(&mark.lock, mark.mode, held) {
                let text = format!("mark {path} of session {session:#x}: {why}");
                self.verdict
                    .violate(zxid, &label, &mark.lib, |r| &mut r.claims, text);
            }
        }
        for held in &mark.holds {
            if let Err(why) = self.check_held(held, Some(session)) {
                let count: fn(&mut Row) -> &mut u64 = if why.contains("czxid") {
                    |r| &mut r.tokens
                } else {
                    |r| &mut r.not_granted
                };
                let text = format!(
                    "mark {path} of session {session:#x}: {why}{}",
                    self.operator_how(&held.node)
                );
                self.verdict.violate(zxid, &label, &mark.lib, count, text);
            }
        }
        self.marks.insert(
            path.to_owned(),
            Live {
                session,
                mark: mark.clone(),
                zxid,
            },
        );
        // Exclusion in each directory the new mark holds a node in.
        for held in &mark.holds {
            let (dir, _) = tree::split(&held.node);
            let Some(l) = self.lock_dir(dir).cloned() else {
                continue;
            };
            let mut in_dir: Vec<(&String, &Live, &Held)> = Vec::new();
            // Excused marks: path, library, whether a writer.
            let mut excused: Vec<(String, String, bool)> = Vec::new();
            // A writer by its node's name or by its own claim: a hold that believes it
            // writes is a writer, whatever node it holds.
            let is_writer = |live: &Live, node: &str| {
                rules::is_writer(l.kind, tree::split(node).1) || live.mark.mode == Mode::Write
            };
            for (p, live) in &self.marks {
                for h in &live.mark.holds {
                    if tree::split(&h.node).0 != dir {
                        continue;
                    }
                    // Its node deleted by the operator since the mark was made: the holder
                    // may believe it holds, the lock rightly went on.
                    if self.excused_at(h, live.zxid, zxid) {
                        let writer = is_writer(live, &h.node);
                        excused.push((p.clone(), live.mark.lib.clone(), writer));
                    } else {
                        in_dir.push((p, live, h));
                    }
                }
            }
            let writers = in_dir
                .iter()
                .filter(|(_, live, h)| is_writer(live, &h.node))
                .count();
            // Counted once per mark, the first time leaving it out spared a breach.
            let excused_writers = excused.iter().filter(|(_, _, w)| *w).count();
            let all = in_dir.len() + excused.len();
            if !excused.is_empty()
                && !rules::excludes(
                    l.kind,
                    writers + excused_writers,
                    all - writers - excused_writers,
                )
            {
                for (p, lib, _) in excused {
                    if self.excused.insert(p) {
                        self.verdict.row(&l.label, &lib).excused += 1;
                    }
                }
            }
            if rules::excludes(l.kind, writers, in_dir.len() - writers) {
                continue;
            }
            let holders: Vec<String> = in_dir
                .iter()
                .map(|(p, live, h)| {
                    let why = match self.check_held(h, Some(live.session)) {
                        Ok(_) => String::new(),
                        Err(why) => format!(": {why}{}", self.gone_how(&h.node)),
                    };
                    format!("{p} ({}, session {:#x}{why})", live.mark.lib, live.session)
                })
                .collect();
            // Blamed on each holder whose node the rule does not grant, or, when the record
            // shows another session took that node away from under the holder's mark (which
            // let the next one in), on that session; on the new mark if none.
            let mut blamed: Vec<(String, String)> = in_dir
                .iter()
                .filter(|(_, live, h)| self.check_held(h, Some(live.session)).is_err())
                .map(|(_, live, h)| match self.vanished_by(h) {
                    Some(deleter) => (
                        self.lib_of(deleter),
                        format!("; blamed on session {deleter:#x}, which deleted {}", h.node),
                    ),
                    None => (live.mark.lib.clone(), String::new()),
                })
                .collect();
            if blamed.is_empty() {
                blamed.push((mark.lib.clone(), String::new()));
            }
            // One per library, a deleter's explanation first.
            blamed.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
            blamed.dedup_by(|a, b| a.0 == b.0);
            for (lib, why) in blamed {
                let text = format!(
                    "{} live marks in {dir}: {}{why}",
                    in_dir.len(),
                    holders.join(", ")
                );
                self.verdict
                    .violate(zxid, &l.label, &lib, |r| &mut r.exclusion, text);
            }
        }
    }

    fn written(&mut self, zxid: i64, session: i64, path: &str) {
        let data = self
            .tree
            .node(path)
            .map(|n| n.data.clone())
            .unwrap_or_default();
        let Some(value) = marks::parse_register(&data) else {
            let data = String::from_utf8_lossy(&data).into_owned();
            self.verdict
                .errors
                .push(format!("zxid {zxid:#x}: register {path} set to {data:?}"));
            return;
        };
        let Some(marks::Writer {
            lib,
            lock,
            mode,
            held,
        }) = value.by
        else {
            self.verdict.errors.push(format!(
                "zxid {zxid:#x}: register {path} set by session {session:#x} without its writer"
            ));
            return;
        };
        let register = Self::under(path, &self.cfg.registers).unwrap_or(path);
        let Some(tied) = self.cfg.register_locks.get(register).cloned() else {
            self.verdict.errors.push(format!(
                "zxid {zxid:#x}: register {path} is tied to no lock the judge knows"
            ));
            return;
        };
        // The register's row: its own lock's recipe, whatever node it was written under.
        let label = self
            .cfg
            .locks
            .iter()
            .find(|l| l.dir == tied || marks::is_of(&l.dir, &tied))
            .map_or_else(
                || self.label_of(std::slice::from_ref(&held)),
                |l| l.label.clone(),
            );
        self.verdict.row(&label, &lib).writes += 1;
        let what = format!("write {} of {path} by session {session:#x}", value.value);
        let mut granted = true;
        // Each register is tied to its lock, written under that lock's node, in a mode that
        // keeps every other holder out.
        let mut wrong = Vec::new();
        if lock != tied {
            wrong.push(format!("names the lock {lock}, the register is {tied}'s"));
            if !marks::is_of(&held.node, &tied) {
                wrong.push(format!("{} is not a node of its lock {tied}", held.node));
            }
        }
        if let Err(why) = self.check_claim(&lock, mode, &held) {
            wrong.push(why);
        }
        if mode == Mode::Read {
            wrong.push("a read hold does not write: readers share the lock".to_owned());
        }
        if !wrong.is_empty() {
            granted = false;
            let text = format!("{what}: {}", wrong.join("; "));
            self.verdict
                .violate(zxid, &label, &lib, |r| &mut r.claims, text);
        }
        match self.check_held(&held, None) {
            Err(why) => {
                granted = false;
                let count: fn(&mut Row) -> &mut u64 = if why.contains("czxid") {
                    |r| &mut r.tokens
                } else {
                    |r| &mut r.not_granted
                };
                let how = self.operator_how(&held.node);
                self.verdict
                    .violate(zxid, &label, &lib, count, format!("{what}: {why}{how}"));
            }
            Ok(_) => {
                let marked = self.marks.values().any(|live| {
                    live.mark.mode == mode && live.mark.holds.iter().any(|h| h.node == held.node)
                });
                if !marked {
                    granted = false;
                    let text = format!(
                        "{what}: no live {} mark stands for {}",
                        mode.as_str(),
                        held.node
                    );
                    self.verdict
                        .violate(zxid, &label, &lib, |r| &mut r.not_granted, text);
                }
            }
        }
        if let Some(last) = self.registers.get(path).cloned() {
            // A breach after a write that was not granted is that write's doing.
            let blamed = if last.granted {
                lib.clone()
            } else {
                last.lib.clone()
            };
            if let Some(prev) = last.token.filter(|&t| held.token < t) {
                let text = format!("{what}: token {:#x} after {prev:#x}", held.token);
                self.verdict
                    .violate(zxid, &label, &blamed, |r| &mut r.tokens, text);
            }
            if value.value != last.value + 1 {
                let text = format!(
                    "{what}: after {} written at zxid {:#x} by session {:#x} (lost update)",
                    last.value, last.zxid, last.session
                );
                self.verdict
                    .violate(zxid, &label, &blamed, |r| &mut r.lost_updates, text);
            }
        }
        self.registers.insert(
            path.to_owned(),
            Last {
                value: value.value,
                token: Some(held.token),
                lib,
                granted,
                zxid,
                session,
            },
        );
    }

    /// After a node of a `marked_when_granted` directory came or went: a deleted node that
    /// stayed granted and unmarked past the bound is a missed turn; every node the rule now
    /// grants and no mark has named is granted since now, if it was not already.
    fn track_turns(&mut self, entry: &TxnEntry, path: &str, deleted: bool) {
        let (dir, _) = tree::split(path);
        let Some(l) = self
            .lock_dir(dir)
            .filter(|l| l.marked_when_granted)
            .cloned()
        else {
            return;
        };
        let (zxid, now) = (entry.zxid(), entry.header.time);
        if deleted {
            self.claimed.remove(path);
            if let Some((since_zxid, since)) = self.granted_since.remove(path) {
                let idle = now - since;
                if self.cfg.idle_bound_ms.is_some_and(|bound| idle > bound) {
                    let owner = self.tree.lives.iter().rev().find(|n| n.path == path);
                    let session = owner.and_then(|n| n.owner).unwrap_or(0);
                    let text = format!(
                        "{path} of session {session:#x} granted at zxid {since_zxid:#x} and \
                         left unmarked for {idle} ms, until it went"
                    );
                    let count: fn(&mut Row) -> &mut u64 = |r| &mut r.missed_turns;
                    self.blamed_later
                        .push((zxid, session, l.label.clone(), text, count));
                }
            }
        }
        let granted: Vec<String> = self
            .tree
            .children(dir)
            .filter(|name| rules::granted(l.kind, self.tree.children(dir), name))
            .map(|name| format!("{dir}/{name}"))
            .collect();
        for node in granted {
            if !self.claimed.contains(&node) {
                self.granted_since.entry(node).or_insert((zxid, now));
            }
        }
    }

    fn lease_created(&mut self, zxid: i64, session: i64, l: &LockDir, inner: &str, path: &str) {
        let holds_inner = self.tree.children(inner).any(|name| {
            let node = format!("{inner}/{name}");
            self.tree
                .node(&node)
                .is_some_and(|n| n.owner == Some(session))
                && rules::granted(Kind::Exclusive, self.tree.children(inner), name)
        });
        if !holds_inner {
            let text =
                format!("lease {path} created by session {session:#x} without the inner lock");
            let count: fn(&mut Row) -> &mut u64 = |r| &mut r.no_inner;
            self.blamed_later
                .push((zxid, session, l.label.clone(), text, count));
        }
    }
}
