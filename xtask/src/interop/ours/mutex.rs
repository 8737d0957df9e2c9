//! The mutex: one `InterProcessMutex` per client on the lock path; each hold is `on=lock
//! mode=x` with its lock node and fencing token.

use recipe_mutex::InterProcessMutex;

use super::Contender;
use crate::interop::holds::Mode;

pub(super) async fn run(c: &mut Contender) {
    let mutex = match InterProcessMutex::new(c.client.clone(), &c.cfg.path) {
        Ok(mutex) => mutex,
        Err(e) => return c.error("creating the mutex", &e).await,
    };
    while let Some(left) = c.left() {
        let guard = match mutex.try_lock_for(left).await {
            Ok(Some(guard)) => guard,
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
        c.record(n, "lock".into(), Mode::Exclusive, (from, to), &node, token);
        if let Err(e) = guard.release().await {
            c.error("release", &e).await;
        }
    }
}
