//! [`World`]: the simulated server, its sessions, the clients' tasks and their machines, and
//! the seeded scheduler that interleaves them with faults.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use recipes_core::{
    Cleanup, CleanupMachine, Connection, DEADLINE_GRACE, Failure, Held, Input, Machine, Op,
    Outcome, Runner, Stuck,
};

use crate::check::{Checker, Hold, Violation};
use crate::net::{FromServer, Local, RunnerId, Session};
use crate::recipe::{self, BoxedAttempt, Factory, HoldKind, Recipe};
use crate::rng::Rng;
use crate::tree::{SessionId, Tree};

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

    // ---- runners ------------------------------------------------------------------------

    fn spawn(&mut self, session: SessionId, job: Job) -> Result<RunnerId, Violation> {
        let id = self.slots.len();
        self.slots.push(Slot {
            job,
            session,
            heard: 0,
            live: true,
        });
        let s = self.session(session);
        let connection = if !s.alive {
            Some(Connection::Expired)
        } else if s.lost {
            Some(Connection::Lost)
        } else if !s.connected {
            Some(Connection::Disconnected)
        } else {
            None
        };
        if let Some(c) = connection {
            self.input(id, Input::Connection(c))?;
        }
        self.input(id, Input::Start)?;
        Ok(id)
    }

    /// Feeds `input` to runner `id`, sends the ops it issues, and moves its task on.
    fn input(&mut self, id: RunnerId, input: Input) -> Result<(), Violation> {
        let now = self.now;
        let Some(slot) = self.slots.get_mut(id) else {
            return Ok(());
        };
        if !slot.live {
            return Ok(());
        }
        let line = format!("r{id} <- {input:?}");
        slot.job
            .handle(now, input)
            .map_err(|stuck| Violation::Stuck(stuck.to_string()))?;
        let session = slot.session;
        let mut ops = Vec::new();
        while let Some(op) = slot.job.poll_op() {
            ops.push(op);
        }
        self.log(line);
        for op in ops {
            self.log(format!("r{id} -> {op:?}"));
            let s = self.session(session);
            if !s.alive {
                s.local.push_back(Local::Reply(
                    id,
                    recipes_core::Reply::Failed(recipes_core::ZkError::SessionExpired),
                ));
            } else if !s.connected {
                s.local.push_back(Local::Reply(
                    id,
                    recipes_core::Reply::Failed(recipes_core::ZkError::NotSent),
                ));
            } else {
                s.to_server.push_back((id, op));
            }
        }
        self.after(id)
    }

    // ---- tasks --------------------------------------------------------------------------

    fn task_of_runner(&self, id: RunnerId) -> Option<usize> {
        self.tasks.iter().position(|t| match &t.state {
            TaskState::Acquiring(a) | TaskState::Draining(a) => a.runner == id,
            TaskState::CleaningUp { cleanup, .. } => *cleanup == id,
            TaskState::Releasing(rs) => rs.contains(&id),
            _ => false,
        })
    }

    /// Moves the task that runner `id` works for, after an input.
    fn after(&mut self, id: RunnerId) -> Result<(), Violation> {
        // A runner done with everything stops taking inputs (an attempt that held, once the
        // replies of its stray ops are in; one that did not is drained by its task).
        let task = self.task_of_runner(id);
        if let Some(slot) = self.slots.get_mut(id) {
            let drained = slot.job.in_flight() == 0;
            let own = matches!(slot.job, Job::Cleanup(_)) || task.is_none();
            if slot.job.finished() && drained && own {
                slot.live = false;
            }
        }
        let Some(t) = task else {
            return self.orphan_attempt_done(id);
        };
        let state = self.tasks[t].state.clone();
        match state {
            TaskState::Acquiring(a) => match self.slots[id].job.attempt_outcome() {
                None => Ok(()),
                Some(Outcome::Held(held)) => self.held(t, a, held),
                Some(outcome) => {
                    // As the driver: a vanished node is retried with a new one, up to 3 times
                    // (not a downgrade: the hold layer reports it).
                    let retry = matches!(outcome, Outcome::Failed(Failure::NodeVanished))
                        && a.vanished < 3
                        && !a.downgrade;
                    self.log(format!("task {t}: attempt r{id} ended {outcome:?}"));
                    self.checker.attempt_failed(t);
                    self.release_members(t, false)?;
                    if retry {
                        self.tasks[t].state = TaskState::Draining(Attempt {
                            vanished: a.vanished + 1,
                            ..a
                        });
                    } else {
                        self.tasks[t].state = TaskState::Draining(Attempt { vanished: 99, ..a });
                    }
                    self.drained(t)
                }
            },
            TaskState::Draining(_) => self.drained(t),
            TaskState::CleaningUp {
                cleanup,
                attempt,
                retry,
            } => {
                if !self.slots[cleanup].job.finished() {
                    return Ok(());
                }
                if retry {
                    self.start_attempt(t, attempt.member, attempt.vanished, attempt.downgrade)
                } else {
                    self.next_round(t);
                    Ok(())
                }
            }
            TaskState::Releasing(runners) => {
                if runners.iter().all(|r| self.slots[*r].job.finished()) {
                    self.next_round(t);
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// An attempt no task waits for any more (replaced by a retry): nothing to do.
    fn orphan_attempt_done(&mut self, _id: RunnerId) -> Result<(), Violation> {
        Ok(())
    }

    /// An attempt that ended without holding: once its replies are in, run its cleanups.
    fn drained(&mut self, t: usize) -> Result<(), Violation> {
        let TaskState::Draining(a) = self.tasks[t].state.clone() else {
            return Ok(());
        };
        if self.slots[a.runner].job.in_flight() > 0 {
            return Ok(());
        }
        self.slots[a.runner].live = false;
        let cleanups = self.slots[a.runner].job.cleanups();
        self.log(format!("task {t}: r{} owes {cleanups:?}", a.runner));
        let session = self.tasks[t].session;
        let retry = a.vanished <= 3;
        let cleanup = self.spawn(
            session,
            Job::Cleanup(Runner::new(CleanupMachine::new(cleanups))),
        )?;
        self.tasks[t].state = TaskState::CleaningUp {
            cleanup,
            attempt: a,
            retry,
        };
        self.after(cleanup)
    }

    fn held(&mut self, t: usize, a: Attempt, held: Vec<Held>) -> Result<(), Violation> {
        let path = self.paths[a.member].clone();
        let heard = self.slots[a.runner].heard;
        for held in held {
            let hold = Hold {
                task: t,
                lock: path.clone(),
                node: held.path.clone(),
                czxid: held.czxid,
                kind: a.kind,
            };
            self.log(format!("task {t}: holds {hold:?}"));
            self.checker.took(&hold, &self.tree, heard)?;
            self.stats.holds += 1;
            self.tasks[t].holds.push(hold);
        }
        // As the driver: the scaffolding goes at once (guaranteed, not awaited).
        let releases = self.slots[a.runner].job.releases();
        if !releases.is_empty() {
            self.log(format!("task {t}: r{} releases {releases:?}", a.runner));
            let session = self.tasks[t].session;
            self.spawn(
                session,
                Job::Cleanup(Runner::new(CleanupMachine::new(releases))),
            )?;
        }
        self.slots[a.runner].live = self.slots[a.runner].job.in_flight() > 0;
        // A downgrade: release the write lock now, keep reading.
        if a.downgrade {
            let write = self.tasks[t]
                .holds
                .iter()
                .position(|h| h.kind == HoldKind::Exclusive && h.lock == self.paths[a.member]);
            if let Some(i) = write {
                let w = self.tasks[t].holds.remove(i);
                self.checker.released(&w);
                self.release_node(t, w.node)?;
            }
        }
        let next = self.tasks[t]
            .plan
            .iter()
            .position(|(m, _)| *m == a.member)
            .and_then(|i| self.tasks[t].plan.get(i + 1))
            .copied();
        match next {
            Some((member, _)) if !a.downgrade => self.start_attempt(t, member, 0, false),
            _ => {
                // Maybe downgrade a write lock of the read/write recipe.
                let downgrade = self.config.recipe == Recipe::ReadWrite
                    && a.kind == HoldKind::Exclusive
                    && !a.downgrade
                    && self.rng.chance(400);
                if downgrade {
                    return self.start_attempt(t, a.member, 0, true);
                }
                self.tasks[t].state = TaskState::Holding;
                self.tasks[t].wake_at = self.now + ms(self.rng.below(30));
                Ok(())
            }
        }
    }

    fn release_node(&mut self, t: usize, node: String) -> Result<RunnerId, Violation> {
        let session = self.tasks[t].session;
        let machine = CleanupMachine::new(vec![Cleanup::Delete(node)]);
        self.spawn(session, Job::Cleanup(Runner::new(machine)))
    }

    /// Releases every member the task holds, last first; waits for them if `awaited`.
    fn release_members(&mut self, t: usize, awaited: bool) -> Result<(), Violation> {
        let mut runners = Vec::new();
        while let Some(h) = self.tasks[t].holds.pop() {
            self.checker.released(&h);
            self.log(format!("task {t}: releases {}", h.node));
            runners.push(self.release_node(t, h.node)?);
        }
        if awaited && !runners.is_empty() {
            self.tasks[t].state = TaskState::Releasing(runners);
        }
        Ok(())
    }

    fn next_round(&mut self, t: usize) {
        let task = &mut self.tasks[t];
        task.left = task.left.saturating_sub(1);
        task.state = if task.left == 0 {
            TaskState::Done
        } else {
            TaskState::Idle
        };
        task.wake_at = self.now + ms(self.rng.below(20));
    }

    fn start_attempt(
        &mut self,
        t: usize,
        member: usize,
        vanished: u32,
        downgrade: bool,
    ) -> Result<(), Violation> {
        let session = self.tasks[t].session;
        if !self.session(session).alive {
            self.tasks[t].holds.clear();
            self.tasks[t].state = TaskState::Done;
            return Ok(());
        }
        let kind = if downgrade {
            HoldKind::Shared
        } else {
            self.tasks[t]
                .plan
                .iter()
                .find(|(m, _)| *m == member)
                .map(|(_, k)| *k)
                .unwrap_or(HoldKind::Exclusive)
        };
        let qty = self.tasks[t].qty;
        let deadline = (self.config.faults.deadlines && self.rng.chance(400))
            .then(|| self.now + ms(self.rng.below(150)));
        let uuid = self.rng.uuid();
        let base = self.paths[member].clone();
        let machine = if downgrade {
            let write = self.tasks[t]
                .holds
                .iter()
                .find(|h| h.kind == HoldKind::Exclusive && h.lock == base)
                .map(|h| (h.node.clone(), h.czxid));
            match write.and_then(|(w, czxid)| recipe::downgrade(&base, &w, czxid, &uuid, deadline))
            {
                Some(m) => m,
                None => return Err(Violation::Harness("downgrade without a write hold".into())),
            }
        } else {
            (self.factory)(kind, qty, &base, &uuid, deadline)
        };
        // An owner's next attempt starts only once the one it gave up is cleaned up.
        self.checker.starting(&self.tree, &self.dirs, t)?;
        let runner = self.spawn(session, Job::Attempt(Runner::new(machine)))?;
        self.log(format!(
            "task {t}: attempt r{runner} on {base} ({kind:?}{}) deadline {:?}",
            if downgrade { ", downgrade" } else { "" },
            deadline.map(|d| d.duration_since(self.t0).as_millis())
        ));
        let attempt = Attempt {
            runner,
            member,
            kind,
            deadline,
            vanished,
            downgrade,
            prefix: format!("_c_{uuid}-"),
        };
        self.checker.attempt_prefix(t, &attempt.prefix);
        self.tasks[t].state = TaskState::Acquiring(attempt);
        // It may have ended during its start (a session that is gone).
        self.after(runner)
    }

    fn begin_round(&mut self, t: usize) -> Result<(), Violation> {
        let plan: Vec<(usize, HoldKind)> = match self.config.recipe {
            Recipe::Mutex | Recipe::CohortMutex => vec![(0, HoldKind::Exclusive)],
            Recipe::ReadWrite | Recipe::CohortReadWrite => {
                let kind = if self.rng.chance(600) {
                    HoldKind::Shared
                } else {
                    HoldKind::Exclusive
                };
                vec![(0, kind)]
            }
            Recipe::MultiLock { .. } => {
                // A random non-empty subset, in canonical order (by path).
                let n = self.paths.len();
                let mut members: Vec<usize> = (0..n).filter(|_| self.rng.chance(600)).collect();
                if members.is_empty() {
                    members.push(self.rng.index(n));
                }
                members.sort_by(|a, b| self.paths[*a].cmp(&self.paths[*b]));
                members
                    .into_iter()
                    .map(|m| (m, HoldKind::Exclusive))
                    .collect()
            }
            Recipe::Semaphore { .. } | Recipe::SemaphoreMutex => {
                let kind = self.config.recipe.hold_kind();
                let max = match kind {
                    HoldKind::Lease { max } => max,
                    _ => 1,
                };
                self.tasks[t].qty = if max > 1 && self.rng.chance(300) {
                    2
                } else {
                    1
                };
                vec![(0, kind)]
            }
        };
        let Some(&(first, _)) = plan.first() else {
            return Ok(());
        };
        self.tasks[t].plan = plan;
        self.start_attempt(t, first, 0, false)
    }

    /// A task's timer: start a round, or release what it holds.
    fn wake_task(&mut self, t: usize) -> Result<(), Violation> {
        match self.tasks[t].state {
            TaskState::Idle => self.begin_round(t),
            TaskState::Holding => {
                let awaited = self.rng.chance(500);
                self.release_members(t, awaited)?;
                if !awaited || matches!(self.tasks[t].state, TaskState::Holding) {
                    self.next_round(t);
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    // ---- the scheduler ------------------------------------------------------------------

    /// Runs the schedule to the end.
    pub fn run(mut self) -> Result<Stats, (Violation, Vec<String>)> {
        match self.run_inner() {
            Ok(()) => Ok(self.stats),
            Err(v) => {
                let trace = self.trace();
                Err((v, trace))
            }
        }
    }

    fn run_inner(&mut self) -> Result<(), Violation> {
        let mut quiet = false;
        for step in 0..self.config.max_steps {
            self.stats.steps += 1;
            if !quiet && step >= self.config.fault_steps {
                quiet = true;
                self.quiet_down()?;
            }
            if quiet && self.finished() {
                return self.final_checks();
            }
            self.step(quiet)?;
            self.checker.check(&self.tree)?;
        }
        Err(Violation::Unfinished(self.unfinished()))
    }

    fn finished(&self) -> bool {
        self.tasks
            .iter()
            .all(|t| matches!(t.state, TaskState::Done))
            && self
                .slots
                .iter()
                .all(|s| !s.live || !self.sessions[s.session as usize].alive)
    }

    fn unfinished(&self) -> String {
        let tasks: Vec<String> = self
            .tasks
            .iter()
            .enumerate()
            .filter(|(_, t)| !matches!(t.state, TaskState::Done))
            .map(|(i, t)| format!("task {i}: {:?}", t.state))
            .collect();
        let live = self.slots.iter().filter(|s| s.live).count();
        format!(
            "{} tasks not done ({}); {live} runners live",
            tasks.len(),
            tasks.join("; ")
        )
    }

    fn step(&mut self, quiet: bool) -> Result<(), Violation> {
        if !quiet && self.rng.chance(30) {
            return self.fault();
        }
        // Everything that can happen now, one picked at random.
        let mut choices: Vec<(u8, SessionId)> = Vec::new();
        for (i, s) in self.sessions.iter().enumerate() {
            let i = i as SessionId;
            if s.alive && s.connected && !s.to_server.is_empty() {
                choices.push((0, i));
            }
            if s.connected && !s.to_client.is_empty() {
                choices.push((1, i));
            }
            if !s.local.is_empty() {
                choices.push((2, i));
            }
        }
        if choices.is_empty() || self.rng.chance(150) {
            return self.advance(!choices.is_empty());
        }
        let (what, s) = choices[self.rng.index(choices.len())];
        match what {
            0 => self.server_receives(s),
            1 => self.client_receives(s),
            _ => self.local_delivers(s),
        }
    }

    fn server_receives(&mut self, s: SessionId) -> Result<(), Violation> {
        let Some((runner, op)) = self.session(s).to_server.pop_front() else {
            return Ok(());
        };
        self.apply(s, runner, op, true);
        Ok(())
    }

    /// The server applies `op`; its notifications go out, then its reply (if `reply`).
    fn apply(&mut self, s: SessionId, runner: RunnerId, op: Op, reply: bool) {
        let mut fired = Vec::new();
        let result = self.tree.apply(s, &op, &mut fired);
        self.log(format!("server: s{s} r{runner} {op:?} -> {result:?}"));
        self.notify(fired);
        if reply {
            let zxid = self.tree.zxid();
            self.session(s)
                .to_client
                .push_back(FromServer::Reply(runner, result, zxid));
        }
    }

    fn notify(&mut self, fired: Vec<crate::tree::Fired>) {
        for f in fired {
            let session = self.session(f.session);
            if session.alive {
                session.to_client.push_back(FromServer::Fired {
                    zxid: f.zxid,
                    set: f.set,
                    path: f.path,
                    event: f.event,
                });
            }
        }
    }

    fn client_receives(&mut self, s: SessionId) -> Result<(), Violation> {
        let Some(msg) = self.session(s).to_client.pop_front() else {
            return Ok(());
        };
        match msg {
            FromServer::Reply(runner, reply, zxid) => {
                self.heard(runner, zxid);
                self.reply(s, runner, reply)
            }
            FromServer::Fired {
                zxid,
                set,
                path,
                event,
            } => {
                let waiting = self.session(s).take_watchers(set, &path);
                for (kind, runner) in waiting {
                    self.heard(runner, zxid);
                    let input = Input::Watch {
                        kind,
                        path: path.clone(),
                        event,
                    };
                    self.input(runner, input)?;
                }
                Ok(())
            }
        }
    }

    fn heard(&mut self, runner: RunnerId, zxid: i64) {
        if let Some(slot) = self.slots.get_mut(runner) {
            slot.heard = slot.heard.max(zxid);
        }
    }

    fn reply(
        &mut self,
        s: SessionId,
        runner: RunnerId,
        reply: recipes_core::Reply,
    ) -> Result<(), Violation> {
        // The op this reply answers: its watch, if it set one, is registered client-side.
        if let Some(slot) = self.slots.get(runner) {
            if slot.live {
                if let Some((kind, path)) = self.pending_watch(runner, &reply) {
                    self.session(s).watches.push((kind, path, runner));
                }
            }
        }
        self.input(runner, Input::Reply(reply))
    }

    /// The watch the oldest op of `runner` in flight asked for, if `reply` leaves it.
    fn pending_watch(
        &self,
        runner: RunnerId,
        reply: &recipes_core::Reply,
    ) -> Option<(recipes_core::WatchKind, String)> {
        let Job::Attempt(r) = &self.slots.get(runner)?.job else {
            return None;
        };
        if !reply.leaves_watch() {
            return None;
        }
        r.next_reply_watch()
    }

    fn local_delivers(&mut self, s: SessionId) -> Result<(), Violation> {
        let Some(msg) = self.session(s).local.pop_front() else {
            return Ok(());
        };
        match msg {
            Local::Reply(runner, reply) => self.input(runner, Input::Reply(reply)),
            Local::State(c) => {
                let runners: Vec<RunnerId> = self
                    .slots
                    .iter()
                    .enumerate()
                    .filter(|(_, slot)| slot.live && slot.session == s)
                    .map(|(i, _)| i)
                    .collect();
                for r in runners {
                    self.input(r, Input::Connection(c))?;
                }
                Ok(())
            }
        }
    }

    /// Time passes: to the next timer if nothing else can happen, else by a few ms; then the
    /// timers that are due fire, and the deadlines are checked.
    fn advance(&mut self, busy: bool) -> Result<(), Violation> {
        let next_timer = self
            .slots
            .iter()
            .filter(|s| s.live)
            .filter_map(|s| s.job.poll_timeout())
            .chain(
                self.tasks
                    .iter()
                    .filter(|t| matches!(t.state, TaskState::Idle | TaskState::Holding))
                    .map(|t| t.wake_at),
            )
            .min();
        let step = ms(self.rng.below(12));
        self.now = match (busy, next_timer) {
            (false, Some(t)) if t > self.now => t,
            _ => self.now + step,
        };
        let due: Vec<RunnerId> = self
            .slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.live && s.job.poll_timeout().is_some_and(|t| t <= self.now))
            .map(|(i, _)| i)
            .collect();
        for r in due {
            self.input(r, Input::Timeout)?;
        }
        let woken: Vec<usize> = (0..self.tasks.len())
            .filter(|t| {
                matches!(self.tasks[*t].state, TaskState::Idle | TaskState::Holding)
                    && self.tasks[*t].wake_at <= self.now
            })
            .collect();
        for t in woken {
            self.wake_task(t)?;
        }
        self.check_deadlines()
    }

    fn check_deadlines(&self) -> Result<(), Violation> {
        let slack = DEADLINE_GRACE + ms(15);
        for (i, task) in self.tasks.iter().enumerate() {
            if let TaskState::Acquiring(a) = &task.state {
                if let Some(d) = a.deadline {
                    if self.now > d + slack && !self.slots[a.runner].job.finished() {
                        return Err(Violation::PastDeadline(format!(
                            "task {i}'s attempt r{} still running {} ms past its deadline",
                            a.runner,
                            self.now.duration_since(d).as_millis()
                        )));
                    }
                }
            }
        }
        Ok(())
    }

    // ---- faults -------------------------------------------------------------------------

    fn fault(&mut self) -> Result<(), Violation> {
        let f = self.config.faults;
        let n = self.sessions.len();
        let s = self.rng.index(n) as SessionId;
        self.stats.faults += 1;
        match self.rng.below(8) {
            0 | 1 if f.disconnect => self.disconnect(s),
            2 if f.disconnect => self.reconnect(s),
            3 if f.expire && self.rng.chance(200) => self.expire(s),
            4 if f.lost => {
                let sess = self.session(s);
                if sess.alive && !sess.connected && !sess.lost {
                    sess.lost = true;
                    sess.local.push_back(Local::State(Connection::Lost));
                    self.log(format!("fault: s{s} is locally lost"));
                }
                Ok(())
            }
            5 if f.meddle => {
                let lock = self.dirs[self.rng.index(self.dirs.len())].clone();
                let kids = self.tree.children(&lock);
                if !kids.is_empty() {
                    let victim = recipes_core::child_path(&lock, &kids[self.rng.index(kids.len())]);
                    let held = self
                        .tasks
                        .iter()
                        .any(|t| t.holds.iter().any(|h| h.node == victim));
                    let mut fired = Vec::new();
                    if self.tree.delete_by_hand(&victim, &mut fired) {
                        self.stats.meddled_held += u64::from(held);
                        let whose = if held { " (held)" } else { "" };
                        self.log(format!("fault: someone deletes {victim}{whose}"));
                        self.notify(fired);
                    }
                }
                Ok(())
            }
            6 if f.foreign => {
                let mut fired = Vec::new();
                if let Some(path) = self.foreign.pop() {
                    self.tree.delete_by_hand(&path, &mut fired);
                    self.log(format!("fault: foreign child {path} removed"));
                } else {
                    let lock = self.dirs[self.rng.index(self.dirs.len())].clone();
                    let name = if self.rng.chance(500) { "-x" } else { "zzz" };
                    let path = recipes_core::child_path(&lock, name);
                    if self.tree.create_persistent(&path, &mut fired) {
                        self.log(format!("fault: foreign child {path}"));
                        self.foreign.push(path);
                    }
                }
                self.notify(fired);
                Ok(())
            }
            7 => {
                let mut fired = Vec::new();
                self.tree.sweep_containers(&mut fired);
                self.notify(fired);
                if f.abandon {
                    self.abandon_one()?;
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    fn abandon_one(&mut self) -> Result<(), Violation> {
        let acquiring: Vec<usize> = (0..self.tasks.len())
            .filter(|t| matches!(self.tasks[*t].state, TaskState::Acquiring(_)))
            .collect();
        if acquiring.is_empty() {
            return Ok(());
        }
        let t = acquiring[self.rng.index(acquiring.len())];
        if let TaskState::Acquiring(a) = &self.tasks[t].state {
            let runner = a.runner;
            self.log(format!("fault: task {t} drops its acquire (r{runner})"));
            self.input(runner, Input::Abandon)?;
        }
        Ok(())
    }

    /// The connection drops: requests not yet applied are applied or not (a coin), replies
    /// on the way are lost; every request in flight fails with a connection loss.
    fn disconnect(&mut self, s: SessionId) -> Result<(), Violation> {
        if !self.session(s).alive || !self.session(s).connected {
            return Ok(());
        }
        self.log(format!("fault: s{s} loses its connection"));
        let sess = self.session(s);
        sess.connected = false;
        let replies: Vec<RunnerId> = sess
            .to_client
            .iter()
            .filter_map(|m| match m {
                FromServer::Reply(r, _, _) => Some(*r),
                FromServer::Fired { .. } => None,
            })
            .collect();
        sess.to_client
            .retain(|m| matches!(m, FromServer::Fired { .. }));
        let requests: Vec<(RunnerId, Op)> = sess.to_server.drain(..).collect();
        let state_first = self.rng.chance(300);
        if state_first {
            self.session(s)
                .local
                .push_back(Local::State(Connection::Disconnected));
        }
        let loss = recipes_core::Reply::Failed(recipes_core::ZkError::ConnectionLoss);
        for r in replies {
            self.session(s)
                .local
                .push_back(Local::Reply(r, loss.clone()));
        }
        for (r, op) in requests {
            if self.rng.chance(500) {
                // Applied, but the reply is lost with the connection.
                self.apply(s, r, op, false);
            }
            self.session(s)
                .local
                .push_back(Local::Reply(r, loss.clone()));
        }
        if !state_first {
            self.session(s)
                .local
                .push_back(Local::State(Connection::Disconnected));
        }
        Ok(())
    }

    fn reconnect(&mut self, s: SessionId) -> Result<(), Violation> {
        let sess = self.session(s);
        if !sess.alive || sess.connected {
            return Ok(());
        }
        sess.connected = true;
        sess.lost = false;
        sess.local.push_back(Local::State(Connection::Connected));
        self.log(format!("fault: s{s} reconnects (same session)"));
        Ok(())
    }

    fn expire(&mut self, s: SessionId) -> Result<(), Violation> {
        if !self.session(s).alive {
            return Ok(());
        }
        self.log(format!("fault: s{s} expires"));
        let mut fired = Vec::new();
        self.tree.end_session(s, &mut fired);
        self.notify(fired);
        let sess = self.session(s);
        sess.alive = false;
        sess.connected = false;
        sess.watches.clear();
        let mut failed: Vec<RunnerId> = sess
            .to_client
            .iter()
            .filter_map(|m| match m {
                FromServer::Reply(r, _, _) => Some(*r),
                FromServer::Fired { .. } => None,
            })
            .collect();
        failed.extend(sess.to_server.iter().map(|(r, _)| *r));
        sess.to_client.clear();
        sess.to_server.clear();
        let expired = recipes_core::Reply::Failed(recipes_core::ZkError::SessionExpired);
        for r in failed {
            sess.local.push_back(Local::Reply(r, expired.clone()));
        }
        sess.local.push_back(Local::State(Connection::Expired));
        // Its tasks' holds went with it.
        for t in 0..self.tasks.len() {
            if self.tasks[t].session == s {
                let holds = std::mem::take(&mut self.tasks[t].holds);
                for h in &holds {
                    self.checker.released(h);
                }
                if matches!(self.tasks[t].state, TaskState::Holding | TaskState::Idle) {
                    self.tasks[t].state = TaskState::Done;
                }
            }
        }
        Ok(())
    }

    /// The end of the faults: every live session reconnects, foreign children go.
    fn quiet_down(&mut self) -> Result<(), Violation> {
        self.log("quiet: no more faults".into());
        for s in 0..self.sessions.len() {
            self.reconnect(s as SessionId)?;
        }
        let mut fired = Vec::new();
        for path in std::mem::take(&mut self.foreign) {
            self.tree.delete_by_hand(&path, &mut fired);
        }
        self.notify(fired);
        Ok(())
    }

    fn final_checks(&mut self) -> Result<(), Violation> {
        // Nothing of a live session is left under the lock paths.
        let live: Vec<(String, SessionId)> = self
            .tree
            .ephemerals()
            .into_iter()
            .filter(|(p, s)| {
                self.sessions[*s as usize].alive && self.paths.iter().any(|l| p.starts_with(l))
            })
            .collect();
        if !live.is_empty() {
            return Err(Violation::Orphans(format!("{live:?}")));
        }
        Ok(())
    }
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}
