//! A lock node's end: the node removed from the tree, its [`EventKind::Ended`] with who ended
//! it, and, for a semaphore's inner lock, the leases its release lets through.

use std::collections::BTreeSet;

use recipes_core::semaphore::LEASES_DIR;

use super::lock::grant;
use super::{Anomaly, Audit, EndCause, Event, EventKind, LockKind, Stamp, join, split};

impl Audit {
    pub(super) fn remove(
        &mut self,
        at: Stamp,
        path: &str,
        cause: EndCause,
        touched: &mut BTreeSet<String>,
    ) {
        self.cversions.remove(path);
        if self.nodes.remove(path).is_none() {
            self.history.anomalies.push(Anomaly::UnknownNode {
                zxid: at.zxid,
                path: path.to_owned(),
            });
            return;
        }
        self.children.remove(path);
        let Some((dir, name)) = split(path) else {
            return;
        };
        if let Some(kids) = self.children.get_mut(dir) {
            kids.remove(name);
        }
        // The lock's own directory went (an empty container removed).
        if let Some(lock) = self.locks.get_mut(path) {
            lock.empty_since = None;
        }
        let Some(lock) = self.locks.get_mut(dir) else {
            return;
        };
        touched.insert(dir.to_owned());
        let Some(entry) = lock.entries.remove(name) else {
            return;
        };
        let held = entry.granted.is_some();
        let for_ms = match entry.granted {
            Some(_) if entry.from_start => None,
            Some(g) => Some(at.time - g.time),
            None => Some(at.time - entry.made.time),
        };
        let queue = lock.entries.len();
        let index = lock.record(Event {
            at,
            node: name.to_owned(),
            session: entry.session,
            kind: EventKind::Ended {
                cause,
                held,
                for_ms,
                next_grant_ms: None,
            },
            queue,
        });
        if let (true, Some(i)) = (held, index) {
            lock.awaiting_grant.push(i);
        }
        // A semaphore's inner lock let go: the leases its session made while holding it,
        // still there, passed the count.
        if lock.kind == LockKind::SemaphoreInnerLock {
            if let Some((base, _)) = split(dir) {
                let leases = join(base, LEASES_DIR);
                if let Some(l) = self.locks.get_mut(&leases) {
                    let names: Vec<String> = l
                        .entries
                        .iter()
                        .filter(|(_, e)| e.granted.is_none() && e.inner.as_deref() == Some(path))
                        .map(|(n, _)| n.clone())
                        .collect();
                    for n in names {
                        grant(l, &n, at);
                    }
                }
            }
        }
    }
}
