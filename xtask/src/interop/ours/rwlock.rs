//! The read/write lock: 70% reads, 30% writes (`on=lock mode=r|w`); one write in ten
//! downgrades: it takes the read lock while writing, lets the write lock go and reads on.
//! Curator's side never downgrades (its 5.4 downgrade lets a queued writer in: CURATOR-621).

use recipe_mutex::Lock;
use recipe_rwlock::InterProcessReadWriteLock;

use super::{Contender, Taken};
use crate::interop::holds::Mode;

pub(super) async fn run(c: &mut Contender) {
    let lock = match InterProcessReadWriteLock::new(c.client.clone(), &c.cfg.path) {
        Ok(lock) => lock,
        Err(e) => return c.error("creating the lock", &e).await,
    };
    while let Some(left) = c.left() {
        let roll = c.roll(10);
        let (side, mode): (&dyn Lock, _) = if roll >= 3 {
            (lock.read_lock(), Mode::Read)
        } else {
            (lock.write_lock(), Mode::Write)
        };
        let guard = match c.take("acquire", side.try_lock_for(left)).await {
            Taken::Held(guard) => guard,
            Taken::Over => return,
            Taken::Failed => continue,
        };
        let (n, (from, to)) = c.hold().await;
        let (node, token) = (guard.node_path().to_owned(), guard.fencing_token());
        if roll != 0 {
            c.record(n, "lock".into(), mode, (from, to), &node, token);
            c.release("release", guard.release()).await;
            continue;
        }
        // A downgrade: read, then let the write lock go while still reading.
        let read = match c
            .take("downgrade", async {
                lock.read_lock().lock().await.map(Some)
            })
            .await
        {
            Taken::Held(read) => read,
            Taken::Over | Taken::Failed => {
                c.record(n, "lock".into(), mode, (from, c.now()), &node, token);
                c.release("release", guard.release()).await;
                continue;
            }
        };
        let r_from = c.now();
        c.record(n, "lock".into(), mode, (from, c.now()), &node, token);
        c.release("write release", guard.release()).await;
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
