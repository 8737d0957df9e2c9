//! The runners: spawning a recipe machine (an attempt or a cleanup) on a session, and
//! handing it inputs.

use recipes_core::{Connection, Input};

use crate::check::Violation;
use crate::net::{Local, RunnerId};
use crate::tree::SessionId;

use super::{Job, Slot, World};

impl World {
    pub(super) fn spawn(&mut self, session: SessionId, job: Job) -> Result<RunnerId, Violation> {
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
    pub(super) fn input(&mut self, id: RunnerId, input: Input) -> Result<(), Violation> {
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
}
