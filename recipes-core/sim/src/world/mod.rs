//! [`World`]: the simulated server, its sessions, the clients' tasks and their machines, and
//! the seeded scheduler that interleaves them with faults.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use recipes_core::{Cleanup, CleanupMachine, Held, Input, Machine, Op, Outcome, Runner, Stuck};

use crate::check::{Checker, Hold};
use crate::net::{RunnerId, Session};
use crate::recipe::{BoxedAttempt, Factory, HoldKind, Recipe};
use crate::rng::Rng;
use crate::tree::{SessionId, Tree};

mod fault;
mod runner;
mod schedule;
mod task;

/// Which faults a schedule may draw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Faults {
    /// Connection losses (requests lost before or after the server applied them) and
    /// reconnects that keep the session.
    pub disconnect: bool,
    /// Session expiry.
    pub expire: bool,
    /// The client's local `Lost` (no server for the session timeout) while disconnected.
    pub lost: bool,
    /// Another client deleting lock nodes by hand.
    pub meddle: bool,
    /// Foreign children in the lock directory (`-x` sorting first, `zzz` last).
    pub foreign: bool,
    /// The lock directory's sequence counter started near 2^31, so it wraps.
    pub wrap: bool,
    /// Callers dropping their acquire at random moments.
    pub abandon: bool,
    /// Deadlines on attempts.
    pub deadlines: bool,
}

impl Faults {
    /// Every fault.
    pub const ALL: Faults = Faults {
        disconnect: true,
        expire: true,
        lost: true,
        meddle: true,
        foreign: true,
        wrap: true,
        abandon: true,
        deadlines: true,
    };

    /// No fault.
    pub const NONE: Faults = Faults {
        disconnect: false,
        expire: false,
        lost: false,
        meddle: false,
        foreign: false,
        wrap: false,
        abandon: false,
        deadlines: false,
    };

    /// Parses a comma-separated list (`all`, `none`, or names).
    pub fn parse(list: &str) -> Option<Faults> {
        let mut f = Faults::NONE;
        for name in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            match name {
                "all" => f = Faults::ALL,
                "none" => f = Faults::NONE,
                "disconnect" => f.disconnect = true,
                "expire" => f.expire = true,
                "lost" => f.lost = true,
                "meddle" => f.meddle = true,
                "foreign" => f.foreign = true,
                "wrap" => f.wrap = true,
                "abandon" => f.abandon = true,
                "deadlines" => f.deadlines = true,
                _ => return None,
            }
        }
        Some(f)
    }
}

/// The shape of a schedule.
#[derive(Debug, Clone, Copy)]
pub struct Config {
    /// The recipe.
    pub recipe: Recipe,
    /// Client sessions.
    pub sessions: usize,
    /// Tasks per session (each an owner taking the lock in turn).
    pub tasks: usize,
    /// Acquisitions each task makes.
    pub rounds: usize,
    /// Steps with faults; then the world goes quiet and must finish.
    pub fault_steps: usize,
    /// Steps after which a world that has not finished is a violation.
    pub max_steps: usize,
    /// The faults drawn.
    pub faults: Faults,
}

impl Config {
    /// A small, busy schedule for `recipe` with every fault.
    pub fn new(recipe: Recipe) -> Self {
        Self {
            recipe,
            sessions: 3,
            tasks: 2,
            rounds: 3,
            fault_steps: 400,
            max_steps: 20_000,
            faults: Faults::ALL,
        }
    }
}

/// What a schedule did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Holds taken.
    pub holds: u64,
    /// Steps run.
    pub steps: u64,
    /// Faults injected.
    pub faults: u64,
    /// Meddling deletes (another client deleting a lock node by hand) that hit a node a task
    /// held: its hold stops counting from then on ([`Checker::check`]), and a hold taken after
    /// its holder could have heard of the delete is a violation ([`Checker::took`]). The
    /// holder's being told is the async layer's to check (the hold layer owns the lost signal,
    /// not the machines).
    pub meddled_held: u64,
}

enum Job {
    Attempt(Runner<BoxedAttempt>),
    Cleanup(Runner<CleanupMachine>),
}

impl Job {
    fn handle(&mut self, now: Instant, input: Input) -> Result<(), Stuck> {
        match self {
            Job::Attempt(r) => r.handle(now, input),
            Job::Cleanup(r) => r.handle(now, input),
        }
    }
    fn poll_op(&mut self) -> Option<Op> {
        match self {
            Job::Attempt(r) => r.poll_op(),
            Job::Cleanup(r) => r.poll_op(),
        }
    }
    fn poll_timeout(&self) -> Option<Instant> {
        match self {
            Job::Attempt(r) => r.poll_timeout(),
            Job::Cleanup(r) => r.poll_timeout(),
        }
    }
    fn in_flight(&self) -> usize {
        match self {
            Job::Attempt(r) => r.in_flight(),
            Job::Cleanup(r) => r.in_flight(),
        }
    }
    fn finished(&self) -> bool {
        match self {
            Job::Attempt(r) => r.machine().outcome().is_some(),
            Job::Cleanup(r) => r.machine().outcome().is_some(),
        }
    }
    fn attempt_outcome(&self) -> Option<Outcome<Vec<Held>>> {
        match self {
            Job::Attempt(r) => r.machine().outcome().cloned(),
            Job::Cleanup(_) => None,
        }
    }
    fn cleanups(&self) -> Vec<Cleanup> {
        match self {
            Job::Attempt(r) => r.machine().cleanups(),
            Job::Cleanup(r) => r.machine().cleanups(),
        }
    }
    fn releases(&self) -> Vec<Cleanup> {
        match self {
            Job::Attempt(r) => r.machine().releases(),
            Job::Cleanup(_) => Vec::new(),
        }
    }
}

struct Slot {
    job: Job,
    session: SessionId,
    /// The server's zxid of the newest message it was given.
    heard: i64,
    /// Still takes inputs (an attempt until its ops are drained, a cleanup until done).
    live: bool,
}

/// One member attempt of a task.
#[derive(Debug, Clone)]
struct Attempt {
    runner: RunnerId,
    member: usize,
    kind: HoldKind,
    deadline: Option<Instant>,
    vanished: u32,
    /// A downgrade (the read lock of the write holder).
    downgrade: bool,
    prefix: String,
}

#[derive(Debug, Clone)]
enum TaskState {
    /// Next action at `wake_at`.
    Idle,
    Acquiring(Attempt),
    /// The attempt ended without holding: its replies drain, then its cleanups run.
    Draining(Attempt),
    CleaningUp {
        cleanup: RunnerId,
        attempt: Attempt,
        retry: bool,
    },
    Holding,
    /// Waiting for its releases to finish (an awaited release).
    Releasing(Vec<RunnerId>),
    Done,
}

struct Task {
    session: SessionId,
    left: usize,
    state: TaskState,
    wake_at: Instant,
    /// The members to take, in canonical order, with the kind of each.
    plan: Vec<(usize, HoldKind)>,
    /// Leases per attempt (semaphores).
    qty: u32,
    holds: Vec<Hold>,
}

/// The simulated world.
pub struct World {
    config: Config,
    factory: Factory,
    paths: Vec<String>,
    /// Where the recipe's nodes live.
    dirs: Vec<String>,
    rng: Rng,
    t0: Instant,
    now: Instant,
    tree: Tree,
    sessions: Vec<Session>,
    slots: Vec<Slot>,
    tasks: Vec<Task>,
    checker: Checker,
    trace: VecDeque<String>,
    stats: Stats,
    foreign: Vec<String>,
}

const TRACE_LINES: usize = 300;

impl World {
    /// A world for `seed`.
    pub fn new(seed: u64, config: Config, factory: Factory) -> Self {
        let mut rng = Rng::new(seed);
        let first_cversion = if config.faults.wrap && rng.chance(300) {
            i32::MAX - rng.below(6) as i32
        } else {
            0
        };
        let t0 = Instant::now();
        let sessions = (0..config.sessions.max(1))
            .map(|_| Session::new())
            .collect();
        let tasks = (0..config.sessions.max(1) * config.tasks.max(1))
            .map(|i| Task {
                session: (i % config.sessions.max(1)) as SessionId,
                left: config.rounds,
                state: TaskState::Idle,
                wake_at: t0,
                plan: Vec::new(),
                qty: 1,
                holds: Vec::new(),
            })
            .collect();
        Self {
            paths: config.recipe.paths(),
            dirs: config.recipe.dirs(),
            config,
            factory,
            rng,
            t0,
            now: t0,
            tree: Tree::new(first_cversion),
            sessions,
            slots: Vec::new(),
            tasks,
            checker: Checker::default(),
            trace: VecDeque::new(),
            stats: Stats::default(),
            foreign: Vec::new(),
        }
    }

    fn log(&mut self, line: String) {
        if self.trace.len() == TRACE_LINES {
            self.trace.pop_front();
        }
        let ms = self.now.duration_since(self.t0).as_millis();
        self.trace.push_back(format!("{ms:>6} ms  {line}"));
    }

    /// The last lines of the trace.
    pub fn trace(&self) -> Vec<String> {
        self.trace.iter().cloned().collect()
    }

    fn session(&mut self, s: SessionId) -> &mut Session {
        let i = s as usize;
        if i >= self.sessions.len() {
            self.sessions.resize_with(i + 1, Session::default);
        }
        &mut self.sessions[i]
    }
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}
