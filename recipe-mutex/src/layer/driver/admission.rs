//! Admission: how many attempts of one client send their first requests at once.
//!
//! A burst of acquires (a scheduler taking 100,000 locks at once) would otherwise start every
//! attempt together: each one's state (its machine, its ops in flight, the replies awaited,
//! several kilobytes) allocated at once, a peak the allocator keeps as resident memory long
//! after the attempts are held. An attempt is admitted by one of the client's
//! [`ACQUIRES_IN_FLIGHT`] slots, first come first served, and gives it back as soon as it has
//! nothing in flight: when it holds, fails, or waits behind another holder (for a watch, a
//! wake or its deadline). So a slot is only ever held across requests already sent, which
//! end (with a reply or the session's end) whatever else the process does: waiting for a
//! slot can never wait for a lock to be released, and no set of attempts can deadlock on
//! slots.
//!
//! An attempt whose deadline passes while it waits for a slot starts anyway, so that a
//! deadline keeps its promises (a free lock is taken even with a zero timeout; the attempt
//! returns within one grace of its deadline).
//!
//! Admission decides only when an attempt's first request is sent, never what the attempt
//! does: the grant is still the recipe's rule on the server's children, so it cannot cost
//! exclusion. Releases and cleanups are never gated.

use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use zk_client::{Client, ClientId};

use crate::ids::IdMap;

/// How many attempts of one client are admitted at once (Curator's bench process, a pool of
/// 64 threads, has at most 64). Measured taking 100,000 free locks at once over one session,
/// each bound on a fresh local server: 64, 256 and 1,024 took 51–54 s, as many as unbounded
/// did (54 s: the server's writes are what take the time), and left 320 MiB resident
/// against 890 MiB unbounded.
pub const ACQUIRES_IN_FLIGHT: usize = 256;

/// A slot: the attempt holding it is admitted. Given back when dropped.
pub(crate) type Slot = OwnedSemaphorePermit;

/// Waits for one of `client`'s slots, until `deadline` at most: `None` when the deadline
/// passed first (the attempt then starts without one).
pub(crate) async fn admit(client: &Client, deadline: Option<Instant>) -> Option<Slot> {
    let gate = gate(client.id());
    if let Ok(slot) = Arc::clone(&gate).try_acquire_owned() {
        return Some(slot);
    }
    // Boxed, each way its own size: a waiting attempt keeps no timer it does not need.
    let waiting = gate.acquire_owned();
    match deadline {
        None => Box::pin(waiting).await.ok(),
        Some(deadline) => Box::pin(tokio::time::timeout_at(deadline, waiting))
            .await
            .ok()
            .and_then(Result::ok),
    }
}

/// The clients' gates. A gate lives as long as a slot of it is held or waited for (each
/// holds its `Arc`); the table keeps only a `Weak`, and drops the dead ones whenever it has
/// doubled since it last did, so it stays within twice the clients with attempts in flight.
struct Gates<K> {
    by_client: IdMap<K, Weak<Semaphore>>,
    /// The table's size at which the dead entries are dropped next.
    prune_at: usize,
}

/// The smallest [`Gates::prune_at`].
const PRUNE_FLOOR: usize = 32;

fn gates() -> std::sync::MutexGuard<'static, Gates<ClientId>> {
    static GATES: OnceLock<Mutex<Gates<ClientId>>> = OnceLock::new();
    GATES
        .get_or_init(|| Mutex::new(Gates::new()))
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
}

fn gate(client: ClientId) -> Arc<Semaphore> {
    gates().get_or_make(client)
}

/// How many of `client`'s attempts hold a slot now (at most [`ACQUIRES_IN_FLIGHT`]): those
/// with requests of their first pass in flight. For tests and diagnostics.
pub fn admitted(client: &Client) -> usize {
    gates()
        .by_client
        .get(&client.id())
        .and_then(Weak::upgrade)
        .map_or(0, |gate| ACQUIRES_IN_FLIGHT - gate.available_permits())
}

impl<K: std::hash::Hash + Eq> Gates<K> {
    fn new() -> Self {
        Gates {
            by_client: IdMap::default(),
            prune_at: 0,
        }
    }

    fn get_or_make(&mut self, client: K) -> Arc<Semaphore> {
        if let Some(gate) = self.by_client.get(&client).and_then(Weak::upgrade) {
            return gate;
        }
        if self.by_client.len() >= self.prune_at.max(PRUNE_FLOOR) {
            self.by_client.retain(|_, gate| gate.strong_count() > 0);
            self.prune_at = 2 * self.by_client.len();
        }
        let gate = Arc::new(Semaphore::new(ACQUIRES_IN_FLIGHT));
        self.by_client.insert(client, Arc::downgrade(&gate));
        gate
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gate_lives_while_held_and_the_table_drops_the_dead() {
        let mut gates = Gates::new();
        let held = gates.get_or_make(1u64);
        assert!(Arc::ptr_eq(&held, &gates.get_or_make(1)));
        // Many clients come and go: the table stays within its floor (one live gate).
        for i in 2..10_000u64 {
            drop(gates.get_or_make(i));
            assert!(
                gates.by_client.len() <= PRUNE_FLOOR + 1,
                "{}",
                gates.by_client.len()
            );
        }
        // Many live at once: kept, the table within twice them.
        let live: Vec<_> = (10_000..10_500u64).map(|i| gates.get_or_make(i)).collect();
        assert!(gates.by_client.len() <= 2 * (live.len() + 1) + 1);
        assert!(Arc::ptr_eq(&held, &gates.get_or_make(1)));
        drop(held);
        let fresh = gates.get_or_make(1);
        assert_eq!(fresh.available_permits(), ACQUIRES_IN_FLIGHT);
    }
}
