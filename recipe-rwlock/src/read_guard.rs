//! [`ReadGuard`]: the proof of holding the read lock.

use std::ops::Deref;

use recipe_mutex::{Guard, LockFuture};

use crate::{Error, Hold};

/// Proof of holding the read lock of an
/// [`InterProcessReadWriteLock`](crate::InterProcessReadWriteLock), from
/// [`ReadLock`](crate::ReadLock)'s `lock()` or a [`WriteGuard::downgrade`](crate::WriteGuard::downgrade);
/// the guard *is* the ownership.
///
/// It dereferences to its [`Hold`], the read node held: fencing token, `check_op`, `lost()`,
/// and `reenter()` (the read lock is reentrant, as Curator's). Dropping it releases in the
/// background (guaranteed, also off the runtime); [`release`](Self::release) releases now and
/// reports errors.
#[derive(Debug)]
pub struct ReadGuard {
    hold: Hold,
}

impl ReadGuard {
    pub(crate) fn new(hold: Hold) -> Self {
        Self { hold }
    }

    /// Releases the read lock now and reports errors (see [`Hold::release`]).
    pub async fn release(self) -> Result<(), Error> {
        self.hold.release().await
    }

    /// The hold itself, for code that keeps holds of several kinds together.
    pub fn into_hold(self) -> Hold {
        self.hold
    }
}

impl Deref for ReadGuard {
    type Target = Hold;

    fn deref(&self) -> &Hold {
        &self.hold
    }
}

impl Guard for ReadGuard {
    fn holds(&self) -> Vec<&Hold> {
        vec![&self.hold]
    }

    fn release(self: Box<Self>) -> LockFuture<'static, ()> {
        Box::pin(self.hold.release())
    }
}
