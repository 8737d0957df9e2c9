//! The async layer in the simulator: the real recipe crates (`lock()`, `try_lock_for`,
//! downgrades, leases, multi-locks, guards released, dropped, dropped on plain threads and
//! released from other tasks, acquires cancelled at random points, sections joined in one
//! task) over real `zk_client` sessions to `zk_mem_server`'s in-memory ZooKeeper, on
//! tokio's paused clock, under a seeded nemesis: connections cut and stalled, the server
//! unreachable for a while, the server stopped past the session timeout and started again (the
//! client says `Lost`, the session survives), sessions expired at once, and sessions expired
//! silently (the client cut off from the server, which expires it while no byte moves either
//! way: its holds must say `Lost` within the session timeout of the cut, and a write fenced by
//! their guards must be refused by the server once it expired the session). In some
//! schedules (one in two, drawn from a stream of the seed's own, so that the others replay as
//! before) a meddler, a session of its own that the nemesis spares, deletes lock nodes that
//! are held (granted by the recipe's rule, judged from the server's tree), as an operator
//! would: every hold on such a node must be told within [`ledger::TOLD_BOUND`] (its guard's
//! `lost()` says `Deleted`, or the hold ends by itself first), and the ledger excuses the
//! overlap with the next holder for that hold alone, from the delete until the bound.
//!
//! The [`Ledger`] judges every hold from the server's tree alone, when it begins, at every
//! later begin and when it ends: its node must exist, be owned by the task's own session and be
//! granted by the ledger's own rule (first by sequence; a reader behind no write node; a lease
//! among the first N), and no two counting holds may break the rule at once. Every timed
//! acquire must return within its deadline and one grace; a failure that blames the session
//! must find it gone on the server; every task must end once the nemesis stops; and once
//! everything settled, no node of a live session may be left.
//!
//! A schedule is a seed. [`run_traced`] gives its trace (every frame the server read and
//! wrote, every connection, fault and hold, in order). From the seed come the server's and the
//! nemesis's choices and every task's, node names' UUIDs (the thread's generator, seeded per
//! schedule: the runtime has one thread); the `select!`s of the recipe crates and the wire
//! server on the layer's path are `biased`, and the server and the layer keep no hash maps.
//! What is left is tokio's own generator, which picks the shard each `watch` waiter waits in
//! (so the order in which, say, two background releases waiting for the session to come back
//! wake) and the branch of zk-client's one unbiased `select!`: seeded only in a build with
//! `--cfg tokio_unstable` (`Builder::rng_seed`, done here when that cfg is on). Without it most
//! seeds replay bit for bit (tests/replay.rs keeps some), and a few part where waiters race.

pub mod ledger;
pub mod plant;
mod work;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;
use zk_client::Client;

use ledger::Ledger;
use work::Scene;
use zk_mem_server::{MemServer, ServerConfig};
use zk_sim::Recipe;
use zk_sim::rng::Rng;

/// What a schedule runs.
#[derive(Debug, Clone, Copy)]
pub struct LayerConfig {
    /// The recipe.
    pub recipe: Recipe,
    /// Sessions.
    pub clients: usize,
    /// Tasks per session.
    pub tasks: usize,
    /// Rounds per task.
    pub rounds: u32,
    /// Whether the nemesis runs.
    pub faults: bool,
    /// Whether a meddler may delete held nodes (in the schedules that draw it: one in two).
    pub meddle: bool,
}

impl LayerConfig {
    /// Three sessions of three tasks, eight rounds each, with the nemesis.
    pub fn new(recipe: Recipe) -> Self {
        Self {
            recipe,
            clients: 3,
            tasks: 3,
            rounds: 8,
            faults: true,
            meddle: true,
        }
    }
}

/// What a sweep did.
#[derive(Debug, Clone, Copy, Default)]
pub struct LayerStats {
    /// Holds recorded and checked.
    pub holds: u64,
    /// Faults injected.
    pub faults: u64,
    /// Silent expiries (a session cut off from the server and expired there).
    pub silent: u64,
    /// Holds of a cut-off session whose guard said `Lost` within the session timeout.
    pub lost_in_time: u64,
    /// Writes fenced by a guard of an expired session, refused by the server.
    pub fenced_refused: u64,
    /// Schedules with a meddler.
    pub meddling: u64,
    /// Held nodes the meddler deleted.
    pub meddles: u64,
    /// Holders of a deleted node told `Deleted` by their guard, within the bound.
    pub told: u64,
    /// Of those, told within 100 ms.
    pub told_fast: u64,
    /// The longest time from a delete to its holder told `Deleted`.
    pub told_worst: Duration,
    /// Holders of a deleted node whose guard said `Lost` first (no server heard for the
    /// session timeout), or whose session ended first.
    pub told_otherwise: u64,
    /// Holds on a deleted node that ended by themselves before they were told.
    pub ended_first: u64,
}

impl std::ops::AddAssign for LayerStats {
    fn add_assign(&mut self, other: Self) {
        self.holds += other.holds;
        self.faults += other.faults;
        self.silent += other.silent;
        self.lost_in_time += other.lost_in_time;
        self.fenced_refused += other.fenced_refused;
        self.meddling += other.meddling;
        self.meddles += other.meddles;
        self.told += other.told;
        self.told_fast += other.told_fast;
        self.told_worst = self.told_worst.max(other.told_worst);
        self.told_otherwise += other.told_otherwise;
        self.ended_first += other.ended_first;
    }
}

/// A failing schedule.
#[derive(Debug, Clone)]
pub struct LayerFailure {
    /// Its seed.
    pub seed: u64,
    /// What broke (the first violation).
    pub violation: String,
}

impl std::fmt::Display for LayerFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "seed {}: {}", self.seed, self.violation)
    }
}

/// The session timeout every client asks for.
const SESSION_TIMEOUT: Duration = Duration::from_secs(6);

/// How long the nemesis runs.
const NEMESIS: Duration = Duration::from_secs(40);

/// How long the tasks may take to end once the nemesis stopped.
const SETTLE: Duration = Duration::from_secs(300);

/// Runs the schedule of `seed`.
pub fn run(seed: u64, config: LayerConfig) -> Result<LayerStats, LayerFailure> {
    run_inner(seed, config, false).0
}

/// Runs the schedule of `seed` keeping its trace ([`MemServer::record`]: every frame the
/// server read and wrote, every connection, fault and hold, in order): the outcome and the
/// trace. Two runs of one seed give the same trace.
pub fn run_traced(
    seed: u64,
    config: LayerConfig,
) -> (Result<LayerStats, LayerFailure>, Vec<String>) {
    run_inner(seed, config, true)
}

fn run_inner(
    seed: u64,
    config: LayerConfig,
    trace: bool,
) -> (Result<LayerStats, LayerFailure>, Vec<String>) {
    let fail = |violation: String| LayerFailure { seed, violation };
    let mut builder = tokio::runtime::Builder::new_current_thread();
    builder.enable_time().start_paused(true);
    seed_tokio(&mut builder, seed);
    let runtime = match builder.build() {
        Ok(runtime) => runtime,
        Err(e) => return (Err(fail(format!("no runtime: {e}"))), Vec::new()),
    };
    let (result, lines) = runtime.block_on(async {
        // Every node name of the schedule from the seed: this runtime has one thread, the
        // one that runs this (guards dropped on plain threads name no node).
        recipe_mutex::layer::seed_uuids(seed ^ 0x5eed_0f0d_d5ee_d0f0);
        schedule(seed, config, trace).await
    });
    // Background work still pending goes with the runtime.
    drop(runtime);
    (result.map_err(fail), lines)
}

/// Seeds tokio's own generator, from which it draws for an unbiased `select!` and for the
/// shard each `watch` waiter waits in (so the order waiters on one session state wake in):
/// possible only in a build with `--cfg tokio_unstable`; otherwise nothing.
#[allow(unexpected_cfgs)]
fn seed_tokio(builder: &mut tokio::runtime::Builder, seed: u64) {
    #[cfg(tokio_unstable)]
    builder.rng_seed(tokio::runtime::RngSeed::from_bytes(&seed.to_le_bytes()));
    let _ = (builder, seed);
}

/// Runs `schedules` schedules from `first_seed` on: the first failure, or the totals.
pub fn sweep(
    schedules: u64,
    first_seed: u64,
    config: LayerConfig,
) -> Result<LayerStats, LayerFailure> {
    let mut total = LayerStats::default();
    for seed in first_seed..first_seed.saturating_add(schedules) {
        total += run(seed, config)?;
    }
    Ok(total)
}

/// Runs the schedule: its outcome and its trace (empty unless `trace`).
async fn schedule(
    seed: u64,
    config: LayerConfig,
    trace: bool,
) -> (Result<LayerStats, String>, Vec<String>) {
    let mut rng = Rng::new(seed);
    // Requests take up to a few milliseconds to arrive, so that cancellations and faults
    // find them on their way.
    let latency = Duration::from_millis(rng.below(12));
    let server = MemServer::new(ServerConfig {
        latency,
        ..ServerConfig::new(seed)
    });
    if trace {
        server.record();
    }
    let result = play(&server, &mut rng, config, seed).await;
    (result, server.trace())
}

/// The schedule's clients, tasks and nemesis on `server`, then the checks.
async fn play(
    server: &MemServer,
    rng: &mut Rng,
    config: LayerConfig,
    seed: u64,
) -> Result<LayerStats, String> {
    let builder = Client::builder().session_timeout(SESSION_TIMEOUT);
    let mut clients = Vec::new();
    for _ in 0..config.clients {
        let client = server
            .client(builder.clone(), rng.next_u64())
            .await
            .map_err(|e| format!("connect: {e}"))?;
        clients.push(client);
    }
    // The fence session: the nemesis spares it (outages aside), fenced writes go through it.
    let fence = server
        .client(builder.clone(), rng.next_u64())
        .await
        .map_err(|e| format!("connect: {e}"))?;
    let persistent = zk_client::CreateOptions::new(zk_client::CreateMode::Persistent);
    fence
        .create(work::FENCE, b"", &persistent)
        .await
        .map_err(|e| format!("fence: {e}"))?;
    // The cohort's bound, drawn only for it (every other recipe's seeds replay as before):
    // from no hand-off at all to a few, within a few ms to a few hundred.
    let cohort_bound = match config.recipe {
        Recipe::CohortMutex | Recipe::CohortReadWrite => recipe_mutex::CohortBound {
            handoffs: u32::try_from(rng.below(5)).unwrap_or(0),
            hold: Duration::from_millis(1 + rng.below(300)),
        },
        _ => recipe_mutex::CohortBound::default(),
    };
    // The meddler, in the schedules that draw it, from a stream of its own (the others replay
    // as they did before it).
    let mut meddling = Rng::new(seed ^ MEDDLE_STREAM);
    let meddler = match config.meddle && meddling.chance(500) {
        true => Some(
            server
                .client(builder.clone(), meddling.next_u64())
                .await
                .map_err(|e| format!("connect: {e}"))?,
        ),
        false => None,
    };
    let mut spare = vec![fence.session_id()];
    spare.extend(meddler.as_ref().map(Client::session_id));
    let scene = Scene {
        server: server.clone(),
        ledger: Arc::new(Mutex::new(Ledger::default())),
        recipe: config.recipe,
        fence: fence.clone(),
        cut_off: Arc::new(Mutex::new(BTreeMap::new())),
        session_timeout: SESSION_TIMEOUT,
        cohorts: Arc::new(Mutex::new(BTreeMap::new())),
        rw_cohorts: Arc::new(Mutex::new(BTreeMap::new())),
        cohort_bound,
    };
    let mut tasks = Vec::new();
    for client in &clients {
        for _ in 0..config.tasks {
            let task = work::task(
                scene.clone(),
                client.clone(),
                Rng::new(rng.next_u64()),
                config.rounds,
            );
            tasks.push(tokio::spawn(task));
        }
    }
    let mut nemesis_rng = Rng::new(rng.next_u64());
    let harm = async {
        match config.faults {
            true => nemesis(&scene, &spare, &mut nemesis_rng).await,
            false => (0, 0),
        }
    };
    let (faults, silent) = match &meddler {
        None => harm.await,
        Some(meddler) => {
            let meddle = meddle(&scene, meddler, &spare, &mut meddling, &tasks);
            tokio::join!(harm, meddle).0
        }
    };
    let started = Instant::now();
    for task in tasks {
        let left = SETTLE.saturating_sub(started.elapsed());
        match tokio::time::timeout(left, task).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(format!("a task panicked: {e}")),
            Err(_) => return Err(format!("a task never ended ({SETTLE:?} after the nemesis)")),
        }
    }
    // Background releases and cleanups finish on a healthy server.
    tokio::time::sleep(Duration::from_secs(30)).await;
    let live: Vec<i64> = server.sessions().iter().map(|s| s.id).collect();
    let dirs = config.recipe.dirs();
    for (node, owner) in server.ephemerals() {
        let ours = dirs.iter().any(|d| node.starts_with(&format!("{d}/")));
        if ours && live.contains(&owner) {
            return Err(format!(
                "node left behind: {node} of live session {owner:#x}"
            ));
        }
    }
    let (first, stats) = {
        let ledger = scene.ledger.lock().unwrap_or_else(PoisonError::into_inner);
        let stats = LayerStats {
            holds: ledger.holds,
            faults,
            silent,
            lost_in_time: ledger.lost_in_time,
            fenced_refused: ledger.fenced_refused,
            meddling: u64::from(meddler.is_some()),
            meddles: ledger.meddles,
            told: ledger.told_deleted,
            told_fast: ledger.told_fast,
            told_worst: ledger.told_worst,
            told_otherwise: ledger.told_lost + ledger.told_expired,
            ended_first: ledger.ended_first,
        };
        (ledger.violations.first().cloned(), stats)
    };
    if let Some(first) = first {
        return Err(first);
    }
    for client in clients {
        let _ = client.close().await;
    }
    let _ = fence.close().await;
    if let Some(meddler) = meddler {
        let _ = meddler.close().await;
    }
    Ok(stats)
}

/// Faults for [`NEMESIS`], then everything healed, sparing the sessions `spare` (but for
/// outages). Returns how many, and how many were silent expiries.
async fn nemesis(scene: &Scene, spare: &[i64], rng: &mut Rng) -> (u64, u64) {
    let server = &scene.server;
    let ms = |rng: &mut Rng, lo: u64, hi: u64| Duration::from_millis(lo + rng.below(hi - lo));
    let end = Instant::now() + NEMESIS;
    let mut faults = 0;
    let mut silent = 0;
    while Instant::now() < end {
        tokio::time::sleep(ms(rng, 20, 1500)).await;
        let sessions: Vec<i64> = server
            .sessions()
            .iter()
            .map(|s| s.id)
            .filter(|id| !spare.contains(id))
            .collect();
        let Some(&session) = sessions.get(rng.index(sessions.len())) else {
            continue;
        };
        faults += 1;
        match rng.below(100) {
            0..=39 => {
                server.cut(session);
            }
            40..=54 => {
                // Past the read deadline or not: the client leaves, or never notices.
                server.stall(session, true);
                tokio::time::sleep(ms(rng, 100, 5000)).await;
                server.stall(session, false);
            }
            55..=69 => {
                // Stopped past the session timeout or not: the client says Lost, the session
                // survives the restart.
                server.stop();
                tokio::time::sleep(ms(rng, 500, 10_000)).await;
                server.start();
            }
            70..=84 => {
                server.down();
                tokio::time::sleep(ms(rng, 100, 3000)).await;
                server.up();
            }
            85..=88 => {
                server.expire(session);
            }
            89..=95 => {
                // A silent expiry: a session holding something (if any does) is cut off from
                // the server, which expires it while its link stays stalled, at its deadline
                // or sooner; its client can know only from its own clock.
                let holding: Vec<i64> = sessions
                    .iter()
                    .copied()
                    .filter(|&s| !scene.ledger().of_session(s).is_empty())
                    .collect();
                let session = holding
                    .get(rng.index(holding.len()))
                    .copied()
                    .unwrap_or(session);
                silent_expiry(scene, session, rng).await;
                silent += 1;
            }
            _ => faults -= 1,
        }
    }
    (faults, silent)
}

/// The seed's stream for the meddler (whether a schedule has one, and what it does).
const MEDDLE_STREAM: u64 = 0x6d65_6464_6c65_7221;

/// For [`NEMESIS`] or until every task ended, now and then deletes a held node through
/// `meddler` (a session of its own, as an operator would): one of the nodes the recipe's
/// rule grants in the server's tree, of a live session that is not spared nor cut off from
/// the server. The ledger learns of each delete before it is sent.
async fn meddle(
    scene: &Scene,
    meddler: &Client,
    spare: &[i64],
    rng: &mut Rng,
    tasks: &[tokio::task::JoinHandle<()>],
) {
    let end = Instant::now() + NEMESIS;
    while Instant::now() < end && !tasks.iter().all(|t| t.is_finished()) {
        tokio::time::sleep(Duration::from_millis(20 + rng.below(600))).await;
        let held = held_nodes(scene, spare);
        let Some((node, owner)) = held.get(rng.index(held.len())) else {
            continue;
        };
        scene.ledger().meddle(node);
        scene
            .server
            .note(|| format!("meddle: {node} of {owner:#x} deleted by another client"));
        let took = match meddler.delete(node, None).await {
            Ok(()) => true,
            Err(zk_client::Error::NoNode) => false,
            // Lost on its way or not (an outage): as the tree says.
            Err(_) => scene.server.exists(node).is_none(),
        };
        scene.ledger().meddled(node, took);
    }
}

/// The nodes held now, as the recipe's rule says from the server's tree (a semaphore's
/// leases; not its inner lock, which no guard holds), with their owners: those of live
/// sessions, not `spare`, not cut off from the server.
fn held_nodes(scene: &Scene, spare: &[i64]) -> Vec<(String, i64)> {
    let server = &scene.server;
    let live: Vec<i64> = server.sessions().iter().map(|s| s.id).collect();
    let dirs: Vec<String> = match scene.recipe {
        Recipe::Semaphore { .. } | Recipe::SemaphoreMutex => scene
            .recipe
            .paths()
            .iter()
            .map(|p| format!("{p}/leases"))
            .collect(),
        _ => scene.recipe.paths(),
    };
    let mut held = Vec::new();
    for dir in dirs {
        let children = server.children(&dir).unwrap_or_default();
        for name in &children {
            let mode = match scene.recipe {
                Recipe::Semaphore { leases } => ledger::Mode::Lease(leases),
                _ if name.contains("__READ__") => ledger::Mode::Read,
                _ => ledger::Mode::Exclusive,
            };
            if !ledger::granted(&children, name, mode) {
                continue;
            }
            let node = format!("{dir}/{name}");
            let Some(owner) = server.exists(&node).map(|s| s.ephemeral_owner) else {
                continue;
            };
            let cut_off = scene.cut_off_since(owner).is_some() || server.is_partitioned(owner);
            if live.contains(&owner) && !spare.contains(&owner) && !cut_off {
                held.push((node, owner));
            }
        }
    }
    held
}

/// Cuts `session` off from the server, lets the server expire it while it is cut off (at its
/// deadline, or sooner by [`MemServer::expire`]), then heals the partition.
async fn silent_expiry(scene: &Scene, session: i64, rng: &mut Rng) {
    let server = &scene.server;
    let since = Instant::now();
    {
        let mut cut_off = scene.cut_off.lock().unwrap_or_else(PoisonError::into_inner);
        cut_off.insert(session, since);
    }
    server.partition(session, true);
    let early = Duration::from_millis(rng.below(SESSION_TIMEOUT.as_millis() as u64 + 2000));
    tokio::time::sleep(early).await;
    if server.sessions().iter().any(|s| s.id == session) {
        server.expire(session);
    }
    // Past the client's own timeout, or not.
    tokio::time::sleep(Duration::from_millis(rng.below(4000))).await;
    server.partition(session, false);
    let mut cut_off = scene.cut_off.lock().unwrap_or_else(PoisonError::into_inner);
    cut_off.remove(&session);
}
