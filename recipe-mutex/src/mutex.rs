//! [`InterProcessMutex`] and its [`MutexGuard`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use recipes_core::{Cleanup, Exclusive};
use tokio::task::JoinHandle;
use zk_client::{Client, SessionState};

use crate::driver::{self, Acquired};
use crate::owner::Owner;
use crate::revoke::{self, RevocationListener};
use crate::{Error, cleanup};

/// What one owner holds.
#[derive(Debug)]
struct Hold {
    node: Acquired,
    count: u32,
    revocation: Option<JoinHandle<()>>,
}

struct Inner {
    client: Client,
    base: String,
    data: Bytes,
    holds: Mutex<HashMap<Owner, Hold>>,
    revocable: Mutex<Option<RevocationListener>>,
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InterProcessMutex")
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

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
/// `select!`) are one owner. A guard is `Send`: releasing through it is allowed from any
/// task, the guard being the proof of ownership.
///
/// Taking the lock costs one round trip when it is free (the create and the listing travel
/// together; Curator needs two), and releasing one more.
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
    inner: Arc<Inner>,
}

/// How a held lock may have been lost, from [`MutexGuard::lost`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loss {
    /// The connection is down: the lock may still be ours (the session may survive), but no
    /// one can be sure until it reconnects. Stop acting as the holder until then.
    Unsure,
    /// The session expired, was closed, or no server answered for its whole timeout: the lock
    /// is gone, and another client may hold it.
    Lost,
}

impl InterProcessMutex {
    /// A mutex on `path` (validated now; its parents are created as containers when needed).
    pub fn new(client: Client, path: &str) -> Result<Self, Error> {
        Self::with_data(client, path, Bytes::new())
    }

    /// A mutex whose lock nodes carry `data` (Curator writes the host's IP; nobody reads it).
    pub fn with_data(client: Client, path: &str, data: Bytes) -> Result<Self, Error> {
        zk_proto::validate_path(path, false)?;
        Ok(Self {
            inner: Arc::new(Inner {
                client,
                base: path.to_owned(),
                data,
                holds: Mutex::new(HashMap::new()),
                revocable: Mutex::new(None),
            }),
        })
    }

    /// The lock's path.
    pub fn path(&self) -> &str {
        &self.inner.base
    }

    /// Makes later acquisitions revocable: the lock node is created empty and the holder
    /// watches it; when another process calls [`crate::revoke`] on it, `listener` runs. Unlike
    /// Curator's, it stays armed for later acquisitions until replaced.
    pub fn make_revocable(&self, listener: impl Fn() + Send + Sync + 'static) {
        if let Ok(mut r) = self.inner.revocable.lock() {
            *r = Some(Arc::new(listener));
        }
    }

    fn holds(&self) -> std::sync::MutexGuard<'_, HashMap<Owner, Hold>> {
        self.inner
            .holds
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Takes one more count of the caller's hold, if it has one.
    fn reenter(&self, owner: Owner) -> Option<Acquired> {
        let mut holds = self.holds();
        let hold = holds.get_mut(&owner)?;
        hold.count += 1;
        Some(hold.node.clone())
    }

    async fn take(
        &self,
        owner: Owner,
        deadline: Option<Instant>,
    ) -> Result<Option<Acquired>, Error> {
        if let Some(node) = self.reenter(owner) {
            return Ok(Some(node));
        }
        let revocable = self.inner.revocable.lock().ok().and_then(|r| r.clone());
        let data = if revocable.is_some() {
            Bytes::new()
        } else {
            self.inner.data.clone()
        };
        let Some(node) = driver::acquire(
            &self.inner.client,
            &self.inner.base,
            Exclusive::mutex(),
            data,
            deadline,
        )
        .await?
        else {
            return Ok(None);
        };
        let revocation = revocable.map(|listener| {
            tokio::spawn(revoke::watch_own_node(
                self.inner.client.clone(),
                node.path.clone(),
                listener,
            ))
        });
        self.holds().insert(
            owner,
            Hold {
                node: node.clone(),
                count: 1,
                revocation,
            },
        );
        Ok(Some(node))
    }

    /// Takes the lock, waiting as long as it takes; returns a guard that releases it.
    pub async fn lock(&self) -> Result<MutexGuard, Error> {
        let owner = Owner::current();
        match self.take(owner, None).await? {
            Some(node) => Ok(self.guard(owner, node)),
            None => Err(Error::SessionLost),
        }
    }

    /// Takes the lock if it can within `timeout`; `None` if not (our node is deleted first).
    /// A free lock is taken even with a zero timeout.
    pub async fn try_lock_for(&self, timeout: Duration) -> Result<Option<MutexGuard>, Error> {
        let owner = Owner::current();
        let node = self.take(owner, Some(Instant::now() + timeout)).await?;
        Ok(node.map(|node| self.guard(owner, node)))
    }

    fn guard(&self, owner: Owner, node: Acquired) -> MutexGuard {
        MutexGuard {
            mutex: self.clone(),
            owner,
            node,
            released: false,
        }
    }

    /// Curator's `acquire()`: takes the lock for the calling task (or re-enters it).
    pub async fn acquire(&self) -> Result<(), Error> {
        match self.take(Owner::current(), None).await? {
            Some(_) => Ok(()),
            None => Err(Error::SessionLost),
        }
    }

    /// Curator's `acquire(time, unit)`: true if taken within `timeout`.
    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<bool, Error> {
        Ok(self
            .take(Owner::current(), Some(Instant::now() + timeout))
            .await?
            .is_some())
    }

    /// Curator's `release()`: one count of the calling task's hold; the last one deletes the
    /// node. [`Error::NotOwner`] if the task holds nothing. A delete that fails for a lost
    /// connection is retried once reconnected, for up to the session timeout; if it still
    /// fails the hold is forgotten anyway, the node is deleted in the background (as in
    /// Curator), and the error is returned.
    pub async fn release(&self) -> Result<(), Error> {
        self.release_for(Owner::current()).await
    }

    async fn release_for(&self, owner: Owner) -> Result<(), Error> {
        let Some(hold) = self.drop_count(owner)? else {
            return Ok(());
        };
        self.delete(hold).await
    }

    /// One count less; the hold, if that was its last count.
    fn drop_count(&self, owner: Owner) -> Result<Option<Hold>, Error> {
        let mut holds = self.holds();
        let Some(hold) = holds.get_mut(&owner) else {
            return Err(Error::NotOwner {
                path: self.inner.base.clone(),
            });
        };
        hold.count = hold.count.saturating_sub(1);
        if hold.count > 0 {
            return Ok(None);
        }
        Ok(holds.remove(&owner))
    }

    async fn delete(&self, hold: Hold) -> Result<(), Error> {
        if let Some(revocation) = hold.revocation {
            revocation.abort();
        }
        let client = &self.inner.client;
        loop {
            match client.delete(&hold.node.path, None).await {
                Ok(()) | Err(zk_client::Error::NoNode) => return Ok(()),
                // The session is gone, and our ephemeral node with it.
                Err(zk_client::Error::SessionExpired | zk_client::Error::Closed) => return Ok(()),
                // Wait for the connection to come back, as long as the session can live
                // without one, then try again.
                Err(zk_client::Error::ConnectionLoss)
                    if tokio::time::timeout(
                        client.session_timeout(),
                        cleanup::wait_connected(client),
                    )
                    .await
                    .unwrap_or(false) => {}
                Err(e) => {
                    cleanup::spawn(client, Cleanup::Delete(hold.node.path));
                    return Err(Error::Zk(e));
                }
            }
        }
    }

    /// Whether any task of this process holds the lock through this mutex.
    pub fn is_acquired_in_this_process(&self) -> bool {
        !self.holds().is_empty()
    }

    /// Whether the calling task holds the lock through this mutex.
    pub fn is_owned_by_current_task(&self) -> bool {
        self.holds().contains_key(&Owner::current())
    }

    /// Every lock node under the path, sorted in lock order (the holder first): full paths.
    pub async fn participant_nodes(&self) -> Result<Vec<String>, Error> {
        participant_nodes(
            &self.inner.client,
            &self.inner.base,
            recipes_core::name::MUTEX_LOCK_NAME,
        )
        .await
    }
}

/// The sorted full paths of the children of `base` for lock name `lock_name`.
pub(crate) async fn participant_nodes(
    client: &Client,
    base: &str,
    lock_name: &str,
) -> Result<Vec<String>, Error> {
    let mut children = match client.get_children(base).await {
        Ok(children) => children,
        Err(zk_client::Error::NoNode) => return Ok(Vec::new()),
        Err(e) => return Err(e.into()),
    };
    recipes_core::name::sort_children(&mut children, lock_name);
    Ok(children
        .into_iter()
        .map(|c| format!("{base}/{c}"))
        .collect())
}

/// Proof of holding an [`InterProcessMutex`] (one count of a reentrant hold).
///
/// Dropping it releases in the background; [`MutexGuard::release`] releases now. It is
/// `Send`: it may be released from any task.
#[derive(Debug)]
pub struct MutexGuard {
    mutex: InterProcessMutex,
    owner: Owner,
    node: Acquired,
    released: bool,
}

impl MutexGuard {
    /// The lock node's creation zxid: strictly increasing across the successive holders of
    /// the lock. Pass it to a fenced resource so that a holder that lost the lock without
    /// knowing cannot overwrite a newer holder's work.
    pub fn fencing_token(&self) -> i64 {
        self.node.czxid
    }

    /// Our lock node's path.
    pub fn node_path(&self) -> &str {
        &self.node.path
    }

    /// A `multi` op that holds only while our lock node exists: put it in a transaction with
    /// the writes that must happen under the lock, and they commit only if we still hold it.
    pub fn check_op(&self) -> zk_client::Op {
        zk_client::Op::Check {
            path: self.node.path.clone(),
            version: None,
        }
    }

    /// Whether the lock is surely still ours: the session that took it is connected.
    pub fn is_valid(&self) -> bool {
        let client = &self.mutex.inner.client;
        client.state().is_connected() && client.session_id() == self.node.session_id
    }

    /// Resolves when the lock can no longer be trusted: [`Loss::Unsure`] when the connection
    /// drops, [`Loss::Lost`] when the session expires, is closed, or no server answered for
    /// the session timeout. Resolves at once if that is already the case.
    pub async fn lost(&self) -> Loss {
        let mut states = self.mutex.inner.client.state_watch();
        let state = match states.wait_for(|s| !s.is_connected()).await {
            Ok(s) => *s,
            Err(_) => SessionState::Closed,
        };
        match state {
            SessionState::Disconnected | SessionState::Connecting => Loss::Unsure,
            _ => Loss::Lost,
        }
    }

    /// Releases now (this count; the node goes with the last count) and reports errors.
    pub async fn release(mut self) -> Result<(), Error> {
        self.released = true;
        self.mutex.release_for(self.owner).await
    }
}

impl Drop for MutexGuard {
    fn drop(&mut self) {
        if self.released {
            return;
        }
        if let Ok(Some(hold)) = self.mutex.drop_count(self.owner) {
            if let Some(revocation) = &hold.revocation {
                revocation.abort();
            }
            cleanup::delete_now(&self.mutex.inner.client, hold.node.path);
        }
    }
}
