//! [`Checker`]: the invariants checked after every step of a schedule, and [`Violation`].
//!
//! - **Exclusion.** A hold *counts* while its node exists on the server: a holder whose node
//!   was deleted by someone else, or whose session expired, no longer excludes anyone (and a
//!   fencing token, not this process's belief, is what protects a resource then). Among the
//!   holds that count on one lock path, an exclusive hold (mutex, write lock) is alone but for
//!   its own task's holds (a downgrade's read lock); shared holds (read locks) share; at most
//!   `max` leases of a semaphore count at once.
//! - **Fencing.** A new hold's token is greater than that of every exclusive hold taken before
//!   it on the same path (equal for a downgrade's read hold, which carries its write hold's
//!   token), and a new exclusive hold's is greater than every earlier hold's. Only holds whose
//!   node exists when they are taken are compared.
//! - **The owner's turn.** A task starts a new attempt only once no node of the attempt it
//!   gave up before is left (its cleanup ran to the end).
//! - Liveness and leftovers are checked by the world: no machine stuck, every attempt ended
//!   within its deadline plus the grace, every task finished once the world is quiet, and no
//!   node of a live session left under the lock paths.

use std::collections::BTreeMap;

use crate::recipe::HoldKind;
use crate::tree::Tree;

/// A hold a task believes it has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hold {
    /// The task.
    pub task: usize,
    /// The lock's path.
    pub lock: String,
    /// Its node.
    pub node: String,
    /// The node's creation zxid (the fencing token).
    pub czxid: i64,
    /// How it counts against others.
    pub kind: HoldKind,
}

/// What went wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Violation {
    /// Two tasks hold where only one may.
    Exclusion(String),
    /// A fencing token went backwards.
    Fencing(String),
    /// A machine was left with nothing to wait for, or a timer in the past.
    Stuck(String),
    /// An attempt ran past its deadline plus the grace.
    PastDeadline(String),
    /// A task started a new attempt while a node of the one it gave up was still there.
    Turn(String),
    /// Nodes of live sessions were left once everything was done.
    Orphans(String),
    /// The world did not finish once quiet (a deadlock, or a waiter that never woke).
    Unfinished(String),
    /// The harness itself went wrong.
    Harness(String),
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Violation::Exclusion(s) => write!(f, "two holders: {s}"),
            Violation::Fencing(s) => write!(f, "fencing token went backwards: {s}"),
            Violation::Stuck(s) => write!(f, "stuck machine: {s}"),
            Violation::PastDeadline(s) => write!(f, "past deadline: {s}"),
            Violation::Turn(s) => write!(f, "second attempt while the first's node exists: {s}"),
            Violation::Orphans(s) => write!(f, "nodes left behind: {s}"),
            Violation::Unfinished(s) => write!(f, "did not finish: {s}"),
            Violation::Harness(s) => write!(f, "harness: {s}"),
        }
    }
}

/// The invariants' state.
#[derive(Debug, Default)]
pub struct Checker {
    holds: Vec<Hold>,
    /// Per lock path: the greatest token of an exclusive hold, and of any hold, so far.
    tokens: BTreeMap<String, (i64, i64)>,
    /// Per task: the protection prefix of its current attempt, and of the last it gave up.
    current: BTreeMap<usize, String>,
    given_up: BTreeMap<usize, String>,
}

impl Checker {
    /// A task took `hold`. Only a hold whose node still exists counts: one whose node someone
    /// else deleted before the holder heard it was first holds nothing (its fencing token is
    /// what stops it, and that is the point of a fencing token).
    ///
    /// `heard` is the zxid of the newest message from the server the holder was given: if its
    /// node was deleted before that, the holder could have known, and holding is a violation
    /// (this is the hand-off shortcut's bug: holding on a predecessor's deletion while our own
    /// node was already gone).
    pub fn took(&mut self, hold: &Hold, tree: &Tree, heard: i64) -> Result<(), Violation> {
        if let Some(gone) = tree.deleted_at(&hold.node).filter(|d| *d <= heard) {
            return Err(Violation::Exclusion(format!(
                "{hold:?} taken after hearing zxid {heard}, though its node went at {gone}"
            )));
        }
        if !tree.exists(&hold.node) {
            self.current.remove(&hold.task);
            self.holds.push(hold.clone());
            return Ok(());
        }
        if matches!(hold.kind, HoldKind::Lease { max } if max > 1) {
            // Leases of a semaphore of several hold together: no order among them.
            self.holds.push(hold.clone());
            self.current.remove(&hold.task);
            return Ok(());
        }
        let (exclusive, any) = self.tokens.get(&hold.lock).copied().unwrap_or((0, 0));
        // A downgrade's read hold carries its write hold's token: equal, not greater.
        // A lease of a semaphore of one is exclusive.
        let exclusive_kind = hold.kind != HoldKind::Shared;
        let backwards = if exclusive_kind {
            hold.czxid <= any
        } else {
            hold.czxid < exclusive
        };
        let floor = if exclusive_kind { any } else { exclusive };
        if backwards {
            return Err(Violation::Fencing(format!(
                "{hold:?} after a token of {floor}"
            )));
        }
        let entry = self.tokens.entry(hold.lock.clone()).or_default();
        if exclusive_kind {
            entry.0 = entry.0.max(hold.czxid);
        }
        entry.1 = entry.1.max(hold.czxid);
        self.holds.push(hold.clone());
        self.current.remove(&hold.task);
        Ok(())
    }

    /// A task released (or lost) `hold`.
    pub fn released(&mut self, hold: &Hold) {
        if let Some(i) = self.holds.iter().position(|h| h == hold) {
            self.holds.swap_remove(i);
        }
    }

    /// A task starts an attempt with protection prefix `prefix`.
    pub fn attempt_prefix(&mut self, task: usize, prefix: &str) {
        self.current.insert(task, prefix.to_owned());
    }

    /// A task's attempt ended without holding.
    pub fn attempt_failed(&mut self, task: usize) {
        if let Some(prefix) = self.current.remove(&task) {
            self.given_up.insert(task, prefix);
        }
    }

    /// A task is about to start an attempt: nothing of the one it gave up may be left.
    pub fn starting(&mut self, tree: &Tree, dirs: &[String], task: usize) -> Result<(), Violation> {
        let Some(prefix) = self.given_up.remove(&task) else {
            return Ok(());
        };
        for lock in dirs {
            if let Some(left) = tree.children(lock).iter().find(|c| c.starts_with(&prefix)) {
                return Err(Violation::Turn(format!(
                    "task {task} starts again while {lock}/{left} is still there"
                )));
            }
        }
        Ok(())
    }

    /// Exclusion among the holds that count now.
    pub fn check(&self, tree: &Tree) -> Result<(), Violation> {
        let counting: Vec<&Hold> = self.holds.iter().filter(|h| tree.exists(&h.node)).collect();
        for a in &counting {
            if let HoldKind::Lease { max } = a.kind {
                let n = counting.iter().filter(|b| b.lock == a.lock).count();
                if n > max as usize {
                    return Err(Violation::Exclusion(format!(
                        "{n} leases of {max} on {}: {counting:?}",
                        a.lock
                    )));
                }
            }
        }
        for a in counting.iter().filter(|h| h.kind == HoldKind::Exclusive) {
            if let Some(b) = counting
                .iter()
                .find(|b| b.lock == a.lock && b.task != a.task)
            {
                return Err(Violation::Exclusion(format!("{a:?} and {b:?}")));
            }
        }
        Ok(())
    }
}
