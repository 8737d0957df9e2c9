//! Transactions in: [`Audit::apply`] in zxid order (gaps and repeats noted), each operation's
//! creates and deletes, and the children's-version check that shows forgotten history.

use std::collections::BTreeSet;

use zk_proto::snapshot::CONTAINER_OWNER;
use zk_proto::txnlog::{TxnBody, TxnEntry};

use super::{Anomaly, Audit, EndCause, Event, EventKind, Stamp, split};
use crate::commit::Commits;

impl Audit {
    /// Applies one transaction. Transactions must come in zxid order; one at or below the
    /// last applied is skipped, and noted ([`Anomaly::Repeated`]) unless it is at or below the
    /// starting tree's zxid (a log overlapping its snapshot, as logs do). Within an epoch,
    /// a zxid that does not follow the last applied is a gap ([`Anomaly::Gap`]).
    pub fn apply(&mut self, e: &TxnEntry) {
        let at = Stamp {
            zxid: e.header.zxid,
            time: e.header.time,
        };
        if let Some(last) = self.applied {
            if at.zxid <= last {
                if self.history.start_zxid.is_none_or(|s| last > s) {
                    self.history
                        .anomalies
                        .push(Anomaly::Repeated { zxid: at.zxid });
                }
                return;
            }
            if at.zxid >> 32 == last >> 32 && at.zxid != last + 1 {
                self.history.anomalies.push(Anomaly::Gap {
                    after: last,
                    before: at.zxid,
                });
            }
        }
        self.applied = Some(at.zxid);
        self.history.first.get_or_insert(at);
        self.history.last = Some(at);
        self.history.txns += 1;
        let session = e.header.client_id;
        let mut touched = BTreeSet::new();
        match &e.body {
            body if body.changed_nothing() => {}
            TxnBody::Multi(ops) => {
                for op in ops {
                    self.apply_op(at, session, op, &mut touched);
                }
            }
            TxnBody::CreateSession(c) => {
                self.history.session_timeouts.insert(session, c.timeout);
            }
            TxnBody::CloseSession(close) => {
                let cause = if e.header.cxid == 0 {
                    EndCause::Expired
                } else {
                    EndCause::Closed
                };
                let paths: Vec<String> = match close {
                    Some(c) => c.paths_to_delete.clone(),
                    None => self
                        .nodes
                        .iter()
                        .filter(|(_, m)| m.owner == session)
                        .map(|(p, _)| p.clone())
                        .collect(),
                };
                for path in paths {
                    self.remove(at, &path, cause, &mut touched);
                }
                self.ended.insert(session);
            }
            body => self.apply_op(at, session, body, &mut touched),
        }
        for dir in touched {
            self.judge(at, &dir);
        }
    }

    fn apply_op(&mut self, at: Stamp, session: i64, op: &TxnBody, touched: &mut BTreeSet<String>) {
        let parent_cversion = match op {
            TxnBody::Create(t) | TxnBody::Create2(t) => Some((&t.path, t.parent_cversion)),
            TxnBody::CreateTtl(t) => Some((&t.path, t.parent_cversion)),
            TxnBody::CreateContainer(t) => Some((&t.path, t.parent_cversion)),
            _ => None,
        };
        if let Some((path, cversion)) = parent_cversion {
            self.check_cversion(at, path, cversion);
        }
        let created = match op {
            TxnBody::Create(t) | TxnBody::Create2(t) => {
                Some((&t.path, if t.ephemeral { session } else { 0 }))
            }
            TxnBody::CreateV0(t) => Some((&t.path, if t.ephemeral { session } else { 0 })),
            TxnBody::CreateTtl(t) => Some((&t.path, 0)),
            TxnBody::CreateContainer(t) => Some((&t.path, CONTAINER_OWNER)),
            TxnBody::Delete(t) | TxnBody::DeleteContainer(t) => {
                let cause = match self.nodes.get(&t.path) {
                    Some(m) if m.owner != session => EndCause::DeletedBy(session),
                    _ => EndCause::OwnDelete,
                };
                self.remove(at, &t.path, cause, touched);
                None
            }
            _ => None,
        };
        if let Some((path, owner)) = created {
            if self
                .nodes
                .get(path.as_str())
                .is_some_and(|m| m.made.zxid == at.zxid)
            {
                return; // a fuzzy snapshot's node made again
            }
            if let Some(dir) = self.insert(path, at, owner) {
                let Some(lock) = self.locks.get_mut(&dir) else {
                    return;
                };
                let (_, name) = split(path).unwrap_or_default();
                if lock.entries.contains_key(name) {
                    let queue = lock.entries.len();
                    lock.record(Event {
                        at,
                        node: name.to_owned(),
                        session: owner,
                        kind: EventKind::Queued,
                        queue,
                    });
                }
                touched.insert(dir);
            }
        }
    }

    /// Notes that the servers lost transactions at `zxid` (members' logs disagree there).
    pub fn diverged(&mut self, zxid: i64) {
        self.history.anomalies.push(Anomaly::Diverged { zxid });
    }

    /// Notes that `zxid` was logged by a majority after `uncommitted`, of its epoch, was not:
    /// the logs contradict the order proposals commit in ([`crate::commit`]).
    pub fn committed_after(&mut self, zxid: i64, uncommitted: i64) {
        self.history
            .anomalies
            .push(Anomaly::CommittedAfterUncommitted { zxid, uncommitted });
    }

    /// Keeps what the commit rule decided over the merge, for the reports
    /// ([`History::commits`]).
    ///
    /// [`History::commits`]: super::History::commits
    pub fn commits(&mut self, commits: Commits) {
        self.history.commits = Some(commits);
    }

    /// A create of `path` set its parent's children's version to `cversion`: it must be above
    /// any the record set before (the judge's check for forgotten history).
    fn check_cversion(&mut self, at: Stamp, path: &str, cversion: i32) {
        let Some((dir, _)) = split(path) else {
            return;
        };
        // Only directories that are locks, to keep the table small.
        if !self.locks.contains_key(dir) && !self.wanted(dir) {
            return;
        }
        match self.cversions.get_mut(dir) {
            Some(had) if cversion <= *had => {
                let had = *had;
                self.history.anomalies.push(Anomaly::Forgotten {
                    zxid: at.zxid,
                    dir: dir.to_owned(),
                    cversion,
                    had,
                });
                self.cversions.insert(dir.to_owned(), cversion);
            }
            Some(had) => *had = cversion,
            None => {
                self.cversions.insert(dir.to_owned(), cversion);
            }
        }
    }
}
