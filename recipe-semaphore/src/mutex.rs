//! [`InterProcessSemaphoreMutex`]: one lease of one, not reentrant.

use std::sync::Arc;
use std::time::Duration;

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

    async fn take(&self, deadline: Option<Instant>) -> Result<Option<LockGuard>, Error> {
        let owner = Owner::current();
        let holds = &self.holds;
        holds
            .take(owner, |turn| async move {
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

    /// Takes the lock, waiting as long as it takes; returns a guard that releases it.
    /// [`Error::AlreadyHeld`] if the calling task holds it.
    pub async fn lock(&self) -> Result<LockGuard, Error> {
        self.take(None).await?.ok_or(Error::SessionLost)
    }

    /// Takes the lock if it can within `timeout`; `None` if not (what was created is
    /// deleted first, or in the background if that takes longer than a short grace).
    pub async fn try_lock_for(&self, timeout: Duration) -> Result<Option<LockGuard>, Error> {
        self.take(Some(Instant::now() + timeout)).await
    }

    /// Curator's `acquire()`: takes the lock for the calling task.
    pub async fn acquire(&self) -> Result<(), Error> {
        self.lock().await.map(LockGuard::keep)
    }

    /// Curator's `acquire(time, unit)`: true if taken within `timeout`.
    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<bool, Error> {
        Ok(self
            .try_lock_for(timeout)
            .await?
            .map(LockGuard::keep)
            .is_some())
    }

    /// Curator's `release()`: returns the calling task's lease (guaranteed, in the background
    /// if this future is dropped). [`Error::NotOwner`] if the task holds nothing.
    pub async fn release(&self) -> Result<(), Error> {
        self.holds.release(Owner::current()).await
    }

    /// Whether any task of this process holds the lock.
    pub fn is_acquired_in_this_process(&self) -> bool {
        self.holds.is_acquired_in_this_process()
    }

    /// Whether the calling task holds the lock.
    pub fn is_owned_by_current_task(&self) -> bool {
        self.holds.is_owned_by(Owner::current())
    }

    /// The lease nodes under `<path>/leases` (full paths): who holds the lock or is about to
    /// count.
    pub async fn participant_nodes(&self) -> Result<Vec<String>, Error> {
        crate::semaphore::lease_nodes(self.holds.client(), self.holds.path()).await
    }
}

impl recipe_mutex::Lock for InterProcessSemaphoreMutex {
    fn path(&self) -> &str {
        self.holds.path()
    }

    fn kind(&self) -> &'static str {
        "semaphore-mutex"
    }

    fn lock_until(
        &self,
        deadline: Option<Instant>,
    ) -> recipe_mutex::LockFuture<'_, Option<LockGuard>> {
        Box::pin(self.take(deadline))
    }

    fn release_current(&self) -> recipe_mutex::LockFuture<'_, ()> {
        Box::pin(self.release())
    }

    fn is_acquired_in_this_process(&self) -> bool {
        self.holds.is_acquired_in_this_process()
    }
}
