//! What one simulated task does with the real recipe crates: takes the recipe's lock in a
//! seeded mix of ways (waiting, with a deadline, cancelled at a random point, two sections
//! joined in one task), holds it (re-entering through the guard, downgrading), and lets it go
//! in a seeded mix of ways (awaited release, drop, drop on a plain thread, release from
//! another task). Every hold is recorded in the [`Ledger`]; every timed acquire is checked
//! against its deadline; every failure is checked against the session's real fate.

use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use recipe_multilock::InterProcessMultiLock;
use recipe_mutex::{Error, Guard, InterProcessMutex, Lock};
use recipe_rwlock::InterProcessReadWriteLock;
use recipe_semaphore::{InterProcessSemaphoreMutex, InterProcessSemaphoreV2, Lease};
use tokio::time::Instant;
use zk_client::Client;

use super::ledger::{Ledger, Mode};
use crate::Recipe;
use crate::rng::Rng;
use crate::wire::SimServer;

/// How far past deadline + grace a timed acquire may return (the clock's millisecond
/// rounding, on tokio's paused clock where nothing else can delay it).
const SLACK: Duration = Duration::from_millis(5);

/// What every task of a schedule shares.
#[derive(Clone)]
pub struct Scene {
    /// The server.
    pub server: SimServer,
    /// The holds and violations.
    pub ledger: Arc<Mutex<Ledger>>,
    /// The recipe.
    pub recipe: Recipe,
}

impl Scene {
    fn ledger(&self) -> std::sync::MutexGuard<'_, Ledger> {
        self.ledger.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn begin(&self, thing: &str, mode: Mode, node: &str, token: i64, cont: Option<u64>) -> u64 {
        let server = self.server.clone();
        self.ledger().begin(&server, thing, mode, node, token, cont)
    }

    fn end(&self, id: u64) {
        self.ledger().end(id);
    }

    /// Checks a finished acquire: within its deadline and one grace; a failure that blames
    /// the session only if the session really ended on the server.
    fn after<T>(
        &self,
        client: &Client,
        what: &str,
        deadline: Option<Instant>,
        r: &Result<T, Error>,
    ) {
        let now = Instant::now();
        if let Some(d) = deadline {
            let bound = d + recipes_core::DEADLINE_GRACE + SLACK;
            if now > bound {
                let late = now.duration_since(d);
                self.ledger()
                    .violation(format!("{what}: returned {late:?} past its deadline"));
            }
        }
        if let Err(Error::SessionExpired | Error::SessionLost) = r {
            let id = client.session_id();
            let alive = self.server.sessions().iter().any(|s| s.id == id);
            if alive && !client.state().is_terminal() {
                self.ledger().violation(format!(
                    "{what}: failed with {r:?}, though session {id:#x} lives on the server",
                    r = r.as_ref().err()
                ));
            }
        }
    }
}

/// How a hold is let go.
#[derive(Debug, Clone, Copy)]
enum Letgo {
    Release,
    /// A release dropped once it has been pending this many polls.
    ReleaseDropped(u32),
    Drop,
    /// Dropped on a plain thread, outside the runtime.
    Thread,
    /// Released from another task.
    Task,
}

fn letgo(rng: &mut Rng) -> Letgo {
    match rng.below(5) {
        0 => Letgo::Release,
        1 => Letgo::Drop,
        2 => Letgo::Thread,
        3 => Letgo::ReleaseDropped(1 + rng.below(4) as u32),
        _ => Letgo::Task,
    }
}

/// Lets `guard` go as `how` says; the ledger's hold `id` ends first.
async fn let_go<G: Send + 'static>(
    scene: &Scene,
    ids: &[u64],
    guard: G,
    how: Letgo,
    release: impl FnOnce(G) -> std::pin::Pin<Box<dyn Future<Output = Result<(), Error>> + Send>>,
) {
    for id in ids {
        scene.end(*id);
    }
    match how {
        Letgo::Release => drop(release(guard).await),
        Letgo::ReleaseDropped(n) => drop(polls(n, release(guard)).await),
        Letgo::Drop => drop(guard),
        Letgo::Thread => {
            let _ = std::thread::spawn(move || drop(guard)).join();
        }
        Letgo::Task => {
            let releasing = release(guard);
            drop(tokio::spawn(releasing));
        }
    }
}

/// How an acquire is asked.
#[derive(Debug, Clone, Copy)]
enum Ask {
    /// As long as it takes.
    Wait,
    /// With a deadline this far.
    Deadline(Duration),
    /// Dropped after this long, wherever it is.
    Cancel(Duration),
    /// Dropped once it has been pending this many polls: at each await point in turn.
    Polls(u32),
}

fn ask(rng: &mut Rng) -> Ask {
    let ms = |rng: &mut Rng, n: u64| Duration::from_millis(rng.below(n));
    match rng.below(12) {
        0..=2 => Ask::Wait,
        3..=6 => Ask::Deadline(ms(rng, 3000)),
        7..=8 => Ask::Cancel(ms(rng, 400)),
        _ => Ask::Polls(1 + rng.below(12) as u32),
    }
}

/// Runs `take` as `ask` says: `Some` when held. Checks it.
async fn acquire<T, F>(scene: &Scene, client: &Client, what: &str, ask: Ask, take: F) -> Option<T>
where
    F: FnOnce(
        Option<Instant>,
    ) -> std::pin::Pin<Box<dyn Future<Output = Result<Option<T>, Error>> + Send>>,
{
    match ask {
        Ask::Wait => {
            let r = take(None).await;
            scene.after(client, what, None, &r);
            r.ok().flatten()
        }
        Ask::Deadline(d) => {
            let deadline = Instant::now() + d;
            let r = take(Some(deadline)).await;
            scene.after(client, what, Some(deadline), &r);
            r.ok().flatten()
        }
        Ask::Cancel(after) => match tokio::time::timeout(after, take(None)).await {
            Ok(r) => {
                scene.after(client, what, None, &r);
                r.ok().flatten()
            }
            Err(_) => None,
        },
        Ask::Polls(n) => match polls(n, take(None)).await {
            Some(r) => {
                scene.after(client, what, None, &r);
                r.ok().flatten()
            }
            None => None,
        },
    }
}

/// Polls `f` until it is ready, or has been pending `n` times: then drops it (`None`).
async fn polls<F: Future>(n: u32, f: F) -> Option<F::Output> {
    let mut f = std::pin::pin!(f);
    let mut left = n;
    std::future::poll_fn(|cx| match f.as_mut().poll(cx) {
        std::task::Poll::Ready(v) => std::task::Poll::Ready(Some(v)),
        std::task::Poll::Pending if left <= 1 => std::task::Poll::Ready(None),
        std::task::Poll::Pending => {
            left -= 1;
            std::task::Poll::Pending
        }
    })
    .await
}

/// A hold of a little while (a seeded pause).
async fn hold(rng: &mut Rng) {
    tokio::time::sleep(Duration::from_millis(rng.below(60))).await;
}

type Boxed<T> = std::pin::Pin<Box<dyn Future<Output = Result<Option<T>, Error>> + Send>>;

/// One task's rounds.
pub async fn task(scene: Scene, client: Client, mut rng: Rng, rounds: u32) {
    let paths = scene.recipe.paths();
    for _ in 0..rounds {
        if client.state().is_terminal() {
            return;
        }
        match scene.recipe {
            Recipe::Mutex => {
                let Some(path) = paths.first() else { return };
                let m: Arc<dyn Lock> =
                    Arc::new(InterProcessMutex::new(client.clone(), path).expect("valid path"));
                if rng.chance(200) {
                    // Two sections joined in one task: each its own participant.
                    let (a, b) = (rng.next_u64(), rng.next_u64());
                    tokio::join!(
                        lock_round(&scene, &client, m.clone(), Mode::Exclusive, Rng::new(a)),
                        lock_round(&scene, &client, m.clone(), Mode::Exclusive, Rng::new(b))
                    );
                } else {
                    let r = Rng::new(rng.next_u64());
                    lock_round(&scene, &client, m, Mode::Exclusive, r).await;
                }
            }
            Recipe::SemaphoreMutex => {
                let Some(path) = paths.first() else { return };
                let m = InterProcessSemaphoreMutex::new(client.clone(), path).expect("valid");
                let r = Rng::new(rng.next_u64());
                lock_round(&scene, &client, Arc::new(m), Mode::Exclusive, r).await;
            }
            Recipe::ReadWrite => {
                let Some(path) = paths.first() else { return };
                let rw = InterProcessReadWriteLock::new(client.clone(), path).expect("valid");
                if rng.chance(600) {
                    let read = Arc::new(rw.read_lock().clone());
                    lock_round(&scene, &client, read, Mode::Read, Rng::new(rng.next_u64())).await;
                } else {
                    write_round(&scene, &client, &rw, path, &mut rng).await;
                }
            }
            Recipe::MultiLock { .. } => {
                let mut members: Vec<&str> = paths
                    .iter()
                    .filter(|_| rng.chance(600))
                    .map(String::as_str)
                    .collect();
                if members.is_empty() {
                    members.extend(paths.first().map(String::as_str));
                }
                let multi = InterProcessMultiLock::new(client.clone(), &members).expect("valid");
                let r = Rng::new(rng.next_u64());
                lock_round(&scene, &client, Arc::new(multi), Mode::Exclusive, r).await;
            }
            Recipe::Semaphore { leases } => {
                let Some(path) = paths.first() else { return };
                let s = InterProcessSemaphoreV2::new(client.clone(), path, leases).expect("valid");
                let qty = 1 + rng.below(2) as u32;
                let how = ask(&mut rng);
                let take = move |d: Option<Instant>| -> Boxed<Vec<Lease>> {
                    Box::pin(async move {
                        match d {
                            Some(d) => {
                                s.acquire_many_timeout(
                                    qty,
                                    d.saturating_duration_since(Instant::now()),
                                )
                                .await
                            }
                            None => s.acquire_many(qty).await.map(Some),
                        }
                    })
                };
                if let Some(got) = acquire(&scene, &client, "semaphore", how, take).await {
                    let ids: Vec<u64> = got
                        .iter()
                        .map(|l| {
                            scene.begin(
                                path,
                                Mode::Lease(leases),
                                l.node_path(),
                                l.fencing_token(),
                                None,
                            )
                        })
                        .collect();
                    hold(&mut rng).await;
                    let how = letgo(&mut rng);
                    let_go(&scene, &ids, got, how, |got| {
                        Box::pin(InterProcessSemaphoreV2::return_all(got))
                    })
                    .await;
                }
            }
        }
    }
}

/// One round on any lock through [`Lock`]: take it as asked, record each of its holds as
/// `mode`, hold it (re-entering through the first hold's guard now and then), let it go.
async fn lock_round(scene: &Scene, client: &Client, lock: Arc<dyn Lock>, mode: Mode, mut rng: Rng) {
    let how = ask(&mut rng);
    let what = lock.kind();
    let taking = lock.clone();
    let take = move |d: Option<Instant>| -> Boxed<Box<dyn Guard>> {
        Box::pin(async move { taking.lock_until(d).await })
    };
    let Some(g) = acquire(scene, client, what, how, take).await else {
        return;
    };
    let ids: Vec<u64> = g
        .holds()
        .iter()
        .map(|h| scene.begin(h.lock_path(), mode, h.node_path(), h.fencing_token(), None))
        .collect();
    if rng.chance(300) {
        if let Some(first) = g.holds().first() {
            let nested = first.reenter();
            hold(&mut rng).await;
            drop(nested);
        }
    }
    hold(&mut rng).await;
    let how = letgo(&mut rng);
    let_go(scene, &ids, g, how, |g| g.release()).await;
}

/// One write round: a write that may downgrade.
async fn write_round(
    scene: &Scene,
    client: &Client,
    rw: &InterProcessReadWriteLock,
    path: &str,
    rng: &mut Rng,
) {
    let how = ask(rng);
    let write = rw.write_lock().clone();
    let take = move |d: Option<Instant>| -> Boxed<recipe_rwlock::WriteGuard> {
        Box::pin(async move {
            match d {
                Some(d) => {
                    write
                        .try_lock_for(d.saturating_duration_since(Instant::now()))
                        .await
                }
                None => write.lock().await.map(Some),
            }
        })
    };
    let Some(w) = acquire(scene, client, "write lock", how, take).await else {
        return;
    };
    let wid = scene.begin(path, Mode::Write, w.node_path(), w.fencing_token(), None);
    hold(rng).await;
    if !rng.chance(400) {
        let how = letgo(rng);
        let_go(scene, &[wid], w, how, |w| Box::pin(w.release())).await;
        return;
    }
    // A downgrade: waiting, with a deadline, or cancelled.
    let started = Instant::now();
    let down = match rng.below(3) {
        0 => w.downgrade().await.map(Some),
        1 => {
            let d = Duration::from_millis(rng.below(2000));
            let r = w.try_downgrade_for(d).await;
            scene.after(client, "downgrade", Some(started + d), &r);
            match r {
                Ok(Ok(read)) => Ok(Some(read)),
                Ok(Err(write)) => {
                    scene.end(wid);
                    drop(write);
                    return;
                }
                Err(e) => Err(e),
            }
        }
        _ => match tokio::time::timeout(Duration::from_millis(rng.below(300)), w.downgrade()).await
        {
            Ok(r) => r.map(Some),
            Err(_) => Ok(None),
        },
    };
    match down {
        Ok(Some(read)) => {
            let rid = scene.begin(
                path,
                Mode::Read,
                read.node_path(),
                read.fencing_token(),
                Some(wid),
            );
            scene.end(wid);
            hold(rng).await;
            let how = letgo(rng);
            let_go(scene, &[rid], read, how, |g| Box::pin(g.release())).await;
        }
        _ => scene.end(wid),
    }
}
