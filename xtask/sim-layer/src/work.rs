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
use std::collections::BTreeMap;
use std::pin::Pin;

use recipe_mutex::{Error, Guard, InterProcessMutex, Lock, Loss};
use recipe_rwlock::InterProcessReadWriteLock;
use recipe_semaphore::{InterProcessSemaphoreMutex, InterProcessSemaphoreV2, Lease};
use tokio::time::Instant;
use zk_client::Client;

use super::ledger::{Claim, Ledger, Mode, TOLD_BOUND};
use zk_mem_server::MemServer;
use zk_sim::Recipe;
use zk_sim::rng::Rng;

/// How far past deadline + grace a timed acquire may return (the clock's millisecond
/// rounding, on tokio's paused clock where nothing else can delay it).
const SLACK: Duration = Duration::from_millis(5);

/// How late past its session timeout a cut-off client's guard may say `Lost` (the clock's
/// millisecond rounding and the session task's turn, on tokio's paused clock).
const LOST_SLACK: Duration = Duration::from_millis(50);

/// The node a fenced write goes to (made by the fence session).
pub const FENCE: &str = "/fence";

/// What every task of a schedule shares.
#[derive(Clone)]
pub struct Scene {
    /// The server.
    pub server: MemServer,
    /// The holds and violations.
    pub ledger: Arc<Mutex<Ledger>>,
    /// The recipe.
    pub recipe: Recipe,
    /// A session the nemesis spares, through which fenced writes are tried.
    pub fence: Client,
    /// The sessions the nemesis has cut off from the server (a silent expiry), with when.
    pub cut_off: Arc<Mutex<BTreeMap<i64, Instant>>>,
    /// The session timeout the clients ask for (and get).
    pub session_timeout: Duration,
    /// The cohort mutex's cohort of each session: its tasks share it.
    pub cohorts: Arc<Mutex<BTreeMap<i64, recipe_mutex::CohortMutex>>>,
    /// Each session's cohort read/write lock (`Recipe::CohortReadWrite`), by session id.
    pub rw_cohorts: Arc<Mutex<BTreeMap<i64, recipe_rwlock::CohortReadWriteLock>>>,
    /// Their bound.
    pub cohort_bound: recipe_mutex::CohortBound,
}

impl Scene {
    /// The ledger.
    pub fn ledger(&self) -> std::sync::MutexGuard<'_, Ledger> {
        self.ledger.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn begin(
        &self,
        client: &Client,
        thing: &str,
        mode: Mode,
        node: Option<&str>,
        token: (i64, u64),
    ) -> u64 {
        let claim = Claim {
            thing,
            mode,
            node,
            session: client.session_id(),
            token: token.0,
            local: token.1,
        };
        let server = self.server.clone();
        self.ledger().begin(&server, claim)
    }

    fn end(&self, id: u64) {
        let server = self.server.clone();
        self.ledger().end(&server, id);
    }

    /// When `session` was cut off from the server, if it is now.
    pub fn cut_off_since(&self, session: i64) -> Option<Instant> {
        let cut_off = self.cut_off.lock().unwrap_or_else(PoisonError::into_inner);
        cut_off.get(&session).copied()
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

/// The first of `losses` to resolve (a lease's, of several; pending if none).
fn first_of<'g>(losses: impl Iterator<Item = LostFuture<'g>>) -> LostFuture<'g> {
    let mut losses: Vec<LostFuture<'g>> = losses.collect();
    Box::pin(std::future::poll_fn(move |cx| {
        for loss in losses.iter_mut() {
            if let std::task::Poll::Ready(l) = loss.as_mut().poll(cx) {
                return std::task::Poll::Ready(l);
            }
        }
        std::task::Poll::Pending
    }))
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

type LostFuture<'g> = Pin<Box<dyn Future<Output = Loss> + Send + 'g>>;

/// A hold of a little while. If the nemesis has cut this session off from the server
/// meanwhile (a silent expiry), the hold goes on until its guard says [`Loss::Lost`], which must
/// come within the session timeout of the cut: the client cannot know sooner, and must know by
/// then (no server heard for its whole session timeout). Once the server has expired the
/// session, a write fenced by the guard (`fence`: its check ops) must be refused. If another
/// client deleted a node of the hold meanwhile (the meddler), the hold goes on until it is
/// told ([`told`]).
#[allow(clippy::too_many_arguments)]
async fn hold_on<'g>(
    scene: &Scene,
    client: &Client,
    rng: &mut Rng,
    what: &str,
    ids: &[u64],
    lost: impl Fn() -> LostFuture<'g>,
    valid: impl Fn() -> bool,
    fence: Vec<zk_client::Op>,
) {
    hold(rng).await;
    let session = client.session_id();
    let Some(since) = scene.cut_off_since(session) else {
        told(scene, client, what, ids, &lost, &valid).await;
        return;
    };
    let bound = since + scene.session_timeout + LOST_SLACK;
    let said = tokio::time::timeout_at(bound, async {
        let mut states = client.state_watch();
        loop {
            match lost().await {
                Loss::Lost => return,
                // Its node deleted by another client before the cut: as good a word.
                Loss::Deleted if scene.ledger().meddled_any(ids) => return,
                _ => {}
            }
            if states.changed().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    })
    .await;
    if said.is_err() {
        scene.ledger().violation(format!(
            "{what}: session {session:#x} cut off from the server {:?} ago, its guard has not said Lost",
            Instant::now().duration_since(since)
        ));
        return;
    }
    scene.ledger().lost_in_time += 1;
    scene
        .server
        .note(|| format!("{what}: {session:#x} said Lost"));
    fenced(scene, session, what, fence).await;
}

/// If another client deleted a node of the hold `ids` while its session lives, the hold goes
/// on until its holder is told: its guard's `lost()` says [`Loss::Deleted`] (or [`Loss::Lost`]:
/// no server heard for the session timeout), or its session ends on the server; within
/// [`TOLD_BOUND`] of the delete, else a violation. Once told `Deleted`, the guard must no
/// longer call itself valid.
async fn told<'g>(
    scene: &Scene,
    client: &Client,
    what: &str,
    ids: &[u64],
    lost: &impl Fn() -> LostFuture<'g>,
    valid: &impl Fn() -> bool,
) {
    let Some((node, since)) = scene.ledger().deleted_of(&scene.server, ids) else {
        return;
    };
    let session = client.session_id();
    let ended = || !scene.server.sessions().iter().any(|s| s.id == session);
    let said = tokio::time::timeout_at(since + TOLD_BOUND, async {
        let mut states = client.state_watch();
        loop {
            match lost().await {
                Loss::Deleted => return Some(Loss::Deleted),
                Loss::Lost => return Some(Loss::Lost),
                Loss::Unsure if ended() => return None,
                Loss::Unsure => {}
            }
            if states.changed().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    })
    .await;
    let delay = Instant::now().duration_since(since);
    match said {
        Err(_) => scene.ledger().violation(format!(
            "{what}: {node} of session {session:#x} deleted by another client {delay:?} ago, its holder not told (lost() has not said Deleted)"
        )),
        // Said at once, but only once the hold began, past the bound (a hold that began on a
        // node long deleted: the tokio timeout polls its future first).
        Ok(Some(Loss::Deleted)) if delay > TOLD_BOUND => scene.ledger().violation(format!(
            "{what}: {node} of session {session:#x} deleted by another client {delay:?} ago, its holder told only now"
        )),
        Ok(Some(Loss::Deleted)) => {
            scene.ledger().told(&node, since);
            scene
                .server
                .note(|| format!("{what}: {session:#x} told {node} deleted, {delay:?} after"));
            if valid() {
                scene.ledger().violation(format!(
                    "{what}: {node} deleted by another client, its guard said Deleted yet calls itself valid"
                ));
            }
        }
        Ok(Some(_)) => scene.ledger().told_lost += 1,
        Ok(None) => scene.ledger().told_expired += 1,
    }
}

/// Once the server has ended `session` (at its deadline, or by the nemesis), a write fenced
/// by `checks` (the guard's check ops) is sent through the fence session: the server must
/// refuse it. If the session outlives the partition, there is nothing to fence.
async fn fenced(scene: &Scene, session: i64, what: &str, checks: Vec<zk_client::Op>) {
    let until = Instant::now() + scene.session_timeout + Duration::from_secs(2);
    while scene.server.sessions().iter().any(|s| s.id == session) {
        if Instant::now() > until || scene.cut_off_since(session).is_none() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let mut ops = checks;
    ops.push(zk_client::Op::set_data(
        FENCE,
        format!("{session:#x}"),
        None,
    ));
    for _ in 0..100 {
        match scene.fence.multi(&ops).await {
            Ok(_) => {
                scene.ledger().violation(format!(
                    "{what}: a write fenced by a guard of expired session {session:#x} was accepted"
                ));
                return;
            }
            Err(zk_client::Error::MultiFailed { .. }) => {
                scene.ledger().fenced_refused += 1;
                scene
                    .server
                    .note(|| format!("{what}: the fenced write of {session:#x} was refused"));
                return;
            }
            // The fence session's own connection trouble (an outage): try again.
            Err(zk_client::Error::ConnectionLoss) => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(_) => return,
        }
    }
}

type Boxed<T> = std::pin::Pin<Box<dyn Future<Output = Result<Option<T>, Error>> + Send>>;

/// A semaphore's failure as the lock layer's: the simulator asks 1 or 2 leases, so the
/// semaphore's own failure (a bad count) is a bug of the scenario.
fn lock_error(e: recipe_semaphore::Error) -> Error {
    match e {
        recipe_semaphore::Error::Lock(e) => e,
        other => panic!("the scenario asked a count the semaphore refuses: {other}"),
    }
}

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
            Recipe::CohortMutex => {
                let Some(path) = paths.first() else { return };
                // The session's cohort, made by its first task to come.
                let cohort = {
                    let mut cohorts = scene.cohorts.lock().unwrap_or_else(PoisonError::into_inner);
                    cohorts
                        .entry(client.session_id())
                        .or_insert_with(|| {
                            InterProcessMutex::new(client.clone(), path)
                                .expect("valid path")
                                .cohort(scene.cohort_bound)
                        })
                        .clone()
                };
                let r = Rng::new(rng.next_u64());
                lock_round(&scene, &client, Arc::new(cohort), Mode::Exclusive, r).await;
            }
            Recipe::CohortReadWrite => {
                let Some(path) = paths.first() else { return };
                let cohort = {
                    let mut cohorts = scene
                        .rw_cohorts
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner);
                    cohorts
                        .entry(client.session_id())
                        .or_insert_with(|| {
                            InterProcessReadWriteLock::new(client.clone(), path)
                                .expect("valid path")
                                .cohort(scene.cohort_bound)
                        })
                        .clone()
                };
                let r = Rng::new(rng.next_u64());
                if rng.chance(600) {
                    let read = Arc::new(cohort.read_lock().clone());
                    lock_round(&scene, &client, read, Mode::Read, r).await;
                } else {
                    let write = Arc::new(cohort.write_lock().clone());
                    lock_round(&scene, &client, write, Mode::Write, r).await;
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
                                s.try_acquire_many_for(
                                    qty,
                                    d.saturating_duration_since(Instant::now()),
                                )
                                .await
                            }
                            None => s.acquire_many(qty).await.map(Some),
                        }
                        .map_err(lock_error)
                    })
                };
                if let Some(got) = acquire(&scene, &client, "semaphore", how, take).await {
                    let ids: Vec<u64> = got
                        .iter()
                        .map(|l| {
                            let node = Some(l.node_path());
                            scene.begin(
                                &client,
                                path,
                                Mode::Lease(leases),
                                node,
                                (l.fencing_token(), 0),
                            )
                        })
                        .collect();
                    let fence = got.iter().map(Lease::check_op).collect();
                    // The first loss of any lease (a meddler deletes one node, not all).
                    let lost = || -> LostFuture<'_> {
                        first_of(got.iter().map(|l| -> LostFuture<'_> { Box::pin(l.lost()) }))
                    };
                    let valid = || got.iter().all(Lease::is_valid);
                    let what = "semaphore";
                    hold_on(&scene, &client, &mut rng, what, &ids, lost, valid, fence).await;
                    let how = letgo(&mut rng);
                    let_go(&scene, &ids, got, how, |got| {
                        Box::pin(async move {
                            recipe_semaphore::return_all(got).await.map_err(lock_error)
                        })
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
    let what = lock.kind().as_str();
    let taking = lock.clone();
    let take = move |d: Option<Instant>| -> Boxed<Box<dyn Guard>> {
        Box::pin(async move { taking.lock_until(d).await })
    };
    let Some(g) = acquire(scene, client, what, how, take).await else {
        return;
    };
    // Every part asked for (a multi-lock's every member) must be held: the guard's holds
    // only say which node to judge for each.
    let holds = g.holds();
    let mut ids: Vec<u64> = Vec::new();
    for part in asked_parts(&lock) {
        let hold = holds.iter().find(|h| h.lock_path() == part);
        let (node, token) = hold.map_or((None, 0), |h| (Some(h.node_path()), h.fencing_token()));
        ids.push(scene.begin(client, &part, mode, node, (token, g.local_sequence())));
    }
    if rng.chance(300) {
        if let Some(first) = g.holds().first() {
            let nested = first.reenter();
            hold(&mut rng).await;
            drop(nested);
        }
    }
    let fence = g.check_ops();
    let valid = || g.is_valid();
    hold_on(
        scene,
        client,
        &mut rng,
        what,
        &ids,
        || g.lost(),
        valid,
        fence,
    )
    .await;
    let how = letgo(&mut rng);
    let_go(scene, &ids, g, how, |g| g.release()).await;
}

/// The lock paths a hold of `lock` must cover: each part of a multi-lock, else the lock's own.
fn asked_parts(lock: &Arc<dyn Lock>) -> Vec<String> {
    let parts = lock.parts();
    match parts.is_empty() {
        true => vec![lock.path().to_owned()],
        false => parts.iter().map(|p| p.path().to_owned()).collect(),
    }
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
    let wid = scene.begin(
        client,
        path,
        Mode::Write,
        Some(w.node_path()),
        (w.fencing_token(), 0),
    );
    let fence = vec![w.check_op()];
    let lost = || -> LostFuture<'_> { Box::pin(w.lost()) };
    let valid = || w.is_valid();
    hold_on(scene, client, rng, "write lock", &[wid], lost, valid, fence).await;
    if !rng.chance(400) {
        let how = letgo(rng);
        let_go(scene, &[wid], w, how, |w| Box::pin(w.release())).await;
        return;
    }
    // A downgrade: waiting, with a deadline, or cancelled. The write hold ends as it starts
    // (the downgrade deletes the write node once its read node holds).
    scene.end(wid);
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
    if let Ok(Some(read)) = down {
        let node = Some(read.node_path());
        let rid = scene.begin(client, path, Mode::Read, node, (read.fencing_token(), 0));
        let fence = vec![read.check_op()];
        let lost = || -> LostFuture<'_> { Box::pin(read.lost()) };
        let valid = || read.is_valid();
        let what = "downgraded read";
        hold_on(scene, client, rng, what, &[rid], lost, valid, fence).await;
        let how = letgo(rng);
        let_go(scene, &[rid], read, how, |g| Box::pin(g.release())).await;
    }
}
