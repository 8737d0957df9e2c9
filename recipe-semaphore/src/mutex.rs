//! [`InterProcessSemaphoreMutex`]: one lease of one, not reentrant.

use std::sync::Arc;

use bytes::Bytes;
use recipe_mutex::layer::hold::Holds;
use recipe_mutex::{Error, Hold};

use crate::SemaphoreMutexGuard;
use recipes_core::MaxLeases;
use tokio::time::Instant;
use zk_client::Client;

use crate::take::{Ask, take_leases};

/// A non-reentrant lock shared across processes, wire-compatible with Curator's
/// `InterProcessSemaphoreMutex` (an `InterProcessSemaphoreV2` of one lease: the same nodes
/// under `<path>/locks` and `<path>/leases`), so Curator clients and ours exclude each other on
/// the same path.
///
/// Not reentrant, by construction: every `lock()` is its own participant and queues, whatever
/// task or handle asks, until the guard that holds it is released. (Curator's also queues,
/// but while holding its inner lock, which stops every other client; ours waits like any
/// other client.) Code that needs the lock while holding it takes the guard in hand.
///
/// The guard is a [`SemaphoreMutexGuard`]: fencing token (the lease node's creation zxid,
/// increasing across holders), `check_op`, `lost()`, `is_valid()`, release on drop. It may be
/// released from any task or thread (Curator lets any thread release, too). Cancel-safe, with
/// guaranteed releases.
///
/// # Examples
///
/// ```no_run
/// use recipe_semaphore::InterProcessSemaphoreMutex;
///
/// # async fn f(client: zk_client::Client) -> Result<(), recipe_semaphore::Error> {
/// let job = InterProcessSemaphoreMutex::new(client, "/app/locks/job")?;
/// let guard = job.lock().await?;
/// // Released by another task: the guard is the ownership.
/// tokio::spawn(async move { guard.release().await }).await.ok();
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct InterProcessSemaphoreMutex {
    holds: Arc<Holds>,
    max: MaxLeases,
    data: Bytes,
}

impl InterProcessSemaphoreMutex {
    /// A semaphore mutex on `path` (validated now; parents are created as containers when
    /// needed). Its lease nodes carry this host's address ([`recipe_mutex::host_address`]).
    pub fn new(client: Client, path: &str) -> Result<Self, Error> {
        let data = recipe_mutex::host_address(&client);
        Self::with_data(client, path, data)
    }

    /// A semaphore mutex whose lease nodes carry `data`.
    pub fn with_data(client: Client, path: &str, data: Bytes) -> Result<Self, Error> {
        recipe_mutex::validate_lock_path(path)?;
        Ok(Self {
            holds: Holds::new(client, path),
            max: MaxLeases::new(1),
            data,
        })
    }

    /// The lock's path.
    pub fn path(&self) -> &str {
        self.holds.path()
    }

    /// Its leases as the server has them (a semaphore of one: the first holds, a second is
    /// the one asker that waits), with sessions and data; see
    /// [`InterProcessSemaphoreV2::queue`](crate::InterProcessSemaphoreV2::queue).
    pub async fn queue(&self) -> Result<Vec<recipe_mutex::Participant>, Error> {
        crate::semaphore::leases_queue(self.holds.client(), self.holds.path(), 1).await
    }

    fn holds(&self) -> &Arc<Holds> {
        &self.holds
    }

    fn wrap(&self, hold: Hold) -> SemaphoreMutexGuard {
        SemaphoreMutexGuard::new(hold)
    }

    async fn take(&self, deadline: Option<Instant>) -> Result<Option<Hold>, Error> {
        let holds = &self.holds;
        holds
            .take(deadline, |turn| async move {
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

    /// The lease nodes' names under `<path>/leases` (child names, as Curator gives them): who
    /// holds the lock or is about to count.
    pub async fn participant_nodes(&self) -> Result<Vec<String>, Error> {
        crate::semaphore::lease_nodes(self.holds.client(), self.holds.path()).await
    }
}

// `lock` and the others; a second `lock` queues like any other participant.
recipe_mutex::lock_surface!(
    InterProcessSemaphoreMutex,
    guard = SemaphoreMutexGuard,
    kind = SemaphoreMutex,
    what = "the lock"
);
