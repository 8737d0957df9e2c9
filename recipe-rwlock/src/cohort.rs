//! [`CohortReadWriteLock`]: the read/write lock with lock cohorting (opt-in), built from
//! `recipe_mutex`'s two cohorts over the lock's two sides.

use recipe_mutex::{CohortBound, CohortMutex, Hold, LockFuture, NodeLock, Participant};
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
/// the read node behind its write node. While a local writer waits, no read batch is open to
/// newcomers ([`CohortReadLock::writer_waits`]): the open one closes, and one granted
/// meanwhile (its node queued before the writer's) reads with the readers that waited for it
/// only; local readers arriving meanwhile take a node behind the writer's, as other
/// processes' readers do. So a waiting writer waits for the readers already in or already
/// waiting, never for newcomers. A batch of local readers or writers otherwise runs until its
/// bound.
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
/// println!("writing with token {:?}", write.fencing_token());
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

/// The write side as its cohort takes it: while each attempt runs, no read batch of the
/// process is open to newcomers.
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

    fn take_node(&self, deadline: Option<Instant>) -> LockFuture<'_, Option<Hold>> {
        // No read batch opens to newcomers while the attempt runs (held, failed or dropped).
        let waits = self.readers.writer_waits();
        let taking = self.write.take(deadline);
        Box::pin(async move {
            let taken = taking.await;
            drop(waits);
            taken
        })
    }

    fn queue(&self) -> LockFuture<'_, Vec<Participant>> {
        Box::pin(self.write.shared.queue())
    }

    fn is_acquired_in_this_process(&self) -> bool {
        self.write.holds().is_acquired_in_this_process()
    }

    fn cohort_kind(&self) -> recipe_mutex::LockKind {
        recipe_mutex::LockKind::CohortWrite
    }
}

impl NodeLock for ReadLock {
    fn client(&self) -> &Client {
        self.shared.client()
    }

    fn path(&self) -> &str {
        self.shared.path()
    }

    fn take_node(&self, deadline: Option<Instant>) -> LockFuture<'_, Option<Hold>> {
        Box::pin(self.take(deadline))
    }

    fn queue(&self) -> LockFuture<'_, Vec<Participant>> {
        Box::pin(self.shared.queue())
    }

    fn is_acquired_in_this_process(&self) -> bool {
        self.holds().is_acquired_in_this_process()
    }

    fn cohort_kind(&self) -> recipe_mutex::LockKind {
        recipe_mutex::LockKind::CohortRead
    }
}
