//! Apache Curator's `InterProcessReadWriteLock` for Rust, wire-compatible with Curator 5.4 and
//! 5.5: many readers or one writer, across processes, with a write-to-read downgrade that keeps
//! a queued writer out (Curator 5.5's fix of CURATOR-621) and an upgrade that is refused at once
//! instead of hanging.
//!
//! It holds no lock logic of its own: the predicates and the downgrade are
//! `recipes_core::rwlock`'s, run by `recipe-mutex`'s driver and hold layer. It is not a
//! ZooKeeper client (that is `zk-client`).
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
//! // One writer; then a downgrade: take the read lock while writing, release the write lock.
//! let write = lock.write_lock().lock().await?;
//! let read = lock.read_lock().lock().await?; // no wait: this task holds the write lock
//! write.release().await?;                    // readers may join; writers still wait
//! read.release().await?;
//!
//! // An upgrade is refused at once (Curator hangs forever).
//! let read = lock.read_lock().lock().await?;
//! assert!(matches!(
//!     lock.write_lock().lock().await,
//!     Err(recipe_rwlock::Error::UpgradeRefused { .. })
//! ));
//! # Ok(()) }
//! ```

use std::sync::Arc;

use bytes::Bytes;
use recipe_mutex::driver;
use recipe_mutex::hold::Holds;
use recipes_core::{DowngradeMachine, ReadPredicate, WritePredicate};
use tokio::time::Instant;
use zk_client::Client;

pub use recipe_mutex::{Error, LockGuard, Loss, Owner};

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
/// - The **write lock** is held by one task at a time, when its node is first of all the
///   children (readers included); a writer waits on the node just before its own.
/// - The **read lock** is shared: a reader holds when no write node sorts before its own; it
///   waits on the first write node. So a writer is not starved: readers that arrive after it
///   queue behind it.
/// - Each lock is **reentrant per tokio task**, as the mutex (a re-entered lock creates no
///   node); futures joined in one task are one owner.
/// - **Downgrade**: the task that holds the write lock may take the read lock (at once, with no
///   listing), then release the write lock. The read node is created `EPHEMERAL` with the
///   write node's sequence, so it sorts level with the write node and a writer queued behind
///   stays blocked (Curator 5.4 lets that writer in while the downgraded reader still reads).
///   Another task of the process is not given the read lock this way: it queues.
/// - **Upgrade** (a reader asks for the write lock) is refused with
///   [`Error::UpgradeRefused`], at once.
///
/// Guards are [`LockGuard`]s: fencing token, `check_op`, `lost()`, `is_valid()`, release on
/// drop. A reader's fencing token is its own node's creation zxid: it orders readers against
/// writers (a reader that holds after a writer has a larger token than that writer's, a writer
/// after a reader a larger one than the reader's), not readers among themselves, which hold
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
    /// needed). Paths under `/zookeeper` are refused.
    pub fn new(client: Client, path: &str) -> Result<Self, Error> {
        Self::with_data(client, path, Bytes::new())
    }

    /// A read/write lock whose nodes carry `data` (Curator writes the host's IP by default;
    /// nobody reads it).
    pub fn with_data(client: Client, path: &str, data: Bytes) -> Result<Self, Error> {
        recipe_mutex::validate_lock_path(path)?;
        let shared = Arc::new(Shared {
            read: Holds::new(client.clone(), path, true),
            write: Holds::new(client, path, true),
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
}

impl Shared {
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
#[derive(Debug, Clone)]
pub struct ReadLock {
    shared: Arc<Shared>,
}

/// The exclusive side of an [`InterProcessReadWriteLock`].
#[derive(Debug, Clone)]
pub struct WriteLock {
    shared: Arc<Shared>,
}

impl ReadLock {
    async fn take(&self, deadline: Option<Instant>) -> Result<Option<LockGuard>, Error> {
        let shared = &self.shared;
        let owner = Owner::current();
        let data = shared.data(&shared.read);
        shared
            .read
            .take(owner, deadline, |turn| async move {
                let client = shared.client();
                let path = shared.path();
                match shared.write.node_of(owner) {
                    // A downgrade: this task holds the write lock.
                    Some(write) => {
                        let name = write.path.rsplit('/').next().unwrap_or_default();
                        let uuid = recipe_mutex::random_uuid();
                        let deadline = deadline.map(Instant::into_std);
                        // The read hold carries the write hold's fencing token: it continues
                        // the write hold, and the next writer's token is greater.
                        let machine =
                            DowngradeMachine::new(path, name, write.czxid, &uuid, data, deadline);
                        let Some(machine) = machine else {
                            return Err(Error::NodeVanished);
                        };
                        driver::take_node(client, machine, Some(turn)).await
                    }
                    None => {
                        driver::acquire(client, path, ReadPredicate, data, deadline, Some(turn))
                            .await
                    }
                }
            })
            .await
    }
}

impl WriteLock {
    async fn take(&self, deadline: Option<Instant>) -> Result<Option<LockGuard>, Error> {
        let shared = &self.shared;
        let owner = Owner::current();
        if shared.read.is_owned_by(owner) && !shared.write.is_owned_by(owner) {
            return Err(Error::UpgradeRefused {
                path: shared.path().to_owned(),
            });
        }
        let data = shared.data(&shared.write);
        let client = shared.client();
        let path = shared.path();
        shared
            .write
            .take(owner, deadline, |turn| {
                driver::acquire(client, path, WritePredicate, data, deadline, Some(turn))
            })
            .await
    }
}

recipe_mutex::lock_surface!(ReadLock, kind = "read", what = "the read lock");
recipe_mutex::lock_surface!(WriteLock, kind = "write", what = "the write lock");

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
                recipe_mutex::participant_nodes(client, path, &$name, true).await
            }
        }
    };
}

side!(ReadLock, read, ReadPredicate, "read");
side!(WriteLock, write, WritePredicate, "write");
