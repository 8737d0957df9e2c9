//! [`WatchTable`]: the server's watches, as ZooKeeper's `WatchManager`s keep them: one-shot
//! data watches (`getData`, and `exists` whether or not the node exists) and child watches
//! (`getChildren`), and the persistent ones `addWatch` sets (on the node itself, or on the node
//! and every descendant), each path to the sessions watching it. A one-shot watch fires once
//! and is gone; a persistent one fires until removed. A session's watches go with its
//! connection (the client sets them again with `SetWatches`/`SetWatches2`).

use std::collections::{BTreeMap, BTreeSet};

use zk_proto::{ErrorCode, EventType, WatcherType};

use super::data_tree::{Change, DataTree};

/// Which table a watch is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum WatchKind {
    /// `getData` or `exists`: fires on create, data change and delete.
    Data,
    /// `getChildren`: fires on a child's create or delete, and on the node's delete.
    Child,
    /// `addWatch` persistent: what a data and a child watch would see, every time.
    Persistent,
    /// `addWatch` persistent-recursive: creates, data changes and deletes of the node and
    /// every descendant (never `NodeChildrenChanged`), every time.
    PersistentRecursive,
}

impl WatchKind {
    /// Every kind, in the order the four-letter words list them.
    pub const ALL: [WatchKind; 4] = [
        WatchKind::Data,
        WatchKind::Child,
        WatchKind::Persistent,
        WatchKind::PersistentRecursive,
    ];

    /// The kinds `checkWatches`/`removeWatches` with `watcher_type` name (ZooKeeper 3.8's
    /// `DataTree.removeWatch`): `Any` every kind; `Data` and `Children` the one-shot ones
    /// only (3.8 keeps a persistent watch in both its data and child tables and would take
    /// that table's half; this table does not split one); 3.9's `Persistent` and
    /// `PersistentRecursive` are `MarshallingError`, as 3.8, which cannot read them, answers.
    pub fn named_by(watcher_type: WatcherType) -> Result<&'static [WatchKind], ErrorCode> {
        match watcher_type {
            WatcherType::Children => Ok(&[WatchKind::Child]),
            WatcherType::Data => Ok(&[WatchKind::Data]),
            WatcherType::Any => Ok(&Self::ALL),
            // ZooKeeper 3.8 cannot read the Persistent and PersistentRecursive types (3.9's):
            // its request fails to deserialize.
            _ => Err(ErrorCode::MarshallingError),
        }
    }
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

    /// Whether `session` has a watch of one of `kinds` on `path` (`checkWatches`).
    pub fn contains(&self, kinds: &[WatchKind], path: &str, session: i64) -> bool {
        kinds.iter().any(|&kind| {
            self.tables
                .get(&(kind, path.to_owned()))
                .is_some_and(|sessions| sessions.contains(&session))
        })
    }

    /// Removes `session`'s watches of `kinds` on `path` (`removeWatches`); whether there was
    /// one.
    pub fn remove(&mut self, kinds: &[WatchKind], path: &str, session: i64) -> bool {
        let mut removed = false;
        for &kind in kinds {
            let key = (kind, path.to_owned());
            if let Some(sessions) = self.tables.get_mut(&key) {
                removed |= sessions.remove(&session);
                if sessions.is_empty() {
                    self.tables.remove(&key);
                }
            }
        }
        removed
    }

    /// The one-shot watches of `kind` on `path`, gone once taken.
    fn take(&mut self, kind: WatchKind, path: &str) -> BTreeSet<i64> {
        self.tables
            .remove(&(kind, path.to_owned()))
            .unwrap_or_default()
    }

    /// Adds the sessions with a persistent watch of `kind` on `path`.
    fn persistent(&self, kind: WatchKind, path: &str, into: &mut BTreeSet<i64>) {
        if let Some(sessions) = self.tables.get(&(kind, path.to_owned())) {
            into.extend(sessions.iter().copied());
        }
    }

    /// Adds the sessions with a persistent-recursive watch on `path` or one of its ancestors.
    fn recursive(&self, path: &str, into: &mut BTreeSet<i64>) {
        // The table is ordered by kind, this one last: whether any is set, in O(log n).
        let first = (WatchKind::PersistentRecursive, String::new());
        if self.tables.range(first..).next().is_none() {
            return;
        }
        let mut at = path;
        loop {
            self.persistent(WatchKind::PersistentRecursive, at, into);
            match at.rfind('/') {
                Some(0) if at.len() > 1 => at = "/",
                Some(i) if i > 0 => at = at.get(..i).unwrap_or("/"),
                _ => return,
            }
        }
    }

    /// Fires the watches `changes` trigger, in order, appending one notification per
    /// session and event (ZooKeeper's `WatchManager.triggerWatch`): a one-shot watch on the
    /// node fires and goes, a persistent one on the node fires and stays, a
    /// persistent-recursive one on the node or an ancestor fires for all but
    /// `NodeChildrenChanged`. As in ZooKeeper, a session watching a node several ways is told
    /// once per event (a deleted node's data and child watchers once, `NodeDeleted`).
    pub fn fire(&mut self, changes: &[Change], out: &mut Vec<Notification>) {
        use WatchKind::{Child, Data, Persistent};
        for change in changes {
            let (path, event, mut sessions) = match change {
                Change::Created(p) => (p, EventType::NodeCreated, self.take(Data, p)),
                Change::DataChanged(p) => (p, EventType::NodeDataChanged, self.take(Data, p)),
                Change::ChildrenChanged(p) => {
                    (p, EventType::NodeChildrenChanged, self.take(Child, p))
                }
                Change::Deleted(p) => {
                    let mut sessions = self.take(Data, p);
                    sessions.extend(self.take(Child, p));
                    (p, EventType::NodeDeleted, sessions)
                }
            };
            self.persistent(Persistent, path, &mut sessions);
            if event != EventType::NodeChildrenChanged {
                self.recursive(path, &mut sessions);
            }
            out.extend(sessions.into_iter().map(|session| Notification {
                session,
                event,
                path: path.clone(),
            }));
        }
    }

    /// Re-registers a reconnected session's watches (`SetWatches`), as ZooKeeper's
    /// `DataTree.setWatches` does: a one-shot watch whose node changed after `relative_zxid`
    /// fires at once (data: deleted or `mzxid` newer; exists: the node is there; child:
    /// deleted or `pzxid` newer), the others are set; persistent ones are set again, with no
    /// catching up (`SetWatches2`'s last two lists).
    pub fn set_watches(
        &mut self,
        tree: &DataTree,
        session: i64,
        relative_zxid: i64,
        lists: [&[String]; 5],
        out: &mut Vec<Notification>,
    ) {
        let [data, exist, child, persistent, recursive] = lists;
        for path in persistent {
            self.add(WatchKind::Persistent, path, session);
        }
        for path in recursive {
            self.add(WatchKind::PersistentRecursive, path, session);
        }
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

    /// Each watched path (in `kind`'s table) with the sessions watching it, by path.
    pub fn watched(&self, kind: WatchKind) -> impl Iterator<Item = (&str, &BTreeSet<i64>)> {
        self.tables
            .iter()
            .filter(move |((k, _), _)| *k == kind)
            .map(|((_, path), sessions)| (path.as_str(), sessions))
    }

    /// Whether no watch is set.
    pub fn is_empty(&self) -> bool {
        self.tables.is_empty()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn fired(table: &mut WatchTable, changes: &[Change]) -> Vec<(i64, EventType, String)> {
        let mut out = Vec::new();
        table.fire(changes, &mut out);
        out.into_iter()
            .map(|n| (n.session, n.event, n.path))
            .collect()
    }

    fn created(path: &str) -> [Change; 2] {
        let parent = match path.rfind('/') {
            Some(0) | None => "/".to_owned(),
            Some(i) => path[..i].to_owned(),
        };
        [
            Change::Created(path.to_owned()),
            Change::ChildrenChanged(parent),
        ]
    }

    #[test]
    fn persistent_watches_fire_until_removed_and_recursive_ones_skip_children_events() {
        use EventType::{NodeChildrenChanged, NodeCreated, NodeDataChanged, NodeDeleted};
        let mut t = WatchTable::default();
        t.add(WatchKind::Persistent, "/a", 1);
        t.add(WatchKind::PersistentRecursive, "/a", 2);
        t.add(WatchKind::PersistentRecursive, "/", 3);
        t.add(WatchKind::Data, "/a/b", 1);

        // A child of /a: the persistent watch on /a sees its children change, the recursive
        // ones see the create (once each, whatever else they watch), the one-shot fires.
        assert_eq!(
            fired(&mut t, &created("/a/b")),
            [
                (1, NodeCreated, "/a/b".to_owned()),
                (2, NodeCreated, "/a/b".to_owned()),
                (3, NodeCreated, "/a/b".to_owned()),
                (1, NodeChildrenChanged, "/a".to_owned()),
            ]
        );
        // Again: the one-shot is gone, the persistent ones stay.
        assert_eq!(
            fired(&mut t, &[Change::DataChanged("/a/b".to_owned())]),
            [
                (2, NodeDataChanged, "/a/b".to_owned()),
                (3, NodeDataChanged, "/a/b".to_owned()),
            ]
        );
        // The watched node itself, deleted: one NodeDeleted per session.
        assert_eq!(
            fired(&mut t, &[Change::Deleted("/a".to_owned())]),
            [
                (1, NodeDeleted, "/a".to_owned()),
                (2, NodeDeleted, "/a".to_owned()),
                (3, NodeDeleted, "/a".to_owned()),
            ]
        );
        // Elsewhere: only the recursive watch on the root.
        assert_eq!(
            fired(&mut t, &created("/x")),
            [(3, NodeCreated, "/x".to_owned())]
        );

        // checkWatches/removeWatches name kinds; Data and Children only the one-shot ones;
        // 3.9's Persistent and PersistentRecursive types are not 3.8's.
        let data = WatchKind::named_by(WatcherType::Data).unwrap();
        let any = WatchKind::named_by(WatcherType::Any).unwrap();
        for newer in [WatcherType::Persistent, WatcherType::PersistentRecursive] {
            assert_eq!(WatchKind::named_by(newer), Err(ErrorCode::MarshallingError));
        }
        assert!(!t.contains(data, "/a", 1));
        assert!(t.contains(any, "/a", 1));
        assert!(!t.remove(data, "/a", 1));
        assert!(t.remove(any, "/a", 1));
        assert!(!t.contains(any, "/a", 1));
        assert!(t.remove(any, "/", 3));
        assert!(t.remove(any, "/a", 2));
        assert!(t.is_empty());
        assert_eq!(fired(&mut t, &created("/a/c")), []);
    }
}
