//! The seeded scheduler: each step picks who moves (the server, a client, the clock) and
//! delivers it, checking deadlines as time passes.

use recipes_core::{DEADLINE_GRACE, Input, Op};

use crate::check::Violation;
use crate::net::{FromServer, Local, RunnerId};
use crate::tree::SessionId;

use super::{Job, Stats, TaskState, World, ms};

impl World {
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
    pub(super) fn apply(&mut self, s: SessionId, runner: RunnerId, op: Op, reply: bool) {
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

    pub(super) fn notify(&mut self, fired: Vec<crate::tree::Fired>) {
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
}
