//! The async layer in the simulator: the real recipe crates (`lock()`, `try_lock_for`,
//! downgrades, leases, multi-locks, guards released, dropped, dropped on plain threads and
//! released from other tasks, acquires cancelled at random points, sections joined in one
//! task) over real `zk_client` sessions to the in-memory [`wire`](crate::wire) server, on
//! tokio's paused clock, under a seeded nemesis: connections cut and stalled, the server
//! unreachable for a while, the server stopped past the session timeout and started again (the
//! client says `Lost`, the session survives), sessions expired.
//!
//! After every acquisition the [`Ledger`] checks the hold against the server's
//! tree (never two holders, readers beside a writer only for its own downgrade, at most N
//! leases, fencing tokens increasing). Every timed acquire must return within its deadline and
//! one grace; a failure that blames the session must find it gone on the server; every task
//! must end once the nemesis stops; and once everything settled, no node of a live session may
//! be left. A schedule is a seed: the server's choices, the nemesis, every task's choices.
//!
//! Not bit-for-bit replayable: node names carry random UUIDs and tokio picks among ready
//! `select!` branches at random, so a seed replays the same schedule of faults and choices,
//! not always the same interleaving. Failures found here are kept as seeds of sweeps that
//! catch them, not as single seeds.

pub mod ledger;
mod work;

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;
use zk_client::Client;

use crate::Recipe;
use crate::rng::Rng;
use crate::wire::{SimServer, WireConfig};
use ledger::Ledger;
use work::Scene;

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
    let fail = |violation: String| LayerFailure { seed, violation };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .map_err(|e| fail(format!("no runtime: {e}")))?;
    let result = runtime.block_on(schedule(seed, config));
    // Background work still pending goes with the runtime.
    drop(runtime);
    result.map_err(fail)
}

/// Runs `schedules` schedules from `first_seed` on: the first failure, or the totals.
pub fn sweep(
    schedules: u64,
    first_seed: u64,
    config: LayerConfig,
) -> Result<LayerStats, LayerFailure> {
    let mut total = LayerStats::default();
    for seed in first_seed..first_seed.saturating_add(schedules) {
        let stats = run(seed, config)?;
        total.holds += stats.holds;
        total.faults += stats.faults;
    }
    Ok(total)
}

async fn schedule(seed: u64, config: LayerConfig) -> Result<LayerStats, String> {
    let mut rng = Rng::new(seed);
    // Requests take up to a few milliseconds to arrive, so that cancellations and faults
    // find them on their way.
    let latency = Duration::from_millis(rng.below(12));
    let server = SimServer::new(WireConfig {
        latency,
        ..WireConfig::new(seed)
    });
    let scene = Scene {
        server: server.clone(),
        ledger: Arc::new(Mutex::new(Ledger::default())),
        recipe: config.recipe,
    };
    let builder = Client::builder().session_timeout(SESSION_TIMEOUT);
    let mut clients = Vec::new();
    for _ in 0..config.clients {
        let client = server
            .client(builder.clone(), rng.next_u64())
            .await
            .map_err(|e| format!("connect: {e}"))?;
        clients.push(client);
    }
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
    let faults = match config.faults {
        true => nemesis(&server, &mut Rng::new(rng.next_u64())).await,
        false => 0,
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
    let (first, holds) = {
        let ledger = scene.ledger.lock().unwrap_or_else(PoisonError::into_inner);
        (ledger.violations.first().cloned(), ledger.holds)
    };
    if let Some(first) = first {
        return Err(first);
    }
    for client in clients {
        let _ = client.close().await;
    }
    Ok(LayerStats { holds, faults })
}

/// Faults for [`NEMESIS`], then everything healed. Returns how many.
async fn nemesis(server: &SimServer, rng: &mut Rng) -> u64 {
    let ms = |rng: &mut Rng, lo: u64, hi: u64| Duration::from_millis(lo + rng.below(hi - lo));
    let end = Instant::now() + NEMESIS;
    let mut faults = 0;
    while Instant::now() < end {
        tokio::time::sleep(ms(rng, 20, 1500)).await;
        let sessions: Vec<i64> = server.sessions().iter().map(|s| s.id).collect();
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
            _ => faults -= 1,
        }
    }
    faults
}
