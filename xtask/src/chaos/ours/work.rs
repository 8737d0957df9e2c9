//! The work under a hold: the registers read, then written one more in one `multi`, fenced
//! unless the fence is off, with the guard's lost signal watched throughout.

use std::time::Duration;

use recipe_mutex::Guard;
use tokio::time::Instant;
use zk_client::{Op, OpResult};

use crate::chaos::history::{Event, Write, WriteResult};
use crate::chaos::judge::marks;
use crate::chaos::layout;
use crate::interop::holds::Mode;

use super::mark::mark_mode;
use super::{Contender, kind_of};

impl Contender {
    /// The work under a hold: read the registers, wait a little, write each one more in one
    /// `multi` (fenced unless the fence is off). Watches the guard's lost signal throughout;
    /// after a write that failed, waits for the signal (a careful holder asks the guard before
    /// going on) up to a session timeout and a little. When the signal fired, if it did.
    pub(super) async fn work(
        &mut self,
        guard: &dyn Guard,
        mode: Mode,
        regs: &[String],
    ) -> Option<u64> {
        let hold_for = self.hold_for();
        let lost = guard.lost();
        tokio::pin!(lost);
        let mut lost_at = None;
        let written = {
            let write = self.write(guard, mode, regs, hold_for);
            tokio::pin!(write);
            loop {
                tokio::select! {
                    biased;
                    ok = &mut write => break ok,
                    _ = &mut lost, if lost_at.is_none() => lost_at = Some(self.shared.clock.now()),
                }
            }
        };
        if lost_at.is_none() {
            lost_at = self
                .confirm(guard.is_valid() && written, || guard.is_valid(), lost)
                .await;
        }
        lost_at
    }

    /// After a hold's work: when the work failed or the session is not surely connected (a
    /// process just resumed from a pause sees its timers fire first), waits for the hold's
    /// lost signal, up to a session timeout and a little, or until the session is surely
    /// connected again, as a careful holder would before going on. When the signal fired.
    pub(super) async fn confirm(
        &self,
        fine: bool,
        valid: impl Fn() -> bool,
        lost: impl std::future::Future<Output = recipe_mutex::Loss>,
    ) -> Option<u64> {
        // Let the session task see what a pause did before asking.
        tokio::time::sleep(Duration::from_millis(5)).await;
        if fine && valid() {
            return None;
        }
        tokio::pin!(lost);
        let until = Instant::now() + self.cfg.session_timeout + Duration::from_secs(2);
        loop {
            tokio::select! {
                _ = &mut lost => return Some(self.now()),
                () = tokio::time::sleep(Duration::from_millis(50)) => {
                    if valid() || Instant::now() >= until {
                        return None;
                    }
                }
            }
        }
    }

    /// Reads `regs`, waits `hold_for`, writes each one more; whether every write was accepted
    /// (true with no registers).
    async fn write(
        &self,
        guard: &dyn Guard,
        mode: Mode,
        regs: &[String],
        hold_for: Duration,
    ) -> bool {
        if regs.is_empty() {
            tokio::time::sleep(hold_for).await;
            return true;
        }
        let mut read = Vec::with_capacity(regs.len());
        for reg in regs {
            // ZooKeeper's reads are not linearizable: a store session on a member that is
            // behind (just resumed from a pause, say) reads an old value. A sync first makes
            // the read as new as every write committed before it (seen in a long run: a read
            // two seconds old, then a fenced write that lost four updates).
            if self.store.sync(&layout::register_path(reg)).await.is_err() {
                return false;
            }
            match self.store.get_data(&layout::register_path(reg)).await {
                Ok((data, _)) => read.push(marks::register_value(&data)),
                Err(_) => return false,
            }
        }
        tokio::time::sleep(hold_for).await;
        let mut ops = if self.cfg.fence {
            guard.check_ops()
        } else {
            Vec::new()
        };
        let checks = ops.len();
        let holds = guard.holds();
        for (k, (reg, v)) in regs.iter().zip(&read).enumerate() {
            // The hold the register is written under: the one node of the register's own lock
            // (the multi-lock's member k). None (no such node held): written under `-`, which
            // the judge finds, rather than under another lock's node.
            let lock = layout::register_lock(self.who.recipe, k);
            let hold = holds.iter().find(|h| marks::is_of(h.node_path(), &lock));
            let (node, token) = hold.map_or(("-", 0), |h| (h.node_path(), h.fencing_token()));
            ops.push(Op::set_data(
                layout::register_path(reg),
                marks::register_data(v + 1, "rust", &lock, mark_mode(mode), node, token),
                None,
            ));
        }
        let sent = self.now();
        let result = self.store.multi(&ops).await;
        let replied = self.now();
        let mut all = true;
        for (i, (reg, v)) in regs.iter().zip(&read).enumerate() {
            let outcome = match &result {
                Ok(results) => match results.get(checks + i) {
                    Some(OpResult::DataSet(stat)) => WriteResult::Accepted {
                        version: u64::try_from(stat.version).unwrap_or(0),
                    },
                    _ => WriteResult::Failed("NoStat".into()),
                },
                Err(zk_client::Error::MultiFailed { index, source })
                    if *index < checks && **source == zk_client::Error::NoNode =>
                {
                    WriteResult::Fenced
                }
                Err(e) => WriteResult::Failed(kind_of(e)),
            };
            all &= outcome.accepted();
            self.shared.push(Event::Write(Write {
                who: self.name.clone(),
                n: self.n,
                reg: reg.clone(),
                read: *v,
                sent,
                replied,
                result: outcome,
            }));
        }
        all
    }
}
