//! A lock's figures: the [`Range`] of events kept, and the [`Tally`] counting them into a
//! [`Summary`] as they happen.

use super::{EndCause, Event, EventKind, LiveNode};

/// Which events to report: those whose time falls within `from..=to` (ms since the epoch).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Range {
    /// The earliest, if any.
    pub from: Option<i64>,
    /// The latest, if any.
    pub to: Option<i64>,
}

impl Range {
    /// Whether `event` falls in the range.
    pub fn contains(&self, event: &Event) -> bool {
        self.from.is_none_or(|f| event.at.time >= f) && self.to.is_none_or(|t| event.at.time <= t)
    }
}

/// One lock's figures over the events in a range.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    /// Nodes created.
    pub queued: usize,
    /// Grants.
    pub grants: usize,
    /// The longest queue (nodes of the lock, holders included).
    pub max_queue: usize,
    /// The longest wait before a grant, ms.
    pub max_wait_ms: Option<i64>,
    /// The mean wait before a grant, ms.
    pub mean_wait_ms: Option<i64>,
    /// Holds ended by their own session's delete.
    pub released: usize,
    /// Holds ended by another session's delete.
    pub deleted_by_other: usize,
    /// Holds ended by their session's expiry.
    pub expired: usize,
    /// Holds ended by their session's close.
    pub closed: usize,
    /// Waits that ended without a grant.
    pub abandoned: usize,
    /// For each hold ended by expiry: the time to the next grant, ms (`None`: none came).
    pub expiry_to_next_grant_ms: Vec<Option<i64>>,
    /// Nodes still there at the end.
    pub live: usize,
    /// Of those, orphans.
    pub orphans: usize,
}

/// Tallies a lock's events into a [`Summary`], one at a time.
#[derive(Debug, Clone, Default)]
pub struct Tally {
    summary: Summary,
    wait_sum: i64,
    waits: i64,
    /// Expiries whose next grant is still to come: (index in `expiry_to_next_grant_ms`,
    /// the end's time).
    pending: Vec<(usize, i64)>,
}

impl Tally {
    /// Counts `e`.
    pub fn add(&mut self, e: &Event) {
        let s = &mut self.summary;
        s.max_queue = s.max_queue.max(e.queue);
        match &e.kind {
            EventKind::Queued => s.queued += 1,
            EventKind::Present { .. } => {}
            EventKind::Granted { wait_ms } => {
                s.grants += 1;
                s.max_wait_ms = Some(s.max_wait_ms.map_or(*wait_ms, |m| m.max(*wait_ms)));
                self.wait_sum += wait_ms;
                self.waits += 1;
            }
            EventKind::Ended {
                cause,
                held: true,
                next_grant_ms,
                ..
            } => match cause {
                EndCause::OwnDelete => s.released += 1,
                EndCause::DeletedBy(_) => s.deleted_by_other += 1,
                EndCause::Expired => {
                    s.expired += 1;
                    if next_grant_ms.is_none() {
                        self.pending
                            .push((s.expiry_to_next_grant_ms.len(), e.at.time));
                    }
                    s.expiry_to_next_grant_ms.push(*next_grant_ms);
                }
                EndCause::Closed => s.closed += 1,
            },
            EventKind::Ended { held: false, .. } => s.abandoned += 1,
        }
    }

    /// The lock's next grant came at `time`: the expiries waiting for one learn it.
    pub fn granted(&mut self, time: i64) {
        for (i, ended) in self.pending.drain(..) {
            if let Some(slot) = self.summary.expiry_to_next_grant_ms.get_mut(i) {
                *slot = Some(time - ended);
            }
        }
    }

    /// The figures, with the nodes left at the end.
    pub fn finish(mut self, live: &[LiveNode]) -> Summary {
        self.summary.mean_wait_ms = (self.waits > 0).then(|| self.wait_sum / self.waits);
        self.summary.live = live.len();
        self.summary.orphans = live.iter().filter(|l| l.orphan).count();
        self.summary
    }
}
