//! The tasks: each an owner taking the lock in turn, through attempts, holds, cleanups
//! and releases, round after round.

use recipes_core::{Cleanup, CleanupMachine, Failure, Held, Outcome, Runner};

use crate::check::{Hold, Violation};
use crate::net::RunnerId;
use crate::recipe::{self, HoldKind, Recipe};

use super::{Attempt, Job, TaskState, World, ms};

impl World {
    fn task_of_runner(&self, id: RunnerId) -> Option<usize> {
        self.tasks.iter().position(|t| match &t.state {
            TaskState::Acquiring(a) | TaskState::Draining(a) => a.runner == id,
            TaskState::CleaningUp { cleanup, .. } => *cleanup == id,
            TaskState::Releasing(rs) => rs.contains(&id),
            _ => false,
        })
    }

    /// Moves the task that runner `id` works for, after an input.
    pub(super) fn after(&mut self, id: RunnerId) -> Result<(), Violation> {
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
    pub(super) fn wake_task(&mut self, t: usize) -> Result<(), Violation> {
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
}
