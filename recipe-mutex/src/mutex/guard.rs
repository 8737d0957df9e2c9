//! [`MutexGuard`]: the proof of holding an [`InterProcessMutex`](crate::InterProcessMutex).

use std::ops::Deref;

use crate::layer::hold::Hold;
use crate::{Error, Guard, LockFuture};

/// Proof of holding an [`InterProcessMutex`](crate::InterProcessMutex), returned by its
/// `lock()` and `try_lock_for()`: the guard *is* the ownership.
///
/// It dereferences to its [`Hold`], the node held: the fencing token, the lost-lock signal
/// ([`Hold::lost`]), fenced writes ([`Hold::fenced_multi`], [`Hold::check_op`]) and re-entry
/// ([`Hold::reenter`]) are the hold's. Dropping the guard releases in the background (a
/// guaranteed delete, also off the runtime); [`MutexGuard::release`] releases now and reports
/// errors.
///
/// # Examples
///
/// ```no_run
/// use recipe_mutex::{InterProcessMutex, MutexGuard};
///
/// // Curator's reentrancy, explicit: the guard is passed down.
/// fn write_order(guard: &MutexGuard) {
///     let _again = guard.reenter(); // no round trip
///     println!("writing under token {}", guard.fencing_token());
/// }
///
/// # async fn f(client: zk_client::Client) -> Result<(), recipe_mutex::Error> {
/// let mutex = InterProcessMutex::new(client, "/app/locks/orders")?;
/// let guard = mutex.lock().await?;
/// write_order(&guard);
/// guard.release().await?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct MutexGuard {
    hold: Hold,
}

impl MutexGuard {
    pub(crate) fn new(hold: Hold) -> Self {
        Self { hold }
    }

    /// Releases the mutex now and reports errors (see [`Hold::release`]).
    pub async fn release(self) -> Result<(), Error> {
        self.hold.release().await
    }

    /// The hold itself, for code that keeps holds of several kinds together.
    pub fn into_hold(self) -> Hold {
        self.hold
    }
}

impl Deref for MutexGuard {
    type Target = Hold;

    fn deref(&self) -> &Hold {
        &self.hold
    }
}

impl Guard for MutexGuard {
    fn holds(&self) -> Vec<&Hold> {
        vec![&self.hold]
    }

    fn release(self: Box<Self>) -> LockFuture<'static, ()> {
        Box::pin(self.hold.release())
    }
}
