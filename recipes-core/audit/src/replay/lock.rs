//! The per-lock bookkeeping: each followed node's [`Entry`] (made, granted, session), the
//! lock's events and figures, and [`grant`], which marks a node granted and tells the holds
//! that ended before it how long the lock waited.

use std::collections::BTreeMap;

use super::{Event, EventKind, LockKind, Range, Stamp, Tally};

/// A node of the tree, as much as the audit needs.
#[derive(Debug, Clone, Copy)]
pub(super) struct Meta {
    pub(super) made: Stamp,
    pub(super) owner: i64,
}

/// A lock node the audit follows.
#[derive(Debug, Clone)]
pub(super) struct Entry {
    pub(super) made: Stamp,
    pub(super) session: i64,
    /// When it was granted (`None`: waiting); for a hold at the start, the start.
    pub(super) granted: Option<Stamp>,
    /// Held at the start, grant time unknown.
    pub(super) from_start: bool,
    /// For a lease without a known size: the inner lock node its session held when it made
    /// the lease.
    pub(super) inner: Option<String>,
}

#[derive(Debug)]
pub(super) struct Lock {
    pub(super) kind: LockKind,
    pub(super) entries: BTreeMap<String, Entry>,
    pub(super) events: Vec<Event>,
    /// Ends of holds waiting for the lock's next grant (indices into `events`).
    pub(super) awaiting_grant: Vec<usize>,
    pub(super) empty_since: Option<Stamp>,
    /// Whether more hold than the lock allows (reported when it starts).
    pub(super) overlapping: bool,
    /// The events kept.
    pub(super) keep: Range,
    /// Whether events are stored (else only tallied).
    pub(super) store: bool,
    /// The figures over `keep`.
    pub(super) tally: Tally,
}

impl Lock {
    /// Tallies `event` and keeps it if it is in the range kept: its index if stored.
    pub(super) fn record(&mut self, event: Event) -> Option<usize> {
        if !self.keep.contains(&event) {
            return None;
        }
        self.tally.add(&event);
        self.store.then(|| {
            self.events.push(event);
            self.events.len() - 1
        })
    }
}

pub(super) fn grant(lock: &mut Lock, name: &str, at: Stamp) {
    let Some(entry) = lock.entries.get_mut(name) else {
        return;
    };
    entry.granted = Some(at);
    let (session, made) = (entry.session, entry.made);
    lock.tally.granted(at.time);
    for i in std::mem::take(&mut lock.awaiting_grant) {
        if let Some(Event {
            at: ended,
            kind: EventKind::Ended { next_grant_ms, .. },
            ..
        }) = lock.events.get_mut(i)
        {
            *next_grant_ms = Some(at.time - ended.time);
        }
    }
    let queue = lock.entries.len();
    lock.record(Event {
        at,
        node: name.to_owned(),
        session,
        kind: EventKind::Granted {
            wait_ms: at.time - made.time,
        },
        queue,
    });
}
