//! The faults a schedule draws: disconnects and reconnects, expiry, a local `Lost`,
//! meddling deletes, abandoned acquires; then the world quiets down and is checked.

use recipes_core::{Connection, Input, Op};

use crate::check::Violation;
use crate::net::{FromServer, Local, RunnerId};
use crate::tree::SessionId;

use super::{TaskState, World};

impl World {
    pub(super) fn fault(&mut self) -> Result<(), Violation> {
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
    pub(super) fn quiet_down(&mut self) -> Result<(), Violation> {
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

    pub(super) fn final_checks(&mut self) -> Result<(), Violation> {
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
