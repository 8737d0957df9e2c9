//! [`InterProcessMutex`]: Curator's fair, reentrant, revocable mutex, on the shared driver and
//! hold layer.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use recipes_core::Exclusive;
use tokio::time::Instant;
use zk_client::Client;

use crate::Error;
use crate::driver;
use crate::hold::{Holds, LockGuard};
use crate::owner::Owner;

/// Proof of holding an [`InterProcessMutex`]: a [`LockGuard`].
pub type MutexGuard = LockGuard;

/// A fair, reentrant, revocable lock shared across processes, wire-compatible with Curator's
/// `InterProcessMutex`: the same nodes (`<path>/_c_<uuid>-lock-<seq>`), the same order, the
/// same watches, so Curator clients and ours exclude each other on the same path.
///
/// Two ways to use it:
/// - Rust-shaped: [`InterProcessMutex::lock`] returns a [`MutexGuard`]; dropping it releases
///   in the background (retried across connection loss until done or the session ends);
///   [`MutexGuard::release`] releases now and reports errors. The guard gives a fencing token
///   and tells when the lock may be lost.
/// - Curator-shaped: [`InterProcessMutex::acquire`], [`InterProcessMutex::acquire_timeout`],
///   [`InterProcessMutex::release`].
///
/// Reentrant per tokio task, as Curator is per thread: the task holding the lock may take it
/// again (counted, no ZooKeeper traffic), and must release as many times. Another task of the
/// same process queues like any other client. Futures joined inside one task (`join!`,
/// `select!`) are one owner: they take turns, so `join!(m.lock(), m.lock())` gives two guards
/// of one hold (the second re-enters what the first took) instead of deadlocking. A guard is
/// `Send`: releasing through it is allowed from any task, the guard being the proof of
/// ownership.
///
/// Cancel-safe: dropping an acquire at any point leaves no node behind (a create in flight is
/// finished in the background and its node deleted by its exact path). Releases are
/// guaranteed: once started, the delete is retried across connection loss and transient
/// errors until done or the session ends, whatever happens to the caller's future.
///
/// Taking the lock costs one round trip when it is free (the create and the listing travel
/// together; Curator needs two), and releasing one more. A waiter holds only after a listing
/// shows its node first, as in Curator.
///
/// # Examples
///
/// ```no_run
/// use recipe_mutex::InterProcessMutex;
///
/// # async fn f(client: zk_client::Client) -> Result<(), recipe_mutex::Error> {
/// let mutex = InterProcessMutex::new(client, "/app/locks/orders")?;
/// let guard = mutex.lock().await?;
/// // Writes that must only happen while we hold the lock: fence them.
/// println!("fencing token {}", guard.fencing_token());
/// guard.release().await?;
///
/// if let Some(guard) = mutex.try_lock_for(std::time::Duration::from_secs(1)).await? {
///     drop(guard); // released in the background
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct InterProcessMutex {
    holds: Arc<Holds>,
    data: Bytes,
}

impl InterProcessMutex {
    /// A mutex on `path` (validated now; its parents are created as containers when needed).
    /// Paths under `/zookeeper`, which the server reserves, are refused.
    pub fn new(client: Client, path: &str) -> Result<Self, Error> {
        Self::with_data(client, path, Bytes::new())
    }

    /// A mutex whose lock nodes carry `data` (Curator writes the host's IP; nobody reads it).
    pub fn with_data(client: Client, path: &str, data: Bytes) -> Result<Self, Error> {
        validate_lock_path(path)?;
        Ok(Self {
            holds: Holds::new(client, path, true),
            data,
        })
    }

    /// The lock's path.
    pub fn path(&self) -> &str {
        self.holds.path()
    }

    /// Makes later acquisitions revocable: the lock node is created empty and the holder
    /// watches it; when another process calls [`crate::revoke`] on it, `listener` runs. Unlike
    /// Curator's, it stays armed for later acquisitions until replaced.
    pub fn make_revocable(&self, listener: impl Fn() + Send + Sync + 'static) {
        self.holds.make_revocable(Arc::new(listener));
    }

    async fn take(&self, deadline: Option<Instant>) -> Result<Option<LockGuard>, Error> {
        let data = if self.holds.is_revocable() {
            Bytes::new()
        } else {
            self.data.clone()
        };
        let client = self.holds.client();
        let path = self.holds.path();
        self.holds
            .take(Owner::current(), |turn| {
                driver::acquire(client, path, Exclusive::mutex(), data, deadline, Some(turn))
            })
            .await
    }

    /// Takes the lock, waiting as long as it takes; returns a guard that releases it.
    pub async fn lock(&self) -> Result<MutexGuard, Error> {
        self.take(None).await?.ok_or(Error::SessionLost)
    }

    /// Takes the lock if it can within `timeout`; `None` if not (our node is deleted first,
    /// or, if that takes longer than a short grace, in the background). A free lock is taken
    /// even with a zero timeout. Returns within a short grace of the deadline, also while
    /// disconnected.
    pub async fn try_lock_for(&self, timeout: Duration) -> Result<Option<MutexGuard>, Error> {
        self.take(Some(Instant::now() + timeout)).await
    }

    /// Curator's `acquire()`: takes the lock for the calling task (or re-enters it).
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

    /// Curator's `release()`: one count of the calling task's hold; the last one deletes the
    /// node. [`Error::NotOwner`] if the task holds nothing. The delete, once started, finishes
    /// in the background even if this future is dropped; a delete that fails for a lost
    /// connection is retried once reconnected. On a session already lost or ended it returns
    /// that at once.
    pub async fn release(&self) -> Result<(), Error> {
        self.holds.release(Owner::current()).await
    }

    /// Whether any task of this process holds the lock through this mutex (a release in
    /// progress counts until its node is deleted).
    pub fn is_acquired_in_this_process(&self) -> bool {
        self.holds.is_acquired_in_this_process()
    }

    /// Whether the calling task holds the lock through this mutex.
    pub fn is_owned_by_current_task(&self) -> bool {
        self.holds.is_owned_by(Owner::current())
    }

    /// Every lock node under the path, sorted in lock order (the holder first): full paths.
    pub async fn participant_nodes(&self) -> Result<Vec<String>, Error> {
        participant_nodes(
            self.holds.client(),
            self.holds.path(),
            &Exclusive::mutex(),
            false,
        )
        .await
    }
}

impl crate::Lock for InterProcessMutex {
    fn path(&self) -> &str {
        self.holds.path()
    }

    fn kind(&self) -> &'static str {
        "mutex"
    }

    fn lock_until(&self, deadline: Option<Instant>) -> crate::LockFuture<'_, Option<LockGuard>> {
        Box::pin(self.take(deadline))
    }

    fn release_current(&self) -> crate::LockFuture<'_, ()> {
        Box::pin(self.release())
    }

    fn is_acquired_in_this_process(&self) -> bool {
        self.holds.is_acquired_in_this_process()
    }
}

/// Validates a lock path: a valid ZooKeeper path, not under `/zookeeper`.
pub fn validate_lock_path(path: &str) -> Result<(), Error> {
    zk_proto::validate_path(path, false)?;
    if path == "/zookeeper" || path.starts_with("/zookeeper/") {
        return Err(Error::ReservedPath {
            path: path.to_owned(),
        });
    }
    Ok(())
}

/// The full paths of the children of `base`, sorted by `predicate`'s order; only those whose
/// name contains its lock name if `only_its_own` (Curator's read/write lock filters; its mutex
/// does not).
pub async fn participant_nodes(
    client: &Client,
    base: &str,
    predicate: &dyn recipes_core::Predicate,
    only_its_own: bool,
) -> Result<Vec<String>, Error> {
    let mut children = match client.get_children(base).await {
        Ok(children) => children,
        Err(zk_client::Error::NoNode) => return Ok(Vec::new()),
        Err(e) => return Err(e.into()),
    };
    if only_its_own {
        children.retain(|c| c.contains(predicate.lock_name()));
    }
    predicate.sort(&mut children);
    Ok(children
        .into_iter()
        .map(|c| recipes_core::child_path(base, &c))
        .collect())
}
