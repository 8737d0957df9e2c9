//! Holds: the holds of a lock in this process ([`Holds`]), the guard that *is* the ownership
//! ([`Hold`]: fencing token, lost-lock signal, nested holds, guaranteed release), and the
//! watch each hold keeps on its own node (a node deleted under a live session, revocation).
//!
//! - No ambient identity: who holds is the guard in hand, never the task or thread that asks.
//!   Every acquisition is its own participant with its own node; re-entering is
//!   [`Hold::reenter`], borrowed from the guard.
//! - The table of holds (alive, being released) is loom-checked in every interleaving of
//!   guards dropped on plain threads, their deletes and the session's end.

use std::future::Future;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::runtime::Handle;
use zk_client::{Client, SessionState};

use crate::Error;
use crate::layer::driver::{self, Acquired, GuaranteedDelete, Turn};
use crate::revoke::RevocationListener;

pub use meter::HoldMeter;
use table::Table;
pub use watch::{NodeLife, NodeWatch, watch_node};

mod meter;
mod table;
mod watch;

/// The holds of one lock in this process, shared by its handles and its guards.
pub struct Holds {
    client: Client,
    path: String,
    /// The holds alive, each with the watch on its node, and those being released.
    table: Table<Kept>,
    revocable: Mutex<Option<RevocationListener>>,
}

impl std::fmt::Debug for Holds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Holds")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// What a hold keeps while its guard is alive: the watch on its node, and its measure for
/// the metrics (nothing without the feature `metrics`).
#[derive(Debug)]
struct Kept {
    watch: NodeWatch,
    meter: HoldMeter,
}

/// How a held lock may have been lost, from [`Hold::lost`].
///
/// # Examples
///
/// ```no_run
/// use recipe_mutex::{InterProcessMutex, Loss};
///
/// # async fn work(_token: i64) {}
/// # async fn f(client: zk_client::Client) -> Result<(), recipe_mutex::Error> {
/// let guard = InterProcessMutex::new(client, "/app/locks/job")?.lock().await?;
/// tokio::select! {
///     () = work(guard.fencing_token()) => guard.release().await?,
///     loss = guard.lost() => match loss {
///         // The connection dropped: the lock may still be ours, but stop acting on it.
///         Loss::Unsure => eprintln!("paused: not sure we still hold the lock"),
///         // The session is gone: so is the lock; another client may hold it now.
///         Loss::Lost => eprintln!("lost the lock"),
///         // Our node was deleted (by another client, an operator): the lock is gone.
///         Loss::Deleted => eprintln!("our lock node was deleted"),
///     },
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loss {
    /// The connection is down, or only a read-only server answers: the lock may still be ours
    /// (the session may survive), but no one can be sure until it reconnects to a read-write
    /// server. Stop acting as the holder until then.
    Unsure,
    /// The session expired, was closed, or no server answered for its whole timeout: the lock
    /// is gone, and another client may hold it.
    Lost,
    /// Our lock node is gone while the session lives: deleted by another client or an
    /// operator, or missing after a reconnect (the servers lost it). The lock is gone, and
    /// another client may hold it. (Seen through a watch on the node: within a round trip of
    /// the delete while connected, on the reconnect otherwise.)
    Deleted,
}

impl Holds {
    /// The holds of lock `path` on `client`.
    pub fn new(client: Client, path: &str) -> Arc<Self> {
        Arc::new(Self {
            client,
            path: path.to_owned(),
            table: Table::new(),
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

    /// Takes the lock: waits for a turn ([`crate::layer::turns`]), runs `acquire` (the driver) with
    /// it, and makes a guard of the node it gives. `Ok(None)`: `acquire` timed out, or the
    /// turn did not come by `deadline` and one grace (both with a server connected; else
    /// [`Error::Unavailable`]).
    ///
    /// Every call is its own participant, whatever task or handle it comes from: two calls
    /// joined in one task queue like two processes.
    pub async fn take<F, Fut>(
        self: &Arc<Self>,
        deadline: Option<tokio::time::Instant>,
        acquire: F,
    ) -> Result<Option<Hold>, Error>
    where
        F: FnOnce(Turn) -> Fut,
        Fut: Future<Output = Result<Option<Acquired>, Error>>,
    {
        let Some(turn) = crate::layer::turns::wait(&self.client, &self.path, deadline).await?
        else {
            return Ok(None);
        };
        let Some(node) = acquire(turn).await? else {
            return Ok(None);
        };
        Ok(Some(self.adopt(node)))
    }

    /// Makes a guard of `node`, a lock node of this lock that the caller holds (taken by the
    /// driver): from now on the guard owns it. The runtime this runs on is the one its release
    /// will run on, wherever the guard is dropped.
    pub fn adopt(self: &Arc<Self>, node: Acquired) -> Hold {
        let runtime = Handle::try_current().ok();
        let revocation = self
            .revocable
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let (life, watch) = watch_node(&self.client, &node, revocation);
        let meter = HoldMeter::start(&self.client, &life, &node);
        let id = self.table.hold(Kept { watch, meter });
        Hold {
            holds: self.clone(),
            id,
            life,
            node,
            nested: AtomicU32::new(0),
            runtime,
            released: false,
        }
    }

    /// Ends hold `id`: its node's delete is started (and guaranteed, on `runtime`): awaiting
    /// it waits here and gives its result, dropping it leaves it to the background.
    fn end(
        self: &Arc<Self>,
        id: u64,
        node_path: Arc<str>,
        runtime: Option<&Handle>,
    ) -> GuaranteedDelete {
        self.table.end(id, |kept| {
            if let Some(Kept { watch, mut meter }) = kept {
                meter.end();
                // The watch ends with the hold (before our own delete fires it).
                drop(watch);
            }
            // Sent now, so it keeps its place ahead of whatever the caller sends next.
            let holds = self.clone();
            driver::guaranteed_delete_on(runtime, &self.client, node_path, move |_| {
                holds.table.released(id);
            })
        })
    }

    /// Whether any guard in this process holds the lock (a hold being released counts until
    /// its node is deleted, unless the session is gone).
    pub fn is_acquired_in_this_process(&self) -> bool {
        self.table.is_acquired(|| {
            let state = self.client.state();
            state.is_terminal() || state == SessionState::Lost
        })
    }
}

/// Resolves when what `client`'s session holds can no longer be trusted: [`Loss::Unsure`]
/// when the connection drops or only a read-only server answers, [`Loss::Lost`] when the
/// session expires, is closed, or no server answered for the session timeout. At once if that
/// is already the case. (The session's part of every guard's and lease's `lost()`; the
/// node's part is [`NodeLife`].)
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

/// One lock node held: what every guard of ours is made of, and the ownership itself. A
/// mutex's [`MutexGuard`](crate::MutexGuard), a read or write guard, a cohort's guard
/// dereference to theirs; a multi-lock's guard has one per member ([`Guard::holds`](crate::Guard::holds)).
///
/// Whoever has the guard holds the lock; no task or thread identity is consulted, so two
/// futures of one task (`join!`, `select!`) cannot both hold one lock unless one was given
/// the other's guard. Code that needs the lock again while holding it (Curator's reentrant
/// `acquire()`) takes a nested hold from the guard in hand: [`Hold::reenter`], no round
/// trip. The guard is `Send` and `Sync`: it may be moved to and released from any task or
/// thread.
///
/// Dropping it releases in the background, even off the runtime (on a plain thread, after the
/// runtime's `block_on` returned): the delete then runs on the runtime the hold was taken on.
/// [`Hold::release`] releases now and reports errors. Either way the delete, once
/// started, finishes whatever happens to the caller: it is retried across connection loss
/// until done or the session ends.
///
/// [`Hold::is_valid`] and [`Hold::lost`] are advisory: they say what this process
/// knows of its session and of its node (a watch on it tells of a delete by anyone else while
/// the session lives), and a paused process can learn it late. The fence is
/// [`Hold::fencing_token`] (or [`Hold::check_op`] in a `multi`), checked by the
/// resource you protect.
///
/// # Examples
///
/// ```no_run
/// use recipe_mutex::{InterProcessMutex, Hold, Loss};
///
/// // Curator's reentrant style, explicit: the guard is passed down.
/// fn audit(guard: &Hold) {
///     let nested = guard.reenter(); // no round trip; ends when dropped
///     assert_eq!(nested.hold_count(), 2);
/// }
///
/// # async fn f(client: zk_client::Client) -> Result<(), recipe_mutex::Error> {
/// let mutex = InterProcessMutex::new(client.clone(), "/app/locks/orders")?;
/// let guard = mutex.lock().await?;
/// audit(&guard);
/// // Writes that must not land once the lock is lost: fenced, in one transaction.
/// match guard.fenced_multi(&[zk_client::Op::set_data("/app/orders", "v2", None)]).await {
///     Ok(_) => {}
///     Err(e @ recipe_mutex::Error::LockLost { .. }) => eprintln!("not written: {e}"),
///     Err(e) => eprintln!("not written: {e}"),
/// }
/// tokio::select! {
///     loss = guard.lost() => eprintln!("stop: {loss:?}"), // Unsure on disconnect, Lost on expiry
///     _ = tokio::time::sleep(std::time::Duration::from_millis(10)) => {}
/// }
/// guard.release().await?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Hold {
    holds: Arc<Holds>,
    id: u64,
    /// Whether the node was seen gone: shared by every guard of this hold (a cohort's).
    life: Arc<NodeLife>,
    node: Acquired,
    /// Nested holds alive ([`Hold::reenter`]).
    nested: AtomicU32,
    /// The runtime the hold was taken on: where its release runs, wherever the guard drops.
    runtime: Option<Handle>,
    released: bool,
}

impl Hold {
    /// The lock node's creation zxid: strictly increasing across the successive holders of
    /// the lock. Pass it to a fenced resource so that a holder that lost the lock without
    /// knowing cannot overwrite a newer holder's work. (A cohort's local holders share one
    /// node, so one czxid: their guards' own `fencing_token` adds the local sequence.)
    pub fn fencing_token(&self) -> i64 {
        self.node.czxid
    }

    /// Our lock node's path.
    pub fn node_path(&self) -> &str {
        &self.node.path
    }

    /// The node held, with its session and creation zxid (for the guards recipe crates build
    /// on a hold).
    pub fn node(&self) -> &Acquired {
        &self.node
    }

    /// The client the lock was taken on (a clone is another handle on the same session):
    /// for the work done under the lock (its reads, its fenced writes' other ops), so that a
    /// function given the guard needs nothing else.
    pub fn client(&self) -> &Client {
        self.holds.client()
    }

    /// The lock's path.
    pub fn lock_path(&self) -> &str {
        self.holds.path()
    }

    /// This hold's [`Sequencer`](crate::Sequencer): its lock node, czxid and session, for a
    /// service outside ZooKeeper to check with any client
    /// ([`Sequencer::check`](crate::Sequencer::check)) before it accepts work done under
    /// the lock. Its text form (`to_string()`) is what travels. Its kind is the node's: a
    /// mutex's, or a read or write lock's. A downgraded read guard's is refused by a check
    /// (`OtherNode`): it carries the write hold's fencing token, not its read node's czxid.
    pub fn sequencer(&self) -> crate::Sequencer {
        let name = self.node.path.rsplit('/').next().unwrap_or_default();
        self.node.sequencer(crate::NodeKind::of_node(name))
    }

    /// A nested hold of the same lock, for code that would re-enter it (Curator's reentrant
    /// `acquire()` in a callee): no round trip, counted in [`Hold::hold_count`], ended
    /// when dropped. It borrows this guard, so it cannot outlive it and the guard cannot be
    /// released before it: holds end in order.
    pub fn reenter(&self) -> NestedGuard<'_> {
        self.nested.fetch_add(1, Ordering::AcqRel);
        NestedGuard { guard: self }
    }

    /// How many holds this guard stands for: 1, plus its nested holds alive (Curator's
    /// reentrancy count).
    pub fn hold_count(&self) -> u32 {
        1 + self.nested.load(Ordering::Acquire)
    }

    /// Applies `ops` as one transaction that commits only while this lock is held: the
    /// guard's [`check_op`](Self::check_op) goes first, through the lock's client. Refused
    /// because the lock is no longer held (its node is gone, or its session expired):
    /// [`Error::LockLost`], naming the lock and the node. One of `ops` failed:
    /// `Error::Zk(zk_client::Error::MultiFailed { index, .. })`, `index` counting in `ops`.
    /// The results are `ops`' own, one each.
    pub async fn fenced_multi(
        &self,
        ops: &[zk_client::Op],
    ) -> Result<Vec<zk_client::OpResult>, Error> {
        crate::fenced::fenced_multi(&[self], ops).await
    }

    /// A `multi` op that holds only while our lock node exists: put it in a transaction with
    /// the writes that must happen under the lock, and they commit only if we still hold it.
    pub fn check_op(&self) -> zk_client::Op {
        zk_client::Op::Check {
            path: self.node.path.to_string(),
            version: None,
        }
    }

    /// Whether the lock is surely still ours as far as this process knows: the session that
    /// took it is connected to a read-write server, and its node was not seen gone. Advisory:
    /// see the type's docs.
    pub fn is_valid(&self) -> bool {
        self.life.is_valid(self.holds.client(), &self.node)
    }

    /// Resolves when the lock can no longer be trusted: [`Loss::Unsure`] when the connection
    /// drops or only a read-only server answers, [`Loss::Lost`] when the session expires, is
    /// closed, or no server answered for the session timeout, [`Loss::Deleted`] when its node
    /// is gone while the session lives (another client or an operator deleted it). Resolves
    /// at once if that is already the case. Advisory: see the type's docs.
    pub async fn lost(&self) -> Loss {
        self.life.lost(self.holds.client()).await
    }

    /// Records that the node is gone (a fenced write's check was refused): every guard of
    /// this hold is no longer valid, and a cohort does not hand it on.
    pub(crate) fn mark_gone(&self) {
        self.life.mark_gone();
    }

    /// Whether its node was seen gone while the session lived (deleted by another client or
    /// an operator; a fenced write's check refused): [`lost`](Self::lost) then says
    /// [`Loss::Deleted`]. Final: a lock node's path is never made again.
    pub fn is_gone(&self) -> bool {
        self.life.is_gone()
    }

    /// Resolves once its node is seen gone while the session lives (at once if it already
    /// was; never if it stays): the node's part of [`lost`](Self::lost) alone, for code that
    /// must act on a delete but not on a disconnect (a multi-lock waiting for its next
    /// member gives up the pass when a member it took is deleted).
    pub async fn gone(&self) {
        self.life.gone().await;
    }

    /// Releases now and reports errors. The delete, once started, finishes in the background
    /// even if this future is dropped. On a session already ended (expired, closed), returns
    /// that at once ([`Error::SessionExpired`]): the lock went with it. During an outage it
    /// waits for the session to come back (the delete is then sent) or to end; drop the future
    /// to stop waiting, the delete goes on.
    pub async fn release(self) -> Result<(), Error> {
        self.start_release().await
    }

    /// [`release`](Self::release), with the delete sent before this returns (so it keeps
    /// its place ahead of what the caller sends next); the future waits for its result.
    pub(crate) fn start_release(mut self) -> impl Future<Output = Result<(), Error>> + Send {
        self.released = true;
        // The guard is spent: its node's path (shared, no copy) goes to the delete.
        let node_path = self.node.path.clone();
        let delete = self
            .holds
            .clone()
            .end(self.id, node_path, self.runtime.as_ref());
        let client = self.holds.client().clone();
        async move { driver::finish_release(&client, delete).await }
    }

    /// The same hold in a new guard, this one spent (its drop does nothing): how a cohort
    /// passes its node from one local holder to the next. Nested holds stay with this one's
    /// borrows, which end before it can be spent.
    pub(crate) fn hand_over(&mut self) -> Hold {
        self.released = true;
        Hold {
            holds: self.holds.clone(),
            id: self.id,
            life: self.life.clone(),
            node: self.node.clone(),
            nested: AtomicU32::new(0),
            runtime: self.runtime.clone(),
            released: false,
        }
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        if !self.released {
            // Goes on in the background, on the hold's runtime.
            let node_path = self.node.path.clone();
            drop(
                self.holds
                    .clone()
                    .end(self.id, node_path, self.runtime.as_ref()),
            );
        }
    }
}

/// A nested hold, from [`Hold::reenter`]: what a reentrant `acquire()` gives in Curator,
/// made explicit. It dereferences to the guard (fencing token, `check_op`, `lost()`, and
/// `reenter` again); dropping it ends this count only. The lock stays held until the guard
/// itself is released or dropped.
#[derive(Debug)]
pub struct NestedGuard<'a> {
    guard: &'a Hold,
}

impl std::ops::Deref for NestedGuard<'_> {
    type Target = Hold;

    fn deref(&self) -> &Hold {
        self.guard
    }
}

impl Drop for NestedGuard<'_> {
    fn drop(&mut self) {
        self.guard.nested.fetch_sub(1, Ordering::AcqRel);
    }
}
