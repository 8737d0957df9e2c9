//! [`WatchTable`]: the server's one-shot watches, as ZooKeeper's `WatchManager` keeps them:
//! a data table (`getData`, and `exists` whether or not the node exists) and a child table
//! (`getChildren`), each path to the sessions watching it. A watch fires once and is gone; a
//! session's watches go with its connection (the client sets them again with `SetWatches`).

use std::collections::{BTreeMap, BTreeSet};

use zk_proto::EventType;

use super::data_tree::{Change, DataTree};

/// Which table a watch is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum WatchKind {
    /// `getData` or `exists`: fires on create, data change and delete.
    Data,
    /// `getChildren`: fires on a child's create or delete, and on the node's delete.
    Child,
}

/// A notification to send: to which session, what happened to which path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notification {
    /// The watching session.
    pub session: i64,
    /// What happened.
    pub event: EventType,
    /// Where (the server's path).
    pub path: String,
}

/// The watches of every session.
#[derive(Debug, Clone, Default)]
pub struct WatchTable {
    tables: BTreeMap<(WatchKind, String), BTreeSet<i64>>,
}

impl WatchTable {
    /// `session` watches `path` in table `kind`.
    pub fn add(&mut self, kind: WatchKind, path: &str, session: i64) {
        self.tables
            .entry((kind, path.to_owned()))
            .or_default()
            .insert(session);
    }

    /// Drops every watch of `session` (its connection closed).
    pub fn remove_session(&mut self, session: i64) {
        for sessions in self.tables.values_mut() {
            sessions.remove(&session);
        }
        self.tables.retain(|_, sessions| !sessions.is_empty());
    }

    fn take(&mut self, kind: WatchKind, path: &str) -> BTreeSet<i64> {
        self.tables
            .remove(&(kind, path.to_owned()))
            .unwrap_or_default()
    }

    /// Fires the watches `changes` trigger, in order, appending one notification per
    /// session and event. As in ZooKeeper, a deleted node's data and child watchers are told
    /// once (`NodeDeleted`), not once per table.
    pub fn fire(&mut self, changes: &[Change], out: &mut Vec<Notification>) {
        for change in changes {
            let (path, event, sessions) = match change {
                Change::Created(p) => (p, EventType::NodeCreated, self.take(WatchKind::Data, p)),
                Change::DataChanged(p) => {
                    (p, EventType::NodeDataChanged, self.take(WatchKind::Data, p))
                }
                Change::ChildrenChanged(p) => (
                    p,
                    EventType::NodeChildrenChanged,
                    self.take(WatchKind::Child, p),
                ),
                Change::Deleted(p) => {
                    let mut sessions = self.take(WatchKind::Data, p);
                    sessions.extend(self.take(WatchKind::Child, p));
                    (p, EventType::NodeDeleted, sessions)
                }
            };
            out.extend(sessions.into_iter().map(|session| Notification {
                session,
                event,
                path: path.clone(),
            }));
        }
    }

    /// Re-registers a reconnected session's watches (`SetWatches`), as ZooKeeper's
    /// `DataTree.setWatches` does: a watch whose node changed after `relative_zxid` fires at
    /// once (data: deleted or `mzxid` newer; exists: the node is there; child: deleted or
    /// `pzxid` newer), the others are set.
    pub fn set_watches(
        &mut self,
        tree: &DataTree,
        session: i64,
        relative_zxid: i64,
        lists: [&[String]; 3],
        out: &mut Vec<Notification>,
    ) {
        let [data, exist, child] = lists;
        let mut notify = |event, path: &String| {
            out.push(Notification {
                session,
                event,
                path: path.clone(),
            });
        };
        for path in data {
            match tree.get(path) {
                None => notify(EventType::NodeDeleted, path),
                Some(n) if n.persisted.mzxid > relative_zxid => {
                    notify(EventType::NodeDataChanged, path)
                }
                Some(_) => self.add(WatchKind::Data, path, session),
            }
        }
        for path in exist {
            match tree.get(path) {
                Some(_) => notify(EventType::NodeCreated, path),
                None => self.add(WatchKind::Data, path, session),
            }
        }
        for path in child {
            match tree.get(path) {
                None => notify(EventType::NodeDeleted, path),
                Some(n) if n.persisted.pzxid > relative_zxid => {
                    notify(EventType::NodeChildrenChanged, path);
                }
                Some(_) => self.add(WatchKind::Child, path, session),
            }
        }
    }

    /// The number of watches set (for inspection).
    pub fn len(&self) -> usize {
        self.tables.values().map(BTreeSet::len).sum()
    }

    /// Whether no watch is set.
    pub fn is_empty(&self) -> bool {
        self.tables.is_empty()
    }
}
