//! The hold layer every lock kind shares: who holds what (reentrant per task, or not), the
//! guard with its fencing token and lost-lock signal, guaranteed release, revocation.
//!
//! Exported for the recipe crates (the read/write lock has one [`Holds`] per kind of lock, the
//! semaphore mutex a non-reentrant one); users see it through [`LockGuard`].

use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard as StdGuard, PoisonError};

use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use zk_client::{Client, SessionState};

use crate::Error;
use crate::driver::{self, Acquired, GuaranteedDelete, Turn};
use crate::owner::{IdMap, Owner};
use crate::revoke::{self, RevocationListener};

/// One owner's hold.
#[derive(Debug)]
struct Hold {
    /// Which hold this is: a guard releases only the hold it was given.
    id: u64,
    node: Acquired,
    count: u32,
    revocation: Option<JoinHandle<()>>,
}

#[derive(Debug, Default)]
struct Table {
    holds: IdMap<Owner, Hold>,
    /// Holds whose node is being deleted: still ours on the server until the delete lands.
    releasing: IdMap<u64, Acquired>,
    next_id: u64,
}

/// The holds of one lock in this process, shared by its handles and its guards.
pub struct Holds {
    client: Client,
    path: String,
    reentrant: bool,
    table: Mutex<Table>,
    revocable: Mutex<Option<RevocationListener>>,
}

impl std::fmt::Debug for Holds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Holds")
            .field("path", &self.path)
            .field("reentrant", &self.reentrant)
            .finish_non_exhaustive()
    }
}

/// How a held lock may have been lost, from [`LockGuard::lost`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loss {
    /// The connection is down, or only a read-only server answers: the lock may still be ours
    /// (the session may survive), but no one can be sure until it reconnects to a read-write
    /// server. Stop acting as the holder until then.
    Unsure,
    /// The session expired, was closed, or no server answered for its whole timeout: the lock
    /// is gone, and another client may hold it.
    Lost,
}

impl Holds {
    /// The holds of lock `path` on `client`. A reentrant lock lets the task that holds it take
    /// it again (counted); a non-reentrant one answers [`Error::AlreadyHeld`].
    pub fn new(client: Client, path: &str, reentrant: bool) -> Arc<Self> {
        Arc::new(Self {
            client,
            path: path.to_owned(),
            reentrant,
            table: Mutex::new(Table::default()),
            revocable: Mutex::new(None),
        })
    }

    /// The client.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The lock's path.
    pub fn path(&self) -> &str {
        &self.path
    }

    fn table(&self) -> StdGuard<'_, Table> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Makes later acquisitions revocable (see `InterProcessMutex::make_revocable`).
    pub fn make_revocable(&self, listener: RevocationListener) {
        *self
            .revocable
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(listener);
    }

    /// Whether acquisitions are revocable (their nodes are then created empty).
    pub fn is_revocable(&self) -> bool {
        self.revocable
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some()
    }

    /// Takes the lock for `owner`: re-enters its hold if it has one (reentrant locks), or runs
    /// `acquire` (the driver) and records the node it gives. `Ok(None)`: `acquire` timed out,
    /// or the owner's turn did not come by `deadline` and one grace.
    ///
    /// One acquisition at a time per owner on this session and path, whatever the handle
    /// ([`crate::turns`]): futures joined in one task take turns (the second re-enters what the
    /// first took), and an owner's next attempt waits until the background cleanup of one it
    /// abandoned is done. `acquire` is given the turn to keep until then.
    pub async fn take<F, Fut>(
        self: &Arc<Self>,
        owner: Owner,
        deadline: Option<tokio::time::Instant>,
        acquire: F,
    ) -> Result<Option<LockGuard>, Error>
    where
        F: FnOnce(Turn) -> Fut,
        Fut: Future<Output = Result<Option<Acquired>, Error>>,
    {
        // One acquisition at a time per owner, so that futures joined in one task re-enter the
        // hold the first one takes instead of queueing behind it, and an owner's next attempt
        // waits for the cleanup of one it abandoned (see `turns`).
        let Some(turn) = crate::turns::wait(&self.client, &self.path, owner, deadline).await else {
            return Ok(None);
        };
        self.take_in_turn(owner, || acquire(turn)).await
    }

    async fn take_in_turn<F, Fut>(
        self: &Arc<Self>,
        owner: Owner,
        acquire: F,
    ) -> Result<Option<LockGuard>, Error>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<Option<Acquired>, Error>>,
    {
        if let Some(guard) = self.reenter(owner)? {
            return Ok(Some(guard));
        }
        let Some(node) = acquire().await? else {
            return Ok(None);
        };
        let revocation = self
            .revocable
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .map(|listener| {
                tokio::spawn(revoke::watch_own_node(
                    self.client.clone(),
                    node.path.clone(),
                    listener,
                ))
            });
        let mut table = self.table();
        table.next_id += 1;
        let id = table.next_id;
        table.holds.insert(
            owner,
            Hold {
                id,
                node: node.clone(),
                count: 1,
                revocation,
            },
        );
        Ok(Some(self.guard(owner, id, node)))
    }

    /// One more count of `owner`'s hold, if it has one.
    fn reenter(self: &Arc<Self>, owner: Owner) -> Result<Option<LockGuard>, Error> {
        let mut table = self.table();
        let Some(hold) = table.holds.get_mut(&owner) else {
            return Ok(None);
        };
        if !self.reentrant {
            return Err(Error::AlreadyHeld {
                path: self.path.clone(),
            });
        }
        hold.count += 1;
        let (id, node) = (hold.id, hold.node.clone());
        drop(table);
        Ok(Some(self.guard(owner, id, node)))
    }

    fn guard(self: &Arc<Self>, owner: Owner, id: u64, node: Acquired) -> LockGuard {
        LockGuard {
            holds: self.clone(),
            owner,
            id,
            node,
            released: false,
        }
    }

    /// Releases one count of `owner`'s current hold (Curator's `release()`); the last count
    /// deletes the node. [`Error::NotOwner`] if it holds nothing.
    pub async fn release(self: &Arc<Self>, owner: Owner) -> Result<(), Error> {
        let id = self.table().holds.get(&owner).map(|h| h.id);
        match id {
            Some(id) => self.release_hold(owner, id).await,
            None => Err(self.not_owner()),
        }
    }

    fn not_owner(&self) -> Error {
        Error::NotOwner {
            path: self.path.clone(),
        }
    }

    /// Releases one count of hold `id` of `owner`. Once started, the delete finishes in the
    /// background whatever happens to this future; on a session already lost or ended it
    /// returns at once with that reason.
    async fn release_hold(self: &Arc<Self>, owner: Owner, id: u64) -> Result<(), Error> {
        let Some((delete, done)) = self.drop_count(owner, id)? else {
            return Ok(());
        };
        driver::finish_release(&self.client, delete, done).await
    }

    /// One count less on hold `id`; with the last, the node's delete is started (and
    /// guaranteed): awaiting it waits here, dropping it leaves it to the background; the
    /// receiver gives its result. `Ok(None)`: counts remain.
    #[allow(clippy::type_complexity)]
    fn drop_count(
        self: &Arc<Self>,
        owner: Owner,
        id: u64,
    ) -> Result<Option<(GuaranteedDelete, oneshot::Receiver<Result<(), Error>>)>, Error> {
        let mut table = self.table();
        let Some(hold) = table.holds.get_mut(&owner).filter(|h| h.id == id) else {
            return Err(self.not_owner());
        };
        hold.count = hold.count.saturating_sub(1);
        if hold.count > 0 {
            return Ok(None);
        }
        let Some(hold) = table.holds.remove(&owner) else {
            return Ok(None);
        };
        if let Some(revocation) = hold.revocation {
            revocation.abort();
        }
        table.releasing.insert(id, hold.node.clone());
        drop(table);
        // Sent now, so it keeps its place ahead of whatever the caller sends next.
        let (tx, rx) = oneshot::channel();
        let holds = self.clone();
        let delete = driver::guaranteed_delete(&self.client, hold.node.path, move |result| {
            holds.table().releasing.remove(&id);
            let _ = tx.send(result);
        });
        Ok(Some((delete, rx)))
    }

    /// Whether any owner in this process holds the lock (a hold being released counts until
    /// its node is deleted, unless the session is gone).
    pub fn is_acquired_in_this_process(&self) -> bool {
        let table = self.table();
        let state = self.client.state();
        let session_gone = state.is_terminal() || state == SessionState::Lost;
        !table.holds.is_empty() || (!table.releasing.is_empty() && !session_gone)
    }

    /// Whether `owner` holds the lock.
    pub fn is_owned_by(&self, owner: Owner) -> bool {
        self.table().holds.contains_key(&owner)
    }

    /// The node `owner` holds the lock through, if any.
    pub fn node_of(&self, owner: Owner) -> Option<Acquired> {
        self.table().holds.get(&owner).map(|h| h.node.clone())
    }

    fn is_current(&self, owner: Owner, id: u64) -> bool {
        self.table().holds.get(&owner).is_some_and(|h| h.id == id)
    }
}

/// Resolves when what `client`'s session holds can no longer be trusted: [`Loss::Unsure`]
/// when the connection drops or only a read-only server answers, [`Loss::Lost`] when the
/// session expires, is closed, or no server answered for the session timeout. At once if that
/// is already the case. (Every guard's and lease's `lost()`.)
pub async fn session_loss(client: &Client) -> Loss {
    let mut states = client.state_watch();
    let state = match states.wait_for(|s| *s != SessionState::Connected).await {
        Ok(s) => *s,
        Err(_) => SessionState::Closed,
    };
    match state {
        SessionState::Disconnected | SessionState::Connecting | SessionState::ConnectedReadOnly => {
            Loss::Unsure
        }
        _ => Loss::Lost,
    }
}

/// Proof of holding a lock (one count of a reentrant hold).
///
/// Dropping it releases in the background; [`LockGuard::release`] releases now. Either way the
/// delete, once started, finishes whatever happens to the caller. It is `Send`: it may be
/// released from any task. A guard releases only the hold it was given: if that hold was
/// already released (through the lock's Curator-style `release`), dropping the guard does
/// nothing.
///
/// [`LockGuard::is_valid`] and [`LockGuard::lost`] are advisory: they say what this process
/// knows of its session, and a paused process can learn it late. The fence is
/// [`LockGuard::fencing_token`] (or [`LockGuard::check_op`] in a `multi`), checked by the
/// resource you protect.
#[derive(Debug)]
pub struct LockGuard {
    holds: Arc<Holds>,
    owner: Owner,
    id: u64,
    node: Acquired,
    released: bool,
}

impl LockGuard {
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

    /// The owner (task) the hold belongs to.
    pub fn owner(&self) -> Owner {
        self.owner
    }

    /// A `multi` op that holds only while our lock node exists: put it in a transaction with
    /// the writes that must happen under the lock, and they commit only if we still hold it.
    pub fn check_op(&self) -> zk_client::Op {
        zk_client::Op::Check {
            path: self.node.path.clone(),
            version: None,
        }
    }

    /// Whether the lock is surely still ours as far as this process knows: the hold was not
    /// released, and the session that took it is connected to a read-write server. Advisory:
    /// see the type's docs.
    pub fn is_valid(&self) -> bool {
        let client = self.holds.client();
        client.state() == SessionState::Connected
            && client.session_id() == self.node.session_id
            && self.holds.is_current(self.owner, self.id)
    }

    /// Resolves when the lock can no longer be trusted: [`Loss::Unsure`] when the connection
    /// drops or only a read-only server answers, [`Loss::Lost`] when the session expires, is
    /// closed, or no server answered for the session timeout. Resolves at once if that is
    /// already the case. Advisory: see the type's docs.
    pub async fn lost(&self) -> Loss {
        session_loss(self.holds.client()).await
    }

    /// Releases now (this count; the node goes with the last count) and reports errors. The
    /// delete, once started, finishes in the background even if this future is dropped. On a
    /// session already lost or ended, returns that at once ([`Error::SessionLost`],
    /// [`Error::SessionExpired`]): the lock is gone with it.
    pub async fn release(mut self) -> Result<(), Error> {
        self.released = true;
        self.holds.clone().release_hold(self.owner, self.id).await
    }
}

impl LockGuard {
    /// Keeps this count without the guard: the owner releases it with the lock's
    /// Curator-style `release()` (how `acquire()` works).
    pub fn keep(mut self) {
        self.released = true;
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        if !self.released {
            // A stale guard (its hold already released) changes nothing.
            let _ = self.holds.drop_count(self.owner, self.id);
        }
    }
}
