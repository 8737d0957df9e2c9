//! [`InterProcessMutex`]: Curator's fair, reentrant, revocable mutex, on the shared driver and
//! hold layer.

use std::sync::Arc;

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
/// finished in the background and its node deleted by its exact path), and the task's next
/// acquire of the same path on the same session, through this handle or any other, waits for
/// that cleanup ([`crate::turns`]): a task cancelling in a loop cannot pile up nodes.
/// Releases are guaranteed: once started, the delete is retried across connection loss and
/// transient errors until done or the session ends, whatever happens to the caller's future.
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

    fn holds(&self) -> &Arc<Holds> {
        &self.holds
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
            .take(Owner::current(), deadline, |turn| {
                driver::acquire(client, path, Exclusive::mutex(), data, deadline, Some(turn))
            })
            .await
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

crate::lock_surface!(InterProcessMutex, kind = "mutex", what = "the lock");

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
