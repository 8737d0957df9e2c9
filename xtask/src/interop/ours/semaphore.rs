//! The semaphore (`on=leases mode=lease`, a hold per lease; ours sometimes asks for two at
//! once, all or none) and the semaphore mutex (`on=lock mode=lease`, a semaphore of one).

use recipe_semaphore::{InterProcessSemaphoreMutex, InterProcessSemaphoreV2};

use super::{Contender, Taken};
use crate::interop::holds::Mode;

pub(super) async fn run(c: &mut Contender) {
    let leases = c.cfg.leases;
    let semaphore = match InterProcessSemaphoreV2::new(c.client.clone(), &c.cfg.path, leases) {
        Ok(s) => s,
        Err(e) => return c.error("creating the semaphore", &e).await,
    };
    while let Some(left) = c.left() {
        let qty = if leases > 1 && c.roll(10) < 2 { 2 } else { 1 };
        let held = match c
            .take("acquire", semaphore.try_acquire_many_for(qty, left))
            .await
        {
            Taken::Held(held) => held,
            Taken::Over => return,
            Taken::Failed => continue,
        };
        let (n, span) = c.hold().await;
        for lease in &held {
            let (node, token) = (lease.node_path().to_owned(), lease.fencing_token());
            c.record(n, "leases".into(), Mode::Lease, span, &node, token);
        }
        c.release("release", recipe_semaphore::return_all(held))
            .await;
    }
}

pub(super) async fn run_mutex(c: &mut Contender) {
    let lock = match InterProcessSemaphoreMutex::new(c.client.clone(), &c.cfg.path) {
        Ok(l) => l,
        Err(e) => return c.error("creating the lock", &e).await,
    };
    while let Some(left) = c.left() {
        let guard = match c.take("acquire", lock.try_lock_for(left)).await {
            Taken::Held(guard) => guard,
            Taken::Over => return,
            Taken::Failed => continue,
        };
        let (n, span) = c.hold().await;
        let (node, token) = (guard.node_path().to_owned(), guard.fencing_token());
        c.record(n, "lock".into(), Mode::Lease, span, &node, token);
        c.release("release", guard.release()).await;
    }
}
