//! The read/write lock: 70% reads, 30% writes (`on=lock mode=r|w`); one write in ten
//! downgrades (`WriteGuard::downgrade`) and reads on.
//! Curator's side never downgrades (its 5.4 downgrade lets a queued writer in: CURATOR-621).
//! With `--cohort`, one `CohortReadWriteLock` shared by every client's task (on one session),
//! with no downgrade; a node's first hold carries its token, the others on it none.

use recipe_mutex::Lock;
use recipe_rwlock::{CohortReadWriteLock, InterProcessReadWriteLock};

use super::{Contender, Taken};
use crate::interop::holds::Mode;

pub(super) async fn run(c: &mut Contender) {
    let lock = match InterProcessReadWriteLock::new(c.client.clone(), &c.cfg.path) {
        Ok(lock) => lock,
        Err(e) => return c.error("creating the lock", &e).await,
    };
    while let Some(left) = c.left() {
        let roll = c.roll(10);
        if roll >= 3 {
            let read = match c.take("acquire", lock.read_lock().try_lock_for(left)).await {
                Taken::Held(guard) => guard,
                Taken::Over => return,
                Taken::Failed => continue,
            };
            let (n, (from, to)) = c.hold().await;
            let (node, token) = (read.node_path().to_owned(), read.fencing_token());
            c.record(n, "lock".into(), Mode::Read, (from, to), &node, token);
            c.release("release", read.release()).await;
            continue;
        }
        let write = match c
            .take("acquire", lock.write_lock().try_lock_for(left))
            .await
        {
            Taken::Held(guard) => guard,
            Taken::Over => return,
            Taken::Failed => continue,
        };
        let (n, (from, to)) = c.hold().await;
        let (node, token) = (write.node_path().to_owned(), write.fencing_token());
        if roll != 0 {
            c.record(n, "lock".into(), Mode::Write, (from, to), &node, token);
            c.release("release", write.release()).await;
            continue;
        }
        // A downgrade: the write hold becomes a read hold, and reads on. The write node's
        // delete is sent inside `downgrade` once the read node holds, and the server may apply
        // it before `downgrade` returns (a Curator reader then holds before our clock is read
        // again): so the write is recorded as ending just after `t0`, taken before the
        // downgrade starts (inside the real write hold). The read is recorded from `t0`: until
        // the read node holds we hold the write, which excludes every writer the read
        // excludes, so this adds no false violation; what it gives up is seeing a Curator
        // reader during the downgrade's own round trip (our write excluded it then). The two
        // records overlap by a nanosecond, which the checker counts as a downgrade.
        let t0 = c.now();
        let read = match c
            .take("downgrade", async { write.downgrade().await.map(Some) })
            .await
        {
            Taken::Held(read) => read,
            Taken::Over | Taken::Failed => {
                // The write lock was released with the failed downgrade.
                c.record(n, "lock".into(), Mode::Write, (from, t0), &node, token);
                continue;
            }
        };
        let r_from = t0;
        c.record(n, "lock".into(), Mode::Write, (from, t0 + 1), &node, token);
        c.pause().await;
        let r_to = c.now();
        let (r_node, r_token) = (read.node_path().to_owned(), read.fencing_token());
        c.record(
            n,
            "lock".into(),
            Mode::Read,
            (r_from, r_to),
            &r_node,
            r_token,
        );
        c.release("read release", read.release()).await;
    }
}

pub(super) async fn run_cohort(c: &mut Contender, lock: CohortReadWriteLock) {
    while let Some(left) = c.left() {
        let (side, mode): (&dyn Lock, _) = match c.roll(10) >= 3 {
            true => (lock.read_lock(), Mode::Read),
            false => (lock.write_lock(), Mode::Write),
        };
        let guard = match c.take("acquire", side.try_lock_for(left)).await {
            Taken::Held(guard) => guard,
            Taken::Over => return,
            Taken::Failed => continue,
        };
        let (n, span) = c.hold().await;
        let Some(node) = guard
            .holds()
            .first()
            .map(|h| (h.node_path().to_owned(), h.fencing_token()))
        else {
            continue;
        };
        // A node's first holder carries its token; the others on it share it.
        let first = (guard.local_sequence() == 1).then_some(node.1);
        c.record(n, "lock".into(), mode, span, &node.0, first);
        c.release("release", guard.release()).await;
    }
}
