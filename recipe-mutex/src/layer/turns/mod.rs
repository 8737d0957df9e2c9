//! Turns: how many abandoned attempts may still be cleaning up, per session and lock path,
//! before a new attempt waits ([`wait`]).
//!
//! An acquire dropped mid-way leaves its node to a background cleanup; without a bound, a
//! program that cancels in a loop piles up nodes faster than they are deleted. So:
//!
//! - Each session and lock path has a gate with [`PENDING_CLEANUPS`] places. An abandoned
//!   attempt ([`Ticket::abandon`]) keeps its place until its cleanup is done.
//! - A new attempt starts at once while a place is free and nobody waits; otherwise it queues,
//!   and each place given back goes to the first waiter (one attempt per finished cleanup,
//!   never the whole queue). A waiter waits within its deadline and one
//!   [`DEADLINE_GRACE`](recipes_core::DEADLINE_GRACE), and never past the session's end.
//! - Bound: once the places are taken, a session's nodes under a lock path are those of the
//!   attempts already running plus [`PENDING_CLEANUPS`] cleanups', however many attempts wait
//!   and are cancelled.
//! - Cost, only once every place was taken: a waiter at the gate has no node yet, so it joins
//!   the server's queue behind later waiters of other processes. Without cancellations nothing
//!   waits here.
//! - No identity: every attempt counts alike (the gates are the process's), so each `lock()`
//!   call stays its own participant, and a program making a new handle per attempt is bounded
//!   too.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, PoisonError};

use tokio::time::Instant;
use zk_client::Client;

use crate::Error;
use crate::ids::IdHasher;

mod gate;

use gate::Gate;
pub use gate::Ticket;

/// How many places each session and lock path's gate has: abandoned attempts still cleaning
/// up (and attempts let in in their place) beyond which a new attempt waits for one.
pub const PENDING_CLEANUPS: usize = 4;

/// A gate's key: the session and the lock's path (shared with the turns let in there, which
/// take the gate out of the map once nobody uses it).
type Key = (i64, Arc<str>);

/// A gate's key, owned or borrowed: looked up as `(i64, &str)`, so a lookup allocates nothing.
trait KeyRef {
    fn parts(&self) -> (i64, &str);
}

impl KeyRef for Key {
    fn parts(&self) -> (i64, &str) {
        (self.0, &*self.1)
    }
}

impl KeyRef for (i64, &str) {
    fn parts(&self) -> (i64, &str) {
        *self
    }
}

impl<'a> std::borrow::Borrow<dyn KeyRef + 'a> for Key {
    fn borrow(&self) -> &(dyn KeyRef + 'a) {
        self
    }
}

// Hashed and compared as the tuple is, so both forms find the same entry.
impl std::hash::Hash for dyn KeyRef + '_ {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.parts().hash(state);
    }
}

impl PartialEq for dyn KeyRef + '_ {
    fn eq(&self, other: &Self) -> bool {
        self.parts() == other.parts()
    }
}

impl Eq for dyn KeyRef + '_ {}

#[derive(Default)]
struct Gates {
    gates: HashMap<Key, Arc<Gate>, std::hash::BuildHasherDefault<IdHasher>>,
    /// The size at which the next sweep of unused gates runs (amortized O(1) per wait).
    sweep_at: usize,
}

/// Below this many gates, no sweep.
const MIN_SWEEP: usize = 64;

static GATES: LazyLock<Mutex<Gates>> = LazyLock::new(Mutex::default);

/// What the driver keeps for an attempt (shared by its retries).
pub type Turn = Arc<TurnOf>;

/// An attempt's ticket at its gate, and the gate's key: when the last attempt using a gate
/// is done (nobody waits there, no cleanup is pending) and the process has more than
/// 64 (`MIN_SWEEP`) gates, the gate leaves the map at once, so a process holding thousands of
/// locks keeps nothing here for them (a gate is made afresh by the next attempt), while one
/// cycling a few locks keeps reusing theirs. The sweep in [`wait`] still takes what this
/// leaves (a gate let go while another attempt briefly held it).
#[derive(Debug)]
pub struct TurnOf {
    ticket: Option<Ticket>,
    gate: Arc<Gate>,
    session: i64,
    path: Arc<str>,
}

impl TurnOf {
    /// The attempt's cleanup goes on in the background; see [`Ticket::abandon`].
    pub fn abandon(&self) {
        if let Some(ticket) = &self.ticket {
            ticket.abandon();
        }
    }
}

impl Drop for TurnOf {
    fn drop(&mut self) {
        // Its place (if it took one) given back first.
        drop(self.ticket.take());
        let mut g = GATES.lock().unwrap_or_else(PoisonError::into_inner);
        // A few gates stay, so a lock taken again and again reuses its gate (no allocation
        // per cycle); past that many, a gate nobody uses goes at once.
        if g.gates.len() <= MIN_SWEEP {
            return;
        }
        // Clones of a gate are made under this lock only: the map's and ours alone means
        // nobody waits there and no other attempt or cleanup holds a place.
        if Arc::strong_count(&self.gate) != 2 || self.gate.taken() != 0 {
            return;
        }
        let key = (self.session, &*self.path);
        if g.gates
            .get(&key as &dyn KeyRef)
            .is_some_and(|in_map| Arc::ptr_eq(in_map, &self.gate))
        {
            g.gates.remove(&key as &dyn KeyRef);
        }
    }
}

/// A turn for a new attempt on lock `path` of `client`'s session: at once while fewer than
/// [`PENDING_CLEANUPS`] places are taken there and nobody waits, else (in arrival order) once
/// a finished cleanup hands its place to this attempt, which keeps it while it runs.
/// `Ok(None)` when `deadline` and one [`DEADLINE_GRACE`](recipes_core::DEADLINE_GRACE) pass
/// first ([`Error::Unavailable`] if no server is connected then): an attempt with a deadline ends within its deadline and one grace, as the machines
/// do. The session's end is reported at once (never hidden behind a cleanup). Cancel-safe:
/// dropped while waiting, nothing is taken.
pub async fn wait(
    client: &Client,
    path: &str,
    deadline: Option<Instant>,
) -> Result<Option<Turn>, Error> {
    let key = (client.session_id(), path);
    let (gate, shared_path) = {
        let mut g = GATES.lock().unwrap_or_else(PoisonError::into_inner);
        if g.gates.len() >= g.sweep_at.max(MIN_SWEEP) {
            // Gates nobody uses any more.
            g.gates.retain(|_, gate| Arc::strong_count(gate) > 1);
            g.sweep_at = 2 * g.gates.len();
        }
        match g.gates.get_key_value(&key as &dyn KeyRef) {
            Some(((_, shared), gate)) => (gate.clone(), shared.clone()),
            None => {
                let gate = Arc::new(Gate::new(PENDING_CLEANUPS));
                let shared: Arc<str> = Arc::from(path);
                g.gates.insert((key.0, shared.clone()), gate.clone());
                (gate, shared)
            }
        }
    };
    let turn = |ticket| {
        Arc::new(TurnOf {
            ticket: Some(ticket),
            gate: gate.clone(),
            session: key.0,
            path: shared_path.clone(),
        })
    };
    let entry = gate.enter();
    tokio::pin!(entry);
    if crate::plant::active(crate::plant::Plant::TurnIgnoresDeadline) {
        return Ok(Some(turn(entry.await)));
    }
    let mut states = client.state_watch();
    let until = deadline.map(crate::layer::clock::with_grace);
    loop {
        let state = *states.borrow_and_update();
        if state.is_terminal() {
            return Err(crate::error::session_error(state));
        }
        tokio::select! {
            biased;
            ticket = &mut entry => return Ok(Some(turn(ticket))),
            changed = states.changed() => {
                if changed.is_err() {
                    return Err(Error::Zk(zk_client::Error::Closed));
                }
            }
            // Behind this process's own pending cleanups at the deadline: busy, unless no
            // server is there to finish them.
            _ = crate::layer::clock::sleep_until(until) => return match client.outage() {
                Some(outage) => Err(Error::Unavailable(outage)),
                None => Ok(None),
            },
        }
    }
}

/// How many places at the gate of lock `path` of `client`'s session are taken: abandoned
/// attempts still cleaning up, and attempts let in in the place of a finished cleanup.
pub fn pending(client: &Client, path: &str) -> usize {
    let g = GATES.lock().unwrap_or_else(PoisonError::into_inner);
    g.gates
        .get(&(client.session_id(), path) as &dyn KeyRef)
        .map_or(0, |gate| gate.taken())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// Whether the process's map has a gate for `key`.
    fn has_gate(key: (i64, &str)) -> bool {
        let g = GATES.lock().unwrap();
        g.gates.contains_key(&key as &dyn KeyRef)
    }

    /// A turn at a gate put in the map as `wait` does (session ids below zero: no client's,
    /// so no other test's `wait` meets them).
    async fn turn_at(session: i64, path: &str) -> Turn {
        let (gate, shared) = {
            let mut g = GATES.lock().unwrap();
            let key = (session, path);
            match g.gates.get_key_value(&key as &dyn KeyRef) {
                Some(((_, shared), gate)) => (gate.clone(), shared.clone()),
                None => {
                    let gate = Arc::new(Gate::new(PENDING_CLEANUPS));
                    let shared: Arc<str> = Arc::from(path);
                    g.gates.insert((session, shared.clone()), gate.clone());
                    (gate, shared)
                }
            }
        };
        let ticket = gate.enter().await;
        Arc::new(TurnOf {
            ticket: Some(ticket),
            gate,
            session,
            path: shared,
        })
    }

    /// These tests one at a time, each starting without the gates of earlier ones (session
    /// ids below zero are theirs: no client has one).
    async fn serial() -> tokio::sync::MutexGuard<'static, ()> {
        static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
        let guard = SERIAL.lock().await;
        GATES
            .lock()
            .unwrap()
            .gates
            .retain(|(session, _), _| *session >= 0);
        guard
    }

    /// More than [`MIN_SWEEP`] gates in use (session ids below zero, kept by the caller),
    /// so that an idle gate is taken out at once.
    async fn many_gates_in_use(session: i64) -> Vec<Turn> {
        let mut turns = Vec::new();
        for i in 0..=MIN_SWEEP {
            turns.push(turn_at(session, &format!("/turns/busy-{i}")).await);
        }
        turns
    }

    #[tokio::test]
    async fn a_few_idle_gates_stay_for_the_next_attempt() {
        let _serial = serial().await;
        let key = (-3, "/turns/c");
        let turn = turn_at(key.0, key.1).await;
        assert!(GATES.lock().unwrap().gates.len() <= MIN_SWEEP);
        drop(turn);
        assert!(has_gate(key), "kept for the next cycle of the same lock");
    }

    #[tokio::test]
    async fn a_gate_leaves_the_map_with_the_last_attempt_using_it() {
        let _serial = serial().await;
        let _busy = many_gates_in_use(-11).await;
        let key = (-1, "/turns/a");
        let first = turn_at(key.0, key.1).await;
        let second = turn_at(key.0, key.1).await;
        drop(first);
        assert!(has_gate(key), "another attempt still uses it");
        drop(second);
        assert!(
            !has_gate(key),
            "nobody uses it: gone at once, not at the next sweep"
        );
    }

    #[tokio::test]
    async fn an_abandoned_attempt_keeps_its_gate_until_its_cleanup_is_done() {
        let _serial = serial().await;
        let _busy = many_gates_in_use(-12).await;
        let key = (-2, "/turns/b");
        let turn = turn_at(key.0, key.1).await;
        turn.abandon();
        let cleanup = turn.clone();
        drop(turn);
        assert!(has_gate(key), "the cleanup still takes a place");
        let waiter = turn_at(key.0, key.1).await;
        drop(cleanup);
        assert!(has_gate(key), "the waiter let in holds it");
        drop(waiter);
        assert!(!has_gate(key));
    }

    #[test]
    fn a_borrowed_key_finds_the_gate_of_its_owned_key() {
        let mut gates: HashMap<Key, u32, std::hash::BuildHasherDefault<IdHasher>> =
            HashMap::default();
        gates.insert((7, Arc::from("/locks/a")), 1);
        gates.insert((8, Arc::from("/locks/a")), 2);
        gates.insert((7, Arc::from("/locks/b")), 3);
        assert_eq!(gates.get(&(7_i64, "/locks/a") as &dyn KeyRef), Some(&1));
        assert_eq!(gates.get(&(8_i64, "/locks/a") as &dyn KeyRef), Some(&2));
        assert_eq!(gates.get(&(7_i64, "/locks/b") as &dyn KeyRef), Some(&3));
        assert_eq!(gates.get(&(9_i64, "/locks/a") as &dyn KeyRef), None);
    }
}
