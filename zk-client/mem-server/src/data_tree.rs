//! [`DataTree`]: the wire server's nodes with their full `Stat`, and the write rules of
//! ZooKeeper's `PrepRequestProcessor` and `DataTree`: which error a create, delete, setData or
//! check gives and in which order the checks run, `%010d` sequence names from the parent's
//! `cversion`, ephemeral owners, containers. Pure data: zxids and times are given.

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
    /// Its metadata, kept up to date (`numChildren`, `dataLength` included).
    pub stat: Stat,
    /// A container: removed once it had a child and has none.
    pub container: bool,
    /// Whether a child was ever created under it (for the container sweep).
    pub had_child: bool,
    /// Its children's names.
    pub children: BTreeSet<String>,
}

/// The parent path and the last segment; `None` for `/`.
pub fn split_path(path: &str) -> Option<(&str, &str)> {
    let (parent, name) = path.rsplit_once('/')?;
    if name.is_empty() && parent.is_empty() {
        return None;
    }
    Some((if parent.is_empty() { "/" } else { parent }, name))
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
    /// The `cversion` new nodes start with (near `i32::MAX` to make sequences wrap).
    first_cversion: i32,
}

impl DataTree {
    /// A tree holding `/`, `/zookeeper`, `/zookeeper/quota` and `/zookeeper/config`, as a
    /// fresh 3.8 server has. New nodes' sequence counters start at `first_cversion`.
    pub fn new(first_cversion: i32) -> Self {
        let mut tree = Self {
            nodes: BTreeMap::new(),
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
            stat: Stat {
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
            had_child: false,
            children: BTreeSet::new(),
        }
    }

    /// Inserts `node` at `path` under its (existing) parent, updating the parent's stat.
    fn insert(&mut self, path: &str, node: Node) {
        let zxid = node.stat.czxid;
        let parent = split_path(path)
            .and_then(|(parent, name)| self.nodes.get_mut(parent).map(|p| (p, name)));
        if let Some((p, name)) = parent {
            p.children.insert(name.to_owned());
            p.had_child = true;
            p.stat.cversion = p.stat.cversion.wrapping_add(1);
            p.stat.pzxid = zxid;
            p.stat.num_children = i32::try_from(p.children.len()).unwrap_or(i32::MAX);
        }
        self.nodes.insert(path.to_owned(), node);
    }

    /// The node at `path`.
    pub fn get(&self, path: &str) -> Option<&Node> {
        self.nodes.get(path)
    }

    /// Every node's path with its ephemeral owner, for ephemeral nodes.
    pub fn ephemerals(&self) -> impl Iterator<Item = (&str, i64)> {
        self.nodes
            .iter()
            .filter(|(_, n)| n.stat.ephemeral_owner != 0)
            .map(|(p, n)| (p.as_str(), n.stat.ephemeral_owner))
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

    /// `create` (and `create2`, `createContainer`): the created path and stat. The checks run
    /// in ZooKeeper's order: path, parent (`NoNode`), sequence name, `NodeExists`, ephemeral
    /// parent (`NoChildrenForEphemerals`).
    #[allow(clippy::too_many_arguments)]
    pub fn create(
        &mut self,
        path: &str,
        data: Buffer,
        acl: &[Acl],
        mode: CreateMode,
        session: i64,
        zxid: i64,
        time: i64,
        changes: &mut Vec<Change>,
    ) -> Result<(String, Stat), ErrorCode> {
        if mode.is_ttl() {
            return Err(ErrorCode::Unimplemented);
        }
        zk_proto::validate_path(path, mode.is_sequential()).map_err(|_| ErrorCode::BadArguments)?;
        if acl.is_empty() {
            return Err(ErrorCode::InvalidAcl);
        }
        let (parent, name) = split_path(path).ok_or(ErrorCode::NodeExists)?;
        let p = self.nodes.get(parent).ok_or(ErrorCode::NoNode)?;
        let full = if mode.is_sequential() {
            join(parent, &format!("{name}{:010}", p.stat.cversion))
        } else {
            path.to_owned()
        };
        if self.nodes.contains_key(&full) {
            return Err(ErrorCode::NodeExists);
        }
        if p.stat.ephemeral_owner != 0 {
            return Err(ErrorCode::NoChildrenForEphemerals);
        }
        let owner = if mode.is_ephemeral() { session } else { 0 };
        let mut node = self.fresh(data, zxid, time, owner, mode == CreateMode::Container);
        node.acl = acl.to_vec();
        let stat = node.stat.clone();
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
        if !version_ok(version, node.stat.version) {
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
        changes.push(Change::Deleted(path.to_owned()));
        let parent = split_path(path)
            .and_then(|(parent, name)| self.nodes.get_mut(parent).map(|p| (parent, p, name)));
        if let Some((parent, p, name)) = parent {
            p.children.remove(name);
            p.stat.cversion = p.stat.cversion.wrapping_add(1);
            p.stat.pzxid = zxid;
            p.stat.num_children = i32::try_from(p.children.len()).unwrap_or(i32::MAX);
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
        if !version_ok(version, node.stat.version) {
            return Err(ErrorCode::BadVersion);
        }
        node.stat.version = node.stat.version.wrapping_add(1);
        node.stat.mzxid = zxid;
        node.stat.mtime = time;
        node.stat.data_length = data_len(&data);
        node.data = data;
        changes.push(Change::DataChanged(path.to_owned()));
        Ok(node.stat.clone())
    }

    /// `setACL`: `NoNode`, then `BadVersion` (against `aversion`). Fires nothing.
    pub fn set_acl(&mut self, path: &str, acl: &[Acl], version: i32) -> Result<Stat, ErrorCode> {
        zk_proto::validate_path(path, false).map_err(|_| ErrorCode::BadArguments)?;
        if acl.is_empty() {
            return Err(ErrorCode::InvalidAcl);
        }
        let node = self.nodes.get_mut(path).ok_or(ErrorCode::NoNode)?;
        if !version_ok(version, node.stat.aversion) {
            return Err(ErrorCode::BadVersion);
        }
        node.stat.aversion = node.stat.aversion.wrapping_add(1);
        node.acl = acl.to_vec();
        Ok(node.stat.clone())
    }

    /// `check`: `NoNode`, then `BadVersion`.
    pub fn check(&self, path: &str, version: i32) -> Result<Stat, ErrorCode> {
        zk_proto::validate_path(path, false).map_err(|_| ErrorCode::BadArguments)?;
        let node = self.nodes.get(path).ok_or(ErrorCode::NoNode)?;
        if !version_ok(version, node.stat.version) {
            return Err(ErrorCode::BadVersion);
        }
        Ok(node.stat.clone())
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

    /// The containers due for removal: they had a child and have none now.
    pub fn empty_containers(&self) -> Vec<String> {
        self.nodes
            .iter()
            .filter(|(_, n)| n.container && n.had_child && n.children.is_empty())
            .map(|(p, _)| p.clone())
            .collect()
    }

    /// Removes the container at `path` if it is still due (ZooKeeper's `deleteContainer`).
    pub fn delete_container(&mut self, path: &str, zxid: i64, changes: &mut Vec<Change>) -> bool {
        let due = self
            .nodes
            .get(path)
            .is_some_and(|n| n.container && n.had_child && n.children.is_empty());
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
        t.create(path, None, &Acl::open_unsafe(), mode, 7, zxid, 0, &mut ch)
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
        let a = &t.get("/a").unwrap().stat;
        assert_eq!(
            (a.czxid, a.mzxid, a.pzxid, a.cversion, a.num_children),
            (5, 5, 7, 2, 2)
        );
        assert_eq!(
            t.delete("/a/s-0000000001", 3, 8, &mut ch),
            Err(ErrorCode::BadVersion)
        );
        t.delete("/a/s-0000000001", 0, 8, &mut ch).unwrap();
        let a = &t.get("/a").unwrap().stat;
        assert_eq!((a.pzxid, a.cversion, a.num_children), (8, 3, 1));
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
}
