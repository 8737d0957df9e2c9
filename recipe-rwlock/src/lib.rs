//! Apache Curator's `InterProcessReadWriteLock` for Rust, wire-compatible with Curator 5.4 and
//! 5.5: many readers or one writer, across processes, with a write-to-read downgrade that keeps
//! a queued writer out (Curator 5.5's fix of CURATOR-621).
//!
//! It holds no lock logic of its own: the predicates and the downgrade are
//! `recipes_core::rwlock`'s, run by `recipe-mutex`'s lock layer. It is not a ZooKeeper client
//! (that is `zk-client`). It fails in no way of its own: its [`Error`] is the lock layer's
//! (`recipe_mutex::Error`), re-exported.
//!
//! Ownership is explicit, as with tokio's `RwLock`: the guard is the ownership. Every `lock()`
//! is its own participant, whatever task asks; a downgrade is
//! [`WriteGuard::downgrade`]`(self) -> ReadGuard`; there is no upgrade (a write `lock()` while
//! the program holds a read queues behind that read, as with any read/write lock: release the
//! read first, or give the write a deadline).
//!
//! Opt-in, [`CohortReadWriteLock`] ([`InterProcessReadWriteLock::cohort`]): the readers of this
//! process share one read node and its writers pass one write node between them with no
//! request (lock cohorting), within a bound after which other processes get their turn.
//!
//! # Coming from Curator
//!
//! | Curator | here |
//! | --- | --- |
//! | `rw.readLock().acquire()` | `let read = rw.read_lock().lock().await?` |
//! | `rw.writeLock().acquire(5, SECONDS)` | `rw.write_lock().try_lock_for(Duration::from_secs(5)).await?` |
//! | `...release()` | `guard.release().await?` (or drop the guard) |
//! | a downgrade: `writeLock().acquire(); readLock().acquire(); writeLock().release()` | `let read = write.downgrade().await?` |
//! | re-entering in the holding thread | pass the guard down; `guard.reenter()` |
//! | an upgrade (read held, `writeLock().acquire()`): hangs forever | queues behind the read it holds: the same wait; use a deadline or release the read first |
//!
//! # Examples
//!
//! ```no_run
//! use recipe_rwlock::InterProcessReadWriteLock;
//!
//! # async fn f(client: zk_client::Client) -> Result<(), recipe_rwlock::Error> {
//! let lock = InterProcessReadWriteLock::new(client, "/app/locks/catalog")?;
//!
//! // Many readers at once.
//! let read = lock.read_lock().lock().await?;
//! read.release().await?;
//!
//! // One writer; then a downgrade: readers may join, a queued writer still waits.
//! let write = lock.write_lock().lock().await?;
//! let token = write.fencing_token();
//! let read = write.downgrade().await?;
//! assert_eq!(read.fencing_token(), token); // the read hold continues the write hold
//! read.release().await?;
//! # Ok(()) }
//! ```

use std::sync::Arc;

use bytes::Bytes;
use recipe_mutex::layer::driver;
use recipe_mutex::layer::hold::Holds;
use recipes_core::{ReadPredicate, WritePredicate};
use tokio::time::Instant;
use zk_client::Client;

mod cohort;
#[cfg(feature = "plant")]
pub mod plant;
#[cfg(not(feature = "plant"))]
mod plant;

pub use cohort::{CohortReadLock, CohortReadWriteLock, CohortWriteLock};
pub use recipe_mutex::{
    CohortBound, CohortGuard, CohortToken, Error, Hold, Loss, NestedGuard, NodeKind,
    ParseSequencerError, Sequencer, SequencerCheck, SharedCohortGuard,
};

mod read_guard;
mod write_guard;

pub use read_guard::ReadGuard;
pub use write_guard::WriteGuard;

/// What both locks share.
#[derive(Debug)]
struct Shared {
    read: Arc<Holds>,
    write: Arc<Holds>,
    data: Bytes,
}

/// A read/write lock shared across processes, wire-compatible with Curator's
/// `InterProcessReadWriteLock`: both kinds of node in one directory
/// (`<path>/_c_<uuid>-__READ__<seq>`, `<path>/_c_<uuid>-__WRIT__<seq>`), one sequence counter,
/// Curator's order and watches, so Curator clients and ours exclude each other on the same
/// path.
///
/// - The **write lock** is held by one guard at a time, when its node is first of all the
///   children (readers included); a writer waits on the node just before its own.
/// - The **read lock** is shared: a reader holds when no write node sorts before its own; it
///   waits on the first write node. So a writer is not starved: readers that arrive after it
///   queue behind it.
/// - Every `lock()` is its own participant, whatever task or handle asks (no reentrancy by
///   task: pass the guard down and [`Hold::reenter`]).
/// - **Downgrade**: [`WriteGuard::downgrade`] turns the write hold into a read hold. The read
///   node is created `EPHEMERAL` with the write node's sequence, so it sorts level with the
///   write node and a writer queued behind stays blocked (Curator 5.4 lets that writer in
///   while the downgraded reader still reads); the write node is deleted once the read node
///   holds.
/// - **No upgrade**: a write `lock()` while this program holds a read queues behind that
///   read, as with any read/write lock (Curator's hangs the same way). Give it a deadline, or
///   release the read first.
///
/// Guards carry a fencing token, `check_op`, `lost()`, `is_valid()`, and release on drop. A
/// reader's fencing token is its own node's creation zxid: it orders readers against writers
/// (a reader that holds after a writer has a larger token than that writer's, a writer after
/// a reader a larger one than the reader's), not readers among themselves, which hold
/// together. A downgraded reader carries its write hold's token (its read node was created
/// later, but it continues the write hold: the next writer's token is greater).
///
/// Cancel-safe and with guaranteed releases, as the mutex.
#[derive(Debug, Clone)]
pub struct InterProcessReadWriteLock {
    read: ReadLock,
    write: WriteLock,
}

impl InterProcessReadWriteLock {
    /// A read/write lock on `path` (validated now; parents are created as containers when
    /// needed). Paths under `/zookeeper` are refused. Its nodes carry this host's address
    /// ([`recipe_mutex::host_address`]), as Curator's do, so that [`queue`](Self::queue)
    /// names the machine of each participant.
    pub fn new(client: Client, path: &str) -> Result<Self, Error> {
        let data = recipe_mutex::host_address(&client);
        Self::with_data(client, path, data)
    }

    /// A read/write lock whose nodes carry `data` (a name for the person on call: the host,
    /// the process, the job; [`queue`](Self::queue) shows it).
    pub fn with_data(client: Client, path: &str, data: Bytes) -> Result<Self, Error> {
        recipe_mutex::validate_lock_path(path)?;
        let shared = Arc::new(Shared {
            read: Holds::new(client.clone(), path),
            write: Holds::new(client, path),
            data,
        });
        Ok(Self {
            read: ReadLock {
                shared: shared.clone(),
            },
            write: WriteLock { shared },
        })
    }

    /// The read lock.
    pub fn read_lock(&self) -> &ReadLock {
        &self.read
    }

    /// The write lock.
    pub fn write_lock(&self) -> &WriteLock {
        &self.write
    }

    /// The lock's path.
    pub fn path(&self) -> &str {
        self.read.shared.read.path()
    }

    /// The lock's queue as the server has it, readers and writers in one order (Curator's):
    /// who holds (the readers before the first write node, or that writer alone), who waits
    /// behind which node, each participant's session and data (ours and Curator's carry the
    /// host's address). What an operator asks when a lock is stuck.
    pub async fn queue(&self) -> Result<Vec<recipe_mutex::Participant>, Error> {
        self.read.shared.queue().await
    }

    /// This lock with lock cohorting: its readers in this process share one read node, its
    /// writers one write node passed from task to task, each within `bound`. See
    /// [`CohortReadWriteLock`].
    pub fn cohort(self, bound: CohortBound) -> CohortReadWriteLock {
        cohort::CohortReadWriteLock::new(self, bound)
    }
}

impl Shared {
    async fn queue(&self) -> Result<Vec<recipe_mutex::Participant>, Error> {
        use recipes_core::participants::Rule;
        use recipes_core::rwlock::{READ_LOCK_NAME, WRITE_LOCK_NAME};
        recipe_mutex::layer::participants::queue(
            self.client(),
            self.path(),
            recipes_core::rwlock::rw_sort,
            |name| {
                if name.contains(READ_LOCK_NAME) {
                    Some(Rule::Read)
                } else if name.contains(WRITE_LOCK_NAME) {
                    Some(Rule::Write)
                } else {
                    None
                }
            },
        )
        .await
    }

    fn client(&self) -> &Client {
        self.read.client()
    }

    fn path(&self) -> &str {
        self.read.path()
    }

    fn data(&self, holds: &Holds) -> Bytes {
        if holds.is_revocable() {
            Bytes::new()
        } else {
            self.data.clone()
        }
    }
}

/// The shared side of an [`InterProcessReadWriteLock`].
///
/// # Examples
///
/// ```no_run
/// # async fn f(lock: recipe_rwlock::InterProcessReadWriteLock) -> Result<(), recipe_rwlock::Error> {
/// let (a, b) = tokio::join!(lock.read_lock().lock(), lock.read_lock().lock());
/// let (a, b) = (a?, b?); // two readers at once, in one task
/// a.release().await?;
/// b.release().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct ReadLock {
    shared: Arc<Shared>,
}

/// The exclusive side of an [`InterProcessReadWriteLock`].
///
/// # Examples
///
/// ```no_run
/// # use std::time::Duration;
/// # async fn f(lock: recipe_rwlock::InterProcessReadWriteLock) -> Result<(), recipe_rwlock::Error> {
/// match lock.write_lock().try_lock_for(Duration::from_millis(500)).await? {
///     Some(write) => write.release().await?,
///     None => println!("readers or a writer hold it"),
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct WriteLock {
    shared: Arc<Shared>,
}

impl ReadLock {
    async fn take(&self, deadline: Option<Instant>) -> Result<Option<Hold>, Error> {
        let shared = &self.shared;
        let data = shared.data(&shared.read);
        let (client, path) = (shared.client(), shared.path());
        if crate::plant::active(crate::plant::Plant::ReadIgnoresWrites) {
            return shared
                .read
                .take(deadline, |turn| {
                    driver::acquire(
                        client,
                        path,
                        crate::plant::IgnoresWrites,
                        data,
                        deadline,
                        Some(turn),
                    )
                })
                .await;
        }
        shared
            .read
            .take(deadline, |turn| {
                driver::acquire(client, path, ReadPredicate, data, deadline, Some(turn))
            })
            .await
    }

    fn wrap(&self, hold: Hold) -> ReadGuard {
        ReadGuard::new(hold)
    }
}

impl WriteLock {
    async fn take(&self, deadline: Option<Instant>) -> Result<Option<Hold>, Error> {
        let shared = &self.shared;
        let data = shared.data(&shared.write);
        let (client, path) = (shared.client(), shared.path());
        shared
            .write
            .take(deadline, |turn| {
                driver::acquire(client, path, WritePredicate, data, deadline, Some(turn))
            })
            .await
    }

    fn wrap(&self, hold: Hold) -> WriteGuard {
        WriteGuard::new(hold, self.shared.clone())
    }
}

recipe_mutex::lock_surface!(
    ReadLock,
    guard = ReadGuard,
    kind = Read,
    what = "the read lock"
);
recipe_mutex::lock_surface!(
    WriteLock,
    guard = WriteGuard,
    kind = Write,
    what = "the write lock"
);

/// What differs between the two sides beyond `take`: their holds, their node prefix.
macro_rules! side {
    ($ty:ident, $holds:ident, $name:expr, $what:literal) => {
        impl $ty {
            fn holds(&self) -> &Arc<Holds> {
                &self.shared.$holds
            }

            /// Makes later acquisitions of this lock revocable: the node is created empty and
            /// the holder watches it; when another process calls `recipe_mutex::revoke` on it,
            /// `listener` runs.
            pub fn make_revocable(&self, listener: impl Fn() + Send + Sync + 'static) {
                self.shared.$holds.make_revocable(Arc::new(listener));
            }

            #[doc = concat!("The ", $what, " lock's nodes under the path, in lock order: full paths (Curator filters the children by lock name).")]
            pub async fn participant_nodes(&self) -> Result<Vec<String>, Error> {
                let (client, path) = (self.shared.client(), self.shared.path());
                recipe_mutex::layer::participants::participant_nodes(client, path, &$name, true).await
            }
        }
    };
}

side!(ReadLock, read, ReadPredicate, "read");
side!(WriteLock, write, WritePredicate, "write");
