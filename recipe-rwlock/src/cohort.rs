//! [`CohortReadWriteLock`]: the read/write lock with lock cohorting (opt-in), built from
//! `recipe_mutex`'s two cohorts over the lock's two sides.

use recipe_mutex::{CohortBound, CohortMutex, LockFuture, LockGuard, NodeLock, Participant};
use tokio::time::Instant;
use zk_client::Client;

use crate::{Error, InterProcessReadWriteLock, ReadLock, WriteLock};

/// The read side of a [`CohortReadWriteLock`]: its readers in this process share one read
/// node ([`recipe_mutex::SharedCohortLock`]); guards are [`SharedCohortGuard`](crate::SharedCohortGuard).
pub type CohortReadLock = recipe_mutex::SharedCohortLock;

/// The write side of a [`CohortReadWriteLock`]: its writers in this process share one write
/// node, passed from task to task ([`CohortMutex`]); guards are
/// [`CohortGuard`](crate::CohortGuard) (no downgrade).
pub type CohortWriteLock = CohortMutex;

/// An [`InterProcessReadWriteLock`] with lock cohorting: the readers of this process share one
/// read node, its writers one write node passed from task to task with no request, each
/// within a [`CohortBound`]. Opt-in: [`InterProcessReadWriteLock::cohort`].
///
/// Other processes, Curator's included, see one reader or one writer per batch, in the
/// lock's usual order. Exclusion between this process's readers and writers is the
/// server's, as between processes: the write node queues behind the process's read node and
/// the read node behind its write node. A local writer's attempt closes the open read batch
/// ([`CohortReadLock::close`]), so local readers arriving after it queue behind it, as other
/// processes' readers do; a batch of local readers or writers otherwise runs until its bound.
///
/// What the two sides keep and change is said at [`CohortReadLock`] and [`CohortWriteLock`].
/// Not offered: downgrade and revocation (each would have to cut a whole batch). As with the
/// plain lock there is no upgrade: a write taken while this task reads queues behind its
/// own read node.
///
/// # Examples
///
/// ```no_run
/// use recipe_rwlock::{CohortBound, InterProcessReadWriteLock};
///
/// # async fn f(client: zk_client::Client) -> Result<(), recipe_rwlock::Error> {
/// let lock = InterProcessReadWriteLock::new(client, "/app/locks/catalog")?
///     .cohort(CohortBound::default());
/// // Eight readers of this process on one read node: one create, one delete.
/// let mut readers = Vec::new();
/// for _ in 0..8 {
///     readers.push(lock.read_lock().lock().await?);
/// }
/// for read in readers {
///     read.release().await?;
/// }
/// let write = lock.write_lock().lock().await?;
/// println!("writing with token {:?}", write.token());
/// write.release().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct CohortReadWriteLock {
    lock: InterProcessReadWriteLock,
    read: CohortReadLock,
    write: CohortWriteLock,
}

impl CohortReadWriteLock {
    pub(crate) fn new(lock: InterProcessReadWriteLock, bound: CohortBound) -> Self {
        let read = CohortReadLock::over(lock.read.clone(), bound);
        let write = CohortWriteLock::over(
            Writers {
                write: lock.write.clone(),
                readers: read.clone(),
            },
            bound,
        );
        Self { lock, read, write }
    }

    /// The read side.
    pub fn read_lock(&self) -> &CohortReadLock {
        &self.read
    }

    /// The write side.
    pub fn write_lock(&self) -> &CohortWriteLock {
        &self.write
    }

    /// The lock's path.
    pub fn path(&self) -> &str {
        self.lock.path()
    }

    /// The lock's queue as the server has it (see [`InterProcessReadWriteLock::queue`]): each
    /// node of this process is one participant.
    pub async fn queue(&self) -> Result<Vec<Participant>, Error> {
        self.lock.queue().await
    }
}

/// The write side as its cohort takes it: each attempt first closes the process's open read
/// batch.
#[derive(Debug)]
struct Writers {
    write: WriteLock,
    readers: CohortReadLock,
}

impl NodeLock for Writers {
    fn client(&self) -> &Client {
        self.write.shared.client()
    }

    fn path(&self) -> &str {
        self.write.shared.path()
    }

    fn take_node(&self, deadline: Option<Instant>) -> LockFuture<'_, Option<LockGuard>> {
        self.readers.close();
        Box::pin(self.write.take(deadline))
    }

    fn queue(&self) -> LockFuture<'_, Vec<Participant>> {
        Box::pin(self.write.shared.queue())
    }

    fn is_acquired_in_this_process(&self) -> bool {
        self.write.holds().is_acquired_in_this_process()
    }

    fn cohort_kind(&self) -> &'static str {
        "cohort write"
    }
}

impl NodeLock for ReadLock {
    fn client(&self) -> &Client {
        self.shared.client()
    }

    fn path(&self) -> &str {
        self.shared.path()
    }

    fn take_node(&self, deadline: Option<Instant>) -> LockFuture<'_, Option<LockGuard>> {
        Box::pin(self.take(deadline))
    }

    fn queue(&self) -> LockFuture<'_, Vec<Participant>> {
        Box::pin(self.shared.queue())
    }

    fn is_acquired_in_this_process(&self) -> bool {
        self.holds().is_acquired_in_this_process()
    }

    fn cohort_kind(&self) -> &'static str {
        "cohort read"
    }
}
