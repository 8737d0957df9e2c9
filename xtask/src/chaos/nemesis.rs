//! The nemesis: which fault, when, for how long, as plain data from a seed ([`schedule`]).
//! The runner carries the steps out and records when each really began and ended.
//!
//! Faults come in rounds: every kind asked for once per round, in an order the seed shuffles,
//! so that a long run exercises each kind about equally (`--nemesis` picks the kinds). About
//! one in three overlaps the next (two at once, one of them on the clients' side). Between
//! two faults (or pairs) the system is left healthy for a while, so that recovery is seen
//! too.

use std::fmt;
use std::time::Duration;

/// A kind of fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// The leader is killed (SIGKILL), then started again.
    LeaderKill,
    /// A follower is killed, then started again.
    FollowerKill,
    /// A member is paused (SIGSTOP) past the clients' session timeout, then resumed.
    MemberPause,
    /// One member is cut off from the other two (its quorum and election links through the
    /// fault proxies refuse and cut), then healed: the two keep the quorum.
    Partition,
    /// Two members cannot reach each other, while the rest reach both (the leader and a
    /// follower, or two followers): a partition that is not transitive.
    LinkCut,
    /// The ensemble split in two, a minority cut off from the majority (2|3 of five, 1|2 of
    /// three; which members the seed picks).
    Split,
    /// One side's clients' connections (ours or Curator's: each has its own client proxies)
    /// stop moving bytes (stalled), then flow again: sessions may expire when the stall
    /// outlasts their timeout.
    ClientStall,
    /// One side's clients' connections are cut (reset); they reconnect.
    ClientCut,
    /// Every client (both sides) cut off from one member: connections to it refuse and are
    /// cut; the clients move to the others.
    ClientMemberCut,
    /// One side's clients' connections delayed (50 to 800 ms each way, the seed picks).
    ClientLatency,
    /// One of our client processes is paused (SIGSTOP) while its clients hold, past their
    /// session timeout, then resumed: on resume it still believes it holds.
    OursPause,
    /// One of Curator's client processes is paused the same way.
    CuratorPause,
    /// What an operator's `deleteall` or another client's bug does: through a session of the
    /// nemesis's own (recorded, so that the judge knows its deletes for the operator's), a
    /// few lock nodes that are held at that moment are deleted, of both libraries (nodes the
    /// recipe's rule grants and a live mark names, each deleted only while that mark lives).
    /// The next waiter is then rightly granted while the old holder may still believe it
    /// holds: ours must be told (`lost()`), and its fenced writes refused. An instant fault,
    /// alone (see [`Kind::may_overlap`]).
    DeleteHeld,
}

impl Kind {
    /// Every kind, in the order `--nemesis` lists them.
    pub const ALL: [Kind; 13] = [
        Kind::LeaderKill,
        Kind::FollowerKill,
        Kind::MemberPause,
        Kind::Partition,
        Kind::LinkCut,
        Kind::Split,
        Kind::ClientStall,
        Kind::ClientCut,
        Kind::ClientMemberCut,
        Kind::ClientLatency,
        Kind::OursPause,
        Kind::CuratorPause,
        Kind::DeleteHeld,
    ];

    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Kind::LeaderKill => "leader-kill",
            Kind::FollowerKill => "follower-kill",
            Kind::MemberPause => "member-pause",
            Kind::Partition => "partition",
            Kind::LinkCut => "link-cut",
            Kind::Split => "split",
            Kind::ClientStall => "client-stall",
            Kind::ClientCut => "client-cut",
            Kind::ClientMemberCut => "client-member-cut",
            Kind::ClientLatency => "client-latency",
            Kind::OursPause => "ours-pause",
            Kind::CuratorPause => "curator-pause",
            Kind::DeleteHeld => "delete-held",
        }
    }

    /// Parses a comma-separated list of names (`all` for every kind).
    ///
    /// # Errors
    /// An unknown name (the message lists the known ones), or an empty list.
    pub fn parse_list(list: &str) -> Result<Vec<Kind>, String> {
        if list.trim() == "all" {
            return Ok(Kind::ALL.to_vec());
        }
        let mut kinds = Vec::new();
        for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            let kind = Kind::ALL
                .into_iter()
                .find(|k| k.name() == name)
                .ok_or_else(|| {
                    let known: Vec<&str> = Kind::ALL.iter().map(|k| k.name()).collect();
                    format!("unknown nemesis `{name}`; known: all, {}", known.join(", "))
                })?;
            if !kinds.contains(&kind) {
                kinds.push(kind);
            }
        }
        if kinds.is_empty() {
            return Err("no nemesis given".into());
        }
        Ok(kinds)
    }

    /// Whether the fault hits the clients' side (their links, their processes) rather than
    /// the ensemble.
    pub fn on_clients(self) -> bool {
        matches!(
            self,
            Kind::ClientStall
                | Kind::ClientCut
                | Kind::ClientMemberCut
                | Kind::ClientLatency
                | Kind::OursPause
                | Kind::CuratorPause
        )
    }

    /// Whether a fault of `other`'s kind may run at the same time as one of this kind: two
    /// different kinds, at least one of them on the clients' side (two faults on the ensemble
    /// at once would mostly be a long loss of quorum, and each heal would undo the other's
    /// member: killed while paused, resumed when restarted), and not a stall with a delay.
    /// A delete of held nodes runs alone: the lost signal's bound for it (see
    /// [`super::signal`]) is what a connected holder owes; a holder cut off or paused learns
    /// of the delete when it is back, which the recipe crates' own tests cover.
    pub fn may_overlap(self, other: Kind) -> bool {
        // A stall and a delay set the same proxies' mode: one's heal would end the other.
        let modes = [Kind::ClientStall, Kind::ClientLatency];
        self != other
            && self != Kind::DeleteHeld
            && other != Kind::DeleteHeld
            && (self.on_clients() || other.on_clients())
            && !(modes.contains(&self) && modes.contains(&other))
    }

    /// How long a fault of this kind lasts, drawn from its range with `r` in [0, 1).
    fn lasts(self, session_timeout: Duration, r: f64) -> Duration {
        let between = |lo: Duration, hi: Duration| lo + (hi.saturating_sub(lo)).mul_f64(r);
        let t = session_timeout;
        match self {
            Kind::LeaderKill | Kind::FollowerKill => {
                between(Duration::from_secs(1), Duration::from_secs(4))
            }
            // Past the session timeout: the member's clients must move.
            Kind::MemberPause => between(t.mul_f64(1.2), t.mul_f64(2.0)),
            Kind::Partition | Kind::LinkCut | Kind::Split => {
                between(Duration::from_secs(2), t.mul_f64(1.5))
            }
            Kind::ClientMemberCut => between(Duration::from_secs(1), t),
            Kind::ClientLatency => between(Duration::from_secs(2), Duration::from_secs(6)),
            // Some stalls outlast the session, some do not.
            Kind::ClientStall => between(t.mul_f64(0.3), t.mul_f64(1.6)),
            Kind::ClientCut | Kind::DeleteHeld => Duration::ZERO,
            // Surely expired: one and a half timeouts and more (see the checker).
            Kind::OursPause | Kind::CuratorPause => between(t.mul_f64(1.6), t.mul_f64(2.2)),
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One fault to carry out.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// When it begins, from the run's start.
    pub at: Duration,
    /// What.
    pub kind: Kind,
    /// For how long (zero: an instant fault, a cut).
    pub lasts: Duration,
    /// Which one, where there is a choice (a follower, a member, a process): the runner takes
    /// it modulo the candidates it has then.
    pub pick: u32,
}

/// The healthy time between two faults: from `GAP_MIN` to twice that.
const GAP_MIN: Duration = Duration::from_secs(1);

/// The faults of a run of `run_for`, from `seed`, over `kinds`: rounds of every kind once,
/// shuffled; each fault ends before the run does. About one fault in three has the next one
/// of its round begin while it lasts (two at once, when one of them is on the clients' side:
/// see [`Kind::may_overlap`]); steps come in the order they begin.
pub fn schedule(
    seed: u64,
    kinds: &[Kind],
    run_for: Duration,
    session_timeout: Duration,
) -> Vec<Step> {
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut steps = Vec::new();
    if kinds.is_empty() {
        return steps;
    }
    // A first quiet stretch: the clients get going before anything breaks.
    let mut at = GAP_MIN * 2;
    loop {
        let mut round = kinds.to_vec();
        for i in (1..round.len()).rev() {
            let j = usize::try_from(rng.below(i as u64 + 1)).unwrap_or(0);
            round.swap(i, j);
        }
        let mut round = round.into_iter().peekable();
        while let Some(kind) = round.next() {
            let lasts = kind.lasts(session_timeout, rng.unit());
            if at + lasts >= run_for {
                return steps;
            }
            steps.push(Step {
                at,
                kind,
                lasts,
                pick: rng.pick(),
            });
            let mut end = at + lasts;
            let overlap = rng.below(3) == 0;
            if let Some(&next) = round.peek().filter(|&&n| overlap && kind.may_overlap(n)) {
                let second_at = at + lasts.mul_f64(0.8 * rng.unit());
                let second_lasts = next.lasts(session_timeout, rng.unit());
                if second_at + second_lasts < run_for {
                    round.next();
                    steps.push(Step {
                        at: second_at,
                        kind: next,
                        lasts: second_lasts,
                        pick: rng.pick(),
                    });
                    end = end.max(second_at + second_lasts);
                }
            }
            at = end + GAP_MIN + GAP_MIN.mul_f64(rng.unit());
        }
    }
}

/// The faults of a run of `run_for` for measuring recovery (`bench failover`): `kind` alone,
/// one at a time, the first after `gap` and each followed by `gap` of health, so that the
/// rate before a fault and the recovery after it are each seen whole. Durations and picks
/// come from `seed`.
pub fn spaced(
    seed: u64,
    kind: Kind,
    run_for: Duration,
    session_timeout: Duration,
    gap: Duration,
) -> Vec<Step> {
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut steps = Vec::new();
    let mut at = gap;
    loop {
        let lasts = kind.lasts(session_timeout, rng.unit());
        if at + lasts + gap > run_for {
            return steps;
        }
        steps.push(Step {
            at,
            kind,
            lasts,
            pick: rng.pick(),
        });
        at += lasts + gap;
    }
}

/// xorshift64*.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next() % n }
    }

    /// A step's [`Step::pick`]: which member, process or client it hits, below 2^16.
    fn pick(&mut self) -> u32 {
        u32::try_from(self.below(1 << 16)).unwrap_or(0)
    }

    /// In [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    const T: Duration = Duration::from_secs(4);

    #[test]
    fn a_seed_gives_one_schedule_and_another_seed_another() {
        let run = Duration::from_secs(600);
        let a = schedule(7, &Kind::ALL, run, T);
        assert_eq!(a, schedule(7, &Kind::ALL, run, T));
        assert_ne!(a, schedule(8, &Kind::ALL, run, T));
    }

    #[test]
    fn faults_overlap_in_pairs_end_within_the_run_and_come_in_rounds() {
        let run = Duration::from_secs(3600);
        let steps = schedule(3, &Kind::ALL, run, T);
        let end = |s: &Step| s.at + s.lasts;
        let mut overlaps = 0;
        for (i, s) in steps.iter().enumerate() {
            // In the order they begin; at most two at once, and only pairs that may.
            if let Some(next) = steps.get(i + 1) {
                assert!(s.at <= next.at, "{s:?} {next:?}");
            }
            let during: Vec<&Step> = steps[..i].iter().filter(|p| end(p) >= s.at).collect();
            assert!(during.len() <= 1, "{s:?} during {during:?}");
            if let Some(p) = during.first() {
                assert!(p.kind.may_overlap(s.kind), "{p:?} with {s:?}");
                overlaps += 1;
            }
        }
        // About one in three may begin a pair, when the next kind may overlap it (a
        // delete of held nodes never does): between a seventh and a half are seconds.
        assert!(
            overlaps * 7 > steps.len() && overlaps * 2 < steps.len(),
            "{overlaps} overlaps in {}",
            steps.len()
        );
        assert!(steps.iter().all(|s| end(s) < run));
        // Every kind equally often, give or take the last round.
        let count = |k: Kind| steps.iter().filter(|s| s.kind == k).count();
        let (lo, hi) = Kind::ALL
            .iter()
            .map(|&k| count(k))
            .fold((usize::MAX, 0), |(lo, hi), c| (lo.min(c), hi.max(c)));
        assert!(hi - lo <= 1 && lo >= 20, "{lo}..{hi}");
        // Client pauses surely outlast a session; member pauses outlast it too.
        for s in &steps {
            match s.kind {
                Kind::OursPause | Kind::CuratorPause => assert!(s.lasts >= T.mul_f64(1.5)),
                Kind::MemberPause => assert!(s.lasts > T),
                _ => {}
            }
        }
    }

    /// What CI's minute of chaos gets (seed 2, `xtask/tests/chaos.rs`): every kind at least
    /// once (not every seed fits them all in a minute; seed 1 leaves the stall out).
    #[test]
    fn a_minute_from_seed_two_has_every_kind() {
        let steps = schedule(2, &Kind::ALL, Duration::from_secs(60), T);
        for s in &steps {
            println!(
                "{:>5.1} s {} for {:.1} s",
                s.at.as_secs_f64(),
                s.kind,
                s.lasts.as_secs_f64()
            );
        }
        for k in Kind::ALL {
            assert!(steps.iter().any(|s| s.kind == k), "no {k}");
        }
    }

    #[test]
    fn the_nemesis_list_parses_and_says_what_it_knows() {
        assert_eq!(
            Kind::parse_list("partition, ours-pause,partition").unwrap(),
            [Kind::Partition, Kind::OursPause]
        );
        assert_eq!(Kind::parse_list("all").unwrap(), Kind::ALL);
        let err = Kind::parse_list("leader-kil").unwrap_err();
        assert!(err.contains("unknown nemesis `leader-kil`") && err.contains("leader-kill"));
        assert!(Kind::parse_list(" , ").is_err());
    }

    #[test]
    fn a_short_run_gets_what_fits() {
        let steps = schedule(1, &[Kind::ClientCut], Duration::from_secs(10), T);
        assert!(!steps.is_empty());
        assert!(schedule(1, &[Kind::OursPause], Duration::from_secs(5), T).is_empty());
    }

    #[test]
    fn spaced_faults_come_one_at_a_time_with_a_gap_on_either_side() {
        let gap = Duration::from_secs(8);
        let run = Duration::from_secs(200);
        let steps = spaced(5, Kind::LeaderKill, run, T, gap);
        assert_eq!(steps, spaced(5, Kind::LeaderKill, run, T, gap));
        assert!(steps.len() >= 10, "{}", steps.len());
        assert_eq!(steps.first().map(|s| s.at), Some(gap));
        for pair in steps.windows(2) {
            let [a, b] = pair else { continue };
            assert_eq!(b.at, a.at + a.lasts + gap);
        }
        let last = steps.last().unwrap();
        assert!(last.at + last.lasts + gap <= run);
        assert!(steps.iter().all(|s| s.kind == Kind::LeaderKill));
    }
}
