//! The read/write lock: 70% reads, 30% writes (`on=lock mode=r|w`); one write in ten
//! downgrades: it takes the read lock while writing, lets the write lock go and reads on.
//! Curator's side never downgrades (its 5.4 downgrade lets a queued writer in: CURATOR-621).

use recipe_rwlock::InterProcessReadWriteLock;

use super::Contender;
use crate::interop::holds::Mode;

pub(super) async fn run(c: &mut Contender) {
    let lock = match InterProcessReadWriteLock::new(c.client.clone(), &c.cfg.path) {
        Ok(lock) => lock,
        Err(e) => return c.error("creating the lock", &e).await,
    };
    while let Some(left) = c.left() {
        let roll = c.roll(10);
        if roll >= 3 {
            let r = match lock.read_lock().try_lock_for(left).await {
                Ok(Some(g)) => g,
                Ok(None) => return,
                Err(e) => {
                    c.error("read acquire", &e).await;
                    continue;
                }
            };
            let n = c.acquired();
            let from = c.now();
            c.hold().await;
            let to = c.now();
            let (node, token) = (r.node_path().to_owned(), r.fencing_token());
            c.record(n, "lock".into(), Mode::Read, (from, to), &node, token);
            if let Err(e) = r.release().await {
                c.error("read release", &e).await;
            }
            continue;
        }
        let w = match lock.write_lock().try_lock_for(left).await {
            Ok(Some(g)) => g,
            Ok(None) => return,
            Err(e) => {
                c.error("write acquire", &e).await;
                continue;
            }
        };
        let n = c.acquired();
        let from = c.now();
        c.hold().await;
        let (w_node, w_token) = (w.node_path().to_owned(), w.fencing_token());
        if roll != 0 {
            let to = c.now();
            c.record(n, "lock".into(), Mode::Write, (from, to), &w_node, w_token);
            if let Err(e) = w.release().await {
                c.error("write release", &e).await;
            }
            continue;
        }
        // A downgrade: read, then let the write lock go while still reading.
        let r = match lock.read_lock().lock().await {
            Ok(r) => r,
            Err(e) => {
                let to = c.now();
                c.record(n, "lock".into(), Mode::Write, (from, to), &w_node, w_token);
                c.error("downgrade", &e).await;
                let _ = w.release().await;
                continue;
            }
        };
        let r_from = c.now();
        let w_to = c.now();
        c.record(
            n,
            "lock".into(),
            Mode::Write,
            (from, w_to),
            &w_node,
            w_token,
        );
        if let Err(e) = w.release().await {
            c.error("write release", &e).await;
        }
        c.hold().await;
        let r_to = c.now();
        let (node, token) = (r.node_path().to_owned(), r.fencing_token());
        c.record(n, "lock".into(), Mode::Read, (r_from, r_to), &node, token);
        if let Err(e) = r.release().await {
            c.error("read release", &e).await;
        }
    }
}
