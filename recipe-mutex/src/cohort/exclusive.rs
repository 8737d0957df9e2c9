//! [`CohortMutex`]: an [`InterProcessMutex`] (or any lock whose hold is one node, such as a
//! read/write lock's write side) whose waiters in this process share one place in the lock's
//! queue (lock cohorting), and [`CohortGuard`].
//!
//! The rules (who is granted, when the node goes, which attempt runs) are
//! [`recipes_core::cohort`]'s, with no IO; this module only carries out what they decide: the
//! node's attempt is the lock's ordinary acquire, run in a task of its own so that no
//! waiter's cancellation cancels it for the others; a grant is the node's guard moved to the
//! next waiter through a one-shot channel.

use std::sync::{Arc, Mutex, PoisonError};

use recipes_core::cohort::{AttemptId, Cohort, Effects};
use tokio::sync::oneshot;
use tokio::time::Instant;

use super::{Attempts, CohortBound, CohortToken, Io, NodeLock, Slot};
use crate::{Error, Hold, InterProcessMutex};

/// What a local waiter is given: the lock, or the error of the attempt it waited on.
type Grant = Result<CohortGuard, Error>;

/// A local waiter: where its grant goes.
type Waiter = oneshot::Sender<Grant>;

/// An [`InterProcessMutex`] whose waiters in this process queue behind one lock node of
/// theirs (lock cohorting), so that while the process holds the lock it passes from task to
/// task with no request at all. Opt-in: [`InterProcessMutex::cohort`].
///
/// Other processes, Curator's included, see one participant: one node in the lock's queue
/// (with this handle's data), granted in the server's order. When its holder releases and
/// another task of this process waits, the lock is handed to that task in microseconds, the
/// node staying; after [`CohortBound::handoffs`] hand-offs, or once [`CohortBound::hold`] has
/// passed since the node was granted, the node is released instead, and the tasks still
/// waiting take a new node at the back of the queue. So no other process waits behind this
/// one's batch for more than the bound's worth of hand-offs (plus the last holder's own
/// critical section); in exchange for that latency, contention inside the process costs no
/// round trip, and a hand-off's listing grows with the processes waiting, not their tasks.
///
/// What stays as with [`InterProcessMutex`]:
/// - Exclusion: at most one holder in the process, and it holds only while the node is
///   granted by the server. A hand-off happens only while the session that holds the node is
///   connected; once the session may be lost, the node is released and the waiters queue
///   again. Every local holder's [`lost`](Hold::lost), [`is_valid`](Hold::is_valid)
///   and [`check_op`](Hold::check_op) mean what they mean for a plain guard: they are
///   the node's. A node seen gone (its watch saw another client delete it, or a fenced write
///   was refused with [`Error::LockLost`]) is never handed on: the holder's `lost()` says
///   [`Loss::Deleted`](crate::Loss::Deleted), and when it releases, the waiters take a new
///   node.
/// - Cancellation: a local waiter dropped (or timed out) at any point costs nothing at the
///   server; when the last one leaves, the node's attempt is abandoned as any acquire is (its
///   node deleted).
/// - Timed acquires: [`try_lock_for`](Self::try_lock_for) returns `None` when the lock stayed
///   busy, [`Error::Unavailable`] when no server was connected at the deadline.
///
/// What changes:
/// - Fairness, within the process: local waiters are served in arrival order among
///   themselves, ahead of other processes' waiters up to the bound.
/// - Fencing: local holders of one node share the node, so its czxid alone (the node guard's
///   `i64` [`Hold::fencing_token`]) does not tell them apart.
///   [`CohortGuard::fencing_token`] is the pair `(czxid, local sequence)`: it strictly
///   increases across all holders, local ones included, and is what a resource outside
///   ZooKeeper fences on (compare both parts, czxid first). For writes through ZooKeeper,
///   [`fenced_multi`](Hold::fenced_multi) (or a `multi` with
///   [`check_op`](Hold::check_op)) guards that the node, so the process's hold, still
///   stands; it cannot tell one local holder from the next, so send it while you hold the
///   guard (as `fenced_multi`, which borrows the guard, does) and never keep a check op past
///   the guard's release: the check passes as long as the node stands, for the local
///   successor's hold too. A holder's requests are sent while it holds, its successor's only
///   after, on the same session, and ZooKeeper applies a session's requests in order.
/// - Revocation: not offered (a revoke would have to cut the whole batch).
///
/// Use it when many tasks of one process contend for a lock that other processes use too (a
/// worker pool serializing on a shared resource); keep [`InterProcessMutex`] when each task
/// should queue like a process (Curator's exact behaviour).
///
/// # Examples
///
/// ```no_run
/// use recipe_mutex::{CohortBound, InterProcessMutex};
///
/// # async fn f(client: zk_client::Client) -> Result<(), recipe_mutex::Error> {
/// let mutex = InterProcessMutex::new(client, "/app/locks/ledger")?.cohort(CohortBound::default());
/// let mut tasks = Vec::new();
/// for _ in 0..8 {
///     let mutex = mutex.clone(); // clones share the cohort
///     tasks.push(tokio::spawn(async move {
///         let guard = mutex.lock().await?;
///         println!("token {:?}", guard.fencing_token()); // (czxid, local sequence)
///         // Fenced while held: committed only if the process's node still stands.
///         guard.fenced_multi(&[zk_client::Op::set_data("/app/ledger", "v", None)]).await?;
///         guard.release().await
///     }));
/// }
/// for task in tasks {
///     task.await.expect("task")?;
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct CohortMutex {
    shared: Arc<Shared>,
}

/// The cohort of one handle and its clones.
struct Shared {
    node_lock: Box<dyn NodeLock>,
    state: Mutex<State>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cohort")
            .field("path", &self.node_lock.path())
            .finish_non_exhaustive()
    }
}

struct State {
    cohort: Cohort<Waiter>,
    attempts: Attempts,
}

impl InterProcessMutex {
    /// This mutex with lock cohorting: its waiters in this process (through this handle and
    /// its clones) share one place in the lock's queue, within `bound`. See [`CohortMutex`].
    pub fn cohort(self, bound: CohortBound) -> CohortMutex {
        CohortMutex::over(self, bound)
    }
}

impl CohortMutex {
    /// A cohort over `lock`, any lock whose hold is one node (an [`InterProcessMutex`], a
    /// read/write lock's write side): its waiters in this process (through this handle and
    /// its clones) share one place in the lock's queue, within `bound`.
    pub fn over(lock: impl NodeLock, bound: CohortBound) -> Self {
        CohortMutex {
            shared: Arc::new(Shared {
                node_lock: Box::new(lock),
                state: Mutex::new(State {
                    cohort: Cohort::new(bound),
                    attempts: Attempts::default(),
                }),
            }),
        }
    }
}

impl CohortMutex {
    /// The lock's path.
    pub fn path(&self) -> &str {
        self.shared.node_lock.path()
    }

    /// The bound on a batch of local holders.
    pub fn bound(&self) -> CohortBound {
        self.shared.lock().cohort.bound()
    }

    /// Takes the lock, waiting as long as it takes (as [`InterProcessMutex::lock`]): behind
    /// the other tasks of this process that wait on this cohort, and with them behind other
    /// processes in the server's order. Cancel-safe.
    pub async fn lock(&self) -> Result<CohortGuard, Error> {
        self.take(None).await?.ok_or(Error::TimedOut)
    }

    /// Takes the lock if it can within `timeout` (as [`InterProcessMutex::try_lock_for`]):
    /// `None` if it stayed busy, [`Error::Unavailable`] if no server was connected at the
    /// deadline. A free lock is taken even with a zero timeout (the process's attempt gets
    /// one [`DEADLINE_GRACE`](recipes_core::DEADLINE_GRACE) past the deadline while
    /// connected); it returns within that grace. `Duration::MAX` means no deadline.
    pub async fn try_lock_for(
        &self,
        timeout: std::time::Duration,
    ) -> Result<Option<CohortGuard>, Error> {
        self.take(crate::layer::driver::deadline_in(timeout)).await
    }

    /// Whether a holder in this process holds the lock (through this cohort, or the mutex
    /// handle it was made from).
    pub fn is_acquired_in_this_process(&self) -> bool {
        self.shared.node_lock.is_acquired_in_this_process()
    }

    /// The lock's queue as the server has it (see [`InterProcessMutex::queue`]): this
    /// process's cohort is one participant.
    pub async fn queue(&self) -> Result<Vec<crate::Participant>, Error> {
        self.shared.node_lock.queue().await
    }

    /// Local tasks waiting on this cohort now.
    pub fn waiting(&self) -> usize {
        self.shared.lock().cohort.waiting()
    }

    async fn take(&self, deadline: Option<Instant>) -> Result<Option<CohortGuard>, Error> {
        let (tx, rx) = oneshot::channel();
        let (id, effects) = {
            let mut state = self.shared.lock();
            state.cohort.arrive(tx)
        };
        let shared = self.shared.clone();
        let slot = Slot::new(rx, move || {
            let effects = shared.lock().cohort.leave(id);
            shared.carry_out(effects, None, None);
        });
        self.shared.carry_out(effects, None, None);
        let attempting = || self.shared.lock().cohort.attempt().is_some();
        slot.wait(deadline, self.shared.node_lock.client(), attempting)
            .await
    }
}

impl Io for Shared {
    fn node_lock(&self) -> &dyn NodeLock {
        &*self.node_lock
    }

    fn with_attempts<R>(&self, f: impl FnOnce(&mut Attempts, Option<AttemptId>) -> R) -> R {
        let mut state = self.lock();
        let current = state.cohort.attempt();
        f(&mut state.attempts, current)
    }

    fn attempt_done(self: &Arc<Self>, attempt: AttemptId, taken: Result<Option<Hold>, Error>) {
        let now = crate::layer::driver::now();
        let (effects, node, error) = {
            let mut state = self.lock();
            state.attempts.done(attempt);
            match taken {
                Ok(Some(node)) => (state.cohort.attempt_held(attempt, now), Some(node), None),
                Ok(None) => (
                    state.cohort.attempt_failed(attempt),
                    None,
                    Some(Error::TimedOut),
                ),
                Err(e) => (state.cohort.attempt_failed(attempt), None, Some(e)),
            }
        };
        // A node nobody takes is released here, in the background.
        drop(self.carry_out(effects, node, error.as_ref()));
    }
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Carries out `effects` (outside the state's lock) with `node`, the node's guard when
    /// the event came with it (an attempt that held, a holder releasing): the grant, the
    /// failures (with `error`), the node's release (its future, when `node` was released;
    /// dropped, the delete goes on in the background), the abort, the new attempt.
    fn carry_out(
        self: &Arc<Self>,
        effects: Effects<Waiter>,
        mut node: Option<Hold>,
        error: Option<&Error>,
    ) -> Option<impl std::future::Future<Output = Result<(), Error>> + Send + use<>> {
        if let Some((waiter, local)) = effects.grant {
            if let Some(mut node) = node.take() {
                if crate::plant::active(crate::plant::Plant::CohortDoubleGrant) && local == 1 {
                    self.plant_double_grant(&mut node);
                }
                let guard = CohortGuard {
                    node,
                    local,
                    shared: self.clone(),
                    passed: false,
                };
                // A waiter gone since it was chosen: the guard comes back and is dropped,
                // which passes the lock on.
                if let Err(Ok(guard)) = waiter.send(Ok(guard)) {
                    drop(guard);
                }
            }
        }
        for waiter in effects.fail {
            let e = error
                .cloned()
                .unwrap_or(Error::Zk(zk_client::Error::Closed));
            let _ = waiter.send(Err(e));
        }
        // Sent before a new attempt's create, so that node queues behind the release.
        let released = match (effects.release_node, node) {
            (true, Some(node)) => Some(node.start_release()),
            (_, node) => {
                drop(node);
                None
            }
        };
        if let Some(attempt) = effects.abort {
            self.lock().attempts.abort(attempt);
        }
        if let Some(attempt) = effects.start {
            self.start(attempt);
        }
        released
    }

    /// The planted double grant: the holder just granted is told to the machine as released
    /// at once, so the machine hands the node on to the next waiter, now, while the first
    /// still holds it. Only when that hand-off is sure (waiters, and a bound that allows one).
    fn plant_double_grant(self: &Arc<Self>, node: &mut Hold) {
        let next = {
            let mut state = self.lock();
            let bound = state.cohort.bound();
            if state.cohort.waiting() == 0 || bound.handoffs == 0 || bound.hold.is_zero() {
                return;
            }
            state
                .cohort
                .release(true, crate::layer::driver::now())
                .grant
        };
        if let Some((waiter, local)) = next {
            let guard = CohortGuard {
                node: node.hand_over(),
                local,
                shared: self.clone(),
                passed: false,
            };
            if let Err(Ok(guard)) = waiter.send(Ok(guard)) {
                drop(guard);
            }
        }
    }
}

/// Proof of holding a [`CohortMutex`]: a [`Hold`] of the process's node (it dereferences
/// to it: fencing token, `check_op`, `fenced_multi`, `lost`, `is_valid`, `reenter`), held by
/// this task until released or dropped, when the lock passes to the next local waiter or
/// the node is released.
#[derive(Debug)]
pub struct CohortGuard {
    node: Hold,
    local: u64,
    shared: Arc<Shared>,
    /// Passed on already (by `release`).
    passed: bool,
}

impl CohortGuard {
    /// This holder's fencing token: the node's czxid with the local sequence, strictly
    /// increasing across every holder of the lock, local ones included (see
    /// [`CohortMutex`]). It stands in for the node guard's `i64`
    /// [`Hold::fencing_token`], which successive local holders share: a resource
    /// outside ZooKeeper fences on this pair (both parts compared, czxid first).
    pub fn fencing_token(&self) -> CohortToken {
        CohortToken {
            czxid: self.node.fencing_token(),
            local: self.local,
        }
    }

    /// This holder's place among the node's local holders, from 1 (the holder the server
    /// granted the node to).
    pub fn local_sequence(&self) -> u64 {
        self.local
    }

    /// Releases: to the next local waiter (no request) while the bound allows and the
    /// session is connected, else the node is deleted (and this waits for it, reporting
    /// errors, as [`Hold::release`]).
    pub async fn release(mut self) -> Result<(), Error> {
        self.passed = true;
        let node = self.node.hand_over();
        match self.shared.pass(node, self.local) {
            Some(released) => released.await,
            None => Ok(()),
        }
    }
}

impl Shared {
    /// The holder of `node`, `local`th of its batch, leaves: the next local waiter gets it,
    /// or it is released (its release's future), ending the batch after `local - 1` local
    /// hand-offs.
    fn pass(
        self: &Arc<Self>,
        node: Hold,
        local: u64,
    ) -> Option<impl std::future::Future<Output = Result<(), Error>> + Send + use<>> {
        let valid = node.is_valid();
        let now = crate::layer::driver::now();
        let effects = self.lock().cohort.release(valid, now);
        if effects.release_node {
            crate::metrics::cohort_batch_ended(
                crate::layer::driver::RecipeKind::of_node(node.node_path()),
                local.saturating_sub(1),
            );
        }
        self.carry_out(effects, Some(node), None)
    }
}

impl std::ops::Deref for CohortGuard {
    type Target = Hold;

    fn deref(&self) -> &Hold {
        &self.node
    }
}

impl Drop for CohortGuard {
    fn drop(&mut self) {
        if !self.passed {
            let node = self.node.hand_over();
            drop(self.shared.pass(node, self.local));
        }
    }
}

super::guard_and_lock!(CohortMutex, CohortGuard);
