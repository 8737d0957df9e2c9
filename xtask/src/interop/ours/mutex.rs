//! The mutex: one `InterProcessMutex` per client on the lock path; each hold is `on=lock
//! mode=x` with its lock node and fencing token. With `--cohort`, one `CohortMutex` shared
//! by every client's task (on one session); a batch's first hold carries the node's token,
//! the local hand-offs after it none (they share it; their order is the local sequence).

use recipe_mutex::{CohortMutex, InterProcessMutex};

use super::{Contender, Taken};
use crate::interop::holds::Mode;

pub(super) async fn run(c: &mut Contender) {
    let mutex = match InterProcessMutex::new(c.client.clone(), &c.cfg.path) {
        Ok(mutex) => mutex,
        Err(e) => return c.error("creating the mutex", &e).await,
    };
    while let Some(left) = c.left() {
        let guard = match c.take("acquire", mutex.try_lock_for(left)).await {
            Taken::Held(guard) => guard,
            Taken::Over => return,
            Taken::Failed => continue,
        };
        let (n, span) = c.hold().await;
        let (node, token) = (guard.node_path().to_owned(), guard.fencing_token());
        c.record(n, "lock".into(), Mode::Exclusive, span, &node, token);
        c.release("release", guard.release()).await;
    }
}

pub(super) async fn run_cohort(c: &mut Contender, cohort: CohortMutex) {
    while let Some(left) = c.left() {
        let guard = match c.take("acquire", cohort.try_lock_for(left)).await {
            Taken::Held(guard) => guard,
            Taken::Over => return,
            Taken::Failed => continue,
        };
        let (n, span) = c.hold().await;
        let token = guard.fencing_token();
        let node = guard.node_path().to_owned();
        let first = (token.local == 1).then_some(token.czxid);
        c.record(n, "lock".into(), Mode::Exclusive, span, &node, first);
        c.release("release", guard.release()).await;
    }
}
