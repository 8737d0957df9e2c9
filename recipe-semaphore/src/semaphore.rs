//! [`InterProcessSemaphoreV2`]: up to N leases at once across processes.

use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use crate::Error;
use bytes::Bytes;
use recipe_mutex::Error as LockError;
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
/// for none, or for more than a fixed N, is refused at once ([`Error::BadLeaseCount`]). With a
/// shared count, asking for more than the count now (a count of 0 pauses the semaphore, as in
/// Curator) waits, within the deadline, for the count to grow: that wait happens before the
/// inner lock is taken, so it stops no other client.
///
/// Every `acquire` is its own participant, whatever task asks; each [`Lease`] is the
/// ownership of one lease. Cancel-safe: dropping an acquire at any point leaves no lease and
/// no inner-lock node (a background task finishes what was in flight and deletes what was
/// created), and cancelling in a loop cannot pile up nodes (past a few pending cleanups per
/// session and path, a new acquire waits for one to finish, within its deadline).
///
/// # Examples
///
/// ```no_run
/// use std::time::Duration;
/// use recipe_semaphore::InterProcessSemaphoreV2;
///
/// # async fn f(client: zk_client::Client) -> Result<(), recipe_semaphore::Error> {
/// let pool = InterProcessSemaphoreV2::new(client, "/app/pools/db", 3)?;
/// let mut tasks = Vec::new();
/// for i in 0..10 {
///     let pool = pool.clone();
///     tasks.push(tokio::spawn(async move {
///         let lease = pool.acquire().await?; // at most 3 at once, across every process
///         println!("task {i} has {}", lease.node_path());
///         lease.release().await
///     }));
/// }
/// for task in tasks {
///     task.await.expect("task panicked")?;
/// }
/// match pool.try_acquire_for(Duration::from_millis(100)).await? {
///     Some(lease) => drop(lease), // returned in the background
///     None => println!("all 3 taken"),
/// }
/// # Ok(()) }
/// ```
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
    /// Dropped with the last handle: ends the task that follows the shared count.
    _follower: Option<tokio::sync::oneshot::Sender<()>>,
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
    /// containers when needed). Its lease nodes carry this host's address
    /// ([`recipe_mutex::host_address`]; [`set_node_data`](Self::set_node_data) changes it).
    pub fn new(client: Client, path: &str, max_leases: u32) -> Result<Self, Error> {
        let data = recipe_mutex::host_address(&client);
        Self::build(client, path, MaxLeases::new(max_leases), data, false, None)
    }

    /// A semaphore whose maximum is `count`'s value, followed as it changes (a negative
    /// count is no lease; 0 pauses the semaphore). Called outside a tokio runtime, the maximum
    /// stays the count's value now (following it needs a task). The task that follows the
    /// count ends with the semaphore's last handle.
    pub fn with_shared_count(
        client: Client,
        path: &str,
        count: &SharedCount,
    ) -> Result<Self, Error> {
        let max = MaxLeases::new(clamp(count.count()));
        let mut values = count.subscribe();
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            let data = recipe_mutex::host_address(&client);
            return Self::build(client, path, max, data, true, None);
        };
        let (stop, mut stopped) = tokio::sync::oneshot::channel();
        let data = recipe_mutex::host_address(&client);
        let semaphore = Self::build(client, path, max, data, true, Some(stop))?;
        let weak = Arc::downgrade(&semaphore.shared);
        runtime.spawn(async move {
            loop {
                tokio::select! {
                    changed = values.changed() => if changed.is_err() {
                        return;
                    },
                    _ = &mut stopped => return,
                }
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
        follower: Option<tokio::sync::oneshot::Sender<()>>,
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
                _follower: follower,
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

    /// The leases as the server has them (`<path>/leases`), in sequence order, each with its
    /// session and data (ours and Curator's carry the host's address). The first
    /// [`max_leases`](Self::max_leases) hold; a lease past them is the one asker that waits
    /// (an ask is made under the inner lock, so there is at most one; its `watches` is the
    /// lease whose return would let it in, though it wakes on any), or was granted before the
    /// maximum shrank.
    pub async fn queue(&self) -> Result<Vec<recipe_mutex::Participant>, Error> {
        Ok(leases_queue(&self.shared.client, &self.shared.path, self.max_leases()).await?)
    }

    async fn take(&self, qty: u32, deadline: Option<Instant>) -> Result<Option<Vec<Lease>>, Error> {
        let shared = &self.shared;
        let limit = match shared.follows_count {
            true => MAX_LEASES_ASKED,
            false => shared.max.get().min(MAX_LEASES_ASKED),
        };
        if qty == 0 || qty > limit {
            return Err(Error::BadLeaseCount {
                asked: qty,
                max: limit,
            });
        }
        let wake = shared.follows_count.then(|| shared.waiter());
        if let Some(wake) = &wake {
            // A shared count below the ask: wait for it to grow (before the inner lock, so no
            // other client is stopped meanwhile).
            if !self.wait_for_count(qty, wake, deadline).await? {
                return Ok(None);
            }
        }
        // A turn: past a few pending cleanups of abandoned attempts, wait for one.
        let Some(turn) =
            recipe_mutex::layer::turns::wait(&shared.client, &shared.path, deadline).await?
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
            wake,
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

    /// Waits until the shared count allows `qty` leases: `Ok(false)` if `deadline` passes
    /// first, the session's error if it ends first.
    async fn wait_for_count(
        &self,
        qty: u32,
        wake: &Notify,
        deadline: Option<Instant>,
    ) -> Result<bool, Error> {
        let mut states = self.shared.client.state_watch();
        loop {
            let woken = wake.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            if self.shared.max.get() >= qty {
                return Ok(true);
            }
            let state = *states.borrow_and_update();
            if state.is_terminal() {
                return Err(recipe_mutex::layer::driver::session_error(state).into());
            }
            tokio::select! {
                biased;
                _ = woken => {}
                changed = states.changed() => if changed.is_err() {
                    return Err(zk_client::Error::Closed.into());
                },
                _ = recipe_mutex::layer::driver::sleep_until(deadline) => return Ok(false),
            }
        }
    }

    /// Takes one lease, waiting as long as it takes.
    pub async fn acquire(&self) -> Result<Lease, Error> {
        let leases = self
            .take(1, None)
            .await?
            .ok_or(Error::Lock(LockError::SessionLost))?;
        leases
            .into_iter()
            .next()
            .ok_or(Error::Lock(LockError::SessionLost))
    }

    /// Takes one lease if it can within `timeout`; `None` if not because every lease was
    /// taken; [`Unavailable`](recipe_mutex::Error::Unavailable) (in [`Error::Lock`]) if the
    /// deadline passed with no server connected (an outage, not a full semaphore). A timeout
    /// too long to be a deadline (`Duration::MAX`) means none, as in
    /// [`acquire`](Self::acquire).
    pub async fn try_acquire_for(&self, timeout: Duration) -> Result<Option<Lease>, Error> {
        let leases = self
            .take(1, recipe_mutex::layer::driver::deadline_in(timeout))
            .await?;
        Ok(leases.and_then(|l| l.into_iter().next()))
    }

    /// Takes `qty` leases, all or none, waiting as long as it takes.
    pub async fn acquire_many(&self, qty: u32) -> Result<Vec<Lease>, Error> {
        self.take(qty, None)
            .await?
            .ok_or(Error::Lock(LockError::SessionLost))
    }

    /// Takes `qty` leases, all or none, if it can within `timeout` (one deadline for all);
    /// `None` if not, with whatever was created deleted first (or in the background if that
    /// takes longer than a short grace); [`Unavailable`](recipe_mutex::Error::Unavailable) (in
    /// [`Error::Lock`]) if the deadline passed with no server connected. A timeout too long
    /// to be a deadline (`Duration::MAX`) means none.
    pub async fn try_acquire_many_for(
        &self,
        qty: u32,
        timeout: Duration,
    ) -> Result<Option<Vec<Lease>>, Error> {
        self.take(qty, recipe_mutex::layer::driver::deadline_in(timeout))
            .await
    }

    /// Returns every lease given (Curator's `returnAll`), as [`return_all`] does: every
    /// delete is sent at once, in one flight. The leases may come from any semaphore.
    pub async fn return_all(&self, leases: impl IntoIterator<Item = Lease>) -> Result<(), Error> {
        return_all(leases).await
    }

    /// The lease nodes' names under `<path>/leases` (child names, in no particular order, as
    /// Curator's `getParticipantNodes` gives them): every lease held, and those about to be
    /// counted.
    pub async fn participant_nodes(&self) -> Result<Vec<String>, Error> {
        Ok(lease_nodes(&self.shared.client, &self.shared.path).await?)
    }
}

/// The most leases one acquire may ask for (a bound on the nodes one ask creates in one
/// flight).
pub const MAX_LEASES_ASKED: u32 = 1024;

/// The children of `<path>/leases`, as child names (none if it does not exist).
pub(crate) async fn lease_nodes(
    client: &Client,
    path: &str,
) -> Result<Vec<String>, recipe_mutex::Error> {
    let dir = child_path(path, LEASES_DIR);
    match client.get_children(&dir).await {
        Ok(children) => Ok(children),
        Err(zk_client::Error::NoNode) => Ok(Vec::new()),
        Err(e) => Err(e.into()),
    }
}

fn clamp(count: i32) -> u32 {
    u32::try_from(count).unwrap_or(0)
}

/// Returns every lease given (Curator's `returnAll`), from whichever semaphores: every delete
/// is sent at once, in one flight (one round trip in all, where Curator spends one per lease);
/// the first error, if any, once all are done. Each delete, once sent, is guaranteed as a
/// dropped lease's is.
pub async fn return_all(leases: impl IntoIterator<Item = Lease>) -> Result<(), Error> {
    // `Lease::release` sends its delete when called: all leave now.
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

/// The leases under `path` judged by the count rule with `max` leases.
pub(crate) async fn leases_queue(
    client: &Client,
    path: &str,
    max: u32,
) -> Result<Vec<recipe_mutex::Participant>, recipe_mutex::Error> {
    use recipes_core::semaphore::{LEASE_NAME, LEASES_DIR};
    let dir = recipes_core::child_path(path, LEASES_DIR);
    let max = usize::try_from(max).unwrap_or(usize::MAX);
    recipe_mutex::layer::participants::queue(
        client,
        &dir,
        |c| recipes_core::name::sort_children(c, LEASE_NAME),
        |name| {
            name.contains(LEASE_NAME)
                .then_some(recipes_core::participants::Rule::Exclusive { max })
        },
    )
    .await
}
