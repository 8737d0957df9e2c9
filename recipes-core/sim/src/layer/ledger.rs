//! [`Ledger`]: every hold the async layer's tasks believe they have, checked against the
//! server's tree at the instant each begins.
//!
//! A hold counts while its node exists on the server (a hold whose session expired, or whose
//! node someone deleted, is over whatever its task believes: that is what fencing is for). So
//! a hold that begins while another counting hold of the same thing forbids it is a real
//! overlap, seen at the instant it happens: the server is in this process and its tree is the
//! truth.

use std::collections::BTreeMap;

use crate::wire::SimServer;

/// How a hold may share its thing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Alone (a mutex, a member of a multi-lock, a semaphore mutex, a write lock).
    Exclusive,
    /// With other readers, not with a writer (its own downgraded write excepted).
    Read,
    /// With other writers' nothing, and with readers' nothing.
    Write,
    /// One of at most `n` leases.
    Lease(u32),
}

/// One hold, as its task sees it.
#[derive(Debug, Clone)]
struct Hold {
    /// What is held: a lock path (or a semaphore's).
    thing: String,
    mode: Mode,
    node: String,
}

/// The holds believed now, and what went wrong.
#[derive(Debug, Default)]
pub struct Ledger {
    live: BTreeMap<u64, Hold>,
    next: u64,
    /// The last exclusive token per thing (fencing tokens must increase).
    tokens: BTreeMap<String, i64>,
    /// Violations, in order (the first is reported).
    pub violations: Vec<String>,
    /// Holds recorded.
    pub holds: u64,
}

impl Ledger {
    /// Records a hold that begins now, checked against the live holds whose nodes still exist
    /// on `server`. Returns its id (for [`Ledger::end`]).
    pub fn begin(
        &mut self,
        server: &SimServer,
        thing: &str,
        mode: Mode,
        node: &str,
        token: i64,
        continues: Option<u64>,
    ) -> u64 {
        self.holds += 1;
        if server.exists(node).is_none() {
            self.violations.push(format!(
                "{thing}: a hold began on {node}, which does not exist"
            ));
        }
        let counting: Vec<(u64, Hold)> = self
            .live
            .iter()
            .filter(|(_, h)| h.thing == thing && server.exists(&h.node).is_some())
            .map(|(id, h)| (*id, h.clone()))
            .collect();
        for (id, other) in &counting {
            let allowed = match (mode, other.mode) {
                (Mode::Read, Mode::Read) => true,
                (Mode::Read, Mode::Write) => continues == Some(*id),
                (Mode::Lease(_), Mode::Lease(_)) => true,
                _ => false,
            };
            if !allowed {
                self.violations.push(format!(
                    "{thing}: {mode:?} hold on {node} began while {:?} hold on {} was held",
                    other.mode, other.node
                ));
            }
        }
        if let Mode::Lease(n) = mode {
            let leases = counting.len() + 1;
            if leases > n as usize {
                self.violations
                    .push(format!("{thing}: {leases} leases held at once, of {n}"));
            }
        }
        if matches!(mode, Mode::Exclusive | Mode::Write) {
            if let Some(last) = self.tokens.get(thing) {
                if token <= *last {
                    self.violations.push(format!(
                        "{thing}: fencing token {token} after {last}: not increasing"
                    ));
                }
            }
            self.tokens.insert(thing.to_owned(), token);
        }
        self.next += 1;
        let id = self.next;
        self.live.insert(
            id,
            Hold {
                thing: thing.to_owned(),
                mode,
                node: node.to_owned(),
            },
        );
        id
    }

    /// The hold ends now (its release is about to start, or its guard to be dropped).
    pub fn end(&mut self, id: u64) {
        self.live.remove(&id);
    }

    /// Records a violation found elsewhere (a deadline overrun, a waiter failed by an outage
    /// its session survived, a node left).
    pub fn violation(&mut self, what: String) {
        self.violations.push(what);
    }

    /// How many holds are believed now.
    pub fn live(&self) -> usize {
        self.live.len()
    }
}
