//! [`DataTree`]: the wire server's nodes with their full `Stat`, and the write rules of
//! ZooKeeper's `PrepRequestProcessor` and `DataTree`: which error a create, delete, setData or
//! check gives and in which order the checks run, `%010d` sequence names from the parent's
//! `cversion`, ephemeral owners, containers and TTL nodes (with the `ephemeralOwner` values
//! ZooKeeper's `EphemeralType` gives them). Pure data: zxids and times are given.

use std::collections::{BTreeMap, BTreeSet};

use zk_proto::records::{Acl, Buffer, Stat};
use zk_proto::{CreateMode, ErrorCode};

/// A change a write made, for the watch table to fire on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// The node was created (fires data and exists watches on it).
    Created(String),
    /// The node was deleted (fires its data and child watches).
    Deleted(String),
    /// The node's data was set.
    DataChanged(String),
    /// A child of the node was created or deleted.
    ChildrenChanged(String),
}

/// One node.
#[derive(Debug, Clone)]
pub struct Node {
    /// Its data (`None`: created with null data).
    pub data: Buffer,
    /// Its ACL, as created or last set (not enforced).
    pub acl: Vec<Acl>,
    /// Its metadata as the server keeps it (ZooKeeper's `StatPersisted`): `cversion` counts
    /// the children ever created (the next sequence number), `ephemeralOwner` is encoded for
    /// containers and TTL nodes. [`Node::stat`] is what a client is shown.
    pub persisted: Stat,
    /// A container: removed once it had a child and has none.
    pub container: bool,
    /// A TTL node's time to live in ms: removed once it has no children and has not been
    /// modified for longer.
    pub ttl: Option<i64>,
    /// Whether a child was ever created under it (for the container sweep).
    pub had_child: bool,
    /// Its children's names.
    pub children: BTreeSet<String>,
}

impl Node {
    /// The stat a client is shown (ZooKeeper's `DataNode.copyStat`): `cversion` counts the
    /// changes to the children, creates and deletes (`2 × created − present`, wrapping as
    /// Java's `int` does), and `ephemeralOwner` is 0 unless a session owns the node.
    pub fn stat(&self) -> Stat {
        let mut stat = self.persisted.clone();
        stat.cversion = stat
            .cversion
            .wrapping_mul(2)
            .wrapping_sub(stat.num_children);
        if !owned_by_session(stat.ephemeral_owner) {
            stat.ephemeral_owner = 0;
        }
        stat
    }
}

/// A create's first checks, ZooKeeper's `validateCreateRequest` and path validation: a TTL
/// in `1..=MAX_TTL_MS` for a TTL mode and none for the others, a valid path (`BadArguments`).
pub fn validate_create(path: &str, mode: CreateMode, ttl: i64) -> Result<(), ErrorCode> {
    let ttl_ok = if mode.is_ttl() {
        (1..=MAX_TTL_MS).contains(&ttl)
    } else {
        ttl < 0
    };
    if !ttl_ok {
        return Err(ErrorCode::BadArguments);
    }
    zk_proto::validate_path(path, mode.is_sequential()).map_err(|_| ErrorCode::BadArguments)
}

/// The parent path and the last segment; `None` for `/`.
pub fn split_path(path: &str) -> Option<(&str, &str)> {
    let (parent, name) = path.rsplit_once('/')?;
    if name.is_empty() && parent.is_empty() {
        return None;
    }
    Some((if parent.is_empty() { "/" } else { parent }, name))
}

/// The `ephemeralOwner` of a container (ZooKeeper's `EphemeralType.CONTAINER_EPHEMERAL_OWNER`).
pub const CONTAINER_OWNER: i64 = i64::MIN;

/// The high byte of an `ephemeralOwner` that marks an extended type (a TTL node).
const EXTENDED_MASK: u64 = 0xff00_0000_0000_0000;

/// The longest TTL, in ms (`EphemeralType.TTL.maxValue()`: 40 bits, about 34 years).
pub const MAX_TTL_MS: i64 = 0x0000_00ff_ffff_ffff;

/// The `ephemeralOwner` of a TTL node (`EphemeralType.TTL.toEphemeralOwner`).
pub fn ttl_owner(ttl_ms: i64) -> i64 {
    (EXTENDED_MASK | (ttl_ms as u64 & MAX_TTL_MS as u64)) as i64
}

/// Whether an `ephemeralOwner` names a session (an ephemeral node), not a container, a TTL
/// node, or nobody (`EphemeralType.NORMAL`).
pub fn owned_by_session(owner: i64) -> bool {
    owner != 0 && owner != CONTAINER_OWNER && (owner as u64 & EXTENDED_MASK) != EXTENDED_MASK
}

fn join(parent: &str, name: &str) -> String {
    if parent == "/" {
        format!("/{name}")
    } else {
        format!("{parent}/{name}")
    }
}

fn data_len(data: &Buffer) -> i32 {
    data.as_ref()
        .map_or(0, |d| i32::try_from(d.len()).unwrap_or(i32::MAX))
}

/// Whether `expected` (-1: any) matches `actual`.
fn version_ok(expected: i32, actual: i32) -> bool {
    expected == -1 || expected == actual
}

/// The server's nodes. Every write takes the transaction's zxid and wall time (ms) and
/// appends the [`Change`]s it made; a failed write changes nothing.
#[derive(Debug, Clone)]
pub struct DataTree {
    nodes: BTreeMap<String, Node>,
    /// The containers and TTL nodes: what the container sweep looks at.
    managed: BTreeSet<String>,
    /// The `cversion` new nodes start with (near `i32::MAX` to make sequences wrap).
    first_cversion: i32,
}

impl DataTree {
    /// A tree holding `/`, `/zookeeper`, `/zookeeper/quota` and `/zookeeper/config`, as a
    /// fresh 3.8 server has. New nodes' sequence counters start at `first_cversion`.
    pub fn new(first_cversion: i32) -> Self {
        let mut tree = Self {
            nodes: BTreeMap::new(),
            managed: BTreeSet::new(),
            first_cversion,
        };
        tree.nodes
            .insert("/".to_owned(), tree.fresh(None, 0, 0, 0, false));
        for path in ["/zookeeper", "/zookeeper/quota", "/zookeeper/config"] {
            tree.insert(path, tree.fresh(None, 0, 0, 0, false));
        }
        tree
    }

    fn fresh(&self, data: Buffer, zxid: i64, time: i64, owner: i64, container: bool) -> Node {
        Node {
            persisted: Stat {
                czxid: zxid,
                mzxid: zxid,
                ctime: time,
                mtime: time,
                version: 0,
                cversion: self.first_cversion,
                aversion: 0,
                ephemeral_owner: owner,
                data_length: data_len(&data),
                num_children: 0,
                pzxid: zxid,
            },
            data,
            acl: Acl::open_unsafe(),
            container,
            ttl: None,
            had_child: false,
            children: BTreeSet::new(),
        }
    }

    /// Inserts `node` at `path` under its (existing) parent, updating the parent's stat.
    fn insert(&mut self, path: &str, node: Node) {
        let zxid = node.persisted.czxid;
        let parent = split_path(path)
            .and_then(|(parent, name)| self.nodes.get_mut(parent).map(|p| (p, name)));
        if let Some((p, name)) = parent {
            p.children.insert(name.to_owned());
            p.had_child = true;
            p.persisted.cversion = p.persisted.cversion.wrapping_add(1);
            p.persisted.pzxid = zxid;
            p.persisted.num_children = i32::try_from(p.children.len()).unwrap_or(i32::MAX);
        }
        if node.container || node.ttl.is_some() {
            self.managed.insert(path.to_owned());
        }
        self.nodes.insert(path.to_owned(), node);
    }

    /// Every node with its path, parents before their children: what a snapshot keeps.
    pub fn nodes(&self) -> impl Iterator<Item = (&str, &Node)> {
        self.nodes.iter().map(|(path, node)| (path.as_str(), node))
    }

    /// The tree of `nodes` as [`DataTree::nodes`] gave them (their `children` ignored and
    /// rebuilt from the paths; their stats kept as they are), or why they do not make one: no
    /// `/`, or a node whose parent is missing.
    pub fn from_nodes(
        first_cversion: i32,
        nodes: impl IntoIterator<Item = (String, Node)>,
    ) -> Result<Self, String> {
        let mut tree = Self {
            nodes: BTreeMap::new(),
            managed: BTreeSet::new(),
            first_cversion,
        };
        for (path, mut node) in nodes {
            node.children.clear();
            if path != "/" {
                let (parent, name) =
                    split_path(&path).ok_or_else(|| format!("not a node path: {path:?}"))?;
                let parent = tree
                    .nodes
                    .get_mut(parent)
                    .ok_or_else(|| format!("{path:?} comes before its parent"))?;
                parent.children.insert(name.to_owned());
            }
            if node.container || node.ttl.is_some() {
                tree.managed.insert(path.clone());
            }
            tree.nodes.insert(path, node);
        }
        if tree.nodes.contains_key("/") {
            Ok(tree)
        } else {
            Err("no root node".to_owned())
        }
    }

    /// The number of nodes, `/` and `/zookeeper`'s included.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether the tree is empty (never: `/` is always there).
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The bytes of every node's path and data (`mntr`'s `zk_approximate_data_size`).
    pub fn data_size(&self) -> usize {
        self.nodes
            .iter()
            .map(|(path, n)| path.len() + n.data.as_ref().map_or(0, |d| d.len()))
            .sum()
    }

    /// The node at `path`.
    pub fn get(&self, path: &str) -> Option<&Node> {
        self.nodes.get(path)
    }

    /// Every node's path with its ephemeral owner, for ephemeral nodes.
    pub fn ephemerals(&self) -> impl Iterator<Item = (&str, i64)> {
        self.nodes
            .iter()
            .filter(|(_, n)| owned_by_session(n.persisted.ephemeral_owner))
            .map(|(p, n)| (p.as_str(), n.persisted.ephemeral_owner))
    }

    /// The number of nodes under `path` (not counting it).
    pub fn descendants(&self, path: &str) -> usize {
        let prefix = if path == "/" {
            "/".to_owned()
        } else {
            format!("{path}/")
        };
        self.nodes
            .range(prefix.clone()..)
            .take_while(|(p, _)| p.starts_with(&prefix))
            .filter(|(p, _)| p.as_str() != "/")
            .count()
    }

    /// `create` (and `create2`, `createContainer`, `createTTL`): the created path and stat.
    /// `ttl` is a `createTTL`'s, -1 for the others. The checks run in ZooKeeper's order: the
    /// TTL (`BadArguments` unless a TTL mode has one in `1..=MAX_TTL_MS`, and other modes
    /// none), path, parent (`NoNode`), sequence name, `NodeExists`, a parent owned by a
    /// session (`NoChildrenForEphemerals`; containers and TTL nodes may have children).
    #[allow(clippy::too_many_arguments)]
    pub fn create(
        &mut self,
        path: &str,
        data: Buffer,
        acl: &[Acl],
        mode: CreateMode,
        ttl: i64,
        session: i64,
        zxid: i64,
        time: i64,
        changes: &mut Vec<Change>,
    ) -> Result<(String, Stat), ErrorCode> {
        validate_create(path, mode, ttl)?;
        if acl.is_empty() {
            return Err(ErrorCode::InvalidAcl);
        }
        let (parent, name) = split_path(path).ok_or(ErrorCode::NodeExists)?;
        let p = self.nodes.get(parent).ok_or(ErrorCode::NoNode)?;
        let full = if mode.is_sequential() {
            join(parent, &format!("{name}{:010}", p.persisted.cversion))
        } else {
            path.to_owned()
        };
        if self.nodes.contains_key(&full) {
            return Err(ErrorCode::NodeExists);
        }
        if owned_by_session(p.persisted.ephemeral_owner) {
            return Err(ErrorCode::NoChildrenForEphemerals);
        }
        let container = mode == CreateMode::Container;
        let owner = match mode {
            _ if mode.is_ephemeral() => session,
            _ if container => CONTAINER_OWNER,
            _ if mode.is_ttl() => ttl_owner(ttl),
            _ => 0,
        };
        let mut node = self.fresh(data, zxid, time, owner, container);
        node.ttl = mode.is_ttl().then_some(ttl);
        node.acl = acl.to_vec();
        let stat = node.stat();
        let parent = parent.to_owned();
        self.insert(&full, node);
        changes.push(Change::Created(full.clone()));
        changes.push(Change::ChildrenChanged(parent));
        Ok((full, stat))
    }

    /// `delete`: `NoNode`, then `BadVersion`, then `NotEmpty`, as ZooKeeper checks them.
    pub fn delete(
        &mut self,
        path: &str,
        version: i32,
        zxid: i64,
        changes: &mut Vec<Change>,
    ) -> Result<(), ErrorCode> {
        zk_proto::validate_path(path, false).map_err(|_| ErrorCode::BadArguments)?;
        if split_path(path).is_none() {
            return Err(ErrorCode::BadArguments);
        }
        let node = self.nodes.get(path).ok_or(ErrorCode::NoNode)?;
        if !version_ok(version, node.persisted.version) {
            return Err(ErrorCode::BadVersion);
        }
        if !node.children.is_empty() {
            return Err(ErrorCode::NotEmpty);
        }
        self.remove(path, zxid, changes);
        Ok(())
    }

    /// Removes a childless node, updating its parent.
    fn remove(&mut self, path: &str, zxid: i64, changes: &mut Vec<Change>) {
        if self.nodes.remove(path).is_none() {
            return;
        }
        self.managed.remove(path);
        changes.push(Change::Deleted(path.to_owned()));
        let parent = split_path(path)
            .and_then(|(parent, name)| self.nodes.get_mut(parent).map(|p| (parent, p, name)));
        if let Some((parent, p, name)) = parent {
            p.children.remove(name);
            p.persisted.pzxid = zxid;
            p.persisted.num_children = i32::try_from(p.children.len()).unwrap_or(i32::MAX);
            changes.push(Change::ChildrenChanged(parent.to_owned()));
        }
    }

    /// `setData`: `NoNode`, then `BadVersion`. The node's new stat.
    pub fn set_data(
        &mut self,
        path: &str,
        data: Buffer,
        version: i32,
        zxid: i64,
        time: i64,
        changes: &mut Vec<Change>,
    ) -> Result<Stat, ErrorCode> {
        zk_proto::validate_path(path, false).map_err(|_| ErrorCode::BadArguments)?;
        let node = self.nodes.get_mut(path).ok_or(ErrorCode::NoNode)?;
        if !version_ok(version, node.persisted.version) {
            return Err(ErrorCode::BadVersion);
        }
        node.persisted.version = node.persisted.version.wrapping_add(1);
        node.persisted.mzxid = zxid;
        node.persisted.mtime = time;
        node.persisted.data_length = data_len(&data);
        node.data = data;
        changes.push(Change::DataChanged(path.to_owned()));
        Ok(node.stat())
    }

    /// `setACL`: `NoNode`, then `BadVersion` (against `aversion`). Fires nothing.
    pub fn set_acl(&mut self, path: &str, acl: &[Acl], version: i32) -> Result<Stat, ErrorCode> {
        zk_proto::validate_path(path, false).map_err(|_| ErrorCode::BadArguments)?;
        if acl.is_empty() {
            return Err(ErrorCode::InvalidAcl);
        }
        let node = self.nodes.get_mut(path).ok_or(ErrorCode::NoNode)?;
        if !version_ok(version, node.persisted.aversion) {
            return Err(ErrorCode::BadVersion);
        }
        node.persisted.aversion = node.persisted.aversion.wrapping_add(1);
        node.acl = acl.to_vec();
        Ok(node.stat())
    }

    /// `check`: `NoNode`, then `BadVersion`.
    pub fn check(&self, path: &str, version: i32) -> Result<Stat, ErrorCode> {
        zk_proto::validate_path(path, false).map_err(|_| ErrorCode::BadArguments)?;
        let node = self.nodes.get(path).ok_or(ErrorCode::NoNode)?;
        if !version_ok(version, node.persisted.version) {
            return Err(ErrorCode::BadVersion);
        }
        Ok(node.stat())
    }

    /// Deletes every ephemeral node of `session` (a session closed or expired: one
    /// transaction, so one zxid for all of them).
    pub fn kill_session(&mut self, session: i64, zxid: i64, changes: &mut Vec<Change>) {
        let mine: Vec<String> = self
            .ephemerals()
            .filter(|(_, owner)| *owner == session)
            .map(|(p, _)| p.to_owned())
            .collect();
        for path in mine {
            self.remove(&path, zxid, changes);
        }
    }

    /// Whether the container manager removes `node` at wall time `now_ms`: a container that
    /// had a child and has none, or a TTL node with no children not modified for longer than
    /// its TTL (ZooKeeper's `ContainerManager.getCandidates`).
    fn due(node: &Node, now_ms: i64) -> bool {
        node.children.is_empty()
            && ((node.container && node.had_child)
                || node
                    .ttl
                    .is_some_and(|ttl| now_ms.saturating_sub(node.persisted.mtime) > ttl))
    }

    /// The containers and TTL nodes due for removal at wall time `now_ms`.
    pub fn due_for_removal(&self, now_ms: i64) -> Vec<String> {
        self.managed
            .iter()
            .filter(|p| self.nodes.get(*p).is_some_and(|n| Self::due(n, now_ms)))
            .cloned()
            .collect()
    }

    /// Removes the container or TTL node at `path` if it is still due (ZooKeeper's
    /// `deleteContainer`).
    pub fn delete_container(
        &mut self,
        path: &str,
        now_ms: i64,
        zxid: i64,
        changes: &mut Vec<Change>,
    ) -> bool {
        let due = self.nodes.get(path).is_some_and(|n| Self::due(n, now_ms));
        if due {
            self.remove(path, zxid, changes);
        }
        due
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn create(
        t: &mut DataTree,
        path: &str,
        mode: CreateMode,
        zxid: i64,
    ) -> Result<String, ErrorCode> {
        let mut ch = Vec::new();
        t.create(
            path,
            None,
            &Acl::open_unsafe(),
            mode,
            -1,
            7,
            zxid,
            0,
            &mut ch,
        )
        .map(|(p, _)| p)
    }

    #[test]
    fn stats_follow_zookeepers_rules() {
        let mut t = DataTree::new(0);
        let mut ch = Vec::new();
        assert_eq!(
            create(&mut t, "/a", CreateMode::Persistent, 5),
            Ok("/a".into())
        );
        assert_eq!(
            create(&mut t, "/a/s-", CreateMode::EphemeralSequential, 6),
            Ok("/a/s-0000000000".into())
        );
        assert_eq!(
            create(&mut t, "/a/s-", CreateMode::PersistentSequential, 7),
            Ok("/a/s-0000000001".into())
        );
        let a = t.get("/a").unwrap().stat();
        assert_eq!(
            (a.czxid, a.mzxid, a.pzxid, a.cversion, a.num_children),
            (5, 5, 7, 2, 2)
        );
        assert_eq!(
            t.delete("/a/s-0000000001", 3, 8, &mut ch),
            Err(ErrorCode::BadVersion)
        );
        t.delete("/a/s-0000000001", 0, 8, &mut ch).unwrap();
        let a = t.get("/a").unwrap().stat();
        assert_eq!((a.pzxid, a.cversion, a.num_children), (8, 3, 1));
        // The next sequence number counts creates, not deletes (the client's `cversion`
        // counts both).
        assert_eq!(
            create(&mut t, "/a/s-", CreateMode::PersistentSequential, 9),
            Ok("/a/s-0000000002".into())
        );
        let a = t.get("/a").unwrap().stat();
        assert_eq!((a.cversion, a.num_children), (4, 2));
        t.delete("/a/s-0000000002", -1, 9, &mut ch).unwrap();
        assert_eq!(
            create(&mut t, "/a/s-0000000000/x", CreateMode::Persistent, 9),
            Err(ErrorCode::NoChildrenForEphemerals)
        );
        assert_eq!(
            create(&mut t, "/a/s-0000000000", CreateMode::Persistent, 9),
            Err(ErrorCode::NodeExists)
        );
        assert_eq!(
            create(&mut t, "/b/c", CreateMode::Persistent, 9),
            Err(ErrorCode::NoNode)
        );
        assert_eq!(t.delete("/a", -1, 9, &mut ch), Err(ErrorCode::NotEmpty));
        let s = t
            .set_data("/a", Some("xy".into()), 0, 10, 0, &mut ch)
            .unwrap();
        assert_eq!((s.version, s.mzxid, s.data_length), (1, 10, 2));
        assert_eq!(
            t.set_data("/a", None, 0, 11, 0, &mut ch),
            Err(ErrorCode::BadVersion)
        );
    }

    #[test]
    fn sequence_names_wrap_as_java_prints_them() {
        let mut t = DataTree::new(i32::MAX);
        create(&mut t, "/l", CreateMode::Persistent, 1).unwrap();
        let names: Vec<String> = (0..2)
            .map(|i| create(&mut t, "/l/x-", CreateMode::EphemeralSequential, 2 + i).unwrap())
            .collect();
        assert_eq!(names, ["/l/x-2147483647", "/l/x--2147483648"]);
    }

    #[test]
    fn containers_and_ttl_nodes_carry_zookeepers_owner_encodings() {
        let mut t = DataTree::new(0);
        let mut ch = Vec::new();
        let ttl = |t: &mut DataTree, path: &str, mode, ttl, zxid, ch: &mut Vec<Change>| {
            t.create(path, None, &Acl::open_unsafe(), mode, ttl, 7, zxid, 100, ch)
                .map(|(p, _)| p)
        };
        // A TTL only with a TTL mode, and within 1..=MAX_TTL_MS; checked before the path.
        for (mode, value) in [
            (CreateMode::PersistentWithTtl, 0),
            (CreateMode::PersistentWithTtl, -1),
            (CreateMode::PersistentWithTtl, MAX_TTL_MS + 1),
            (CreateMode::Persistent, 5),
        ] {
            assert_eq!(
                ttl(&mut t, "bad path", mode, value, 1, &mut ch),
                Err(ErrorCode::BadArguments)
            );
        }
        assert_eq!(
            ttl(&mut t, "/t", CreateMode::PersistentWithTtl, 50, 1, &mut ch),
            Ok("/t".into())
        );
        create(&mut t, "/c", CreateMode::Container, 2).unwrap();
        let owner = |t: &DataTree, p: &str| t.get(p).unwrap().persisted.ephemeral_owner;
        assert_eq!(owner(&t, "/t"), ttl_owner(50));
        assert_eq!(owner(&t, "/t") as u64, 0xff00_0000_0000_0032);
        assert_eq!(owner(&t, "/c"), CONTAINER_OWNER);
        // Clients see 0 for both, as for a persistent node; both may have children.
        assert_eq!(t.get("/t").unwrap().stat().ephemeral_owner, 0);
        assert_eq!(t.get("/c").unwrap().stat().ephemeral_owner, 0);
        assert!(!owned_by_session(owner(&t, "/t")) && !owned_by_session(owner(&t, "/c")));
        assert_eq!(t.ephemerals().count(), 0);
        create(&mut t, "/t/x", CreateMode::Ephemeral, 3).unwrap();
        create(&mut t, "/c/x", CreateMode::Ephemeral, 4).unwrap();
        assert!(owned_by_session(owner(&t, "/t/x")));
        assert_eq!(t.get("/t/x").unwrap().stat().ephemeral_owner, 7);
        // Neither is due while it has a child, whatever the time.
        assert!(t.due_for_removal(i64::MAX).is_empty());
        t.delete("/t/x", -1, 5, &mut ch).unwrap();
        t.delete("/c/x", -1, 6, &mut ch).unwrap();
        // The container at once; the TTL node once its TTL passed since its last change.
        assert_eq!(t.due_for_removal(150), ["/c"]);
        assert_eq!(t.due_for_removal(151), ["/c", "/t"]);
        t.set_data("/t", None, -1, 7, 140, &mut ch).unwrap();
        assert!(!t.delete_container("/t", 190, 8, &mut ch));
        assert!(t.delete_container("/t", 191, 8, &mut ch));
        assert!(t.delete_container("/c", 191, 9, &mut ch));
        assert!(t.get("/t").is_none() && t.get("/c").is_none());
        assert!(t.due_for_removal(i64::MAX).is_empty());
    }
}
