//! The multi-lock: a random non-empty subset of the members `<path>/0` .. `<path>/2` each
//! time; each member held is a hold `on=member-<k> mode=x`.

use recipe_multilock::InterProcessMultiLock;

use super::{Contender, Taken};
use crate::interop::holds::Mode;
use crate::recipe::member_paths;

pub(super) async fn run(c: &mut Contender) {
    while let Some(left) = c.left() {
        let path = c.cfg.path.clone();
        let members = member_paths(&path, |_| c.roll(10) < 6);
        let refs: Vec<&str> = members.iter().map(|(_, p)| p.as_str()).collect();
        let multi = match InterProcessMultiLock::new(c.client.clone(), &refs) {
            Ok(m) => m,
            Err(e) => return c.error("creating the multi-lock", &e).await,
        };
        let guard = match c.take("acquire", multi.try_lock_for(left)).await {
            Taken::Held(guard) => guard,
            Taken::Over => return,
            Taken::Failed => continue,
        };
        let (n, span) = c.hold().await;
        // The members are taken in the canonical order (by path): 0, 1, 2 here.
        let held: Vec<(String, i64)> = guard
            .members()
            .map(|m| (m.node_path().to_owned(), m.fencing_token()))
            .collect();
        for ((k, _), (node, token)) in members.iter().zip(held) {
            c.record(
                n,
                format!("member-{k}"),
                Mode::Exclusive,
                span,
                &node,
                token,
            );
        }
        c.release("release", guard.release()).await;
    }
}
