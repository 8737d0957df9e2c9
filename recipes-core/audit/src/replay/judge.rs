//! A lock judged after each transaction that touched it: the nodes its recipe's rule now
//! grants, a container left empty, and more holders than the lock allows
//! ([`Anomaly::Overlap`]).

use recipes_core::name::sequence;
use recipes_core::rwlock::{WRITE_LOCK_NAME, rw_sort_key};
use zk_proto::snapshot::CONTAINER_OWNER;

use super::lock::grant;
use super::rules::holders;
use super::{Anomaly, Audit, LockKind, Stamp};

impl Audit {
    /// Judges the lock at `dir` after a transaction that touched it.
    pub(super) fn judge(&mut self, at: Stamp, dir: &str) {
        let kids: Vec<String> = self
            .children
            .get(dir)
            .map(|k| k.iter().cloned().collect())
            .unwrap_or_default();
        let is_container = self
            .nodes
            .get(dir)
            .is_some_and(|m| m.owner == CONTAINER_OWNER);
        let Some(lock) = self.locks.get_mut(dir) else {
            return;
        };
        lock.empty_since = match (kids.is_empty() && is_container, lock.empty_since) {
            (true, None) => Some(at),
            (true, since) => since,
            (false, _) => None,
        };
        for name in holders(lock.kind, kids) {
            if lock.entries.get(&name).is_some_and(|e| e.granted.is_none()) {
                grant(lock, &name, at);
            }
        }
        let held: Vec<String> = lock
            .entries
            .iter()
            .filter(|(_, e)| e.granted.is_some())
            .map(|(n, _)| n.clone())
            .collect();
        let too_many = match lock.kind {
            LockKind::Mutex | LockKind::SemaphoreInnerLock => held.len() > 1,
            LockKind::ReadWrite => {
                // A writer with anyone but its own downgrade's read node (same session, same
                // sequence).
                let writers: Vec<(&str, i64)> = held
                    .iter()
                    .filter(|n| sequence(n, WRITE_LOCK_NAME).is_some())
                    .filter_map(|n| Some((rw_sort_key(n), lock.entries.get(n)?.session)))
                    .collect();
                let others = held
                    .iter()
                    .filter(|n| sequence(n, WRITE_LOCK_NAME).is_none())
                    .filter(|n| {
                        let session = lock.entries.get(*n).map(|e| e.session);
                        !writers
                            .iter()
                            .any(|(k, s)| *k == rw_sort_key(n) && Some(*s) == session)
                    })
                    .count();
                !writers.is_empty() && (writers.len() > 1 || others > 0)
            }
            LockKind::Leases { max: Some(max) } => {
                held.len() > usize::try_from(max).unwrap_or(usize::MAX)
            }
            LockKind::Leases { max: None } => false,
        };
        if too_many && !lock.overlapping {
            self.history.anomalies.push(Anomaly::Overlap {
                zxid: at.zxid,
                dir: dir.to_owned(),
                holders: held,
            });
        }
        lock.overlapping = too_many;
    }
}
