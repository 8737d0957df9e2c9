//! A lock's parents: made as Curator's `creatingParentContainersIfNeeded` makes them (each
//! ancestor checked, then created as a container if missing, top-down), with one flight per
//! client and ancestor: the attempts of one client that need the same missing ancestor at
//! the same time (a scheduler taking a thousand locks under `/jobs`) wait for one `exists`
//! and one `create` instead of each sending their own, N-1 of them failing with
//! `NodeExists` (each a transaction the server logs and fsyncs).

use std::future::Future;
use std::hash::Hash;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use tokio::sync::Notify;
use zk_client::{Client, ClientId, CreateMode, CreateOptions};

use crate::ids::IdMap;

/// Creates `path` and its missing ancestors as container nodes, top-down, as Curator's
/// `creatingParentContainersIfNeeded` (`ZKPaths.mkdirs`) does: each one's existence is checked
/// first, so a client that may not create in `/` works when the ancestors exist. Calls of
/// one client that need the same missing ancestor at once share one check and one create.
///
/// An empty container may be removed by the server's container manager at any moment, so an
/// ancestor made (or seen) a step ago can be gone when its child is created: that `NoNode`
/// starts again from the top, up to `PARENT_PASSES` (4) times, then is returned. `NoNode`
/// for the topmost one means what is above it (a chroot) is missing, and is returned at once.
/// (A lock's attempt, which makes its parents itself, tries again after its retry delay
/// instead, until its deadline.)
pub async fn create_parents(client: &Client, path: &str) -> Result<(), zk_client::Error> {
    match make_parents(client, path).await? {
        Parents::Made => Ok(()),
        Parents::Vanishing => Err(zk_client::Error::NoNode),
    }
}

/// What [`make_parents`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Parents {
    /// Every ancestor and the path exist (made or found).
    Made,
    /// An ancestor was removed under each of the `PARENT_PASSES` passes.
    Vanishing,
}

/// [`create_parents`], telling a missing chroot (`NoNode`) from ancestors the container
/// manager kept removing ([`Parents::Vanishing`]).
pub(crate) async fn make_parents(client: &Client, path: &str) -> Result<Parents, zk_client::Error> {
    let mut passes = 1;
    // `path[..end]` is the ancestor made last (none yet: 0).
    let mut end = 0;
    loop {
        let next = path
            .get(end + 1..)
            .and_then(|rest| rest.find('/'))
            .map(|i| end + 1 + i);
        let prefix = match next {
            Some(n) => path.get(..n).unwrap_or(path),
            None => path,
        };
        let made = flights()
            .run((client.id(), prefix.to_owned()), || {
                make_one(client, prefix)
            })
            .await;
        match made {
            Ok(()) => {}
            // An ancestor made or seen a step ago was removed: from the top again.
            Err(zk_client::Error::NoNode) if end > 0 => {
                if passes == PARENT_PASSES {
                    return Ok(Parents::Vanishing);
                }
                passes += 1;
                end = 0;
                continue;
            }
            Err(e) => return Err(e),
        }
        match next {
            Some(n) => end = n,
            None => return Ok(Parents::Made),
        }
    }
}

/// How many times [`create_parents`] starts again when an ancestor vanishes under it.
pub const PARENT_PASSES: u32 = 4;

/// One ancestor: found, or created as a container (`NodeExists` is found too).
async fn make_one(client: &Client, prefix: &str) -> Result<(), zk_client::Error> {
    static CONTAINER: CreateOptions = CreateOptions::new(CreateMode::Container);
    if client.exists(prefix).await?.is_some() {
        return Ok(());
    }
    match client.create(prefix, b"", &CONTAINER).await {
        Ok(_) | Err(zk_client::Error::NodeExists) => Ok(()),
        Err(e) => Err(e),
    }
}

/// The process's ancestors being made, by client and path.
fn flights() -> &'static Flights<(ClientId, String)> {
    static FLIGHTS: OnceLock<Flights<(ClientId, String)>> = OnceLock::new();
    FLIGHTS.get_or_init(Flights::default)
}

/// Steps in the air, by key: whoever asks for a key while its step is in the air waits for
/// that step instead of running its own. Only success is shared: a caller whose flight
/// failed, or was dropped by its caller, runs its own step (so each caller's error is its
/// own, and a cancelled caller strands nobody). An entry lives exactly as long as its step,
/// so the table holds at most one entry per step in the air.
pub(crate) struct Flights<K> {
    air: Mutex<IdMap<K, Arc<Landing>>>,
}

/// A flight's end as its waiters see it. (Not a `tokio::sync::watch`: its waiters are spread
/// over shards by the runtime's random generator and woken shard by shard, an order that
/// would differ from run to run in the simulator's replays; a `Notify` wakes in order.)
#[derive(Default)]
struct Landing {
    /// [`IN_AIR`], [`MADE`] or [`NOT_MADE`].
    state: AtomicU8,
    landed: Notify,
}

/// The step is running.
const IN_AIR: u8 = 0;
/// The step succeeded.
const MADE: u8 = 1;
/// The step failed, or its caller dropped it.
const NOT_MADE: u8 = 2;

impl Landing {
    /// Whether the step succeeded, once it has ended.
    async fn made(&self) -> bool {
        loop {
            let landed = self.landed.notified();
            let mut landed = std::pin::pin!(landed);
            // Registered before the state is read: a landing after the read wakes it.
            landed.as_mut().enable();
            match self.state.load(Ordering::Acquire) {
                IN_AIR => landed.await,
                state => return state == MADE,
            }
        }
    }

    fn land(&self, state: u8) {
        self.state.store(state, Ordering::Release);
        self.landed.notify_waiters();
    }
}

impl<K> Default for Flights<K> {
    fn default() -> Self {
        Flights {
            air: Mutex::new(IdMap::default()),
        }
    }
}

impl<K: Hash + Eq + Clone> Flights<K> {
    /// `step`'s result, or `Ok` when a step for `key` already in the air succeeds.
    pub(crate) async fn run<E, F>(&self, key: K, step: impl FnOnce() -> F) -> Result<(), E>
    where
        F: Future<Output = Result<(), E>>,
    {
        let joined = {
            let mut air = self.air.lock().unwrap_or_else(|e| e.into_inner());
            match air.get(&key) {
                Some(landing) => Err(landing.clone()),
                None => {
                    let landing = Arc::new(Landing::default());
                    air.insert(key.clone(), landing.clone());
                    Ok(Flight {
                        flights: self,
                        key,
                        landing,
                    })
                }
            }
        };
        match joined {
            Ok(flight) => {
                let result = step().await;
                flight.land(result.is_ok());
                result
            }
            Err(landing) => {
                if landing.made().await {
                    Ok(())
                } else {
                    // Failed, or its caller dropped it: our own step.
                    step().await
                }
            }
        }
    }

    /// How many steps are in the air.
    #[cfg(test)]
    fn in_air(&self) -> usize {
        self.air.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

/// A step in the air: its table entry, removed when it lands or its caller drops it.
struct Flight<'a, K: Hash + Eq> {
    flights: &'a Flights<K>,
    key: K,
    landing: Arc<Landing>,
}

impl<K: Hash + Eq> Flight<'_, K> {
    /// Tells the waiters how the step ended (the entry goes as `self` drops).
    fn land(self, ok: bool) {
        self.landing.land(if ok { MADE } else { NOT_MADE });
    }
}

impl<K: Hash + Eq> Drop for Flight<'_, K> {
    fn drop(&mut self) {
        self.flights
            .air
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.key);
        // Dropped by its caller before it landed: the waiters run their own steps.
        if self.landing.state.load(Ordering::Acquire) == IN_AIR {
            self.landing.land(NOT_MADE);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use tokio::sync::oneshot;

    use super::*;

    /// A step that counts its runs and ends with what `end` sends (an error when dropped).
    async fn step(runs: &AtomicUsize, end: oneshot::Receiver<Result<(), u8>>) -> Result<(), u8> {
        runs.fetch_add(1, Ordering::SeqCst);
        end.await.unwrap_or(Err(0))
    }

    /// Polls `f` once (to register it), leaving it in the air.
    async fn start<F: Future + Unpin>(f: &mut F) {
        assert!(poll_once(f).await.is_none(), "ended at once");
    }

    /// `f`'s output if one poll ends it.
    async fn poll_once<F: Future + Unpin>(f: &mut F) -> Option<F::Output> {
        std::future::poll_fn(|cx| {
            std::task::Poll::Ready(match std::pin::Pin::new(&mut *f).poll(cx) {
                std::task::Poll::Ready(v) => Some(v),
                std::task::Poll::Pending => None,
            })
        })
        .await
    }

    #[tokio::test]
    async fn callers_in_the_air_together_share_one_successful_step() {
        let flights = Flights::<&str>::default();
        let runs = AtomicUsize::new(0);
        let (done, end) = oneshot::channel();
        let mut first = Box::pin(flights.run("/a", || step(&runs, end)));
        start(&mut first).await;
        let mut waiters: Vec<_> = (0..3)
            .map(|_| Box::pin(flights.run("/a", || async { Err::<(), u8>(9) })))
            .collect();
        for w in &mut waiters {
            start(w).await;
        }
        assert_eq!(flights.in_air(), 1);
        done.send(Ok(())).unwrap();
        assert_eq!(first.await, Ok(()));
        for w in waiters {
            assert_eq!(w.await, Ok(()), "the flight's success, not the own step");
        }
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        assert_eq!(flights.in_air(), 0);
    }

    #[tokio::test]
    async fn a_failed_flight_leaves_each_waiter_its_own_step() {
        let flights = Flights::<&str>::default();
        let runs = AtomicUsize::new(0);
        let (done, end) = oneshot::channel();
        let mut first = Box::pin(flights.run("/a", || step(&runs, end)));
        start(&mut first).await;
        let mut waiter = Box::pin(flights.run("/a", || async { Err::<(), u8>(7) }));
        start(&mut waiter).await;
        done.send(Err(3)).unwrap();
        assert_eq!(first.await, Err(3));
        assert_eq!(waiter.await, Err(7), "its own step's error");
        assert_eq!(flights.in_air(), 0);
    }

    #[tokio::test]
    async fn a_dropped_flight_strands_no_waiter_and_leaves_no_entry() {
        let flights = Flights::<&str>::default();
        let runs = AtomicUsize::new(0);
        let (_done, end) = oneshot::channel();
        let mut first = Box::pin(flights.run("/a", || step(&runs, end)));
        start(&mut first).await;
        let mut waiter = Box::pin(flights.run("/a", || async { Ok::<(), u8>(()) }));
        start(&mut waiter).await;
        drop(first);
        assert_eq!(flights.in_air(), 0);
        assert_eq!(waiter.await, Ok(()), "ran its own step");
        // The next caller starts a flight of its own.
        let (done, end) = oneshot::channel();
        done.send(Ok(())).unwrap();
        assert_eq!(flights.run("/a", || step(&runs, end)).await, Ok(()));
        assert_eq!(runs.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn nothing_is_remembered_after_landing_and_keys_fly_apart() {
        let flights = Flights::<&str>::default();
        let runs = AtomicUsize::new(0);
        for key in ["/a", "/a", "/b"] {
            let (done, end) = oneshot::channel();
            done.send(Ok(())).unwrap();
            assert_eq!(flights.run(key, || step(&runs, end)).await, Ok(()));
        }
        assert_eq!(
            runs.load(Ordering::SeqCst),
            3,
            "each call after a landing runs"
        );
        let (_a, end_a) = oneshot::channel();
        let (_b, end_b) = oneshot::channel();
        let mut a = Box::pin(flights.run("/a", || step(&runs, end_a)));
        let mut b = Box::pin(flights.run("/b", || step(&runs, end_b)));
        start(&mut a).await;
        start(&mut b).await;
        assert_eq!(flights.in_air(), 2, "another key is its own flight");
    }

    #[tokio::test]
    async fn a_waiter_dropped_while_waiting_disturbs_neither_the_flight_nor_the_others() {
        let flights = Flights::<&str>::default();
        let runs = AtomicUsize::new(0);
        let (done, end) = oneshot::channel();
        let mut first = Box::pin(flights.run("/a", || step(&runs, end)));
        start(&mut first).await;
        let mut dropped = Box::pin(flights.run("/a", || async { Err::<(), u8>(1) }));
        let mut kept = Box::pin(flights.run("/a", || async { Err::<(), u8>(2) }));
        start(&mut dropped).await;
        start(&mut kept).await;
        drop(dropped);
        assert_eq!(flights.in_air(), 1, "the flight is still in the air");
        done.send(Ok(())).unwrap();
        assert_eq!(first.await, Ok(()));
        assert_eq!(kept.await, Ok(()), "the flight's success");
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        assert_eq!(flights.in_air(), 0);
    }
}
