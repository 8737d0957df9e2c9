//! How far a benchmark has got and how long it has left: the plan of its worker runs, known
//! up front (each run's warm-up and window), corrected as runs finish by what starting,
//! connecting and closing a worker really costs. No clock here: the caller says how long
//! each run took, and prints the lines.

use std::fmt::Display;
use std::time::{Duration, Instant};

/// What a worker costs beyond its warm-up and window (process start, JVM start, sessions
/// connected, closed) until one has been timed.
const OVERHEAD_GUESS: Duration = Duration::from_secs(2);

/// The worker runs of one benchmark, in the order they run.
///
/// Call [`Plan::left`] and [`Plan::step`] before a run, then [`Plan::on_run_done`] with the
/// time it took; the estimate of the time left then uses the mean overhead seen so far.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Plan {
    /// Each run's warm-up plus window.
    nominal: Vec<Duration>,
    /// Runs done.
    done: usize,
    /// Time beyond the nominal, summed over the runs done (none when a run was shorter).
    overhead: Duration,
}

impl Plan {
    /// A plan of runs of these nominal durations (warm-up plus window each).
    pub(crate) fn new(nominal: Vec<Duration>) -> Plan {
        Plan {
            nominal,
            done: 0,
            overhead: Duration::ZERO,
        }
    }

    /// The number of the run about to start (from 1) and the number of runs.
    pub(crate) fn step(&self) -> (usize, usize) {
        ((self.done + 1).min(self.nominal.len()), self.nominal.len())
    }

    /// The time the runs not done yet should take, the next one included.
    pub(crate) fn left(&self) -> Duration {
        let rest = self.nominal.get(self.done..).unwrap_or_default();
        let per_run = match u32::try_from(self.done) {
            Ok(0) | Err(_) => OVERHEAD_GUESS,
            Ok(n) => self.overhead / n,
        };
        let count = u32::try_from(rest.len()).unwrap_or(u32::MAX);
        rest.iter().sum::<Duration>() + per_run.saturating_mul(count)
    }

    /// The next run finished after `took`.
    pub(crate) fn on_run_done(&mut self, took: Duration) {
        if let Some(nominal) = self.nominal.get(self.done) {
            self.overhead += took.saturating_sub(*nominal);
            self.done += 1;
        }
    }
}

/// Runs `cases` one after the other with `run`, each on a fresh setup, telling the progress
/// on stderr before each (`<bench>: run i/n: <what>; about <time> left`, `what` from
/// `describe`) and the error after one that failed: each case beside its outcome, in order.
pub(crate) fn run_cases<C: Copy, O, E: Display>(
    bench: &str,
    cases: &[C],
    nominal: impl Fn(&C) -> Duration,
    describe: impl Fn(&C) -> String,
    mut run: impl FnMut(&C) -> Result<O, E>,
) -> Vec<(C, Result<O, String>)> {
    let mut plan = Plan::new(cases.iter().map(&nominal).collect());
    let mut outcomes = Vec::with_capacity(cases.len());
    for case in cases {
        let (i, n) = plan.step();
        eprintln!(
            "{bench}: run {i}/{n}: {}; about {} left",
            describe(case),
            human(plan.left())
        );
        let started = Instant::now();
        let outcome = run(case).map_err(|e| e.to_string());
        if let Err(e) = &outcome {
            eprintln!("{bench}: {}: {e}", describe(case));
        }
        plan.on_run_done(started.elapsed());
        outcomes.push((*case, outcome));
    }
    outcomes
}

/// A duration for people, rounded to what matters: `45 s`, `3 min 05 s`, `1 h 02 min`.
pub(crate) fn human(d: Duration) -> String {
    let s = d.as_secs() + u64::from(d.subsec_millis() >= 500);
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{} min {:02} s", s / 60, s % 60),
        _ => format!("{} h {:02} min", s / 3600, s % 3600 / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    #[test]
    fn the_time_left_is_the_plan_then_what_runs_really_took() {
        let mut plan = Plan::new(vec![secs(11), secs(15), secs(11)]);
        assert_eq!(plan.step(), (1, 3));
        assert_eq!(plan.left(), secs(11 + 15 + 11) + OVERHEAD_GUESS * 3);
        plan.on_run_done(secs(14)); // 3 s more than planned
        assert_eq!(plan.step(), (2, 3));
        assert_eq!(plan.left(), secs(15 + 11 + 3 * 2));
        plan.on_run_done(secs(16)); // 1 s more: 2 s a run on average
        assert_eq!(plan.left(), secs(11 + 2));
        plan.on_run_done(secs(10)); // shorter than planned counts as no overhead
        assert_eq!(plan.left(), Duration::ZERO);
        assert_eq!(plan.step(), (3, 3));
        plan.on_run_done(secs(10)); // past the plan: nothing changes
        assert_eq!(plan.left(), Duration::ZERO);
    }

    #[test]
    fn an_empty_plan_has_nothing_left() {
        let plan = Plan::new(Vec::new());
        assert_eq!((plan.step(), plan.left()), ((0, 0), Duration::ZERO));
    }

    #[test]
    fn durations_read_as_seconds_minutes_or_hours() {
        assert_eq!(human(Duration::from_millis(400)), "0 s");
        assert_eq!(human(Duration::from_millis(19_500)), "20 s");
        assert_eq!(human(secs(59)), "59 s");
        assert_eq!(human(secs(60)), "1 min 00 s");
        assert_eq!(human(secs(6 * 60 + 5)), "6 min 05 s");
        assert_eq!(human(secs(3600 + 2 * 60 + 59)), "1 h 02 min");
    }

    #[test]
    fn cases_run_in_order_each_beside_its_outcome() {
        let mut ran = Vec::new();
        let outcomes = run_cases(
            "bench test",
            &[1u32, 2, 3],
            |_| Duration::ZERO,
            |c| format!("case {c}"),
            |&c| {
                ran.push(c);
                if c == 2 { Err("refused") } else { Ok(c * 10) }
            },
        );
        assert_eq!(ran, [1, 2, 3], "a failed case does not stop the rest");
        assert_eq!(
            outcomes,
            [(1, Ok(10)), (2, Err("refused".to_owned())), (3, Ok(30))]
        );
    }
}
