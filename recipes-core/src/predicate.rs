//! Predicates: given the sorted children and our node, do we hold the lock, and if not, which
//! node do we wait on?

use std::borrow::Cow;

use crate::name::{sort_children, sort_key};

/// What a predicate says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// We hold the lock (or lease).
    Hold,
    /// We wait for this node (a child name) to change or go.
    Watch(String),
}

/// Our node is not among the children: it was deleted (our session expired, or someone
/// removed it). Curator throws `NoNodeException("Sequential path not found")` here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("our lock node is not among the children")]
pub struct NodeMissing;

/// How a kind of lock orders the children and decides.
pub trait Predicate: std::fmt::Debug + Send + Sync {
    /// The name our nodes carry (`lock-`, `__READ__`, `__WRIT__`, `lease-`).
    fn lock_name(&self) -> &str;

    /// Sorts the children as Curator does for this lock.
    fn sort(&self, children: &mut [String]) {
        sort_children(children, self.lock_name());
    }

    /// Decides, given the **sorted** children and our node's name.
    fn verdict(&self, sorted: &[String], ours: &str) -> Result<Verdict, NodeMissing>;
}

/// Curator's standard predicate (`StandardLockInternalsDriver`): we hold when fewer than
/// `max_leases` nodes sort before ours; otherwise we watch the node `max_leases` places
/// ahead of us. `max_leases` 1 is a fair mutex (and a write lock).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exclusive {
    /// Borrowed for the recipes' own names: a predicate is made per attempt, and its clone
    /// costs nothing.
    lock_name: Cow<'static, str>,
    max_leases: usize,
}

impl Exclusive {
    /// A predicate for nodes named `lock_name`, holding when fewer than `max_leases` (at
    /// least 1) precede us.
    pub fn new(lock_name: impl Into<Cow<'static, str>>, max_leases: usize) -> Self {
        Self {
            lock_name: lock_name.into(),
            max_leases: max_leases.max(1),
        }
    }

    /// `InterProcessMutex`'s: `lock-`, one holder.
    pub fn mutex() -> Self {
        Self::new(crate::name::MUTEX_LOCK_NAME, 1)
    }
}

impl Predicate for Exclusive {
    fn lock_name(&self) -> &str {
        &self.lock_name
    }

    fn verdict(&self, sorted: &[String], ours: &str) -> Result<Verdict, NodeMissing> {
        let index = sorted.iter().position(|c| c == ours).ok_or(NodeMissing)?;
        match index.checked_sub(self.max_leases) {
            None => Ok(Verdict::Hold),
            Some(ahead) => sorted
                .get(ahead)
                .cloned()
                .map(Verdict::Watch)
                .ok_or(NodeMissing),
        }
    }
}

/// The sort key of a child for `predicate`, exposed for participant listings.
pub fn key<'a>(predicate: &dyn Predicate, name: &'a str) -> &'a str {
    sort_key(name, predicate.lock_name())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn kids(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn the_first_holds_the_others_watch_their_immediate_predecessor() {
        let p = Exclusive::mutex();
        let sorted = kids(&[
            "a-lock-0000000001",
            "b-lock-0000000002",
            "c-lock-0000000003",
        ]);
        assert_eq!(p.verdict(&sorted, "a-lock-0000000001"), Ok(Verdict::Hold));
        assert_eq!(
            p.verdict(&sorted, "b-lock-0000000002"),
            Ok(Verdict::Watch("a-lock-0000000001".into()))
        );
        assert_eq!(
            p.verdict(&sorted, "c-lock-0000000003"),
            Ok(Verdict::Watch("b-lock-0000000002".into()))
        );
        assert_eq!(p.verdict(&sorted, "gone-lock-0000000000"), Err(NodeMissing));
    }

    #[test]
    fn leases_watch_the_node_max_leases_ahead() {
        let p = Exclusive::new("lock-", 2);
        let sorted = kids(&["a-lock-1", "b-lock-2", "c-lock-3", "d-lock-4"]);
        assert_eq!(p.verdict(&sorted, "b-lock-2"), Ok(Verdict::Hold));
        assert_eq!(
            p.verdict(&sorted, "c-lock-3"),
            Ok(Verdict::Watch("a-lock-1".into()))
        );
        assert_eq!(
            p.verdict(&sorted, "d-lock-4"),
            Ok(Verdict::Watch("b-lock-2".into()))
        );
    }

    #[test]
    fn foreign_children_count_in_the_queue() {
        // A foreign name sorting first (Curator: '-' < '0') blocks the mutex; one sorting
        // last does not.
        let p = Exclusive::mutex();
        let mut children = kids(&["x-lock-0000000005", "-stray", "zzz"]);
        p.sort(&mut children);
        assert_eq!(children, kids(&["-stray", "x-lock-0000000005", "zzz"]));
        assert_eq!(
            p.verdict(&children, "x-lock-0000000005"),
            Ok(Verdict::Watch("-stray".into()))
        );
    }
}
