//! [`InterProcessSemaphoreMutex`]: one lease of one, not reentrant.

use std::sync::Arc;

use bytes::Bytes;
use recipe_mutex::hold::Holds;
use recipe_mutex::{Error, LockGuard, Owner};
use recipes_core::MaxLeases;
use tokio::time::Instant;
use zk_client::Client;

use crate::take::{Ask, take_leases};

/// A non-reentrant lock shared across processes, wire-compatible with Curator's
/// `InterProcessSemaphoreMutex` (an `InterProcessSemaphoreV2` of one lease: the same nodes
/// under `<path>/locks` and `<path>/leases`), so Curator clients and ours exclude each other on
/// the same path.
///
/// Not reentrant, as Curator's, but without its trap: there, a holder that asks again waits
/// forever while holding the inner lock, which blocks every other client. Here the task that
/// holds it gets [`Error::AlreadyHeld`] at once. Another task of the process queues like any
/// other client.
///
/// The guard is a [`LockGuard`]: fencing token (the lease node's creation zxid, increasing
/// across holders), `check_op`, `lost()`, `is_valid()`, release on drop. Cancel-safe, with
/// guaranteed releases. [`InterProcessSemaphoreMutex::release`] (Curator's shape) must be
/// called from the task that holds it (Curator lets any thread release; release through the
/// guard from elsewhere).
#[derive(Debug, Clone)]
pub struct InterProcessSemaphoreMutex {
    holds: Arc<Holds>,
    max: MaxLeases,
    data: Bytes,
}

impl InterProcessSemaphoreMutex {
    /// A semaphore mutex on `path` (validated now; parents are created as containers when
    /// needed).
    pub fn new(client: Client, path: &str) -> Result<Self, Error> {
        Self::with_data(client, path, Bytes::new())
    }

    /// A semaphore mutex whose lease nodes carry `data`.
    pub fn with_data(client: Client, path: &str, data: Bytes) -> Result<Self, Error> {
        recipe_mutex::validate_lock_path(path)?;
        Ok(Self {
            holds: Holds::new(client, path, false),
            max: MaxLeases::new(1),
            data,
        })
    }

    /// The lock's path.
    pub fn path(&self) -> &str {
        self.holds.path()
    }

    fn holds(&self) -> &Arc<Holds> {
        &self.holds
    }

    async fn take(&self, deadline: Option<Instant>) -> Result<Option<LockGuard>, Error> {
        let owner = Owner::current();
        let holds = &self.holds;
        holds
            .take(owner, deadline, |turn| async move {
                let ask = Ask {
                    client: holds.client(),
                    base: holds.path(),
                    qty: 1,
                    max: &self.max,
                    data: self.data.clone(),
                    deadline,
                    turn: Some(turn),
                    wake: None,
                };
                Ok(take_leases(ask).await?.and_then(|v| v.into_iter().next()))
            })
            .await
    }

    /// The lease nodes under `<path>/leases` (full paths): who holds the lock or is about to
    /// count.
    pub async fn participant_nodes(&self) -> Result<Vec<String>, Error> {
        crate::semaphore::lease_nodes(self.holds.client(), self.holds.path()).await
    }
}

// `lock` and the others; a second `lock` by the holding task is `Error::AlreadyHeld`.
recipe_mutex::lock_surface!(
    InterProcessSemaphoreMutex,
    kind = "semaphore-mutex",
    what = "the lock"
);
