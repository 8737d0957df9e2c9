//! The tree being replayed: the starting tree's sessions and nodes, the starting locks judged
//! as they stand, and each node added (from the starting tree or a create) to its lock.

use std::collections::BTreeMap;

use recipes_core::semaphore::LOCKS_DIR;

use super::lock::{Entry, Lock, Meta};
use super::rules::{holders, is_member, kind_of};
use super::{Audit, Event, EventKind, LockKind, Stamp, Tally, join, split};

impl Audit {
    /// Adds a session alive in the starting tree, with its timeout in ms.
    pub fn add_session(&mut self, id: i64, timeout_ms: i32) {
        self.history.session_timeouts.insert(id, timeout_ms);
    }

    /// Adds a node of the starting tree (a snapshot's node: its path, creation and ephemeral
    /// owner). Parents before children; the root (`""` or `"/"`) is skipped.
    pub fn add_node(&mut self, path: &str, made: Stamp, owner: i64) {
        if path.is_empty() || path == "/" {
            return;
        }
        self.insert(path, made, owner);
    }

    /// Ends the starting tree: its locks are judged as they stand, at `zxid` (the snapshot's;
    /// `None` when there is no starting tree). A lease of a semaphore whose size is not known
    /// holds at the start unless its session holds the inner lock (then it waits for the
    /// count).
    pub fn start(&mut self, zxid: Option<i64>) {
        self.history.start_zxid = zxid;
        self.applied = zxid;
        let at = Stamp {
            zxid: zxid.unwrap_or(0),
            time: 0,
        };
        let dirs: Vec<String> = self.locks.keys().cloned().collect();
        // The inner locks first: the leases' standing depends on them.
        let (leases, others): (Vec<String>, Vec<String>) = dirs.into_iter().partition(|d| {
            self.locks
                .get(d)
                .is_some_and(|l| l.kind == LockKind::Leases { max: None })
        });
        for dir in others.into_iter().chain(leases) {
            let kids: Vec<String> = self
                .children
                .get(&dir)
                .map(|k| k.iter().cloned().collect())
                .unwrap_or_default();
            let Some(kind) = self.locks.get(&dir).map(|l| l.kind) else {
                continue;
            };
            let held: Vec<(String, Option<String>)> = if kind == (LockKind::Leases { max: None }) {
                let sessions: Vec<(String, i64)> = self
                    .locks
                    .get(&dir)
                    .map(|l| {
                        l.entries
                            .iter()
                            .map(|(n, e)| (n.clone(), e.session))
                            .collect()
                    })
                    .unwrap_or_default();
                sessions
                    .into_iter()
                    .map(|(n, s)| (n, self.inner_lock_of(&dir, s)))
                    .collect()
            } else {
                holders(kind, kids).into_iter().map(|n| (n, None)).collect()
            };
            let Some(lock) = self.locks.get_mut(&dir) else {
                continue;
            };
            let queue = lock.entries.len();
            // Kept whatever the range: the state the record starts from.
            let mut present = Vec::new();
            for (name, entry) in lock.entries.iter_mut() {
                let holding = held.iter().any(|(n, inner)| n == name && inner.is_none());
                if holding {
                    entry.granted = Some(at);
                    entry.from_start = true;
                } else if let Some((_, inner)) = held.iter().find(|(n, _)| n == name) {
                    entry.inner = inner.clone();
                }
                present.push(Event {
                    at: entry.made,
                    node: name.clone(),
                    session: entry.session,
                    kind: EventKind::Present {
                        made: entry.made,
                        holding,
                    },
                    queue,
                });
            }
            for e in &present {
                if lock.keep.contains(e) {
                    lock.tally.add(e);
                }
            }
            lock.events.extend(present);
        }
    }

    pub(super) fn insert(&mut self, path: &str, made: Stamp, owner: i64) -> Option<String> {
        self.nodes.insert(path.to_owned(), Meta { made, owner });
        let (dir, name) = split(path)?;
        self.children
            .entry(dir.to_owned())
            .or_default()
            .insert(name.to_owned());
        if !self.locks.contains_key(dir) {
            let mut kind = kind_of(dir, name)?;
            if !self.wanted(dir) {
                return None;
            }
            if let LockKind::Leases { max } = &mut kind {
                let base = split(dir).map(|(b, _)| b).unwrap_or_default();
                *max = self.leases.iter().find(|(b, _)| b == base).map(|(_, n)| *n);
                if let Some(inner) = self.locks.get_mut(&join(base, LOCKS_DIR)) {
                    inner.kind = LockKind::SemaphoreInnerLock;
                }
            }
            self.locks.insert(
                dir.to_owned(),
                Lock {
                    kind,
                    entries: BTreeMap::new(),
                    events: Vec::new(),
                    awaiting_grant: Vec::new(),
                    empty_since: None,
                    overlapping: false,
                    keep: self.keep,
                    store: self.store,
                    tally: Tally::default(),
                },
            );
        }
        let inner = self.inner_lock_of(dir, owner);
        let lock = self.locks.get_mut(dir)?;
        if !is_member(lock.kind, name) {
            return Some(dir.to_owned());
        }
        lock.entries.insert(
            name.to_owned(),
            Entry {
                made,
                session: owner,
                granted: None,
                from_start: false,
                inner,
            },
        );
        Some(dir.to_owned())
    }

    /// For a lease in `dir` (a `leases` directory without a known size) made by `session`:
    /// the inner lock node that session holds.
    fn inner_lock_of(&self, dir: &str, session: i64) -> Option<String> {
        let lock = self.locks.get(dir)?;
        if lock.kind != (LockKind::Leases { max: None }) {
            return None;
        }
        let base = split(dir)?.0;
        let inner_dir = join(base, LOCKS_DIR);
        let inner = self.locks.get(&inner_dir)?;
        inner
            .entries
            .iter()
            .find(|(_, e)| e.session == session && e.granted.is_some())
            .map(|(name, _)| join(&inner_dir, name))
    }
}
