//! The hold table's concurrent core: which holds of a lock this process has, alive or being
//! released, and every transition between, each under the table's lock.
//!
//! - No tokio, no client: what a hold keeps (its revocation watch) is a type parameter, the
//!   delete is the caller's closure, the session's state a question asked under the lock.
//! - Its lock is the crate's loom facade's, so the loom models (the `loom` test module) run
//!   this very code in every interleaving.

use std::sync::PoisonError;

use crate::ids::IdMap;
use crate::loom::{Mutex, MutexGuard};

#[cfg(all(test, zk_loom))]
mod loom;

/// The holds of one lock in this process; `K`: what a hold keeps while its guard is alive.
pub(super) struct Table<K> {
    inner: Mutex<Inner<K>>,
}

struct Inner<K> {
    /// The holds whose guard is alive, by id, with what each keeps.
    held: IdMap<u64, K>,
    /// Holds whose node is being deleted: still ours on the server until the delete lands.
    releasing: IdMap<u64, ()>,
    next_id: u64,
}

impl<K> Table<K> {
    pub(super) fn new() -> Self {
        Self {
            inner: Mutex::new(Inner {
                held: IdMap::default(),
                releasing: IdMap::default(),
                next_id: 0,
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner<K>> {
        // Nothing panics while the lock is held.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers a hold whose guard is alive, keeping `kept` for it: its id, never given
    /// before.
    pub(super) fn hold(&self, kept: K) -> u64 {
        let mut table = self.lock();
        table.next_id += 1;
        let id = table.next_id;
        table.held.insert(id, kept);
        id
    }

    /// Ends hold `id`: from held to releasing in one step (its node is still ours until
    /// deleted), then, the lock released, `start` starts the delete with what the hold kept
    /// (`None`: it was not held). The delete, when it ends, calls [`Table::released`].
    pub(super) fn end<D>(&self, id: u64, start: impl FnOnce(Option<K>) -> D) -> D {
        let mut table = self.lock();
        let kept = table.held.remove(&id);
        table.releasing.insert(id, ());
        drop(table);
        start(kept)
    }

    /// Hold `id`'s delete ended (the node is gone, or went with the session, or cannot be
    /// deleted here): whether it was being released.
    pub(super) fn released(&self, id: u64) -> bool {
        self.lock().releasing.remove(&id).is_some()
    }

    /// Whether any hold is alive, or being released while `session_gone` (asked under the
    /// lock, only then) says the session is not gone.
    pub(super) fn is_acquired(&self, session_gone: impl FnOnce() -> bool) -> bool {
        let table = self.lock();
        !table.held.is_empty() || (!table.releasing.is_empty() && !session_gone())
    }
}
