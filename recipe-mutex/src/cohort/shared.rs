//! [`SharedCohortLock`]: a shared lock (a read/write lock's read side) whose readers in this
//! process share one read node (lock cohorting), and [`SharedCohortGuard`].
//!
//! The rules (who joins which node, when a node goes, which attempt runs) are
//! [`recipes_core::cohort::SharedCohort`]'s, with no IO; this module only carries out what
//! they decide: the node's attempt is the lock's ordinary acquire, run in a task of its own;
//! the node's guard is shared by its local readers (an `Arc`), and its release is sent when
//! the last of them leaves.

use std::sync::{Arc, Mutex, PoisonError};

use recipes_core::cohort::{AttemptId, BatchId, SharedCohort, SharedEffects};
use tokio::sync::oneshot;
use tokio::time::Instant;

use super::{Attempts, CohortBound, CohortToken, Io, NodeLock, Slot};
use crate::{Error, Hold};

/// What a local reader is given: the lock, or the error of the attempt it waited on.
type Grant = Result<SharedCohortGuard, Error>;

/// A local reader waiting: where its grant goes.
type Waiter = oneshot::Sender<Grant>;

/// A process's read node, shared by its local readers.
type Node = Arc<Hold>;

/// A shared lock (a read/write lock's read side) whose readers in this process share one read
/// node: a reader arriving while the process reads joins at once, with no request, while the
/// node's batch is open. Opt-in; for the read/write lock, see `recipe_rwlock`'s
/// `CohortReadWriteLock`.
///
/// Other processes, Curator's included, see one reader: one node in the lock's queue. A batch
/// closes after [`CohortBound::handoffs`] readers joined it, once [`CohortBound::hold`] has
/// passed since its node was granted, when its session may be lost, or when
/// [`close`](Self::close) is called (a writer of this process is waiting); readers arriving
/// after that take a new node at the back of the queue, behind any writer queued meanwhile.
/// So a writer waits behind this process's batch for at most the bound's time plus the
/// longest critical section of the readers already in.
///
/// What stays as with the plain read lock: a reader holds only while its node is granted by
/// the server (no reader joins a node whose session may be lost); every reader's
/// [`lost`](Hold::lost), [`is_valid`](Hold::is_valid) and
/// [`check_op`](Hold::check_op) are the node's; a waiter dropped at any point costs
/// nothing at the server, and the last one leaving abandons the node's attempt as any acquire
/// is; a node is released when its last local reader releases (or drops) its guard.
/// What changes: readers of one node share its fencing token (the node's czxid), which
/// orders them against writers, as readers' tokens do.
#[derive(Debug, Clone)]
pub struct SharedCohortLock {
    shared: Arc<Shared>,
}

/// The cohort of one handle and its clones.
struct Shared {
    node_lock: Box<dyn NodeLock>,
    state: Mutex<State>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedCohort")
            .field("path", &self.node_lock.path())
            .finish_non_exhaustive()
    }
}

struct State {
    cohort: SharedCohort<Waiter>,
    /// The open node (the cohort's [`SharedCohort::open`]): what newcomers join.
    open: Option<(BatchId, Node)>,
    attempts: Attempts,
}

impl State {
    /// Forgets the open node once the cohort has closed it (its readers keep it): returned, to
    /// be dropped outside the lock.
    fn sync_open(&mut self) -> Option<Node> {
        match (&self.open, self.cohort.open()) {
            (Some((batch, _)), Some(open)) if *batch == open => None,
            _ => self.open.take().map(|(_, node)| node),
        }
    }
}

impl SharedCohortLock {
    /// A cohort over `lock`, a shared lock whose hold is one node (a read/write lock's read
    /// side): its readers in this process (through this handle and its clones) share one read
    /// node, within `bound`.
    pub fn over(lock: impl NodeLock, bound: CohortBound) -> Self {
        Self {
            shared: Arc::new(Shared {
                node_lock: Box::new(lock),
                state: Mutex::new(State {
                    cohort: SharedCohort::new(bound),
                    open: None,
                    attempts: Attempts::default(),
                }),
            }),
        }
    }

    /// The lock's path.
    pub fn path(&self) -> &str {
        self.shared.node_lock.path()
    }

    /// The bound on a node's batch of readers.
    pub fn bound(&self) -> CohortBound {
        self.shared.lock().cohort.bound()
    }

    /// Takes the lock (shared), waiting as long as it takes: joining the process's open read
    /// node at once if its batch allows, else with the other waiting readers of this process
    /// on its next read node. Cancel-safe.
    pub async fn lock(&self) -> Result<SharedCohortGuard, Error> {
        self.take(None).await?.ok_or(Error::TimedOut)
    }

    /// Takes the lock (shared) if it can within `timeout`: `None` if it stayed busy,
    /// [`Error::Unavailable`] if no server was connected at the deadline. A free lock is
    /// taken even with a zero timeout; `Duration::MAX` means no deadline.
    pub async fn try_lock_for(
        &self,
        timeout: std::time::Duration,
    ) -> Result<Option<SharedCohortGuard>, Error> {
        self.take(crate::layer::driver::deadline_in(timeout)).await
    }

    /// Closes the open batch: readers arriving from now on take a new node, at the back of
    /// the lock's queue (behind a writer of this process that queued meanwhile). The readers
    /// already in keep theirs.
    pub fn close(&self) {
        let open = {
            let mut state = self.shared.lock();
            state.cohort.close();
            state.sync_open()
        };
        drop(open);
    }

    /// A writer of this process starts waiting for the lock: the open batch closes, and until
    /// the returned [`WriterWait`] is dropped every batch granted opens closed, so no reader
    /// arriving meanwhile reads ahead of the writer (a read node granted meanwhile queued
    /// before the writer's node: only the readers already waiting for it read on it). The
    /// read/write lock's cohort holds one while its write side's attempt runs.
    pub fn writer_waits(&self) -> WriterWait {
        let open = {
            let mut state = self.shared.lock();
            state.cohort.writer_waits();
            state.sync_open()
        };
        drop(open);
        WriterWait {
            shared: self.shared.clone(),
        }
    }

    /// Local readers waiting now.
    pub fn waiting(&self) -> usize {
        self.shared.lock().cohort.waiting()
    }

    /// Local readers holding now, over every node of the process.
    pub fn readers(&self) -> u64 {
        self.shared.lock().cohort.readers()
    }

    /// Whether a holder in this process holds the lock (through a cohort or the lock it was
    /// made from).
    pub fn is_acquired_in_this_process(&self) -> bool {
        self.shared.node_lock.is_acquired_in_this_process()
    }

    /// The lock's queue as the server has it: each of this process's read nodes is one
    /// participant.
    pub async fn queue(&self) -> Result<Vec<crate::Participant>, Error> {
        self.shared.node_lock.queue().await
    }

    async fn take(&self, deadline: Option<Instant>) -> Result<Option<SharedCohortGuard>, Error> {
        let (tx, rx) = oneshot::channel();
        let now = crate::layer::driver::now();
        let (id, effects, open, closed) = {
            let mut state = self.shared.lock();
            let open = state.open.clone();
            let valid = open.as_ref().is_some_and(|(_, node)| node.is_valid());
            let (id, effects) = state.cohort.arrive(tx, valid, now);
            let closed = state.sync_open();
            (id, effects, open, closed)
        };
        drop(closed);
        let shared = self.shared.clone();
        let slot = Slot::new(rx, move || {
            let effects = shared.lock().cohort.leave(id);
            drop(shared.carry_out(effects, None, None));
        });
        drop(self.shared.carry_out(effects, open, None));
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
        let (effects, node, error, closed) = {
            let mut state = self.lock();
            state.attempts.done(attempt);
            match taken {
                Ok(Some(node)) => {
                    let node = Arc::new(node);
                    let effects = state.cohort.attempt_held(attempt, now);
                    let closed = state.sync_open();
                    if state.cohort.open() == Some(attempt) {
                        state.open = Some((attempt, node.clone()));
                    }
                    (effects, Some((attempt, node)), None, closed)
                }
                Ok(None) => (
                    state.cohort.attempt_failed(attempt),
                    None,
                    Some(Error::TimedOut),
                    None,
                ),
                Err(e) => (state.cohort.attempt_failed(attempt), None, Some(e), None),
            }
        };
        drop(closed);
        // A node nobody takes is released here, in the background.
        drop(self.carry_out(effects, node, error.as_ref()));
    }
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Carries out `effects` (outside the state's lock) with `node`, the node the event came
    /// with (an attempt's, or the open one a newcomer joins): the grants, the failures (with
    /// `error`), the node's release (its future when this was its last reference; dropped,
    /// the delete goes on in the background), the abort, the new attempt.
    fn carry_out(
        self: &Arc<Self>,
        effects: SharedEffects<Waiter>,
        node: Option<(BatchId, Node)>,
        error: Option<&Error>,
    ) -> Option<impl std::future::Future<Output = Result<(), Error>> + Send + use<>> {
        for (waiter, batch, local) in effects.grant {
            let Some((_, node)) = node.as_ref().filter(|(b, _)| *b == batch) else {
                // Not reachable: a grant comes with its node. Nobody holds; the waiter
                // sees the cohort gone.
                continue;
            };
            let guard = SharedCohortGuard {
                node: node.clone(),
                batch,
                local,
                shared: self.clone(),
                passed: false,
            };
            // A waiter gone since it was chosen: the guard comes back and is dropped, which
            // releases its share.
            if let Err(Ok(guard)) = waiter.send(Ok(guard)) {
                drop(guard);
            }
        }
        for waiter in effects.fail {
            let e = error
                .cloned()
                .unwrap_or(Error::Zk(zk_client::Error::Closed));
            let _ = waiter.send(Err(e));
        }
        let released = match (effects.release_node, node) {
            (Some(batch), Some((b, node))) if b == batch => {
                Arc::try_unwrap(node).ok().map(Hold::start_release)
            }
            _ => None,
        };
        if let Some(attempt) = effects.abort {
            self.lock().attempts.abort(attempt);
        }
        if let Some(attempt) = effects.start {
            self.start(attempt);
        }
        released
    }

    /// A reader of node `batch` leaves, giving back its share `node`: the node's release's
    /// future when this was its last reader.
    fn pass(
        self: &Arc<Self>,
        node: Node,
        batch: BatchId,
    ) -> Option<impl std::future::Future<Output = Result<(), Error>> + Send + use<>> {
        let (effects, closed) = {
            let mut state = self.lock();
            let effects = state.cohort.release(batch);
            (effects, state.sync_open())
        };
        // The open node's own reference goes first, so the last reader's is the last one.
        drop(closed);
        if crate::plant::active(crate::plant::Plant::CohortEarlyRelease)
            && effects.release_node.is_none()
        {
            // Sent now; its reply is not awaited.
            drop(self.node_lock.client().delete(node.node_path(), None));
        }
        self.carry_out(effects, Some((batch, node)), None)
    }
}

/// A writer of this process waiting, from [`SharedCohortLock::writer_waits`]: while it lives,
/// no read batch is open to newcomers. Dropped when the writer holds, gives up or fails.
#[must_use = "dropping it at once ends the writer's wait"]
pub struct WriterWait {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for WriterWait {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriterWait").finish_non_exhaustive()
    }
}

impl Drop for WriterWait {
    fn drop(&mut self) {
        self.shared.lock().cohort.writer_done();
    }
}

/// Proof of reading under a [`SharedCohortLock`]: a share of the process's read node, whose
/// [`Hold`] it dereferences to (fencing token, `check_op`, `fenced_multi`, `lost`,
/// `is_valid`, `reenter`). The node is released when its last local reader releases or drops
/// its guard.
#[derive(Debug)]
pub struct SharedCohortGuard {
    node: Node,
    batch: BatchId,
    local: u64,
    shared: Arc<Shared>,
    /// Passed on already (by `release`).
    passed: bool,
}

impl SharedCohortGuard {
    /// The node's fencing token with this reader's place among the node's local readers
    /// (it stands in for the node guard's `i64` [`Hold::fencing_token`], which the
    /// node's readers share): ordered against the lock's writers' tokens by the czxid.
    pub fn fencing_token(&self) -> CohortToken {
        CohortToken {
            czxid: self.node.fencing_token(),
            local: self.local,
        }
    }

    /// This reader's place among the node's local readers, from 1.
    pub fn local_sequence(&self) -> u64 {
        self.local
    }

    /// Releases this reader's share: when it is the node's last, the node is deleted (and
    /// this waits for it, reporting errors, as [`Hold::release`]).
    pub async fn release(mut self) -> Result<(), Error> {
        self.passed = true;
        let (node, batch, shared) = (self.node.clone(), self.batch, self.shared.clone());
        // This guard's own reference goes first, so that the last reader's is the last one.
        drop(self);
        match shared.pass(node, batch) {
            Some(released) => released.await,
            None => Ok(()),
        }
    }
}

impl std::ops::Deref for SharedCohortGuard {
    type Target = Hold;

    fn deref(&self) -> &Hold {
        &self.node
    }
}

impl Drop for SharedCohortGuard {
    fn drop(&mut self) {
        if !self.passed {
            // The node's last reference (this guard's field, dropped after this) releases it
            // in the background.
            drop(self.shared.pass(self.node.clone(), self.batch));
        }
    }
}

super::guard_and_lock!(SharedCohortLock, SharedCohortGuard);
