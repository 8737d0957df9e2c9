//! Which recipe a directory is, from its nodes' names, and who holds in it by that recipe's
//! rule (recipes-core's [`places`]).
//!
//! - A read/write downgrade's read node sorts before the write node it ties with.
//! - A semaphore's leases without a known size hold by no rule here: their grants come from
//!   the release of the inner lock their session held when it made them.

use recipes_core::name::{MUTEX_LOCK_NAME, sequence, sort_children};
use recipes_core::participants::{Rule, Standing, places};
use recipes_core::rwlock::{READ_LOCK_NAME, WRITE_LOCK_NAME, rw_sort};
use recipes_core::semaphore::{LEASE_NAME, LEASES_DIR};

use super::{LockKind, split};

/// The kind of lock `name` makes its directory `dir`, if it is a lock node's name.
pub(super) fn kind_of(dir: &str, name: &str) -> Option<LockKind> {
    let base = split(dir).map(|(_, b)| b).unwrap_or_default();
    if sequence(name, READ_LOCK_NAME).is_some() || sequence(name, WRITE_LOCK_NAME).is_some() {
        Some(LockKind::ReadWrite)
    } else if base == LEASES_DIR && sequence(name, LEASE_NAME).is_some() {
        Some(LockKind::Leases { max: None })
    } else if sequence(name, MUTEX_LOCK_NAME).is_some() {
        // A semaphore's `locks` is told from a mutex of that name once `leases` appears
        // beside it.
        Some(LockKind::Mutex)
    } else {
        None
    }
}

/// Whether `name` is a node of a lock of `kind` (else foreign there).
pub(super) fn is_member(kind: LockKind, name: &str) -> bool {
    match kind {
        LockKind::Mutex | LockKind::SemaphoreInnerLock => sequence(name, MUTEX_LOCK_NAME).is_some(),
        LockKind::ReadWrite => {
            sequence(name, READ_LOCK_NAME).is_some() || sequence(name, WRITE_LOCK_NAME).is_some()
        }
        LockKind::Leases { .. } => sequence(name, LEASE_NAME).is_some(),
    }
}

/// The read/write order, with a downgrade's read node (`__READ__` with its write node's
/// sequence, CURATOR-621) before the write node it sorts level with: the writer's own read,
/// which holds while its write does (Curator's order between the two is the server's listing
/// order, which the record does not keep).
fn downgrade_first(children: &mut [String]) {
    children.sort_by_key(|n| sequence(n, WRITE_LOCK_NAME).is_some());
    rw_sort(children);
}

/// What the recipe's rule says of each child: the names that hold.
pub(super) fn holders(kind: LockKind, children: Vec<String>) -> Vec<String> {
    let placed = match kind {
        LockKind::Mutex | LockKind::SemaphoreInnerLock => places(
            children,
            |c| sort_children(c, MUTEX_LOCK_NAME),
            |n| is_member(kind, n).then_some(Rule::Exclusive { max: 1 }),
        ),
        LockKind::ReadWrite => places(children, downgrade_first, |n| {
            if sequence(n, WRITE_LOCK_NAME).is_some() {
                Some(Rule::Write)
            } else if sequence(n, READ_LOCK_NAME).is_some() {
                Some(Rule::Read)
            } else {
                None
            }
        }),
        LockKind::Leases { max: Some(max) } => {
            let max = usize::try_from(max).unwrap_or(usize::MAX);
            places(
                children,
                |c| sort_children(c, LEASE_NAME),
                |n| is_member(kind, n).then_some(Rule::Exclusive { max }),
            )
        }
        LockKind::Leases { max: None } => Vec::new(),
    };
    placed
        .into_iter()
        .filter(|p| p.standing == Standing::Holds)
        .map(|p| p.name)
        .collect()
}
