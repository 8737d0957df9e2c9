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

use std::collections::BTreeMap;

mod checks;
pub mod logs;
mod mark;
pub mod marks;
mod register;
mod replay;
mod report;
pub mod rules;
pub mod tree;
mod verdict;

#[cfg(test)]
mod tests;

pub use replay::judge;
pub use verdict::{
    DeletedEnd, LostStretch, OurHold, Row, ServerEnd, UnmarkedHold, Verdict, Violation,
};

use rules::Kind;
// The tests (`use super::*`) replay trees by hand.
#[cfg(test)]
use tree::Tree;

use super::layout;
use crate::recipe::Recipe;

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
