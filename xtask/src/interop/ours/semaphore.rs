//! The semaphore (`on=leases mode=lease`, a hold per lease; ours sometimes asks for two at
//! once, all or none) and the semaphore mutex (`on=lock mode=lease`, a semaphore of one).

use recipe_semaphore::{InterProcessSemaphoreMutex, InterProcessSemaphoreV2};

use super::Contender;
use crate::interop::holds::Mode;

pub(super) async fn run(c: &mut Contender) {
    let leases = c.cfg.leases;
    let semaphore = match InterProcessSemaphoreV2::new(c.client.clone(), &c.cfg.path, leases) {
        Ok(s) => s,
        Err(e) => return c.error("creating the semaphore", &e).await,
    };
    while let Some(left) = c.left() {
        let qty = if leases > 1 && c.roll(10) < 2 { 2 } else { 1 };
        let held = match semaphore.acquire_many_timeout(qty, left).await {
            Ok(Some(held)) => held,
            Ok(None) => return,
            Err(e) => {
                c.error("acquire", &e).await;
                continue;
            }
        };
        let n = c.acquired();
        let from = c.now();
        c.hold().await;
        let to = c.now();
        for lease in &held {
            let (node, token) = (lease.node_path().to_owned(), lease.fencing_token());
            c.record(n, "leases".into(), Mode::Lease, (from, to), &node, token);
        }
        if let Err(e) = InterProcessSemaphoreV2::return_all(held).await {
            c.error("release", &e).await;
        }
    }
}

pub(super) async fn run_mutex(c: &mut Contender) {
    let lock = match InterProcessSemaphoreMutex::new(c.client.clone(), &c.cfg.path) {
        Ok(l) => l,
        Err(e) => return c.error("creating the lock", &e).await,
    };
    while let Some(left) = c.left() {
        let guard = match lock.try_lock_for(left).await {
            Ok(Some(g)) => g,
            Ok(None) => return,
            Err(e) => {
                c.error("acquire", &e).await;
                continue;
            }
        };
        let n = c.acquired();
        let from = c.now();
        c.hold().await;
        let to = c.now();
        let (node, token) = (guard.node_path().to_owned(), guard.fencing_token());
        c.record(n, "lock".into(), Mode::Lease, (from, to), &node, token);
        if let Err(e) = guard.release().await {
            c.error("release", &e).await;
        }
    }
}
