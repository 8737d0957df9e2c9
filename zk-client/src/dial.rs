//! [`Dialer`]: which server to try next, and when, as plain data. No IO, no clock (time is
//! given), and a seeded random number generator.
//!
//! The rules are the Java client's (`StaticHostProvider`, `ClientCnxn`), with its gaps closed:
//! - the connect string's servers are tried in a random order (so clients spread over the
//!   ensemble), one after the other, round after round; an attempt on a server tries every
//!   address its name resolves to, shuffled, within the attempt's budget (the session task
//!   does that);
//! - for the first session, one round: then each server's failure is reported (the one
//!   server's error itself when the connect string names one);
//! - after an established connection is lost, the next server in this client's order after
//!   a pause taken at random up to [`RECONNECT_SPREAD`] (200 ms; the Java client pauses up to
//!   1 s, which is most of its failover time): the clients of a server that dies spread over
//!   the others by their own random orders, and over 200 ms, so that a thousand of them do
//!   not overflow the others' listen backlogs in one instant (each connect dropped there
//!   waits out TCP's 1 s retransmit); a longer pause comes only after a whole round failed;
//! - after a failed round, a pause that doubles from 100 ms up to 1 s, each taken at random
//!   between its half and its whole (clients that failed together do not retry together); a
//!   connection that ended within [`SHORT_LIVED`] of its handshake counts as a failed attempt,
//!   so a server that accepts and drops at once is not redialled in a tight loop;
//! - a read-write server found while on a read-only one is tried next;
//! - a new list of servers replaces the old one at once.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::Error;

/// A connection that ends sooner than this after its handshake counts as a failed attempt
/// toward the round's pause.
pub(crate) const SHORT_LIVED: Duration = Duration::from_secs(1);

/// The first pause after a round of failures; it doubles with each round.
const BACKOFF_FIRST: Duration = Duration::from_millis(100);

/// The longest pause after a round of failures.
const BACKOFF_MAX: Duration = Duration::from_secs(1);

/// After an established connection is lost, the next server is tried after a pause taken at
/// random up to this. Measured with `cargo xtask bench stampede`: 1,000 sessions of a member
/// killed came back with a p99 of 466 ms and all in 1,090 ms, against 1,550 and 1,556 ms
/// trying at once (their median 388 ms against 324).
pub(crate) const RECONNECT_SPREAD: Duration = Duration::from_millis(200);

/// What to do next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Step {
    /// Resolve this server of the connect string and connect to one of its addresses.
    Host(String, u16),
    /// Connect to this address (a read-write server found while on a read-only one).
    Addr(SocketAddr),
    /// Wait until then, then ask again.
    WaitUntil(Instant),
    /// The first session could not be established: report this, and stop.
    GiveUp(Error),
}

/// Which server to try next, and when.
#[derive(Debug)]
pub(crate) struct Dialer {
    hosts: Vec<(String, u16)>,
    /// Attempts on the connect string's servers so far.
    attempts: usize,
    /// Failed attempts in a row (a connection that did not hold counts as one).
    failures: usize,
    /// Attempts since the last established connection (the first session: one round).
    since_established: usize,
    /// No session was ever established.
    first: bool,
    preferred: Option<SocketAddr>,
    wait_until: Option<Instant>,
    /// When the connection now up was established.
    established_at: Option<Instant>,
    /// The failures since the last established connection (the first session: its round).
    failures_seen: Vec<Error>,
    rng: u64,
}

impl Dialer {
    /// A dialer over `hosts` (shuffled here with `seed`).
    pub(crate) fn new(mut hosts: Vec<(String, u16)>, seed: u64) -> Self {
        let mut rng = seed | 1;
        shuffle(&mut hosts, &mut rng);
        Self {
            hosts,
            attempts: 0,
            failures: 0,
            since_established: 0,
            first: true,
            preferred: None,
            wait_until: None,
            established_at: None,
            failures_seen: Vec::new(),
            rng,
        }
    }

    /// The servers, in the order they are tried.
    pub(crate) fn hosts(&self) -> &[(String, u16)] {
        &self.hosts
    }

    /// What to do at `now`.
    pub(crate) fn next(&mut self, now: Instant) -> Step {
        if let Some(until) = self.wait_until {
            if now < until {
                return Step::WaitUntil(until);
            }
            self.wait_until = None;
        }
        if let Some(addr) = self.preferred.take() {
            return Step::Addr(addr);
        }
        let n = self.hosts.len().max(1);
        if self.first && self.since_established >= n {
            let mut failures = std::mem::take(&mut self.failures_seen);
            return Step::GiveUp(match failures.len() {
                0 => Error::ConnectTimeout,
                1 => failures.pop().unwrap_or(Error::ConnectTimeout),
                _ => Error::NoServerReached { failures },
            });
        }
        let Some((host, port)) = self.hosts.get(self.attempts % n).cloned() else {
            return Step::GiveUp(Error::InvalidArgument("no server to connect to"));
        };
        self.attempts += 1;
        self.since_established += 1;
        Step::Host(host, port)
    }

    /// The attempt failed (resolution, connection, handshake) with `error`.
    pub(crate) fn failed(&mut self, now: Instant, error: Error) {
        self.failures += 1;
        if self.first {
            self.failures_seen.push(error);
        }
        let n = self.hosts.len().max(1);
        if !self.first && self.failures % n == 0 {
            let round = u32::try_from(self.failures / n - 1)
                .unwrap_or(u32::MAX)
                .min(4);
            let pause = BACKOFF_FIRST
                .saturating_mul(2u32.saturating_pow(round))
                .min(BACKOFF_MAX);
            // Between half the pause and the whole of it, at random.
            let half_ms = u64::try_from(pause.as_millis() / 2).unwrap_or(u64::MAX);
            let pause = Duration::from_millis(half_ms + self.random(half_ms + 1));
            self.wait_until = now.checked_add(pause);
        }
    }

    /// A session was established (or resumed) on the connection, at `now`.
    pub(crate) fn established(&mut self, now: Instant) {
        self.established_at = Some(now);
        self.first = false;
        self.since_established = 0;
        self.failures_seen.clear();
    }

    /// An established connection ended at `now`. `on_purpose`: we left it (a read-write
    /// server was found, the server left the list), and the next server is tried at once.
    /// Otherwise a connection that held is followed by a pause taken at random up to
    /// [`RECONNECT_SPREAD`]; one lost within [`SHORT_LIVED`] of its handshake counts as a
    /// failed attempt, toward the round's pause.
    pub(crate) fn lost(&mut self, now: Instant, on_purpose: bool) {
        let lived = self
            .established_at
            .take()
            .map(|at| now.saturating_duration_since(at));
        if on_purpose {
            // Left on purpose: the next server at once.
            self.failures = 0;
        } else if lived.is_some_and(|lived| lived >= SHORT_LIVED) {
            // A connection that held: the count of failed attempts starts again, and the
            // next server is tried within the spread.
            self.failures = 0;
            let spread_ms = u64::try_from(RECONNECT_SPREAD.as_millis()).unwrap_or(u64::MAX);
            self.wait_until = now.checked_add(Duration::from_millis(self.random(spread_ms + 1)));
        } else {
            self.failed(now, Error::ConnectionLoss);
        }
    }

    /// Try `addr` next (a read-write server found while on a read-only one).
    pub(crate) fn prefer(&mut self, addr: SocketAddr) {
        self.preferred = Some(addr);
    }

    /// A new list of servers. Whether `current` (the server of the connection, if any) is in
    /// it.
    pub(crate) fn set_hosts(
        &mut self,
        mut hosts: Vec<(String, u16)>,
        current: Option<&(String, u16)>,
    ) -> bool {
        shuffle(&mut hosts, &mut self.rng);
        self.hosts = hosts;
        self.attempts = 0;
        current.is_none_or(|c| self.hosts.contains(c))
    }

    /// Shuffles `addrs` (the addresses of one server, tried in this order).
    pub(crate) fn shuffle(&mut self, addrs: &mut [SocketAddr]) {
        shuffle(addrs, &mut self.rng);
    }

    /// A random number below `n` (0 if `n` is 0).
    pub(crate) fn random(&mut self, n: u64) -> u64 {
        if n == 0 {
            return 0;
        }
        next_random(&mut self.rng) % n
    }
}

/// xorshift64: the next number of `seed`'s sequence.
fn next_random(seed: &mut u64) -> u64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    *seed
}

/// Shuffles `items` (Fisher–Yates).
fn shuffle<H>(items: &mut [H], seed: &mut u64) {
    for i in (1..items.len()).rev() {
        let j = usize::try_from(next_random(seed) % (i as u64 + 1)).unwrap_or(0);
        items.swap(i, j);
    }
}

/// A random seed (the standard library's per-process random hasher keys).
pub(crate) fn random_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish()
        | 1
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn hosts(n: u16) -> Vec<(String, u16)> {
        (1..=n).map(|p| ("h".to_owned(), p)).collect()
    }

    fn host(step: Step) -> (String, u16) {
        match step {
            Step::Host(h, p) => (h, p),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn servers_are_tried_in_a_shuffled_order_that_depends_on_the_seed() {
        let t0 = Instant::now();
        let mut orders = std::collections::HashSet::new();
        for seed in 1..20 {
            let mut d = Dialer::new(hosts(5), seed);
            let order: Vec<u16> = (0..5).map(|_| host(d.next(t0)).1).collect();
            let mut sorted = order.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, [1, 2, 3, 4, 5], "each server once per round");
            orders.insert(order);
        }
        assert!(orders.len() > 5, "the order varies with the seed");
        // The same seed, the same order.
        let a: Vec<_> = {
            let mut d = Dialer::new(hosts(5), 7);
            (0..5).map(|_| d.next(t0)).collect()
        };
        let b: Vec<_> = {
            let mut d = Dialer::new(hosts(5), 7);
            (0..5).map(|_| d.next(t0)).collect()
        };
        assert_eq!(a, b);
    }

    #[test]
    fn the_first_session_gets_one_round_then_every_failure() {
        let t0 = Instant::now();
        let refused = |server: &str| Error::Unreachable {
            server: server.into(),
            error: crate::IoError(std::sync::Arc::new(std::io::Error::from(
                std::io::ErrorKind::ConnectionRefused,
            ))),
        };
        // One server: its own error.
        let mut d = Dialer::new(hosts(1), 1);
        host(d.next(t0));
        d.failed(t0, refused("h:1"));
        assert_eq!(d.next(t0), Step::GiveUp(refused("h:1")));
        // Several: each one's, in the order tried, and the message names each.
        let mut d = Dialer::new(hosts(3), 1);
        let mut expected = Vec::new();
        for _ in 0..3 {
            let Step::Host(h, p) = d.next(t0) else {
                panic!("expected a host")
            };
            let e = refused(&format!("{h}:{p}"));
            expected.push(e.clone());
            d.failed(t0, e);
        }
        let Step::GiveUp(e) = d.next(t0) else {
            panic!("expected to give up")
        };
        assert_eq!(
            e,
            Error::NoServerReached {
                failures: expected.clone()
            }
        );
        let text = e.to_string();
        assert!(
            text.starts_with("could not connect to any of the 3 servers: "),
            "{text}"
        );
        for failure in &expected {
            assert!(text.contains(&failure.to_string()), "{text}");
        }
    }

    #[test]
    fn failed_rounds_back_off_doubling_up_to_a_second_each_at_random_over_its_half() {
        let t0 = Instant::now();
        let mut seen = std::collections::HashSet::new();
        for seed in 1..20 {
            let mut d = Dialer::new(hosts(2), seed);
            host(d.next(t0));
            d.established(t0);
            d.lost(t0, true);
            let mut now = t0;
            let mut pauses = Vec::new();
            for _ in 0..7 {
                for _ in 0..2 {
                    host(d.next(now));
                    d.failed(now, Error::ConnectTimeout);
                }
                match d.next(now) {
                    Step::WaitUntil(t) => {
                        pauses.push((t - now).as_millis());
                        now = t;
                    }
                    other => panic!("{other:?}"),
                }
            }
            for (pause, whole) in pauses.iter().zip([100, 200, 400, 800, 1000, 1000, 1000]) {
                assert!((whole / 2..=whole).contains(pause), "{pauses:?}");
            }
            seen.insert(pauses[0]);
            // Never gives up once a session exists.
            assert!(matches!(d.next(now), Step::Host(..)));
        }
        assert!(seen.len() > 5, "the pauses vary: {seen:?}");
    }

    #[test]
    fn a_lost_connection_tries_the_next_server_within_the_spread_and_pauses_only_after_a_failed_round()
     {
        let t0 = Instant::now();
        let lived = t0 + SHORT_LIVED;
        let mut spreads = std::collections::HashSet::new();
        for seed in 1..50 {
            let mut d = Dialer::new(hosts(3), seed);
            let first = host(d.next(t0));
            d.established(t0);
            d.lost(lived, false);
            // Another server, within the spread.
            let now = match d.next(lived) {
                Step::WaitUntil(t) => t,
                Step::Host(..) => lived,
                other => panic!("{other:?}"),
            };
            assert!(now - lived <= RECONNECT_SPREAD, "{:?}", now - lived);
            spreads.insert(now - lived);
            let next = host(d.next(now));
            assert_ne!(next, first);
            // It and the third fail: the round (the lost one again) goes on without a pause.
            d.failed(now, Error::ConnectTimeout);
            let third = host(d.next(now));
            assert!(third != first && third != next);
            d.failed(now, Error::ConnectTimeout);
            assert_eq!(host(d.next(now)), first);
            // A whole round failed: now the pause.
            d.failed(now, Error::ConnectTimeout);
            assert!(matches!(d.next(now), Step::WaitUntil(_)));
        }
        assert!(spreads.len() > 10, "the spread varies: {spreads:?}");
    }

    #[test]
    fn a_connection_dropped_right_after_its_handshake_counts_as_a_failed_attempt() {
        let t0 = Instant::now();
        let mut d = Dialer::new(hosts(2), 1);
        let mut now = t0;
        // A server that accepts and drops at once, round after round: paused, not a tight
        // loop.
        for _ in 0..2 {
            host(d.next(now));
            d.established(now);
            d.lost(now, false);
        }
        assert!(matches!(d.next(now), Step::WaitUntil(_)));
        // Left on purpose (a read-write server found), however soon: no failure.
        now += Duration::from_secs(5);
        let mut d = Dialer::new(hosts(2), 1);
        for _ in 0..4 {
            host(d.next(now));
            d.established(now);
            d.lost(now, true);
        }
        assert!(matches!(d.next(now), Step::Host(..)));
    }

    #[test]
    fn a_read_write_server_found_is_tried_first_and_a_new_list_is_taken_at_once() {
        let t0 = Instant::now();
        let mut d = Dialer::new(hosts(2), 1);
        host(d.next(t0));
        d.established(t0);
        let rw: SocketAddr = "127.0.0.1:9".parse().unwrap();
        d.prefer(rw);
        d.lost(t0, true);
        assert_eq!(d.next(t0), Step::Addr(rw));
        let current = ("h".to_owned(), 1);
        assert!(d.set_hosts(hosts(3), Some(&current)));
        assert!(!d.set_hosts(vec![("other".into(), 1)], Some(&current)));
        assert_eq!(host(d.next(t0)), ("other".to_owned(), 1));
    }
}
