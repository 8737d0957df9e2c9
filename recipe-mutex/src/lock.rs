//! [`Lock`]: what every lock of ours offers, so that a multi-lock (or any code generic over
//! locks) can take a mutex, a read lock, a write lock or a semaphore mutex alike.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use tokio::time::Instant;

use crate::{Error, LockGuard};

/// A boxed future, as the trait's methods return.
pub type LockFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, Error>> + Send + 'a>>;

/// A lock of ours, whatever its kind. Implemented by `InterProcessMutex`, the read/write lock's
/// `ReadLock` and `WriteLock`, and `InterProcessSemaphoreMutex`; object-safe, so a multi-lock
/// holds `Arc<dyn Lock>`s.
///
/// Every call to [`Lock::lock_until`] is its own participant: it queues like another
/// process's, whatever task or handle it comes from, and its guard is the ownership.
pub trait Lock: Send + Sync + std::fmt::Debug {
    /// The lock's path.
    fn path(&self) -> &str;

    /// The kind of lock (`"mutex"`, `"read"`, `"write"`, `"semaphore-mutex"`).
    fn kind(&self) -> &'static str;

    /// Takes the lock, by `deadline` if one is given (`Ok(None)` when it passes, within one
    /// short grace). Cancel-safe, as every acquire of ours.
    fn lock_until(&self, deadline: Option<Instant>) -> LockFuture<'_, Option<LockGuard>>;

    /// Whether a guard taken through this handle (or a clone) holds the lock.
    fn is_acquired_in_this_process(&self) -> bool;

    /// Takes the lock, waiting as long as it takes.
    fn lock(&self) -> LockFuture<'_, LockGuard> {
        let taking = self.lock_until(None);
        Box::pin(async move { taking.await?.ok_or(Error::TimedOut) })
    }

    /// Takes the lock if it can within `timeout`.
    fn try_lock_for(&self, timeout: Duration) -> LockFuture<'_, Option<LockGuard>> {
        self.lock_until(Some(Instant::now() + timeout))
    }
}
