//! [`SemaphoreMutexGuard`]: the proof of holding an
//! [`InterProcessSemaphoreMutex`](crate::InterProcessSemaphoreMutex).

use recipe_mutex::{Error, Guard, Hold, LockFuture, Loss};
use zk_client::Client;

/// Proof of holding an [`InterProcessSemaphoreMutex`](crate::InterProcessSemaphoreMutex): its
/// one lease, returned by `lock()` and `try_lock_for()`; the guard *is* the ownership.
///
/// Not reentrant, so it has no `reenter`: code that needs the lock while holding it passes
/// this guard down. Its fencing token is the lease node's creation zxid, increasing across
/// holders. Dropping it returns the lease in the background (guaranteed, also off the
/// runtime); [`release`](Self::release) returns it now and reports errors. It may be released
/// from any task or thread.
#[derive(Debug)]
pub struct SemaphoreMutexGuard {
    hold: Hold,
}

impl SemaphoreMutexGuard {
    pub(crate) fn new(hold: Hold) -> Self {
        Self { hold }
    }

    /// The lease node's creation zxid: strictly increasing across the lock's holders (see
    /// [`Hold::fencing_token`]).
    pub fn fencing_token(&self) -> i64 {
        self.hold.fencing_token()
    }

    /// The lease node's full path.
    pub fn node_path(&self) -> &str {
        self.hold.node_path()
    }

    /// The lock's path.
    pub fn lock_path(&self) -> &str {
        self.hold.lock_path()
    }

    /// The client the lock was taken on (see [`Hold::client`]).
    pub fn client(&self) -> &Client {
        self.hold.client()
    }

    /// Applies `ops` as one transaction that commits only while the lease node exists (see
    /// [`Hold::fenced_multi`]).
    pub async fn fenced_multi(
        &self,
        ops: &[zk_client::Op],
    ) -> Result<Vec<zk_client::OpResult>, Error> {
        self.hold.fenced_multi(ops).await
    }

    /// A `multi` op that holds only while the lease node exists (see [`Hold::check_op`]).
    pub fn check_op(&self) -> zk_client::Op {
        self.hold.check_op()
    }

    /// The lease's [`Sequencer`](crate::Sequencer), for a service outside ZooKeeper to check
    /// with any client before it accepts work done under the lock (see
    /// [`Lease::sequencer`](crate::Lease::sequencer)).
    pub fn sequencer(&self) -> crate::Sequencer {
        self.hold.sequencer()
    }

    /// Whether the lease is surely still ours, as far as this process knows (advisory; see
    /// [`Hold::is_valid`]).
    pub fn is_valid(&self) -> bool {
        self.hold.is_valid()
    }

    /// Resolves when the lease can no longer be trusted (see [`Hold::lost`]).
    pub async fn lost(&self) -> Loss {
        self.hold.lost().await
    }

    /// Whether the lease node was seen deleted while the session lived (see
    /// [`Hold::is_gone`]).
    pub fn is_gone(&self) -> bool {
        self.hold.is_gone()
    }

    /// Returns the lease now and reports errors (see [`Hold::release`]).
    pub async fn release(self) -> Result<(), Error> {
        self.hold.release().await
    }
}

impl Guard for SemaphoreMutexGuard {
    fn holds(&self) -> Vec<&Hold> {
        vec![&self.hold]
    }

    fn release(self: Box<Self>) -> LockFuture<'static, ()> {
        Box::pin(self.hold.release())
    }
}
