//! [`InterProcessSemaphoreV2`]: up to N leases at once across processes.

use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use bytes::Bytes;
use recipe_mutex::{Error, Owner};
use recipes_core::MaxLeases;
use recipes_core::acquire::child_path;
use recipes_core::semaphore::LEASES_DIR;
use tokio::sync::Notify;
use tokio::time::Instant;
use zk_client::Client;

use crate::count::SharedCount;
use crate::lease::Lease;
use crate::take::{Ask, take_leases};

/// A counting semaphore shared across processes, wire-compatible with Curator's
/// `InterProcessSemaphoreV2`: at most N leases are held at once among every client of the
/// path, ours and Curator's.
///
/// N is a per-client convention, as in Curator: nothing on the server checks that clients
/// agree on it, and any child of `<path>/leases` counts against it (a stray node there takes
/// a lease). It is fixed ([`InterProcessSemaphoreV2::new`]) or read from a [`SharedCount`]
/// ([`InterProcessSemaphoreV2::with_shared_count`]) and followed when it changes: a waiter
/// counts again when the maximum grows.
///
/// Asking for several leases takes them all under one hold of the inner lock, all or none:
/// two of our clients each asking for 2 of 2 cannot deadlock holding one each (Curator takes
/// them one at a time; against Curator clients that do, the risk stays on their side). Asking
/// for none, or for more than N, is refused at once ([`Error::BadLeaseCount`]) — also with a
/// shared count, where N is the count's value at the time of asking: such an ask would wait
/// holding the inner lock, and so stop every other client, until the count grew.
///
/// Cancel-safe: dropping an acquire at any point leaves no lease and no inner-lock node (a
/// background task finishes what was in flight and deletes what was created), and the
/// task's next acquire on the same session and path waits for that cleanup
/// ([`recipe_mutex::turns`]): a task cancelling in a loop cannot pile up nodes.
#[derive(Debug, Clone)]
pub struct InterProcessSemaphoreV2 {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    client: Client,
    path: String,
    max: MaxLeases,
    data: Mutex<Bytes>,
    /// The acquisitions waiting now, woken when the shared count changes.
    waiters: Mutex<Vec<Weak<Notify>>>,
    /// Whether the maximum follows a shared count (else nothing ever wakes a waiter).
    follows_count: bool,
}

impl Shared {
    fn wake_all(&self) {
        let mut waiters = self.waiters.lock().unwrap_or_else(PoisonError::into_inner);
        waiters.retain(|w| match w.upgrade() {
            Some(n) => {
                n.notify_one();
                true
            }
            None => false,
        });
    }

    fn waiter(&self) -> Arc<Notify> {
        let notify = Arc::new(Notify::new());
        let mut waiters = self.waiters.lock().unwrap_or_else(PoisonError::into_inner);
        waiters.retain(|w| w.strong_count() > 0);
        waiters.push(Arc::downgrade(&notify));
        notify
    }
}

impl InterProcessSemaphoreV2 {
    /// A semaphore of `max_leases` leases on `path` (validated now; parents are created as
    /// containers when needed).
    pub fn new(client: Client, path: &str, max_leases: u32) -> Result<Self, Error> {
        Self::build(
            client,
            path,
            MaxLeases::new(max_leases),
            Bytes::new(),
            false,
        )
    }

    /// A semaphore whose maximum is `count`'s value, followed as it changes (a negative
    /// count is no lease). Called outside a tokio runtime, the maximum stays the count's
    /// value now (following it needs a task).
    pub fn with_shared_count(
        client: Client,
        path: &str,
        count: &SharedCount,
    ) -> Result<Self, Error> {
        let max = MaxLeases::new(clamp(count.count()));
        let semaphore = Self::build(client, path, max, Bytes::new(), true)?;
        let weak = Arc::downgrade(&semaphore.shared);
        let mut values = count.subscribe();
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return Ok(semaphore);
        };
        runtime.spawn(async move {
            while values.changed().await.is_ok() {
                let Some(shared) = weak.upgrade() else {
                    return;
                };
                let value = *values.borrow_and_update();
                shared.max.set(clamp(value));
                shared.wake_all();
            }
        });
        Ok(semaphore)
    }

    /// The data of the lease nodes this semaphore creates from now on (Curator's
    /// `setNodeData`; empty by default).
    pub fn set_node_data(&self, data: Bytes) {
        *self
            .shared
            .data
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = data;
    }

    fn build(
        client: Client,
        path: &str,
        max: MaxLeases,
        data: Bytes,
        follows_count: bool,
    ) -> Result<Self, Error> {
        recipe_mutex::validate_lock_path(path)?;
        Ok(Self {
            shared: Arc::new(Shared {
                client,
                path: path.to_owned(),
                max,
                data: Mutex::new(data),
                waiters: Mutex::new(Vec::new()),
                follows_count,
            }),
        })
    }

    /// The semaphore's path.
    pub fn path(&self) -> &str {
        &self.shared.path
    }

    /// The maximum number of leases now.
    pub fn max_leases(&self) -> u32 {
        self.shared.max.get()
    }

    async fn take(&self, qty: u32, deadline: Option<Instant>) -> Result<Option<Vec<Lease>>, Error> {
        let max = self.shared.max.get();
        if qty == 0 || qty > max {
            return Err(Error::BadLeaseCount { asked: qty, max });
        }
        let shared = &self.shared;
        // After the cleanup of this task's abandoned attempt, if any (see `turns`).
        let Some(turn) =
            recipe_mutex::turns::wait(&shared.client, &shared.path, Owner::current(), deadline)
                .await
        else {
            return Ok(None);
        };
        let ask = Ask {
            client: &shared.client,
            base: &shared.path,
            qty,
            max: &shared.max,
            data: shared
                .data
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone(),
            deadline,
            turn: Some(turn),
            wake: shared.follows_count.then(|| shared.waiter()),
        };
        let Some(nodes) = take_leases(ask).await? else {
            return Ok(None);
        };
        Ok(Some(
            nodes
                .into_iter()
                .map(|n| Lease::new(shared.client.clone(), n))
                .collect(),
        ))
    }

    /// Takes one lease, waiting as long as it takes.
    pub async fn acquire(&self) -> Result<Lease, Error> {
        let leases = self.take(1, None).await?.ok_or(Error::SessionLost)?;
        leases.into_iter().next().ok_or(Error::SessionLost)
    }

    /// Takes one lease if it can within `timeout`; `None` if not.
    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<Option<Lease>, Error> {
        let leases = self.take(1, Some(Instant::now() + timeout)).await?;
        Ok(leases.and_then(|l| l.into_iter().next()))
    }

    /// Takes `qty` leases, all or none, waiting as long as it takes.
    pub async fn acquire_many(&self, qty: u32) -> Result<Vec<Lease>, Error> {
        self.take(qty, None).await?.ok_or(Error::SessionLost)
    }

    /// Takes `qty` leases, all or none, if it can within `timeout` (one deadline for all);
    /// `None` if not, with whatever was created deleted first (or in the background if that
    /// takes longer than a short grace).
    pub async fn acquire_many_timeout(
        &self,
        qty: u32,
        timeout: Duration,
    ) -> Result<Option<Vec<Lease>>, Error> {
        self.take(qty, Some(Instant::now() + timeout)).await
    }

    /// Returns every lease given (Curator's `returnAll`): all deletes are started at once;
    /// the first error, if any, once all are done.
    pub async fn return_all(leases: impl IntoIterator<Item = Lease>) -> Result<(), Error> {
        let releases: Vec<_> = leases.into_iter().map(Lease::release).collect();
        let mut first = Ok(());
        for release in releases {
            if let Err(e) = release.await {
                if first.is_ok() {
                    first = Err(e);
                }
            }
        }
        first
    }

    /// The lease nodes under `<path>/leases` (full paths, in no particular order): every
    /// lease held, and those about to be counted.
    pub async fn participant_nodes(&self) -> Result<Vec<String>, Error> {
        lease_nodes(&self.shared.client, &self.shared.path).await
    }
}

/// The children of `<path>/leases`, as full paths (none if it does not exist).
pub(crate) async fn lease_nodes(client: &Client, path: &str) -> Result<Vec<String>, Error> {
    let dir = child_path(path, LEASES_DIR);
    match client.get_children(&dir).await {
        Ok(children) => Ok(children.iter().map(|c| child_path(&dir, c)).collect()),
        Err(zk_client::Error::NoNode) => Ok(Vec::new()),
        Err(e) => Err(e.into()),
    }
}

fn clamp(count: i32) -> u32 {
    u32::try_from(count).unwrap_or(0)
}
