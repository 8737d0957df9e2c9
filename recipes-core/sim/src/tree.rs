//! [`Tree`]: the simulated server's data — nodes, ephemeral owners, per-parent sequence
//! counters (ZooKeeper's `cversion`, a wrapping 32-bit counter), containers, one-shot watches
//! with ZooKeeper's firing rules, zxids.

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;
use recipes_core::{NodeMode, Op, Reply, WatchEvent, ZkError};

/// A session of the simulated server.
pub type SessionId = u32;

/// Which server-side watch set a registration is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ServerWatch {
    /// `getData`, or `exists` on a node that exists: fires on data change and deletion.
    Data,
    /// `exists` on a missing node: fires on creation.
    Exist,
    /// `getChildren`: fires on a child's creation or deletion, and on the node's deletion.
    Child,
}

/// A watch that fired: which session, which set, which path, what happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fired {
    /// The zxid at which it fired.
    pub zxid: i64,
    /// The session that set it.
    pub session: SessionId,
    /// The set it was in.
    pub set: ServerWatch,
    /// The watched path.
    pub path: String,
    /// What happened.
    pub event: WatchEvent,
}

#[derive(Debug, Clone)]
struct Node {
    data: Bytes,
    czxid: i64,
    owner: Option<SessionId>,
    container: bool,
    had_child: bool,
    /// The next sequence number for a child (ZooKeeper's `cversion`, bumped by every child
    /// create and delete).
    cversion: i32,
    children: BTreeSet<String>,
}

impl Node {
    fn new(data: Bytes, czxid: i64, owner: Option<SessionId>, container: bool) -> Self {
        Self {
            data,
            czxid,
            owner,
            container,
            had_child: false,
            cversion: 0,
            children: BTreeSet::new(),
        }
    }
}

/// The simulated server's tree.
#[derive(Debug, Clone)]
pub struct Tree {
    nodes: BTreeMap<String, Node>,
    zxid: i64,
    watches: BTreeMap<(ServerWatch, String), BTreeSet<SessionId>>,
    /// The sequence counter new parents start at (near `i32::MAX` to make it wrap).
    first_cversion: i32,
    /// When each deleted node went (the zxid of its delete).
    deleted_at: BTreeMap<String, i64>,
}

fn parent_of(path: &str) -> Option<(&str, &str)> {
    let (parent, name) = path.rsplit_once('/')?;
    Some((if parent.is_empty() { "/" } else { parent }, name))
}

fn join(parent: &str, name: &str) -> String {
    recipes_core::child_path(parent, name)
}

impl Tree {
    /// An empty tree (just `/`); new parents' sequence counters start at `first_cversion`.
    pub fn new(first_cversion: i32) -> Self {
        let mut nodes = BTreeMap::new();
        nodes.insert("/".to_owned(), Node::new(Bytes::new(), 0, None, false));
        Self {
            nodes,
            zxid: 0,
            watches: BTreeMap::new(),
            first_cversion,
            deleted_at: BTreeMap::new(),
        }
    }

    /// The last zxid.
    pub fn zxid(&self) -> i64 {
        self.zxid
    }

    /// The zxid at which `path` was deleted, if it was.
    pub fn deleted_at(&self, path: &str) -> Option<i64> {
        self.deleted_at.get(path).copied()
    }

    /// Whether `path` exists.
    pub fn exists(&self, path: &str) -> bool {
        self.nodes.contains_key(path)
    }

    /// The creation zxid of `path`.
    pub fn czxid(&self, path: &str) -> Option<i64> {
        self.nodes.get(path).map(|n| n.czxid)
    }

    /// The children of `path` (names).
    pub fn children(&self, path: &str) -> Vec<String> {
        self.nodes
            .get(path)
            .map(|n| n.children.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Every ephemeral node's path with its owner.
    pub fn ephemerals(&self) -> Vec<(String, SessionId)> {
        self.nodes
            .iter()
            .filter_map(|(p, n)| n.owner.map(|o| (p.clone(), o)))
            .collect()
    }

    fn watch(&mut self, set: ServerWatch, path: &str, session: SessionId) {
        self.watches
            .entry((set, path.to_owned()))
            .or_default()
            .insert(session);
    }

    fn fire(&mut self, set: ServerWatch, path: &str, event: WatchEvent, out: &mut Vec<Fired>) {
        if let Some(sessions) = self.watches.remove(&(set, path.to_owned())) {
            for session in sessions {
                out.push(Fired {
                    zxid: self.zxid,
                    session,
                    set,
                    path: path.to_owned(),
                    event,
                });
            }
        }
    }

    fn create_node(
        &mut self,
        path: String,
        data: Bytes,
        owner: Option<SessionId>,
        container: bool,
        out: &mut Vec<Fired>,
    ) -> i64 {
        self.zxid += 1;
        let czxid = self.zxid;
        let mut node = Node::new(data, czxid, owner, container);
        node.cversion = self.first_cversion;
        if let Some((parent, name)) = parent_of(&path) {
            let parent = parent.to_owned();
            if let Some(p) = self.nodes.get_mut(&parent) {
                p.children.insert(name.to_owned());
                p.had_child = true;
                p.cversion = p.cversion.wrapping_add(1);
            }
            self.fire(
                ServerWatch::Child,
                &parent,
                WatchEvent::ChildrenChanged,
                out,
            );
        }
        self.deleted_at.remove(&path);
        self.nodes.insert(path.clone(), node);
        self.fire(ServerWatch::Exist, &path, WatchEvent::Created, out);
        czxid
    }

    /// Deletes `path` (which must exist and have no children), firing its watches.
    fn delete_node(&mut self, path: &str, out: &mut Vec<Fired>) {
        if self.nodes.remove(path).is_none() {
            return;
        }
        self.zxid += 1;
        self.deleted_at.insert(path.to_owned(), self.zxid);
        self.fire(ServerWatch::Data, path, WatchEvent::Deleted, out);
        self.fire(ServerWatch::Child, path, WatchEvent::Deleted, out);
        if let Some((parent, name)) = parent_of(path) {
            let parent = parent.to_owned();
            if let Some(p) = self.nodes.get_mut(&parent) {
                p.children.remove(name);
                p.cversion = p.cversion.wrapping_add(1);
            }
            self.fire(
                ServerWatch::Child,
                &parent,
                WatchEvent::ChildrenChanged,
                out,
            );
        }
    }

    /// Applies `op` for `session`; the reply, and the watches it fired (for any session).
    pub fn apply(&mut self, session: SessionId, op: &Op, out: &mut Vec<Fired>) -> Reply {
        match op {
            Op::Create { path, mode, data } => {
                let Some((parent, name)) = parent_of(path) else {
                    return Reply::Failed(ZkError::Other);
                };
                let Some(p) = self.nodes.get(parent) else {
                    return Reply::Failed(ZkError::NoNode);
                };
                if p.owner.is_some() {
                    return Reply::Failed(ZkError::Other); // no children for ephemerals
                }
                let full = match mode {
                    NodeMode::EphemeralSequential => {
                        join(parent, &format!("{name}{:010}", p.cversion))
                    }
                    NodeMode::Ephemeral => path.clone(),
                };
                if self.nodes.contains_key(&full) {
                    return Reply::Failed(ZkError::NodeExists);
                }
                let czxid = self.create_node(full.clone(), data.clone(), Some(session), false, out);
                Reply::Created { path: full, czxid }
            }
            Op::Children { path, watch } => match self.nodes.get(path) {
                None => Reply::Failed(ZkError::NoNode),
                Some(n) => {
                    let children = n.children.iter().cloned().collect();
                    if *watch {
                        self.watch(ServerWatch::Child, path, session);
                    }
                    Reply::Children(children)
                }
            },
            Op::GetData { path, watch } => match self.nodes.get(path) {
                None => Reply::Failed(ZkError::NoNode),
                Some(n) => {
                    let reply = Reply::Data {
                        data: n.data.clone(),
                        czxid: n.czxid,
                    };
                    if *watch {
                        self.watch(ServerWatch::Data, path, session);
                    }
                    reply
                }
            },
            Op::Exists { path, watch } => {
                let czxid = self.czxid(path);
                if *watch {
                    let set = match czxid {
                        Some(_) => ServerWatch::Data,
                        None => ServerWatch::Exist,
                    };
                    self.watch(set, path, session);
                }
                Reply::Exists(czxid)
            }
            Op::Sync { .. } => Reply::Done,
            Op::Delete { path } => match self.nodes.get(path) {
                None => Reply::Failed(ZkError::NoNode),
                Some(n) if !n.children.is_empty() => Reply::Failed(ZkError::Other),
                Some(_) => {
                    self.delete_node(path, out);
                    Reply::Done
                }
            },
            Op::CreateParents { path } => {
                let mut prefix = String::new();
                for segment in path.split('/').filter(|s| !s.is_empty()) {
                    prefix.push('/');
                    prefix.push_str(segment);
                    if !self.nodes.contains_key(&prefix) {
                        self.create_node(prefix.clone(), Bytes::new(), None, true, out);
                    }
                }
                Reply::Done
            }
        }
    }

    /// Creates a persistent node (another client's, or a foreign child) if its parent exists.
    pub fn create_persistent(&mut self, path: &str, out: &mut Vec<Fired>) -> bool {
        let parent_ok = parent_of(path).is_some_and(|(p, _)| self.nodes.contains_key(p));
        if !parent_ok || self.nodes.contains_key(path) {
            return false;
        }
        self.create_node(path.to_owned(), Bytes::new(), None, false, out);
        true
    }

    /// Deletes `path` if it exists and has no children (another client meddling).
    pub fn delete_by_hand(&mut self, path: &str, out: &mut Vec<Fired>) -> bool {
        match self.nodes.get(path) {
            Some(n) if n.children.is_empty() && path != "/" => {
                self.delete_node(path, out);
                true
            }
            _ => false,
        }
    }

    /// The server's container sweep: removes containers that had a child and are empty now.
    pub fn sweep_containers(&mut self, out: &mut Vec<Fired>) {
        let empty: Vec<String> = self
            .nodes
            .iter()
            .filter(|(_, n)| n.container && n.had_child && n.children.is_empty())
            .map(|(p, _)| p.clone())
            .collect();
        for path in empty {
            self.delete_node(&path, out);
        }
    }

    /// A session ended: its ephemeral nodes go and its watches are dropped.
    pub fn end_session(&mut self, session: SessionId, out: &mut Vec<Fired>) {
        for set in self.watches.values_mut() {
            set.remove(&session);
        }
        let mine: Vec<String> = self
            .nodes
            .iter()
            .filter(|(_, n)| n.owner == Some(session))
            .map(|(p, _)| p.clone())
            .collect();
        for path in mine {
            self.delete_node(&path, out);
        }
        out.retain(|f| f.session != session);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn sequences_come_from_the_parent_and_wrap_as_zookeeper_prints_them() {
        let mut t = Tree::new(i32::MAX - 1);
        let mut out = Vec::new();
        t.apply(1, &Op::CreateParents { path: "/l".into() }, &mut out);
        let create = Op::Create {
            path: "/l/x-".into(),
            mode: NodeMode::EphemeralSequential,
            data: Bytes::new(),
        };
        let names: Vec<String> = (0..3)
            .map(|_| match t.apply(1, &create, &mut out) {
                Reply::Created { path, .. } => path,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            names,
            ["/l/x-2147483646", "/l/x-2147483647", "/l/x--2147483648"]
        );
    }

    #[test]
    fn watches_fire_once_by_zookeepers_rules() {
        let mut t = Tree::new(0);
        let mut out = Vec::new();
        t.apply(1, &Op::CreateParents { path: "/l".into() }, &mut out);
        t.apply(
            1,
            &Op::Children {
                path: "/l".into(),
                watch: true,
            },
            &mut out,
        );
        t.apply(
            2,
            &Op::Exists {
                path: "/l/a".into(),
                watch: true,
            },
            &mut out,
        );
        out.clear();
        t.create_persistent("/l/a", &mut out);
        assert_eq!(out.len(), 2, "{out:?}");
        out.clear();
        t.create_persistent("/l/b", &mut out);
        assert!(out.is_empty(), "one-shot");
        t.apply(
            2,
            &Op::GetData {
                path: "/l/a".into(),
                watch: true,
            },
            &mut out,
        );
        t.delete_by_hand("/l/a", &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].event, WatchEvent::Deleted);
        t.delete_by_hand("/l/b", &mut out);
        out.clear();
        t.sweep_containers(&mut out);
        assert!(!t.exists("/l"));
    }
}
