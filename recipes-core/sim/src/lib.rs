//! A deterministic simulation of ZooKeeper in which the real recipes-core machines run.
//!
//! No tokio, no sockets, no clock: a simulated server ([`tree`]: nodes, ephemeral owners,
//! per-parent 32-bit sequence counters that wrap as ZooKeeper prints them, containers,
//! one-shot watches), sessions with their requests, replies and notifications in order
//! ([`net`]), and clients whose tasks take locks through the same machines and inputs the
//! async driver gives them ([`world`]). Every choice — which message moves next, when time
//! passes, which fault strikes (connection loss before or after the server applied a request,
//! reconnects, expiry, local loss, meddling, foreign children, wrapping sequences, dropped
//! acquires, deadlines) — is drawn from one seed, so a failing schedule replays exactly.
//! [`check`] holds the invariants checked after every step.
//!
//! Not a ZooKeeper for tests of the client: there is one server, and what it models is what
//! the recipes' machines can observe.
//!
//! Its async counterpart, in which the real lock crates run over real zk-client sessions, is
//! `zk-sim-layer` (above the recipe crates), against `zk-mem-server`'s in-memory ZooKeeper.
//!
//! # Examples
//!
//! ```
//! use zk_sim::{Config, Recipe, run};
//!
//! let stats = run(7, Config::new(Recipe::Mutex)).expect("no violation");
//! assert!(stats.holds > 0);
//! ```

// Indices here are the simulator's own (the tasks, runners and sessions it made), never input.
#![allow(clippy::indexing_slicing)]

pub mod check;
pub mod explore;

pub mod net;
pub mod recipe;
pub mod rng;
pub mod tree;
pub mod world;

pub use check::Violation;
pub use recipe::{Factory, HoldKind, Recipe};
pub use world::{Config, Faults, Stats, World};

/// A failing schedule: its seed, what broke, and the last lines of its trace.
#[derive(Debug, Clone)]
pub struct Failure {
    /// The seed that replays it.
    pub seed: u64,
    /// What broke.
    pub violation: Violation,
    /// The trace's last lines (ops, replies, events, faults, in order).
    pub trace: Vec<String>,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "seed {}: {}", self.seed, self.violation)?;
        for line in &self.trace {
            writeln!(f, "  {line}")?;
        }
        Ok(())
    }
}

/// Runs the schedule of `seed` with the real machines of `config.recipe`.
pub fn run(seed: u64, config: Config) -> Result<Stats, Failure> {
    run_with(seed, config, config.recipe.factory())
}

/// Runs the schedule of `seed` with the machines `factory` makes (a planted bug, say).
pub fn run_with(seed: u64, config: Config, factory: Factory) -> Result<Stats, Failure> {
    World::new(seed, config, factory)
        .run()
        .map_err(|(violation, trace)| Failure {
            seed,
            violation,
            trace,
        })
}

/// Runs `schedules` schedules from `first_seed` on; the first failure, or the total.
pub fn sweep(
    schedules: u64,
    first_seed: u64,
    config: Config,
    factory: Factory,
) -> Result<Stats, Failure> {
    let mut total = Stats::default();
    for seed in first_seed..first_seed.saturating_add(schedules) {
        let stats = run_with(seed, config, factory)?;
        total.holds += stats.holds;
        total.steps += stats.steps;
        total.faults += stats.faults;
        total.meddled_held += stats.meddled_held;
    }
    Ok(total)
}
