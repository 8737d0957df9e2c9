//! Turns: one acquisition at a time per owner, per session and lock path, and an owner's next
//! attempt only once the background cleanup of one it abandoned is done ([`wait`]).
//!
//! An acquire dropped mid-way (a `timeout` around it, a `select!` that went the other way)
//! leaves its node to a background task to delete. Without turns, an owner that cancels in a
//! loop starts attempt after attempt while the cleanups of the earlier ones are still in
//! flight: its nodes pile up faster than they are deleted, every waiter's queue grows, and
//! with enough such owners the server falls behind and nobody acquires at all. With turns,
//! each owner has at most one attempt (or its cleanup) going per session and lock path.
//!
//! The turns are the process's, keyed by session, path and owner, not a lock handle's: an
//! owner that makes a new handle for each attempt (a new `InterProcessMutex`, or a new
//! `InterProcessMultiLock` over the same paths, as Curator's examples do) still waits for
//! its cleanups. Tested against a server in recipe-mutex's `tests/safety.rs`
//! (`an_owner_waits_for_the_cleanup_of_its_abandoned_attempt_on_any_handle`) and by xtask's
//! stress test for every recipe.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, PoisonError};

use tokio::time::Instant;
use zk_client::Client;

use crate::driver::Turn;
use crate::owner::{IdHasher, Owner};

/// A turn's key: the session, the lock's path, the owner.
type Key = (i64, String, Owner);

/// The gates: one per key with an attempt going or waiting.
#[derive(Default)]
struct Gates {
    gates: HashMap<Key, Arc<tokio::sync::Mutex<()>>, std::hash::BuildHasherDefault<IdHasher>>,
    /// The size at which the next sweep of unused gates runs (amortized O(1) per wait).
    sweep_at: usize,
}

/// Below this many gates, no sweep.
const MIN_SWEEP: usize = 64;

static GATES: LazyLock<Mutex<Gates>> = LazyLock::new(Mutex::default);

/// Waits for `owner`'s turn on lock `path` of `client`'s session: until its earlier attempt
/// there, background cleanup included, is done. The attempt keeps the [`Turn`] until it is
/// completely finished (the driver's `DriveOptions::turn`). `None` when `deadline` and
/// [`DEADLINE_GRACE`](recipes_core::DEADLINE_GRACE) pass first (a cleanup waiting for the
/// connection): an attempt with a deadline ends within its deadline and one grace, as the
/// machines do. Cancel-safe: dropped while waiting, nothing is taken.
pub async fn wait(
    client: &Client,
    path: &str,
    owner: Owner,
    deadline: Option<Instant>,
) -> Option<Turn> {
    let key = (client.session_id(), path.to_owned(), owner);
    let gate = {
        let mut g = GATES.lock().unwrap_or_else(PoisonError::into_inner);
        if g.gates.len() >= g.sweep_at.max(MIN_SWEEP) {
            // Gates nobody holds or waits for any more (their owners are done).
            g.gates.retain(|_, gate| Arc::strong_count(gate) > 1);
            g.sweep_at = 2 * g.gates.len();
        }
        g.gates.entry(key).or_default().clone()
    };
    let turn = match deadline {
        Some(deadline) => {
            let until = deadline + recipes_core::DEADLINE_GRACE;
            tokio::time::timeout_at(until, gate.lock_owned())
                .await
                .ok()?
        }
        None => gate.lock_owned().await,
    };
    Some(Arc::new(turn))
}
