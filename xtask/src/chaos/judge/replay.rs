//! The replay: the merged history applied to the tree in zxid order, each change handed
//! to what judges it, and the judge's state through it.

use std::collections::{BTreeMap, HashMap};

use zk_proto::txnlog::TxnEntry;

use super::marks::{self, Mark};
use super::rules::{self, Kind};
use super::tree::{self, Change, Tree};
use super::{Config, DeletedEnd, LockDir, LostStretch, Row, ServerEnd, UnmarkedHold, Verdict};

/// A live mark.
#[derive(Debug, Clone)]
pub(super) struct Live {
    pub(super) session: i64,
    pub(super) mark: Mark,
    /// The zxid that made it.
    pub(super) zxid: i64,
}

/// A register's last accepted write.
#[derive(Debug, Clone)]
pub(super) struct Last {
    pub(super) value: u64,
    pub(super) token: Option<i64>,
    pub(super) lib: String,
    pub(super) granted: bool,
    /// Where it was written, and by which session (0 for the initial value).
    pub(super) zxid: i64,
    pub(super) session: i64,
}

/// The judge's state through the replay.
pub(super) struct Judge<'c> {
    pub(super) cfg: &'c Config,
    pub(super) tree: Tree,
    pub(super) marks: BTreeMap<String, Live>,
    pub(super) registers: HashMap<String, Last>,
    /// The library of each session that made a mark or registered.
    pub(super) libs: HashMap<i64, String>,
    /// When each registered session registered.
    pub(super) registered: HashMap<i64, i64>,
    /// The first lock node each session created or deleted: zxid, and what it did
    /// (`created <path>`, `deleted <path>`).
    pub(super) first_node: HashMap<i64, (i64, String)>,
    /// Violations found before their session's library is known (leases made without the
    /// inner lock, missed turns): zxid, session, label, what, the row's counter; blamed at
    /// the end on the session's library, once its registration or marks have said it.
    #[allow(clippy::type_complexity)]
    pub(super) blamed_later: Vec<(i64, i64, String, String, fn(&mut Row) -> &mut u64)>,
    /// Nodes of `marked_when_granted` directories granted and not marked yet: since when
    /// (zxid, time ms).
    pub(super) granted_since: HashMap<String, (i64, i64)>,
    /// Nodes a mark has named.
    pub(super) claimed: std::collections::HashSet<String>,
    /// Lock nodes the operator deleted: the zxid of the delete and the node's czxid.
    pub(super) operator_deleted: HashMap<String, (i64, i64)>,
    /// Marks already counted as excused.
    pub(super) excused: std::collections::HashSet<String>,
    pub(super) verdict: Verdict,
}

/// Judges a history (entries in zxid order, as [`logs::merge`](super::logs::merge) gives them).
pub fn judge(entries: &[TxnEntry], cfg: &Config) -> Verdict {
    let mut j = Judge {
        cfg,
        tree: Tree::default(),
        marks: BTreeMap::new(),
        registers: HashMap::new(),
        libs: HashMap::new(),
        registered: HashMap::new(),
        first_node: HashMap::new(),
        blamed_later: Vec::new(),
        granted_since: HashMap::new(),
        claimed: std::collections::HashSet::new(),
        operator_deleted: HashMap::new(),
        excused: std::collections::HashSet::new(),
        verdict: Verdict::default(),
    };
    for entry in entries {
        let zxid = entry.zxid();
        j.verdict.span = Some(match j.verdict.span {
            None => (zxid, zxid),
            Some((a, _)) => (a, zxid),
        });
        if entry.body.changed_nothing() {
            continue;
        }
        let changes = j.tree.apply(entry);
        if let Some(f) = j.tree.forgotten.clone() {
            // The servers' state parted from their logs (they lost committed transactions):
            // nothing from where it parted on can be judged against the log.
            j.verdict.unjudged = entries.iter().filter(|e| e.zxid() >= f.parted).count();
            // This epoch's txns before the one that showed it were judged against the log's
            // history too: not counted.
            let after = entries
                .iter()
                .filter(|e| (f.parted..zxid).contains(&e.zxid()) && !e.body.changed_nothing())
                .count();
            j.verdict.txns = j
                .verdict
                .txns
                .saturating_sub(u64::try_from(after).unwrap_or(u64::MAX));
            j.verdict.server_loss = Some(f);
            break;
        }
        j.verdict.txns += 1;
        for change in changes {
            j.react(entry, &change);
        }
    }
    for (zxid, session, label, text, count) in std::mem::take(&mut j.blamed_later) {
        // Ours register every session before using it (checked below): one that neither
        // registered nor marked is one Curator made on its own.
        let lib = j.lib_of(session);
        j.verdict.violate(zxid, &label, &lib, count, text);
    }
    for (session, (zxid, what)) in &j.first_node {
        if j.libs.get(session).is_some_and(|l| l == "rust")
            && j.registered.get(session).is_none_or(|r| r > zxid)
        {
            j.verdict.errors.push(format!(
                "zxid {zxid:#x}: session {session:#x} of ours {what} before it registered"
            ));
        }
    }
    j.verdict.server_loss_accepted = cfg.accept_server_loss;
    if let Some(f) = &j.verdict.server_loss {
        let (from, to) = (f.since, f.parted);
        let deleted = j
            .tree
            .lives
            .iter()
            .filter(|n| n.deleted.is_some_and(|d| (from..to).contains(&d)))
            .map(|n| (n.path.clone(), n.czxid))
            .collect();
        j.verdict.lost_stretch = Some(LostStretch { from, to, deleted });
    }
    if let Some(since) = j.verdict.server_loss.as_ref().map(|f| f.parted) {
        // Judged against a history the servers no longer had: dropped, and uncounted.
        let violations = std::mem::take(&mut j.verdict.violations);
        let counted = std::mem::take(&mut j.verdict.counted);
        for (v, count) in violations.into_iter().zip(counted) {
            if v.zxid < since {
                j.verdict.counted.push(count);
                j.verdict.violations.push(v);
            } else {
                let n = count(j.verdict.row(&v.label, &v.lib));
                *n = n.saturating_sub(1);
            }
        }
    }
    j.verdict.sort();
    let anomalies = std::mem::take(&mut j.tree.anomalies);
    j.verdict.errors.extend(anomalies);
    j.verdict
}

impl Judge<'_> {
    pub(super) fn lock_dir(&self, dir: &str) -> Option<&LockDir> {
        self.cfg.locks.iter().find(|l| l.dir == dir)
    }

    pub(super) fn under<'p>(path: &'p str, root: &str) -> Option<&'p str> {
        path.strip_prefix(root)?
            .strip_prefix('/')
            .filter(|r| !r.is_empty())
    }

    pub(super) fn react(&mut self, entry: &TxnEntry, change: &Change) {
        let zxid = entry.zxid();
        if let Change::Created(path) | Change::Deleted(path) = change {
            self.track_turns(entry, path, matches!(change, Change::Deleted(_)));
        }
        match change {
            Change::Created(path) if Self::under(path, &self.cfg.marks).is_some() => {
                self.mark_created(zxid, path);
            }
            Change::Deleted(path) if self.lock_dir(tree::split(path).0).is_some() => {
                self.lock_node_deleted(entry, path);
            }
            Change::Deleted(path) => {
                let closed = matches!(entry.body, zk_proto::txnlog::TxnBody::CloseSession(_));
                if self.marks.remove(path).is_some() && closed {
                    if let Some(name) = Self::under(path, &self.cfg.marks) {
                        self.verdict.ended_by_server.push(ServerEnd {
                            name: name.to_owned(),
                            zxid,
                            time_ms: entry.header.time,
                        });
                    }
                }
            }
            Change::Created(path) => {
                let (dir, _) = tree::split(path);
                if let Some(l) = self.lock_dir(dir).cloned() {
                    self.first_node
                        .entry(entry.session_id())
                        .or_insert_with(|| (zxid, format!("created {path}")));
                    if let Some(inner) = &l.inner {
                        self.lease_created(zxid, entry.session_id(), &l, inner, path);
                    }
                } else if Self::under(path, &self.cfg.registers).is_some() {
                    // The initial value.
                    let data = self
                        .tree
                        .node(path)
                        .map(|n| n.data.clone())
                        .unwrap_or_default();
                    if let Some(v) = marks::parse_register(&data) {
                        self.registers.insert(
                            path.clone(),
                            Last {
                                value: v.value,
                                token: None,
                                lib: "?".into(),
                                granted: true,
                                zxid,
                                session: 0,
                            },
                        );
                    }
                }
            }
            Change::DataSet(path) if Self::under(path, &self.cfg.registers).is_some() => {
                self.written(zxid, entry.session_id(), path);
            }
            Change::DataSet(path) => {
                let hold = Self::under(path, &self.cfg.marks)
                    .and_then(|name| name.strip_prefix(marks::UNMARKED))
                    .map(str::to_owned);
                match hold {
                    Some(hold) => self.unmarked_record(zxid, path, hold),
                    None if Self::under(path, &self.cfg.marks).is_some() => {
                        self.verdict.errors.push(format!(
                            "zxid {zxid:#x}: {path} set under the marks (only an unmarked \
                             record's data changes)"
                        ));
                    }
                    None => {}
                }
            }
        }
    }

    /// A lock node deleted at `entry`: when a session other than its owner deleted it, each
    /// live mark naming it (with its token) ended there; when that session is the operator's,
    /// the node is remembered for the excusal.
    pub(super) fn lock_node_deleted(&mut self, entry: &TxnEntry, path: &str) {
        let (zxid, deleter) = (entry.zxid(), entry.session_id());
        let Some(life) = self.tree.lives.iter().rev().find(|n| n.path == path) else {
            return;
        };
        if life.owner == Some(deleter) {
            return; // its owner's delete or closeSession
        }
        let (czxid, owner) = (life.czxid, life.owner);
        let by_operator = self.cfg.operators.contains(&deleter);
        if by_operator {
            self.operator_deleted.insert(path.to_owned(), (zxid, czxid));
        } else if let Some(owner) = owner {
            // Another client's node: only its owner (or the operator) may take it away.
            self.first_node
                .entry(deleter)
                .or_insert_with(|| (zxid, format!("deleted {path}")));
            let label = self
                .lock_dir(tree::split(path).0)
                .map_or_else(|| "?".to_owned(), |l| l.label.clone());
            let lib = self.lib_of(deleter);
            let text = format!(
                "{path} of session {owner:#x} (czxid {czxid:#x}) deleted by session {deleter:#x}"
            );
            self.verdict
                .violate(zxid, &label, &lib, |r| &mut r.foreign_deletes, text);
        }
        for (mark, live) in &self.marks {
            let named = live
                .mark
                .holds
                .iter()
                .any(|h| h.node == path && h.token == czxid);
            if let Some(name) = Self::under(mark, &self.cfg.marks).filter(|_| named) {
                self.verdict.ended_by_delete.push(DeletedEnd {
                    name: name.to_owned(),
                    node: path.to_owned(),
                    zxid,
                    time_ms: entry.header.time,
                    deleter,
                    by_operator,
                });
            }
        }
    }

    /// An unmarked record made or set at `zxid` ([`marks`]): kept by its hold's name for
    /// [`Verdict::account`].
    pub(super) fn unmarked_record(&mut self, zxid: i64, path: &str, hold: String) {
        let data = self
            .tree
            .node(path)
            .map(|n| n.data.clone())
            .unwrap_or_default();
        match marks::parse_unmarked(&data) {
            Some(u) => {
                self.verdict.unmarked.insert(
                    hold,
                    UnmarkedHold {
                        zxid,
                        lost_after_ms: u.lost_after_ms,
                    },
                );
            }
            None => {
                let data = String::from_utf8_lossy(&data).into_owned();
                self.verdict.errors.push(format!(
                    "zxid {zxid:#x}: unmarked record {path} with data {data:?}"
                ));
            }
        }
    }

    /// After a node of a `marked_when_granted` directory came or went: a deleted node that
    /// stayed granted and unmarked past the bound is a missed turn; every node the rule now
    /// grants and no mark has named is granted since now, if it was not already.
    pub(super) fn track_turns(&mut self, entry: &TxnEntry, path: &str, deleted: bool) {
        let (dir, _) = tree::split(path);
        let Some(l) = self
            .lock_dir(dir)
            .filter(|l| l.marked_when_granted)
            .cloned()
        else {
            return;
        };
        let (zxid, now) = (entry.zxid(), entry.header.time);
        if deleted {
            self.claimed.remove(path);
            if let Some((since_zxid, since)) = self.granted_since.remove(path) {
                let idle = now - since;
                if self.cfg.idle_bound_ms.is_some_and(|bound| idle > bound) {
                    let owner = self.tree.lives.iter().rev().find(|n| n.path == path);
                    let session = owner.and_then(|n| n.owner).unwrap_or(0);
                    let text = format!(
                        "{path} of session {session:#x} granted at zxid {since_zxid:#x} and \
                         left unmarked for {idle} ms, until it went"
                    );
                    let count: fn(&mut Row) -> &mut u64 = |r| &mut r.missed_turns;
                    self.blamed_later
                        .push((zxid, session, l.label.clone(), text, count));
                }
            }
        }
        let granted: Vec<String> = self
            .tree
            .children(dir)
            .filter(|name| rules::granted(l.kind, self.tree.children(dir), name))
            .map(|name| format!("{dir}/{name}"))
            .collect();
        for node in granted {
            if !self.claimed.contains(&node) {
                self.granted_since.entry(node).or_insert((zxid, now));
            }
        }
    }

    pub(super) fn lease_created(
        &mut self,
        zxid: i64,
        session: i64,
        l: &LockDir,
        inner: &str,
        path: &str,
    ) {
        let holds_inner = self.tree.children(inner).any(|name| {
            let node = format!("{inner}/{name}");
            self.tree
                .node(&node)
                .is_some_and(|n| n.owner == Some(session))
                && rules::granted(Kind::Exclusive, self.tree.children(inner), name)
        });
        if !holds_inner {
            let text =
                format!("lease {path} created by session {session:#x} without the inner lock");
            let count: fn(&mut Row) -> &mut u64 = |r| &mut r.no_inner;
            self.blamed_later
                .push((zxid, session, l.label.clone(), text, count));
        }
    }
}
