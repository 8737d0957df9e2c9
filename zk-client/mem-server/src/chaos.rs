//! [`Fault`]: the faults [`super::MemServer`] can be told to make, and a seeded pick of one.

use crate::seeded::Seeded;

/// A fault to apply with [`super::MemServer::apply`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Drop the session's connection ([`super::MemServer::cut`]).
    Cut(i64),
    /// Stall (`true`) or restart (`false`) the session's connection
    /// ([`super::MemServer::stall`]).
    Stall(i64, bool),
    /// Expire the session ([`super::MemServer::expire`]).
    Expire(i64),
    /// Refuse new connections, or accept them again ([`super::MemServer::refuse`]).
    Refuse(bool),
    /// Cut everything and refuse ([`super::MemServer::down`]).
    Down,
    /// Accept again ([`super::MemServer::up`]).
    Up,
}

impl Fault {
    /// Picks a fault against one of `sessions` with `rng`: a cut (7 in 10), a stall started
    /// or lifted (1 in 4, evenly), or an expiry (1 in 20). `None` without sessions. Stalls
    /// picked here are lifted only by a later pick (or the caller); refusals and outages are
    /// left to the caller, who knows how long they should last.
    pub(crate) fn pick(rng: &mut Seeded, sessions: &[i64]) -> Option<Fault> {
        let session = *sessions.get(rng.index(sessions.len()))?;
        Some(match rng.below(20) {
            0..=13 => Fault::Cut(session),
            14..=18 => Fault::Stall(session, rng.below(2) == 0),
            _ => Fault::Expire(session),
        })
    }
}
