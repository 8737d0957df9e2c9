//! [`Fault`]: the faults [`super::SimServer`] can be told to make, and a seeded pick of one.

use crate::rng::Rng;

/// A fault to apply with [`super::SimServer::apply`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Drop the session's connection ([`super::SimServer::cut`]).
    Cut(i64),
    /// Stall (`true`) or restart (`false`) the session's connection
    /// ([`super::SimServer::stall`]).
    Stall(i64, bool),
    /// Expire the session ([`super::SimServer::expire`]).
    Expire(i64),
    /// Refuse new connections, or accept them again ([`super::SimServer::refuse`]).
    Refuse(bool),
    /// Cut everything and refuse ([`super::SimServer::down`]).
    Down,
    /// Accept again ([`super::SimServer::up`]).
    Up,
}

impl Fault {
    /// Picks a fault against one of `sessions` with `rng`: a cut (7 in 10), a stall started
    /// or lifted (1 in 4, evenly), or an expiry (1 in 20). `None` without sessions. Stalls
    /// picked here are lifted only by a later pick (or the caller); refusals and outages are
    /// left to the caller, who knows how long they should last.
    pub fn pick(rng: &mut Rng, sessions: &[i64]) -> Option<Fault> {
        let session = *sessions.get(rng.index(sessions.len()))?;
        Some(match rng.below(20) {
            0..=13 => Fault::Cut(session),
            14..=18 => Fault::Stall(session, rng.chance(500)),
            _ => Fault::Expire(session),
        })
    }
}
