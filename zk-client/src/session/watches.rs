//! [`WatchTable`]: which watchers wait on which path, and which of them an event fires.
//!
//! The rules are the Java client's (`ZKWatchManager.materialize`):
//! - `NodeCreated`/`NodeDataChanged` fire the path's data and exists watches;
//! - `NodeDeleted` fires its data, exists and child watches;
//! - `NodeChildrenChanged` fires its child watches;
//! - one-shot watches are removed as they fire; persistent watches on the path fire for every
//!   event, and persistent-recursive watches on the path or any ancestor fire for every event
//!   but `NodeChildrenChanged`.

use std::collections::HashMap;

use zk_proto::{EventType, WatcherType};

/// Identifies one watcher: one registration by one caller. Several watchers on the same path
/// each get the event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WatcherId(pub u64);

/// The kinds of watch a request can leave.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WatchKind {
    /// Left by `getData`, or by `exists` on an existing node: fires once on data change or
    /// delete.
    Data,
    /// Left by `exists` on a missing node: fires once on create.
    Exists,
    /// Left by `getChildren`: fires once on a child change or delete.
    Child,
    /// Left by `addWatch(Persistent)`: fires on every change of the node, until removed.
    Persistent,
    /// Left by `addWatch(PersistentRecursive)`: fires on every change of the node or a
    /// descendant (not child-list changes), until removed.
    PersistentRecursive,
}

impl WatchKind {
    /// Whether the watch stays after firing.
    pub fn is_persistent(self) -> bool {
        matches!(self, WatchKind::Persistent | WatchKind::PersistentRecursive)
    }
}

/// One path's watchers with their kinds, in registration order. Most watched paths have one
/// watcher (a lock's own node, a predecessor), so one is kept inline: a table of 100,000
/// such paths costs a key and a small entry each, no list.
#[derive(Debug)]
enum PathWatches {
    One((WatchKind, WatcherId)),
    Many(Vec<(WatchKind, WatcherId)>),
}

impl PathWatches {
    fn push(&mut self, kind: WatchKind, id: WatcherId) {
        match self {
            PathWatches::One(first) => *self = PathWatches::Many(vec![*first, (kind, id)]),
            PathWatches::Many(list) => list.push((kind, id)),
        }
    }

    fn as_slice(&self) -> &[(WatchKind, WatcherId)] {
        match self {
            PathWatches::One(only) => std::slice::from_ref(only),
            PathWatches::Many(list) => list,
        }
    }

    /// The watchers of `kind`, in order.
    fn of(&self, kind: WatchKind) -> impl Iterator<Item = WatcherId> + '_ {
        self.as_slice()
            .iter()
            .filter(move |(k, _)| *k == kind)
            .map(|(_, id)| *id)
    }

    /// Removes the watchers for which `remove` holds, returning them in order.
    fn take(
        &mut self,
        mut remove: impl FnMut(WatchKind, WatcherId) -> bool,
    ) -> Vec<(WatchKind, WatcherId)> {
        match self {
            PathWatches::One((k, i)) => {
                if remove(*k, *i) {
                    let taken = vec![(*k, *i)];
                    *self = PathWatches::Many(Vec::new());
                    taken
                } else {
                    Vec::new()
                }
            }
            PathWatches::Many(list) => {
                let mut taken = Vec::new();
                list.retain(|&(k, i)| {
                    let gone = remove(k, i);
                    if gone {
                        taken.push((k, i));
                    }
                    !gone
                });
                if let [only] = list[..] {
                    *self = PathWatches::One(only);
                }
                taken
            }
        }
    }

    fn is_empty(&self) -> bool {
        self.as_slice().is_empty()
    }
}

/// A watcher chosen by an event, and whether this is its last event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fired {
    /// The watcher.
    pub id: WatcherId,
    /// True for one-shot watches (and removed persistent ones): no event will follow.
    pub last: bool,
}

/// The registered watches, by server-side path.
#[derive(Debug, Default)]
pub(crate) struct WatchTable {
    paths: HashMap<String, PathWatches>,
}

/// The paths with each kind of watch, for `SetWatches2` after a reconnect.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct WatchedPaths {
    pub data: Vec<String>,
    pub exists: Vec<String>,
    pub child: Vec<String>,
    pub persistent: Vec<String>,
    pub recursive: Vec<String>,
}

impl WatchTable {
    pub(crate) fn add(&mut self, path: &str, kind: WatchKind, id: WatcherId) {
        match self.paths.get_mut(path) {
            Some(w) => w.push(kind, id),
            None => {
                self.paths
                    .insert(path.to_owned(), PathWatches::One((kind, id)));
            }
        }
    }

    /// The watchers `event` on `path` fires, removing the one-shot ones.
    pub(crate) fn fire(&mut self, event: EventType, path: &str) -> Vec<Fired> {
        let mut fired = Vec::new();
        let take: &[WatchKind] = match event {
            EventType::NodeCreated | EventType::NodeDataChanged => {
                &[WatchKind::Data, WatchKind::Exists]
            }
            EventType::NodeDeleted => &[WatchKind::Data, WatchKind::Exists, WatchKind::Child],
            EventType::NodeChildrenChanged => &[WatchKind::Child],
            _ => return fired,
        };
        if let Some(w) = self.paths.get_mut(path) {
            let taken = w.take(|k, _| take.contains(&k));
            // In the order of `take`'s kinds, each kind's in registration order.
            for kind in take {
                fired.extend(
                    taken
                        .iter()
                        .filter(|(k, _)| k == kind)
                        .map(|&(_, id)| Fired { id, last: true }),
                );
            }
            fired.extend(
                w.of(WatchKind::Persistent)
                    .map(|id| Fired { id, last: false }),
            );
        }
        if event != EventType::NodeChildrenChanged {
            for ancestor in ancestors_and_self(path) {
                if let Some(w) = self.paths.get(ancestor) {
                    fired.extend(
                        w.of(WatchKind::PersistentRecursive)
                            .map(|id| Fired { id, last: false }),
                    );
                }
            }
        }
        self.prune(path);
        fired
    }

    /// Removes the watches of `path` that `removeWatches(path, which)` removed on the server.
    pub(crate) fn remove(&mut self, path: &str, which: WatcherType) -> Vec<(WatcherId, EventType)> {
        let Some(w) = self.paths.get_mut(path) else {
            return Vec::new();
        };
        let kinds: &[(WatchKind, EventType)] = match which {
            WatcherType::Children => &[(WatchKind::Child, EventType::ChildWatchRemoved)],
            WatcherType::Data => &[
                (WatchKind::Data, EventType::DataWatchRemoved),
                (WatchKind::Exists, EventType::DataWatchRemoved),
            ],
            WatcherType::Persistent => {
                &[(WatchKind::Persistent, EventType::PersistentWatchRemoved)]
            }
            WatcherType::PersistentRecursive => &[(
                WatchKind::PersistentRecursive,
                EventType::PersistentWatchRemoved,
            )],
            WatcherType::Any => &[
                (WatchKind::Child, EventType::ChildWatchRemoved),
                (WatchKind::Data, EventType::DataWatchRemoved),
                (WatchKind::Exists, EventType::DataWatchRemoved),
                (WatchKind::Persistent, EventType::PersistentWatchRemoved),
                (
                    WatchKind::PersistentRecursive,
                    EventType::PersistentWatchRemoved,
                ),
            ],
        };
        let taken = w.take(|k, _| kinds.iter().any(|(kind, _)| *kind == k));
        let mut removed = Vec::new();
        for (kind, event) in kinds {
            removed.extend(
                taken
                    .iter()
                    .filter(|(k, _)| k == kind)
                    .map(|&(_, id)| (id, *event)),
            );
        }
        self.prune(path);
        removed
    }

    /// Forgets one watcher wherever it is (its handle was dropped). A one-shot server-side
    /// watch stays until it fires; the event then reaches nobody.
    ///
    /// Returns the persistent kinds whose last watcher at `path` this was: the server still
    /// holds those watches, and only a `removeWatches` ends them there.
    pub(crate) fn forget(&mut self, path: &str, id: WatcherId) -> Vec<WatchKind> {
        let mut emptied = Vec::new();
        if let Some(w) = self.paths.get_mut(path) {
            let taken = w.take(|_, i| i == id);
            for kind in [WatchKind::Persistent, WatchKind::PersistentRecursive] {
                if taken.iter().any(|(k, _)| *k == kind) && w.of(kind).next().is_none() {
                    emptied.push(kind);
                }
            }
        }
        self.prune(path);
        emptied
    }

    /// Whether any watcher is registered on `path`.
    pub(crate) fn has_path(&self, path: &str) -> bool {
        self.paths.contains_key(path)
    }

    /// Removes and returns every watcher (the session ended).
    pub(crate) fn drain(&mut self) -> Vec<WatcherId> {
        let mut all: Vec<WatcherId> = self
            .paths
            .drain()
            .flat_map(|(_, w)| match w {
                PathWatches::One((_, id)) => vec![id],
                PathWatches::Many(list) => list.into_iter().map(|(_, id)| id).collect(),
            })
            .collect();
        all.sort_unstable();
        all.dedup();
        all
    }

    /// The watched paths by kind, sorted.
    pub(crate) fn watched_paths(&self) -> WatchedPaths {
        let mut out = WatchedPaths::default();
        for (path, w) in &self.paths {
            for (kind, dest) in [
                (WatchKind::Data, &mut out.data),
                (WatchKind::Exists, &mut out.exists),
                (WatchKind::Child, &mut out.child),
                (WatchKind::Persistent, &mut out.persistent),
                (WatchKind::PersistentRecursive, &mut out.recursive),
            ] {
                if w.of(kind).next().is_some() {
                    dest.push(path.clone());
                }
            }
        }
        for list in [
            &mut out.data,
            &mut out.exists,
            &mut out.child,
            &mut out.persistent,
            &mut out.recursive,
        ] {
            list.sort_unstable();
        }
        out
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.paths.is_empty()
    }

    fn prune(&mut self, path: &str) {
        if self.paths.get(path).is_some_and(PathWatches::is_empty) {
            self.paths.remove(path);
        }
    }
}

/// `/a/b/c`, `/a/b`, `/a`, `/`.
fn ancestors_and_self(path: &str) -> impl Iterator<Item = &str> {
    let mut next = Some(path);
    std::iter::from_fn(move || {
        let current = next?;
        next = match current.rfind('/') {
            Some(0) if current.len() > 1 => Some("/"),
            Some(0) | None => None,
            Some(i) => current.get(..i),
        };
        Some(current)
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    const A: WatcherId = WatcherId(1);
    const B: WatcherId = WatcherId(2);
    const C: WatcherId = WatcherId(3);

    fn ids(fired: &[Fired]) -> Vec<(u64, bool)> {
        fired.iter().map(|f| (f.id.0, f.last)).collect()
    }

    /// A path with one watcher (most of them: a held lock's own node) costs its key and an
    /// entry the size of an empty list, nothing on the heap beside the key.
    #[test]
    fn one_watcher_is_kept_inline() {
        assert!(std::mem::size_of::<PathWatches>() <= 24);
        let mut t = WatchTable::default();
        t.add("/a", WatchKind::Data, A);
        assert!(matches!(t.paths.get("/a"), Some(PathWatches::One(_))));
        t.add("/a", WatchKind::Child, B);
        t.add("/a", WatchKind::Data, C);
        assert_eq!(
            ids(&t.fire(EventType::NodeDataChanged, "/a")),
            [(1, true), (3, true)]
        );
        assert!(matches!(t.paths.get("/a"), Some(PathWatches::One(_))));
        assert_eq!(t.forget("/a", B), []);
        assert!(t.is_empty());
    }

    #[test]
    fn ancestors() {
        assert_eq!(
            ancestors_and_self("/a/b/c").collect::<Vec<_>>(),
            ["/a/b/c", "/a/b", "/a", "/"]
        );
        assert_eq!(ancestors_and_self("/").collect::<Vec<_>>(), ["/"]);
    }

    #[test]
    fn one_shot_watches_fire_once_and_every_registration_gets_it() {
        let mut t = WatchTable::default();
        t.add("/a", WatchKind::Data, A);
        t.add("/a", WatchKind::Data, B);
        t.add("/a", WatchKind::Child, C);
        assert_eq!(
            ids(&t.fire(EventType::NodeDataChanged, "/a")),
            [(1, true), (2, true)]
        );
        assert_eq!(t.fire(EventType::NodeDataChanged, "/a"), []);
        assert_eq!(ids(&t.fire(EventType::NodeDeleted, "/a")), [(3, true)]);
        assert!(t.is_empty());
    }

    #[test]
    fn exists_watches_fire_on_create_child_watches_not_on_data() {
        let mut t = WatchTable::default();
        t.add("/a", WatchKind::Exists, A);
        t.add("/a", WatchKind::Child, B);
        assert_eq!(ids(&t.fire(EventType::NodeCreated, "/a")), [(1, true)]);
        assert_eq!(
            ids(&t.fire(EventType::NodeChildrenChanged, "/a")),
            [(2, true)]
        );
    }

    #[test]
    fn persistent_and_recursive_watches_stay() {
        let mut t = WatchTable::default();
        t.add("/a", WatchKind::Persistent, A);
        t.add("/", WatchKind::PersistentRecursive, B);
        assert_eq!(
            ids(&t.fire(EventType::NodeDataChanged, "/a")),
            [(1, false), (2, false)]
        );
        assert_eq!(
            ids(&t.fire(EventType::NodeChildrenChanged, "/a")),
            [(1, false)]
        );
        assert_eq!(ids(&t.fire(EventType::NodeCreated, "/a/b/c")), [(2, false)]);
        assert_eq!(
            t.remove("/a", WatcherType::Persistent),
            [(A, EventType::PersistentWatchRemoved)]
        );
        assert_eq!(ids(&t.fire(EventType::NodeDeleted, "/a")), [(2, false)]);
        assert_eq!(t.drain(), [B]);
    }

    #[test]
    fn watched_paths_for_set_watches() {
        let mut t = WatchTable::default();
        t.add("/b", WatchKind::Data, A);
        t.add("/a", WatchKind::Data, B);
        t.add("/a", WatchKind::Exists, C);
        let p = t.watched_paths();
        assert_eq!(p.data, ["/a", "/b"]);
        assert_eq!(p.exists, ["/a"]);
        t.forget("/a", B);
        t.forget("/a", C);
        assert_eq!(t.watched_paths().data, ["/b"]);
    }
}
