//! [`Model`]: the explorer's own server and link, small and exact: the lock directories'
//! nodes (with tombstones, so the tree can be read as it was at any zxid), their sequence
//! counters, our session's one-shot watches, and the ordered channels between the machine
//! and the server, with what a connection loss, a reconnect and an expiry do to each.
//!
//! Written apart from the random simulator's [`crate::tree`] on purpose: the explorer judges
//! the machines against a second, independent reading of ZooKeeper, and its state must be
//! cheap to clone and to hash.

use std::collections::VecDeque;

use bytes::Bytes;
use recipes_core::{Connection, Input, NodeMode, Op, Reply, WatchEvent, WatchKind, ZkError};

/// Who owns a node: our session, or another client (numbered from 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Owner {
    /// Our session (ephemeral: goes with its expiry).
    Us,
    /// Another client.
    Other(u8),
}

/// A node in one of the lock directories, live or deleted.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Node {
    /// Which directory (an index into the subject's directories).
    pub dir: usize,
    /// Its full path.
    pub path: String,
    /// The sequence number the server appended (`None` for an exact-name node).
    pub seq: Option<u32>,
    /// Whose it is.
    pub owner: Owner,
    /// Its creation zxid.
    pub czxid: i64,
    /// The zxid that deleted it.
    pub deleted: Option<i64>,
}

impl Node {
    /// Whether it exists now.
    pub fn live(&self) -> bool {
        self.deleted.is_none()
    }

    /// Whether it existed once the txn `zxid` was applied.
    pub fn live_at(&self, zxid: i64) -> bool {
        self.czxid <= zxid && self.deleted.is_none_or(|d| d > zxid)
    }

    /// Its name (the last segment of its path).
    pub fn name(&self) -> &str {
        self.path.rsplit('/').next().unwrap_or_default()
    }
}

/// What the client knows of its connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Link {
    /// Ops go to the server.
    Connected,
    /// Ops fail with `NotSent` at once; the server may still apply ops written before.
    Disconnected,
    /// The session is gone: ops fail with `SessionExpired`.
    Expired,
}

/// A message on the ordered channel from the server to the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToClient {
    /// The reply of the oldest op not answered.
    Reply {
        /// The reply.
        reply: Reply,
        /// For a listing: the directory listed and the zxid it was read at.
        listed: Option<(usize, i64)>,
        /// The watch its op left on the server, which the client learns of with the reply.
        watch: Option<(WatchKind, String)>,
    },
    /// A watch fired.
    Event {
        /// Which kind of watch.
        kind: WatchKind,
        /// Its path.
        path: String,
        /// What happened.
        event: WatchEvent,
    },
}

/// A one-shot watch of our session set on the server.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Watch {
    kind: WatchKind,
    path: String,
    /// The client has read the reply that set it (so it restores it after a reconnect).
    known: bool,
}

/// The server (our lock directories), our session, and the link between them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Model {
    /// Every node ever created in the directories, in creation order.
    pub nodes: Vec<Node>,
    /// Each directory's sequence counter (ZooKeeper's `cversion`: every child create and
    /// delete bumps it).
    cversion: Vec<u32>,
    /// The last zxid.
    pub zxid: i64,
    watches: Vec<Watch>,
    /// Ops written and not yet applied by the server (while disconnected: orphans that the
    /// server may still apply, whose replies nobody reads).
    pub to_server: VecDeque<Op>,
    /// Replies and notifications on their way to the client, in order.
    pub to_client: VecDeque<ToClient>,
    /// Notifications for watches that fired while disconnected: delivered after a reconnect.
    deferred: Vec<ToClient>,
    /// What the client itself tells the machine (failed ops, connection changes), in order.
    pub local: VecDeque<Input>,
    /// The client's view of the connection.
    pub link: Link,
    /// The session expired on the server.
    pub expired: bool,
    /// Another client deleted a node of ours.
    pub meddled: bool,
    /// A node of another client deleted by our session (its path), if any.
    pub deleted_foreign: Option<String>,
    /// The last connection change the client reported.
    pub reported: Connection,
}

impl Model {
    /// A server with `dirs` (each existing, empty), nothing in flight, connected.
    pub fn new(dirs: usize) -> Self {
        Self {
            nodes: Vec::new(),
            cversion: vec![0; dirs],
            zxid: 0,
            watches: Vec::new(),
            to_server: VecDeque::new(),
            to_client: VecDeque::new(),
            deferred: Vec::new(),
            local: VecDeque::new(),
            link: Link::Connected,
            expired: false,
            meddled: false,
            deleted_foreign: None,
            reported: Connection::Connected,
        }
    }

    /// Creates `name` (with the sequence appended if `sequential`) in directory `dir` for
    /// `owner`, firing watches; its path and czxid.
    pub fn create(
        &mut self,
        dirs: &[String],
        dir: usize,
        name: &str,
        sequential: bool,
        owner: Owner,
    ) -> (String, i64) {
        let seq = sequential.then(|| self.cversion[dir]);
        let mut path = recipes_core::child_path(&dirs[dir], name);
        if let Some(seq) = seq {
            path.push_str(&format!("{seq:010}"));
        }
        self.zxid += 1;
        self.cversion[dir] += 1;
        self.nodes.push(Node {
            dir,
            path: path.clone(),
            seq,
            owner,
            czxid: self.zxid,
            deleted: None,
        });
        self.fire(WatchKind::Exists, &path, WatchEvent::Created);
        self.fire(WatchKind::Children, &dirs[dir], WatchEvent::ChildrenChanged);
        (path, self.zxid)
    }

    /// Deletes node `i` (live) in one txn, firing watches.
    pub fn delete(&mut self, dirs: &[String], i: usize) {
        self.zxid += 1;
        let node = &mut self.nodes[i];
        node.deleted = Some(self.zxid);
        let (path, dir) = (node.path.clone(), node.dir);
        self.cversion[dir] += 1;
        self.fire(WatchKind::Data, &path, WatchEvent::Deleted);
        self.fire(WatchKind::Exists, &path, WatchEvent::Deleted);
        self.fire(WatchKind::Children, &dirs[dir], WatchEvent::ChildrenChanged);
    }

    /// The live node at `path`.
    fn live(&self, path: &str) -> Option<usize> {
        self.nodes.iter().position(|n| n.live() && n.path == path)
    }

    fn fire(&mut self, kind: WatchKind, path: &str, event: WatchEvent) {
        let Some(i) = self
            .watches
            .iter()
            .position(|w| w.kind == kind && w.path == path)
        else {
            return;
        };
        self.watches.remove(i);
        let note = ToClient::Event {
            kind,
            path: path.to_owned(),
            event,
        };
        match self.link {
            Link::Connected => self.to_client.push_back(note),
            Link::Disconnected => self.deferred.push(note),
            Link::Expired => {}
        }
    }

    fn watch(&mut self, kind: WatchKind, path: &str) {
        if !self
            .watches
            .iter()
            .any(|w| w.kind == kind && w.path == path)
        {
            self.watches.push(Watch {
                kind,
                path: path.to_owned(),
                known: false,
            });
        }
    }

    /// The machine issued `op`: written to the server, or failed at once by the client.
    pub fn issue(&mut self, op: Op) {
        match self.link {
            Link::Connected => self.to_server.push_back(op),
            Link::Disconnected => self
                .local
                .push_back(Input::Reply(Reply::Failed(ZkError::NotSent))),
            Link::Expired => self
                .local
                .push_back(Input::Reply(Reply::Failed(ZkError::SessionExpired))),
        }
    }

    /// The server applies the oldest op written (an orphan's reply is dropped).
    pub fn apply(&mut self, dirs: &[String]) {
        let Some(op) = self.to_server.pop_front() else {
            return;
        };
        let dir_of = |path: &str| dirs.iter().position(|d| d == path);
        let parent_of = |path: &str| path.rsplit_once('/').and_then(|(p, _)| dir_of(p));
        let mut listed = None;
        let mut watch = None;
        let reply = match &op {
            Op::Create { path, mode, .. } => match parent_of(path) {
                None => Reply::Failed(ZkError::NoNode),
                Some(dir) => {
                    let name = path.rsplit('/').next().unwrap_or_default();
                    let sequential = *mode == NodeMode::EphemeralSequential;
                    if !sequential && self.live(path).is_some() {
                        Reply::Failed(ZkError::NodeExists)
                    } else {
                        let (path, czxid) = self.create(dirs, dir, name, sequential, Owner::Us);
                        Reply::Created { path, czxid }
                    }
                }
            },
            Op::Children { path, watch: w } => match dir_of(path) {
                None => Reply::Failed(ZkError::NoNode),
                Some(dir) => {
                    if *w {
                        watch = Some((WatchKind::Children, path.clone()));
                    }
                    listed = Some((dir, self.zxid));
                    let names = self.nodes.iter().filter(|n| n.live() && n.dir == dir);
                    Reply::Children(names.map(|n| n.name().to_owned()).collect())
                }
            },
            Op::GetData { path, watch: w } => match self.live(path) {
                None => Reply::Failed(ZkError::NoNode),
                Some(i) => {
                    if *w {
                        watch = Some((WatchKind::Data, path.clone()));
                    }
                    Reply::Data {
                        data: Bytes::new(),
                        czxid: self.nodes[i].czxid,
                    }
                }
            },
            Op::Exists { path, watch: w } => {
                if *w {
                    watch = Some((WatchKind::Exists, path.clone()));
                }
                Reply::Exists(self.live(path).map(|i| self.nodes[i].czxid))
            }
            Op::Sync { .. } | Op::CreateParents { .. } => Reply::Done,
            Op::Delete { path } => match self.live(path) {
                None => Reply::Failed(ZkError::NoNode),
                Some(i) => {
                    if self.nodes[i].owner != Owner::Us {
                        self.deleted_foreign = Some(path.clone());
                    }
                    self.delete(dirs, i);
                    Reply::Done
                }
            },
        };
        if let Some((kind, path)) = &watch {
            self.watch(*kind, path);
        }
        if self.link == Link::Connected {
            self.to_client.push_back(ToClient::Reply {
                reply,
                listed,
                watch,
            });
        }
    }

    /// The client reads the next message; the watch a reply's op left is now known to it.
    pub fn deliver(&mut self) -> Option<ToClient> {
        let msg = self.to_client.pop_front()?;
        if let ToClient::Reply {
            watch: Some((kind, path)),
            ..
        } = &msg
        {
            if let Some(w) = self
                .watches
                .iter_mut()
                .find(|w| w.kind == *kind && w.path == *path)
            {
                w.known = true;
            }
        }
        Some(msg)
    }

    /// The connection drops: every op written and not answered fails with a connection loss
    /// (the server may still apply the ones it has not), notifications wait for the reconnect,
    /// watches the client never heard of are gone; `Disconnected` before or after the
    /// failures.
    pub fn disconnect(&mut self, disconnected_first: bool) {
        let mut failed = 0;
        for msg in std::mem::take(&mut self.to_client) {
            match msg {
                ToClient::Reply { .. } => failed += 1,
                note @ ToClient::Event { .. } => self.deferred.push(note),
            }
        }
        failed += self.to_server.len();
        self.watches.retain(|w| w.known);
        self.link = Link::Disconnected;
        let lost = Input::Reply(Reply::Failed(ZkError::ConnectionLoss));
        let change = Input::Connection(Connection::Disconnected);
        if disconnected_first {
            self.local.push_back(change.clone());
        }
        self.local.extend(std::iter::repeat_n(lost, failed));
        if !disconnected_first {
            self.local.push_back(change);
        }
    }

    /// The session is back (same session): orphans can no longer be applied, notifications
    /// held back are delivered.
    pub fn reconnect(&mut self) {
        self.link = Link::Connected;
        self.to_server.clear();
        self.to_client.extend(self.deferred.drain(..));
    }

    /// The session expires: its ephemerals go in one txn, every op not answered fails with
    /// `SessionExpired`, then `Expired` (after `Lost`, if `lost_first`).
    pub fn expire(&mut self, lost_first: bool) {
        let failed = self
            .to_client
            .iter()
            .filter(|m| matches!(m, ToClient::Reply { .. }))
            .count()
            + if self.link == Link::Connected {
                self.to_server.len()
            } else {
                0
            };
        self.to_client.clear();
        self.to_server.clear();
        self.deferred.clear();
        self.watches.clear();
        self.link = Link::Expired;
        self.expired = true;
        let ours: Vec<usize> = (0..self.nodes.len())
            .filter(|&i| self.nodes[i].live() && self.nodes[i].owner == Owner::Us)
            .collect();
        if !ours.is_empty() {
            self.zxid += 1;
            for i in ours {
                self.nodes[i].deleted = Some(self.zxid);
                self.cversion[self.nodes[i].dir] += 1;
            }
        }
        let se = Input::Reply(Reply::Failed(ZkError::SessionExpired));
        self.local.extend(std::iter::repeat_n(se, failed));
        if lost_first {
            self.local.push_back(Input::Connection(Connection::Lost));
        }
        self.local.push_back(Input::Connection(Connection::Expired));
    }

    /// Drops every watch and notification (the attempt is over; a cleanup sets none).
    pub fn forget_watches(&mut self) {
        self.watches.clear();
        self.deferred.clear();
        self.to_client
            .retain(|m| matches!(m, ToClient::Reply { .. }));
    }

    /// Whether no op is in flight and the client has told everything.
    pub fn drained(&self) -> bool {
        self.local.is_empty()
            && self.to_server.is_empty()
            && !self
                .to_client
                .iter()
                .any(|m| matches!(m, ToClient::Reply { .. }))
    }

    /// Our live nodes' indices.
    pub fn ours(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.nodes.len()).filter(|&i| self.nodes[i].live() && self.nodes[i].owner == Owner::Us)
    }
}
