//! The tree replayed from the log in zxid order: every node's life (czxid, ephemeral owner,
//! data, deletion zxid), the live tree with each parent's children, and the sessions.

use std::collections::{BTreeSet, HashMap};

use bytes::Bytes;
use zk_proto::txnlog::{TxnBody, TxnEntry};

/// One node's life: a path created again later is a new life.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeLife {
    /// Its path.
    pub path: String,
    /// The zxid that created it.
    pub czxid: i64,
    /// The session that owns it, if it is ephemeral (the creating session).
    pub owner: Option<i64>,
    /// Its data, as last set.
    pub data: Bytes,
    /// The zxid that deleted it (a delete, or its owner's closeSession), if any.
    pub deleted: Option<i64>,
    /// The session whose transaction deleted it (the delete's, or the closeSession's), if
    /// it was deleted.
    pub deleted_by: Option<i64>,
    /// Each data version the log set, with the zxid that set it, in increasing version
    /// (`1, 2, ...` in a history the servers kept: a version set again replaces those from
    /// it on; one ahead leaves a gap, and is an anomaly).
    pub versions: Vec<(i32, i64)>,
    /// Each create of a child: the `cversion` it gave this node, and its zxid (strictly
    /// increasing in any history the servers kept: every create adds one).
    pub cversions: Vec<(i32, i64)>,
}

/// The servers contradicting their own logs: a `setData` whose new data version (at or
/// below the log's), or a create whose parent's new children version, says the servers did
/// not have changes the logs show a majority of members committed (ZooKeeper lost committed
/// transactions). A data version ahead of the log's is the log lacking a write, an anomaly. Lock directories
/// see a create every few milliseconds, so a lost tail shows within milliseconds of the
/// epoch that lost it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forgotten {
    /// The `setData` or create that shows it.
    pub zxid: i64,
    /// The node whose version went back (the create's parent).
    pub path: String,
    /// Which version: `"data version"` or `"children version"`.
    pub what: &'static str,
    /// The version it set.
    pub version: i32,
    /// The version the log had reached.
    pub had: usize,
    /// Where the log first set the version the server set again: the servers later forgot
    /// the log's history from there.
    pub since: i64,
    /// Where the servers' state parted from the log: the start of the epoch whose leader
    /// lacked that history (a leader's state can only lose a tail of history when it takes
    /// office: within an epoch one leader's state only grows). Before it the servers served the log's history, lost tail included (clients saw those
    /// writes succeed), so what happened there is judged; from it on the servers had another.
    pub parted: i64,
}

/// The first zxid of `zxid`'s epoch (the epoch is the high 32 bits).
pub fn epoch_start(zxid: i64) -> i64 {
    zxid & !0xffff_ffff
}

/// A session's life, as far as the log tells.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SessionLife {
    /// The createSession's zxid (none for a session created before the logs begin).
    pub created: Option<i64>,
    /// The closeSession's zxid (a close or an expiry).
    pub closed: Option<i64>,
}

/// What one transaction changed, in its order: the judge reacts to these.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// A node was created.
    Created(String),
    /// A node was deleted.
    Deleted(String),
    /// A node's data was set.
    DataSet(String),
}

/// The replayed tree.
#[derive(Debug, Clone, Default)]
pub struct Tree {
    /// Every node that ever lived, in creation order.
    pub lives: Vec<NodeLife>,
    /// The live nodes: path to its index in `lives`.
    live: HashMap<String, usize>,
    /// Each live parent's live children's names.
    children: HashMap<String, BTreeSet<String>>,
    /// Each session's live ephemerals.
    ephemerals: HashMap<i64, BTreeSet<String>>,
    /// Every session the log mentions.
    pub sessions: HashMap<i64, SessionLife>,
    /// What did not fit the tree (a create of a live path, a delete of a missing one): a txn
    /// missing from the logs, or a replay bug.
    pub anomalies: Vec<String>,
    /// The first sign that the servers lost committed transactions, if any.
    pub forgotten: Option<Forgotten>,
}

/// The parent of `path` and the last segment's name.
pub fn split(path: &str) -> (&str, &str) {
    match path.rfind('/') {
        Some(0) => ("/", path.get(1..).unwrap_or("")),
        Some(i) => (path.get(..i).unwrap_or(""), path.get(i + 1..).unwrap_or("")),
        None => ("", path),
    }
}

impl Tree {
    /// The live node at `path`.
    pub fn node(&self, path: &str) -> Option<&NodeLife> {
        self.live.get(path).and_then(|&i| self.lives.get(i))
    }

    /// The live children's names of `parent` (empty if it has none or does not exist).
    pub fn children(&self, parent: &str) -> impl Iterator<Item = &str> {
        self.children
            .get(parent)
            .into_iter()
            .flat_map(|c| c.iter().map(String::as_str))
    }

    /// Applies one entry (which must change something: callers skip
    /// [`TxnBody::changed_nothing`]) and says what changed.
    pub fn apply(&mut self, entry: &TxnEntry) -> Vec<Change> {
        let mut changes = Vec::new();
        let (zxid, session) = (entry.zxid(), entry.session_id());
        match &entry.body {
            TxnBody::Multi(ops) => {
                for op in ops {
                    self.apply_one(op, zxid, session, &mut changes);
                }
            }
            body => self.apply_one(body, zxid, session, &mut changes),
        }
        changes
    }

    fn apply_one(&mut self, body: &TxnBody, zxid: i64, session: i64, out: &mut Vec<Change>) {
        match body {
            TxnBody::CreateSession(_) => {
                self.sessions.entry(session).or_default().created = Some(zxid);
            }
            TxnBody::CloseSession(closed) => {
                self.sessions.entry(session).or_default().closed = Some(zxid);
                let mut paths: BTreeSet<String> =
                    self.ephemerals.remove(&session).unwrap_or_default();
                if let Some(c) = closed {
                    paths.extend(c.paths_to_delete.iter().cloned());
                }
                for path in paths {
                    if self.live.contains_key(&path) {
                        self.delete(&path, zxid, session, out);
                    }
                }
            }
            TxnBody::Create(t) | TxnBody::Create2(t) => {
                let owner = t.ephemeral.then_some(session);
                self.cversion(&t.path, t.parent_cversion, zxid);
                self.create(&t.path, t.data.clone(), owner, zxid, out);
            }
            TxnBody::CreateV0(t) => {
                let owner = t.ephemeral.then_some(session);
                self.create(&t.path, t.data.clone(), owner, zxid, out);
            }
            TxnBody::CreateTtl(t) => {
                self.cversion(&t.path, t.parent_cversion, zxid);
                self.create(&t.path, t.data.clone(), None, zxid, out);
            }
            TxnBody::CreateContainer(t) => {
                self.cversion(&t.path, t.parent_cversion, zxid);
                self.create(&t.path, t.data.clone(), None, zxid, out);
            }
            TxnBody::Delete(t) | TxnBody::DeleteContainer(t) => {
                if self.live.contains_key(&t.path) {
                    self.delete(&t.path, zxid, session, out);
                } else {
                    self.anomalies
                        .push(format!("zxid {zxid:#x}: delete of {}, not there", t.path));
                }
            }
            TxnBody::SetData(t) => match self.live.get(&t.path).copied() {
                Some(i) => {
                    if let Some(life) = self.lives.get_mut(i) {
                        life.data = t.data.clone().unwrap_or_default();
                        let version = t.version;
                        let had = life.versions.last().map_or(0, |&(v, _)| v);
                        // The versions the log set from this one on (none in a history the
                        // servers kept: each setData adds one).
                        let from = life.versions.partition_point(|&(v, _)| v < version);
                        if i64::from(version) > i64::from(had) + 1 {
                            // Ahead of the log: the log lacks committed writes of this node
                            // (a txn missing from every member's log), not the servers
                            // forgetting any.
                            self.anomalies.push(format!(
                                "zxid {zxid:#x}: setData of {} to data version {version}, where \
                                 the log had reached {had}: the logs lack committed writes",
                                t.path
                            ));
                        } else if i64::from(version) != i64::from(had) + 1
                            && self.forgotten.is_none()
                        {
                            let since = life.versions.get(from).map_or(zxid, |&(_, z)| z);
                            self.forgotten = Some(Forgotten {
                                zxid,
                                path: t.path.clone(),
                                what: "data version",
                                version,
                                had: usize::try_from(had).unwrap_or(0),
                                since,
                                parted: epoch_start(zxid),
                            });
                        }
                        life.versions.truncate(from);
                        life.versions.push((version, zxid));
                    }
                    out.push(Change::DataSet(t.path.clone()));
                }
                None => self
                    .anomalies
                    .push(format!("zxid {zxid:#x}: setData of {}, not there", t.path)),
            },
            // Not the nodes' lives: the config node, ACLs, a multi's check, errors.
            TxnBody::Reconfig(_)
            | TxnBody::SetAcl(_)
            | TxnBody::Check(_)
            | TxnBody::Error(_)
            | TxnBody::Multi(_) => {}
        }
    }

    /// A create of `path` gave its parent children version `cversion` at `zxid`: one at or
    /// below what the log's creates had given it shows the servers lost those changes.
    fn cversion(&mut self, path: &str, cversion: i32, zxid: i64) {
        if cversion < 0 {
            return; // not logged (a server before 3.3)
        }
        let (parent, _) = split(path);
        let Some(&i) = self.live.get(parent) else {
            return;
        };
        let Some(life) = self.lives.get_mut(i) else {
            return;
        };
        if let Some(&(had, _)) = life.cversions.last() {
            if cversion <= had && self.forgotten.is_none() {
                let since = life
                    .cversions
                    .iter()
                    .find(|(v, _)| *v >= cversion)
                    .map_or(zxid, |(_, z)| *z);
                self.forgotten = Some(Forgotten {
                    zxid,
                    path: parent.to_owned(),
                    what: "children version",
                    version: cversion,
                    had: usize::try_from(had).unwrap_or(0),
                    since,
                    parted: epoch_start(zxid),
                });
            }
        }
        // A version at or below one already seen replaces the history from there (it
        // only happens after a loss: kept linear in the creates otherwise).
        if life
            .cversions
            .last()
            .is_some_and(|&(had, _)| cversion <= had)
        {
            life.cversions.retain(|(v, _)| *v < cversion);
        }
        life.cversions.push((cversion, zxid));
    }

    fn create(
        &mut self,
        path: &str,
        data: Option<Bytes>,
        owner: Option<i64>,
        zxid: i64,
        out: &mut Vec<Change>,
    ) {
        if self.live.contains_key(path) {
            self.anomalies
                .push(format!("zxid {zxid:#x}: create of {path}, already there"));
            return;
        }
        let (parent, name) = split(path);
        self.children
            .entry(parent.to_owned())
            .or_default()
            .insert(name.to_owned());
        if let Some(s) = owner {
            self.ephemerals
                .entry(s)
                .or_default()
                .insert(path.to_owned());
        }
        self.live.insert(path.to_owned(), self.lives.len());
        self.lives.push(NodeLife {
            path: path.to_owned(),
            czxid: zxid,
            owner,
            data: data.unwrap_or_default(),
            deleted: None,
            deleted_by: None,
            versions: Vec::new(),
            cversions: Vec::new(),
        });
        out.push(Change::Created(path.to_owned()));
    }

    fn delete(&mut self, path: &str, zxid: i64, session: i64, out: &mut Vec<Change>) {
        let Some(i) = self.live.remove(path) else {
            return;
        };
        let (parent, name) = split(path);
        if let Some(c) = self.children.get_mut(parent) {
            c.remove(name);
            if c.is_empty() {
                self.children.remove(parent);
            }
        }
        if let Some(life) = self.lives.get_mut(i) {
            life.deleted = Some(zxid);
            life.deleted_by = Some(session);
            if let Some(s) = life.owner {
                if let Some(e) = self.ephemerals.get_mut(&s) {
                    e.remove(path);
                }
            }
        }
        out.push(Change::Deleted(path.to_owned()));
    }
}
