//! Lock cohorting (Dice, Marathe and Shavit, "Lock Cohorting", PPoPP 2012), opt-in: the
//! waiters of this process on one lock share one place in the lock's queue, so that while
//! the process holds, the lock passes between its tasks with no request, within a bound
//! after which other processes get their turn.
//!
//! Two sides, over any lock whose hold is one node ([`NodeLock`]): [`CohortMutex`], where one
//! local holder at a time holds the process's node (a mutex, a write lock), and
//! [`SharedCohortLock`], where the process's readers join one read node. The rules are
//! [`recipes_core::cohort`]'s, with no IO; these modules only carry out what they decide.

/// Implements [`Guard`](crate::Guard) for a cohort's guard `$guard` (through its `Deref` to
/// the node's [`Hold`], its `local` and its own `release`) and [`Lock`](crate::Lock) for
/// its lock `$lock` (through its `shared.node_lock` and its own `take`).
macro_rules! guard_and_lock {
    ($lock:ty, $guard:ident) => {
        impl crate::Guard for $guard {
            fn holds(&self) -> Vec<&Hold> {
                vec![std::ops::Deref::deref(self)]
            }

            fn local_sequence(&self) -> u64 {
                self.local
            }

            fn release(self: Box<Self>) -> crate::LockFuture<'static, ()> {
                Box::pin($guard::release(*self))
            }
        }

        impl crate::Lock for $lock {
            fn path(&self) -> &str {
                self.shared.node_lock.path()
            }

            fn kind(&self) -> crate::LockKind {
                self.shared.node_lock.cohort_kind()
            }

            fn lock_until(
                &self,
                deadline: Option<Instant>,
            ) -> crate::LockFuture<'_, Option<Box<dyn crate::Guard>>> {
                Box::pin(async move {
                    let taken = self.take(deadline).await?;
                    Ok(taken.map(|g| Box::new(g) as Box<dyn crate::Guard>))
                })
            }

            fn is_acquired_in_this_process(&self) -> bool {
                self.shared.node_lock.is_acquired_in_this_process()
            }
        }
    };
}
use guard_and_lock;

mod exclusive;
mod shared;

use std::sync::Arc;

use recipes_core::cohort::AttemptId;
use tokio::sync::oneshot;
use tokio::task::AbortHandle;
use tokio::time::Instant;
use zk_client::Client;

pub use exclusive::{CohortGuard, CohortMutex};
pub use recipes_core::cohort::Bound as CohortBound;
pub use shared::{SharedCohortGuard, SharedCohortLock, WriterWait};

use crate::{Error, Hold, InterProcessMutex, LockFuture, Participant};

/// A lock whose hold is one node of the process's, granted by the server: what a cohort
/// queues on ([`CohortMutex::over`], [`SharedCohortLock::over`]). Implemented by
/// [`InterProcessMutex`] and by the read/write lock's two sides.
pub trait NodeLock: std::fmt::Debug + Send + Sync + 'static {
    /// The session the lock's nodes belong to.
    fn client(&self) -> &Client;

    /// The lock's path.
    fn path(&self) -> &str;

    /// One ordinary acquisition, its own participant: the node's guard, `None` if the
    /// deadline passed first.
    fn take_node(&self, deadline: Option<Instant>) -> LockFuture<'_, Option<Hold>>;

    /// The lock's queue as the server has it.
    fn queue(&self) -> LockFuture<'_, Vec<Participant>>;

    /// Whether a guard of this lock (a node's) is held in this process.
    fn is_acquired_in_this_process(&self) -> bool;

    /// What [`Lock::kind`](crate::Lock::kind) says of a cohort over this lock.
    fn cohort_kind(&self) -> crate::LockKind;
}

impl NodeLock for InterProcessMutex {
    fn client(&self) -> &Client {
        InterProcessMutex::client(self)
    }

    fn path(&self) -> &str {
        InterProcessMutex::path(self)
    }

    fn take_node(&self, deadline: Option<Instant>) -> LockFuture<'_, Option<Hold>> {
        Box::pin(self.take(deadline))
    }

    fn queue(&self) -> LockFuture<'_, Vec<Participant>> {
        Box::pin(InterProcessMutex::queue(self))
    }

    fn is_acquired_in_this_process(&self) -> bool {
        InterProcessMutex::is_acquired_in_this_process(self)
    }

    fn cohort_kind(&self) -> crate::LockKind {
        crate::LockKind::CohortMutex
    }
}

/// A cohort's fencing token: the node's czxid and the holder's place among the node's local
/// holders (from 1). Ordered by both, it strictly increases across all holders of an
/// exclusive lock; a shared holder's orders it against the lock's exclusive holders.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CohortToken {
    /// The node's creation zxid: what [`Hold::fencing_token`] gives.
    pub czxid: i64,
    /// The holder's place among the node's local holders, from 1.
    pub local: u64,
}

/// A cohort's attempts: the one under way (its task, to abort when nobody waits for it any
/// more).
#[derive(Default)]
struct Attempts {
    task: Option<(AttemptId, AbortHandle)>,
}

impl Attempts {
    /// Aborts attempt `attempt`'s task (its cleanup deletes whatever it created).
    fn abort(&mut self, attempt: AttemptId) {
        match self.task.take() {
            Some((a, task)) if a == attempt => task.abort(),
            other => self.task = other,
        }
    }

    /// Attempt `attempt`'s task has ended.
    fn done(&mut self, attempt: AttemptId) {
        if self.task.as_ref().is_some_and(|(a, _)| *a == attempt) {
            self.task = None;
        }
    }
}

/// What the two sides' IO layers share: how a node's attempt is started.
trait Io: Send + Sync + Sized + 'static {
    /// The lock the attempts take.
    fn node_lock(&self) -> &dyn NodeLock;

    /// Runs `f` on the attempts and the cohort's current attempt, under the state's lock.
    fn with_attempts<R>(&self, f: impl FnOnce(&mut Attempts, Option<AttemptId>) -> R) -> R;

    /// Attempt `attempt` ended with `taken`.
    fn attempt_done(self: &Arc<Self>, attempt: AttemptId, taken: Result<Option<Hold>, Error>);

    /// Starts attempt `attempt` in a task of its own, on the runtime the lock's client runs
    /// on (where its waiters' requests are served): the lock's ordinary acquire, with no
    /// deadline (each waiter keeps its own). Never on the runtime of whoever happens to start
    /// it (a guard dropped inside a short-lived runtime's `block_on`), which may end before
    /// the attempt does. Dropped before it reports (the client's runtime shut down, it
    /// panicked), it reports [`Error::AttemptDropped`], so no waiter is left waiting on it.
    fn start(self: &Arc<Self>, attempt: AttemptId) {
        let runtime = self.node_lock().client().runtime().clone();
        let mut report = Report {
            io: Some(self.clone()),
            attempt,
        };
        let task = runtime.spawn(async move {
            let Some(io) = report.io.clone() else { return };
            let taken = io.node_lock().take_node(None).await;
            report.disarm();
            io.attempt_done(attempt, taken);
        });
        self.with_attempts(|a, current| match current == Some(attempt) {
            true => a.task = Some((attempt, task.abort_handle())),
            // Everyone left (or it ended) before it could be recorded.
            false => task.abort(),
        });
    }
}

/// An attempt's report when it is dropped before it could make it (its task's runtime shut
/// down, or it panicked): its waiters are told. Nothing for an attempt already aborted (the
/// cohort has moved on from it).
struct Report<T: Io> {
    io: Option<Arc<T>>,
    attempt: AttemptId,
}

impl<T: Io> Report<T> {
    /// The attempt reports itself: nothing to do when dropped.
    fn disarm(&mut self) {
        self.io = None;
    }
}

impl<T: Io> Drop for Report<T> {
    fn drop(&mut self) {
        if let Some(io) = self.io.take() {
            io.attempt_done(self.attempt, Err(Error::AttemptDropped));
        }
    }
}

/// A local waiter's place in a cohort: where its answer comes, and how it leaves the queue
/// (run when it is dropped before an answer: cancelled, or timed out).
struct Slot<G> {
    rx: oneshot::Receiver<Result<G, Error>>,
    leave: Option<Box<dyn FnOnce() + Send>>,
}

impl<G> Slot<G> {
    fn new(rx: oneshot::Receiver<Result<G, Error>>, leave: impl FnOnce() + Send + 'static) -> Self {
        Self {
            rx,
            leave: Some(Box::new(leave)),
        }
    }

    fn leave(&mut self) {
        if let Some(leave) = self.leave.take() {
            leave();
        }
    }

    /// Waits for the answer until `deadline`. Past it, while `client` is connected and the
    /// process's attempt is under way (`attempting`), the attempt's replies get one grace, as
    /// an ordinary acquire's do (so a free lock is taken even with a zero timeout); then the
    /// waiter leaves: `None` if the lock stayed busy, [`Error::Unavailable`] if no server was
    /// connected.
    async fn wait(
        mut self,
        deadline: Option<Instant>,
        client: &Client,
        attempting: impl Fn() -> bool,
    ) -> Result<Option<G>, Error> {
        let sleep = crate::layer::driver::sleep_until(deadline);
        tokio::pin!(sleep);
        let got = tokio::select! {
            biased;
            got = &mut self.rx => got,
            () = &mut sleep => {
                if let (true, Some(deadline)) = (attempting(), deadline) {
                    if client.state() == zk_client::SessionState::Connected {
                        let grace = crate::layer::driver::with_grace(deadline);
                        if let Ok(got) = tokio::time::timeout_at(grace, &mut self.rx).await {
                            self.leave = None;
                            return answer(got);
                        }
                    }
                }
                // Out of the queue first: a grant sent from now on finds nobody and is
                // passed on; one that came in the meantime is taken.
                self.leave();
                match self.rx.try_recv() {
                    Ok(got) => Ok(got),
                    Err(_) => {
                        return match client.outage() {
                            Some(outage) => Err(Error::Unavailable(outage)),
                            None => Ok(None),
                        };
                    }
                }
            }
        };
        self.leave = None;
        answer(got)
    }
}

impl<G> Drop for Slot<G> {
    fn drop(&mut self) {
        // Out of the queue, then the channel goes (after this): a guard already in it is
        // dropped with it, which passes the lock on.
        self.leave();
    }
}

/// Turns a waiter's channel result into what it returns.
fn answer<G>(got: Result<Result<G, Error>, oneshot::error::RecvError>) -> Result<Option<G>, Error> {
    match got {
        Ok(Ok(guard)) => Ok(Some(guard)),
        Ok(Err(e)) => Err(e),
        // The cohort dropped its waiters: only when it is itself gone.
        Err(_) => Err(Error::Zk(zk_client::Error::Closed)),
    }
}
