//! [`Lock`] and [`Guard`]: what every lock of ours and every guard offers, so that a
//! multi-lock (or any code generic over locks) can take a mutex, a read lock, a write lock, a
//! semaphore mutex or another multi-lock alike.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::{Error, Hold, Loss};

/// Which kind of lock a [`Lock`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum LockKind {
    /// An [`InterProcessMutex`](crate::InterProcessMutex) (or its cohort).
    Mutex,
    /// The read side of a read/write lock (`recipe-rwlock`).
    Read,
    /// The write side of a read/write lock (`recipe-rwlock`).
    Write,
    /// A semaphore mutex (`recipe-semaphore`'s `InterProcessSemaphoreMutex`).
    SemaphoreMutex,
    /// A multi-lock (`recipe-multilock`).
    Multi,
    /// A [`CohortMutex`](crate::CohortMutex): the tasks of a process share one place in a
    /// mutex's queue.
    CohortMutex,
    /// A read/write lock's read side, cohorted (`recipe-rwlock`'s `CohortReadLock`).
    CohortRead,
    /// A read/write lock's write side, cohorted (`recipe-rwlock`'s `CohortWriteLock`).
    CohortWrite,
}

impl LockKind {
    /// Its name: `mutex`, `read`, `write`, `semaphore-mutex`, `multi`, `cohort mutex`,
    /// `cohort read` or `cohort write`.
    pub fn as_str(self) -> &'static str {
        match self {
            LockKind::Mutex => "mutex",
            LockKind::Read => "read",
            LockKind::Write => "write",
            LockKind::SemaphoreMutex => "semaphore-mutex",
            LockKind::Multi => "multi",
            LockKind::CohortMutex => "cohort mutex",
            LockKind::CohortRead => "cohort read",
            LockKind::CohortWrite => "cohort write",
        }
    }
}

impl LockKind {
    /// Whether it is a read/write lock's read side (cohorted or not).
    pub fn is_read(self) -> bool {
        matches!(self, LockKind::Read | LockKind::CohortRead)
    }

    /// Whether it is a read/write lock's write side (cohorted or not).
    pub fn is_write(self) -> bool {
        matches!(self, LockKind::Write | LockKind::CohortWrite)
    }
}

impl std::fmt::Display for LockKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A boxed future, as the traits' methods return.
pub type LockFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, Error>> + Send + 'a>>;

/// A lock of ours, whatever its kind. Implemented by `InterProcessMutex`, the read/write lock's
/// `ReadLock` and `WriteLock`, `InterProcessSemaphoreMutex` and `InterProcessMultiLock`;
/// object-safe, so a multi-lock holds `Arc<dyn Lock>`s, multi-locks among them (Curator's
/// multi-lock is an `InterProcessLock` too).
///
/// Every call to [`Lock::lock_until`] is its own participant: it queues like another
/// process's, whatever task or handle it comes from, and its guard is the ownership.
///
/// # Examples
///
/// ```no_run
/// use std::sync::Arc;
/// use std::time::Duration;
/// use recipe_mutex::{InterProcessMutex, Lock};
///
/// // Code generic over locks: any of ours, a multi-lock included.
/// async fn with_lock(lock: &dyn Lock) -> Result<(), recipe_mutex::Error> {
///     let Some(guard) = lock.try_lock_for(Duration::from_secs(1)).await? else {
///         return Ok(()); // busy
///     };
///     println!("{} holds, tokens {:?}", lock.path(), guard.fencing_tokens());
///     guard.release().await
/// }
///
/// # async fn f(client: zk_client::Client) -> Result<(), recipe_mutex::Error> {
/// let mutex: Arc<dyn Lock> = Arc::new(InterProcessMutex::new(client, "/app/locks/a")?);
/// with_lock(mutex.as_ref()).await
/// # }
/// ```
pub trait Lock: Send + Sync + std::fmt::Debug {
    /// The lock's path (a multi-lock's: its first member's).
    fn path(&self) -> &str;

    /// The kind of lock.
    fn kind(&self) -> LockKind;

    /// Takes the lock, by `deadline` if one is given (`Ok(None)` when it passes while the
    /// lock is busy, [`Error::Unavailable`] when it passes with no server connected; within
    /// one short grace). Cancel-safe, as every acquire of ours.
    fn lock_until(&self, deadline: Option<Instant>) -> LockFuture<'_, Option<Box<dyn Guard>>>;

    /// Whether a guard taken through this handle (or a clone of it) holds the lock (a release
    /// in progress counts until its node is deleted), as Curator's `isAcquiredInThisProcess`.
    fn is_acquired_in_this_process(&self) -> bool;

    /// The single locks this one is made of (a multi-lock's members), so that a multi-lock
    /// over it takes them one by one in its own canonical order; empty for a single lock.
    fn parts(&self) -> Vec<Arc<dyn Lock>> {
        Vec::new()
    }

    /// Takes the lock, waiting as long as it takes, and returns the guard that owns it.
    ///
    /// It waits through outages the session survives (with the `tracing` feature it says so
    /// once at `warn` when the client has had no server for the session timeout); the
    /// session's expiry ends it with [`Error::SessionExpired`]. To re-enter while holding, pass
    /// the guard down and use [`Hold::reenter`]. Cancel-safe: dropped at any point, it
    /// leaves no node behind.
    fn lock(&self) -> LockFuture<'_, Box<dyn Guard>> {
        let taking = self.lock_until(None);
        Box::pin(async move { taking.await?.ok_or(Error::TimedOut) })
    }

    /// Takes the lock if it can within `timeout`; `None` if not because it stayed busy (what
    /// was created is deleted first, or, if that takes longer, in the background).
    ///
    /// [`Error::Unavailable`] if the deadline passed with no server connected (an outage, not
    /// a busy lock: the error says how long and which servers were tried). A free lock is
    /// taken even with a zero timeout. It returns within one short grace
    /// ([`recipes_core::DEADLINE_GRACE`]) of the deadline, also while disconnected. A timeout
    /// too long to be a deadline (`Duration::MAX`) means none: it waits as [`lock`](Self::lock)
    /// does.
    fn try_lock_for(&self, timeout: Duration) -> LockFuture<'_, Option<Box<dyn Guard>>> {
        self.lock_until(crate::layer::driver::deadline_in(timeout))
    }
}

/// What a multi-lock (or other code over many locks) accepts as a lock: any lock of ours by
/// value, an `Arc` of one, or an already type-erased `Arc<dyn Lock>` / `Box<dyn Lock>`. Mixed
/// kinds in one list: call [`IntoLock::into_lock`] on each.
///
/// # Examples
///
/// ```no_run
/// use recipe_mutex::{InterProcessMutex, IntoLock, Lock};
/// use std::sync::Arc;
///
/// # fn f(client: zk_client::Client) -> Result<(), recipe_mutex::Error> {
/// let a = InterProcessMutex::new(client.clone(), "/bank/acct/7")?;
/// let b = InterProcessMutex::new(client, "/bank/acct/3")?;
/// let locks: Vec<Arc<dyn Lock>> = vec![a.into_lock(), Arc::new(b).into_lock()];
/// # Ok(()) }
/// ```
pub trait IntoLock {
    /// The lock, shared and type-erased.
    fn into_lock(self) -> Arc<dyn Lock>;
}

impl<T: Lock + 'static> IntoLock for T {
    fn into_lock(self) -> Arc<dyn Lock> {
        Arc::new(self)
    }
}

impl<T: Lock + 'static> IntoLock for Arc<T> {
    fn into_lock(self) -> Arc<dyn Lock> {
        self
    }
}

impl IntoLock for Arc<dyn Lock> {
    fn into_lock(self) -> Arc<dyn Lock> {
        self
    }
}

impl IntoLock for Box<dyn Lock> {
    fn into_lock(self) -> Arc<dyn Lock> {
        Arc::from(self)
    }
}

/// A guard of any of our locks, as [`Lock`] gives it: one or more holds ([`Hold`]s),
/// owned together and released together. The hold of a single lock is one `Hold`; a
/// multi-lock's guard is one per member.
pub trait Guard: Send + Sync + std::fmt::Debug {
    /// The holds, in the order they were taken.
    fn holds(&self) -> Vec<&Hold>;

    /// Releases every hold now, the last taken first, and reports the first error. Each
    /// delete, once started, finishes in the background even if the future is dropped.
    fn release(self: Box<Self>) -> LockFuture<'static, ()>;

    /// A cohort's local holder's place among its node's holders
    /// ([`CohortGuard::local_sequence`](crate::CohortGuard::local_sequence), from 1); 0 for a
    /// guard whose nodes are its own. With the fencing token it orders every holder.
    fn local_sequence(&self) -> u64 {
        0
    }

    /// Each hold's [`local_sequence`](Self::local_sequence), in the order taken (a
    /// multi-guard's: its members', each a cohort's place or 0). Paired with
    /// [`fencing_tokens`](Self::fencing_tokens), it orders every holder of each lock.
    fn local_sequences(&self) -> Vec<u64> {
        vec![self.local_sequence(); self.holds().len()]
    }

    /// Each hold's fencing token (its node's czxid), in the order taken. A cohort's local
    /// holders share their node's: pair it with [`local_sequences`](Self::local_sequences).
    fn fencing_tokens(&self) -> Vec<i64> {
        self.holds().iter().map(|h| h.fencing_token()).collect()
    }

    /// `multi` ops that hold only while every hold's node exists.
    fn check_ops(&self) -> Vec<zk_client::Op> {
        self.holds().iter().map(|h| h.check_op()).collect()
    }

    /// Applies `ops` as one transaction that commits only while every hold's node exists
    /// (see [`Hold::fenced_multi`]): [`Error::LockLost`] names the lock whose node went.
    fn fenced_multi<'a>(
        &'a self,
        ops: &'a [zk_client::Op],
    ) -> LockFuture<'a, Vec<zk_client::OpResult>> {
        Box::pin(async move { crate::fenced::fenced_multi(&self.holds(), ops).await })
    }

    /// Whether every hold is surely still ours, as far as this process knows (advisory).
    fn is_valid(&self) -> bool {
        self.holds().iter().all(|h| h.is_valid())
    }

    /// Resolves when any hold can no longer be trusted (advisory; see [`Hold::lost`]).
    fn lost(&self) -> Pin<Box<dyn Future<Output = Loss> + Send + '_>> {
        let losses: Vec<_> = self
            .holds()
            .into_iter()
            .map(|h| Box::pin(h.lost()))
            .collect();
        Box::pin(async move {
            let mut losses = losses;
            std::future::poll_fn(|cx| {
                for loss in losses.iter_mut() {
                    if let std::task::Poll::Ready(l) = loss.as_mut().poll(cx) {
                        return std::task::Poll::Ready(l);
                    }
                }
                std::task::Poll::Pending
            })
            .await
        })
    }
}

impl Guard for Hold {
    fn holds(&self) -> Vec<&Hold> {
        vec![self]
    }

    fn release(self: Box<Self>) -> LockFuture<'static, ()> {
        Box::pin(Hold::release(*self))
    }
}
