//! [`InterProcessMutex`]: Curator's fair, reentrant, revocable mutex, on the shared driver and
//! hold layer.

use std::sync::Arc;

use bytes::Bytes;
use recipes_core::Exclusive;
use tokio::time::Instant;
use zk_client::Client;

use crate::Error;
use crate::layer::driver;
use crate::layer::hold::{Hold, Holds};

mod guard;

pub use guard::MutexGuard;

/// A fair, revocable lock shared across processes, wire-compatible with Curator's
/// `InterProcessMutex`: the same nodes (`<path>/_c_<uuid>-lock-<seq>`), the same order, the
/// same watches, so Curator clients and ours exclude each other on the same path.
///
/// [`InterProcessMutex::lock`] returns a [`MutexGuard`], and the guard *is* the ownership, as
/// with Rust's own locks: dropping it releases in the background (retried across connection
/// loss until done or the session ends, also when dropped off the runtime);
/// [`MutexGuard::release`] releases now and reports errors. The guard gives a fencing token
/// and tells when the lock may be lost. No task or thread identity is consulted: every
/// `lock()` call is its own participant, queued fairly like another process's, whatever task
/// or handle it comes from. Two critical sections joined in one task (`join!`, `select!`) wait
/// for each other, as two threads would.
///
/// Cancel-safe: dropping an acquire at any point leaves no node behind (a create in flight is
/// finished in the background and its node deleted by its exact path). Cancellation in a loop
/// cannot pile up nodes: past a few pending cleanups per session and path, a new attempt waits
/// for one to finish, within its deadline.
///
/// Taking the lock costs one round trip when it is free (the create and the listing travel
/// together; Curator needs two), and releasing one more. A waiter holds only after a listing
/// shows its node first, as in Curator. A waiter keeps waiting through an outage the session
/// survives (also past the client's local `Lost`); the session's expiry ends it.
///
/// # Coming from Curator
///
/// | Curator | here |
/// | --- | --- |
/// | `mutex.acquire()` | `let guard = mutex.lock().await?` |
/// | `mutex.acquire(5, SECONDS)` | `if let Some(guard) = mutex.try_lock_for(Duration::from_secs(5)).await? { .. }` |
/// | `mutex.release()` | `guard.release().await?` (or drop the guard) |
/// | re-entering: `acquire()` again in a callee, in the holding thread | pass the guard down: `fn callee(guard: &MutexGuard)`, and `guard.reenter()` where Curator would count a re-entry |
/// | `isOwnedByCurrentThread()` | holding a guard is owning: there is nothing to ask |
/// | `isAcquiredInThisProcess()` | `mutex.is_acquired_in_this_process()` |
/// | `getParticipantNodes()` | `mutex.participant_nodes().await?` |
/// | `makeRevocable(listener)` | `mutex.make_revocable(listener)` |
///
/// A Curator program that re-enters by calling `acquire()` twice in one thread would, written
/// as two `lock()` calls here, wait for itself, as with `std::sync::Mutex`: hand the guard to
/// the code that needs the lock instead.
///
/// # Examples
///
/// ```no_run
/// use std::time::Duration;
/// use recipe_mutex::{InterProcessMutex, MutexGuard};
///
/// fn write_order(guard: &MutexGuard) {
///     let _nested = guard.reenter(); // what a reentrant acquire() was in Curator
///     println!("fencing token {}", guard.fencing_token());
/// }
///
/// # async fn f(client: zk_client::Client) -> Result<(), recipe_mutex::Error> {
/// let mutex = InterProcessMutex::new(client, "/app/locks/orders")?;
/// let guard = mutex.lock().await?;
/// write_order(&guard);
/// guard.release().await?;
///
/// match mutex.try_lock_for(Duration::from_secs(1)).await? {
///     Some(guard) => drop(guard), // released in the background
///     None => println!("busy: someone else holds it"),
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct InterProcessMutex {
    holds: Arc<Holds>,
    data: Bytes,
}

impl InterProcessMutex {
    /// A mutex on `path` (validated now; its parents are created as containers when needed).
    /// Paths under `/zookeeper`, which the server reserves, are refused. Its lock nodes carry
    /// this host's address ([`host_address`](crate::host_address)), as Curator's do, so that
    /// [`queue`](Self::queue) names the machine of each participant.
    pub fn new(client: Client, path: &str) -> Result<Self, Error> {
        let data = crate::host_address(&client);
        Self::with_data(client, path, data)
    }

    /// A mutex whose lock nodes carry `data` (a name for the person on call: the host, the
    /// process, the job; [`queue`](Self::queue) shows it). Revocable acquisitions write none.
    pub fn with_data(client: Client, path: &str, data: Bytes) -> Result<Self, Error> {
        validate_lock_path(path)?;
        Ok(Self {
            holds: Holds::new(client, path),
            data,
        })
    }

    /// The lock's path.
    pub fn path(&self) -> &str {
        self.holds.path()
    }

    /// The client the mutex takes its locks on.
    pub fn client(&self) -> &Client {
        self.holds.client()
    }

    /// Makes later acquisitions revocable: the lock node is created empty and the holder
    /// watches it; when another process calls [`crate::revoke`] on it, `listener` runs. Unlike
    /// Curator's, it stays armed for later acquisitions until replaced.
    pub fn make_revocable(&self, listener: impl Fn() + Send + Sync + 'static) {
        self.holds.make_revocable(Arc::new(listener));
    }

    fn holds(&self) -> &Arc<Holds> {
        &self.holds
    }

    fn wrap(&self, hold: Hold) -> MutexGuard {
        MutexGuard::new(hold)
    }

    pub(crate) async fn take(&self, deadline: Option<Instant>) -> Result<Option<Hold>, Error> {
        let data = if self.holds.is_revocable() {
            Bytes::new()
        } else {
            self.data.clone()
        };
        let client = self.holds.client();
        let path = self.holds.path();
        self.holds
            .take(deadline, |turn| {
                driver::acquire(client, path, Exclusive::mutex(), data, deadline, Some(turn))
            })
            .await
    }

    /// The lock's queue as the server has it, in lock order: the holder first, then each
    /// waiter with the node it watches; every participant's session and data (ours and
    /// Curator's carry the host's address), children of other recipes as foreign. What an
    /// operator asks when a lock is stuck: "who holds it, from which machine?"
    ///
    /// ```no_run
    /// # async fn f(mutex: recipe_mutex::InterProcessMutex) -> Result<(), recipe_mutex::Error> {
    /// for participant in mutex.queue().await? {
    ///     println!("{participant}"); // holds  _c_…-lock-0000000007  session 0x…  data "10.0.0.5"
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn queue(&self) -> Result<Vec<crate::Participant>, Error> {
        let mutex = Exclusive::mutex();
        crate::layer::participants::queue(
            self.holds.client(),
            self.holds.path(),
            |c| recipes_core::Predicate::sort(&mutex, c),
            |name| {
                name.contains(recipes_core::name::MUTEX_LOCK_NAME)
                    .then_some(recipes_core::participants::Rule::Exclusive { max: 1 })
            },
        )
        .await
    }

    /// Every lock node under the path, sorted in lock order (the holder first): full paths.
    pub async fn participant_nodes(&self) -> Result<Vec<String>, Error> {
        crate::layer::participants::participant_nodes(
            self.holds.client(),
            self.holds.path(),
            &Exclusive::mutex(),
            false,
        )
        .await
    }
}

crate::lock_surface!(
    InterProcessMutex,
    guard = MutexGuard,
    kind = Mutex,
    what = "the lock"
);

/// Validates a lock path: a valid ZooKeeper path, not under `/zookeeper`.
pub fn validate_lock_path(path: &str) -> Result<(), Error> {
    zk_proto::validate_path(path, false)?;
    if path == "/zookeeper" || path.starts_with("/zookeeper/") {
        return Err(Error::ReservedPath {
            path: path.to_owned(),
        });
    }
    Ok(())
}
