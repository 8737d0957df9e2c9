//! [`Schedule`]: when an attempt does what next, shared by the fair-lock attempt
//! ([`crate::AcquireMachine`]) and the semaphore's lease stage ([`crate::SemaphoreMachine`]).
//!
//! While replies are in flight, failures only *plan* the next step (the most demanding plan
//! wins: recovering a lost create beats everything); once nothing is in flight the plan is
//! carried out at once, once connected to a read-write server again, or after
//! [`RETRY_DELAY`]. Past the deadline an attempt ends, except that a step that can go on at
//! once, while connected, still may within [`DEADLINE_GRACE`] of the deadline: so a zero
//! timeout still takes a free lock, and the whole attempt ends within its deadline and one
//! grace.

use std::time::{Duration, Instant};

use crate::op::ZkError;

/// How long past its deadline an attempt waits for replies already in flight while connected,
/// so that a free lock is taken even with a zero timeout (as in Curator). While disconnected
/// the attempt ends at its deadline.
pub const DEADLINE_GRACE: Duration = Duration::from_millis(500);

/// How long to wait before trying again after a failure that is neither a lost connection nor
/// final (the server throttled us, the session moved), or after a lost connection that the
/// session has not reported yet.
pub const RETRY_DELAY: Duration = Duration::from_millis(50);

/// `deadline` plus [`DEADLINE_GRACE`], saturating: at the end of what an instant can hold,
/// the deadline itself (a deadline that far is never reached).
pub(crate) fn grace_end(deadline: Instant) -> Instant {
    deadline.checked_add(DEADLINE_GRACE).unwrap_or(deadline)
}

/// What to do next, once the replies in flight are in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Resume {
    List,
    CreateAndList,
    MakeParents,
    /// A create's reply was lost: sync, then find our nodes by their protection prefix.
    Recover,
}

/// When to do it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum When {
    /// At once (the failure was a real answer, such as `NoNode`).
    Now,
    /// Once connected to a read-write server again.
    Connected,
    /// After [`RETRY_DELAY`].
    Later,
}

/// What the schedule says to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// Carry out this step now.
    Run(Resume),
    /// Wait for the connection or the retry timer.
    Pause,
    /// The attempt is over: timed out.
    TimedOut,
}

/// An attempt's plan, deadline, grace and retry timer.
#[derive(Debug, Clone)]
pub(crate) struct Schedule {
    deadline: Option<Instant>,
    planned: Option<(Resume, When)>,
    retry_at: Option<Instant>,
    grace_until: Option<Instant>,
    timed_out: bool,
}

impl Schedule {
    pub(crate) fn new(deadline: Option<Instant>) -> Self {
        Self {
            deadline,
            planned: None,
            retry_at: None,
            grace_until: None,
            timed_out: false,
        }
    }

    /// Plans `resume` for when nothing is in flight any more; the most demanding plan wins.
    pub(crate) fn plan(&mut self, resume: Resume, when: When) {
        self.planned = Some(match self.planned {
            Some((r, w)) if r >= resume => (r, w),
            _ => (resume, when),
        });
    }

    /// Whether a step is planned.
    pub(crate) fn is_planned(&self) -> bool {
        self.planned.is_some()
    }

    /// Forgets the plan and the retry timer (the step runs, or the attempt ended).
    pub(crate) fn clear(&mut self) {
        self.planned = None;
        self.retry_at = None;
    }

    /// A failed op: wait for the connection, retry later, or (`Err`) give up with `e`.
    pub(crate) fn retry_or_fail(&mut self, e: ZkError, resume: Resume) -> Result<(), ZkError> {
        match e {
            ZkError::ConnectionLoss | ZkError::NotSent => self.plan(resume, When::Connected),
            ZkError::Transient => self.plan(resume, When::Later),
            e => return Err(e),
        }
        Ok(())
    }

    pub(crate) fn deadline_passed(&self, now: Instant) -> bool {
        self.deadline.is_some_and(|d| now >= d)
    }

    /// Whether the deadline passed with work under way (the grace started).
    pub(crate) fn timed_out(&self) -> bool {
        self.timed_out
    }

    /// The deadline passed with work under way: the grace runs until [`DEADLINE_GRACE`]
    /// after the deadline.
    pub(crate) fn start_grace(&mut self, now: Instant) {
        self.timed_out = true;
        if self.grace_until.is_none() {
            self.grace_until = Some(grace_end(self.deadline.unwrap_or(now)));
        }
    }

    fn in_grace(&self, now: Instant) -> bool {
        self.grace_until.is_some_and(|g| now < g)
    }

    /// Nothing is in flight any more: what the plan says now (`None` without a plan).
    pub(crate) fn settle(&mut self, now: Instant, connected: bool) -> Option<Step> {
        let (resume, when) = self.planned?;
        if self.deadline_passed(now) {
            self.start_grace(now);
            if !(when == When::Now && self.in_grace(now) && connected) {
                return Some(Step::TimedOut);
            }
        }
        Some(match when {
            When::Now => Step::Run(resume),
            When::Connected if !connected => Step::Pause,
            // The session has not reported the loss yet (or the server asked us to back off):
            // try again shortly rather than at once.
            When::Connected | When::Later => {
                self.retry_at = Some(now + RETRY_DELAY);
                Step::Pause
            }
        })
    }

    /// The timer fired. `paused`: the attempt waits for the connection or the retry timer;
    /// `busy`: ops are in flight.
    pub(crate) fn on_timeout(
        &mut self,
        now: Instant,
        paused: bool,
        busy: bool,
        connected: bool,
    ) -> Option<Step> {
        if paused && self.retry_at.is_some_and(|at| now >= at) {
            self.retry_at = None;
            if let Some((resume, _)) = self.planned {
                if connected && !self.deadline_passed(now) {
                    return Some(Step::Run(resume));
                }
            }
        }
        if !self.deadline_passed(now) {
            return None;
        }
        if !busy {
            return Some(Step::TimedOut);
        }
        // Ops in flight: wait a little for them while connected, so a free lock is still
        // taken; then give up and leave them to the cleanups.
        self.start_grace(now);
        let over = self.grace_until.is_some_and(|g| now >= g);
        (over || !connected).then_some(Step::TimedOut)
    }

    /// The connection dropped (or the server turned read-only): replies in flight fail with a
    /// connection loss, and the session must come back; past the deadline, give up now.
    pub(crate) fn on_disconnect(&mut self, now: Instant) -> Option<Step> {
        self.retry_at = None;
        self.deadline_passed(now).then_some(Step::TimedOut)
    }

    /// Connected again while paused with nothing in flight.
    pub(crate) fn on_reconnect(&self, now: Instant) -> Option<Step> {
        if self.deadline_passed(now) {
            return Some(Step::TimedOut);
        }
        self.planned.map(|(resume, _)| Step::Run(resume))
    }

    /// When the attempt needs its timer: the deadline (or, once it passed with work under
    /// way, the end of the grace) and the retry time.
    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        let deadline = if self.timed_out {
            self.grace_until
        } else {
            self.deadline
        };
        [deadline, self.retry_at].into_iter().flatten().min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_most_demanding_plan_wins() {
        let mut s = Schedule::new(None);
        let now = Instant::now();
        s.plan(Resume::List, When::Now);
        s.plan(Resume::Recover, When::Connected);
        s.plan(Resume::CreateAndList, When::Now);
        assert_eq!(s.settle(now, false), Some(Step::Pause));
        assert_eq!(s.on_reconnect(now), Some(Step::Run(Resume::Recover)));
    }

    #[test]
    fn the_grace_is_counted_from_the_deadline() {
        let t0 = Instant::now();
        let mut s = Schedule::new(Some(t0));
        // Noticed late, the grace still ends one grace after the deadline.
        assert_eq!(
            s.on_timeout(t0 + DEADLINE_GRACE / 2, false, true, true),
            None
        );
        assert_eq!(s.poll_timeout(), Some(t0 + DEADLINE_GRACE));
        s.plan(Resume::List, When::Now);
        assert_eq!(
            s.settle(t0 + DEADLINE_GRACE / 2, true),
            Some(Step::Run(Resume::List))
        );
        s.plan(Resume::List, When::Now);
        assert_eq!(s.settle(t0 + DEADLINE_GRACE, true), Some(Step::TimedOut));
        // Disconnected or not at once: over at the deadline.
        let mut s = Schedule::new(Some(t0));
        s.plan(Resume::List, When::Later);
        assert_eq!(s.settle(t0, true), Some(Step::TimedOut));
    }

    /// The largest `n` with `fits(n)`, for `fits` true at 0 and monotone.
    fn largest(mut hi: u64, fits: impl Fn(u64) -> bool) -> u64 {
        let mut lo = 0;
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            if fits(mid) {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        lo
    }

    /// The last instant `checked_add` reaches from `t0`, to the nanosecond.
    fn last_instant(t0: Instant) -> Instant {
        let secs = largest(u64::MAX, |s| {
            t0.checked_add(Duration::from_secs(s)).is_some()
        });
        let whole = t0 + Duration::from_secs(secs);
        let nanos = largest(999_999_999, |n| {
            whole.checked_add(Duration::from_nanos(n)).is_some()
        });
        whole + Duration::from_nanos(nanos)
    }

    /// Issue 34, defect 2: a deadline at the end of what an instant holds; its grace
    /// saturates instead of panicking ("overflow when adding duration to instant").
    #[test]
    fn a_deadline_at_the_end_of_time_does_not_overflow() {
        let t0 = Instant::now();
        let end = last_instant(t0);
        assert!(end.checked_add(DEADLINE_GRACE).is_none());
        assert_eq!(grace_end(end), end);
        let mut s = Schedule::new(Some(end));
        s.start_grace(t0);
        assert_eq!(s.poll_timeout(), Some(end));
        assert_eq!(s.on_timeout(t0, false, true, true), None);
    }

    #[test]
    fn transient_failures_retry_after_the_delay_and_final_ones_give_up() {
        let t0 = Instant::now();
        let mut s = Schedule::new(None);
        assert_eq!(s.retry_or_fail(ZkError::Transient, Resume::List), Ok(()));
        assert_eq!(s.settle(t0, true), Some(Step::Pause));
        assert_eq!(s.poll_timeout(), Some(t0 + RETRY_DELAY));
        assert_eq!(
            s.on_timeout(t0 + RETRY_DELAY, true, false, true),
            Some(Step::Run(Resume::List))
        );
        assert_eq!(
            s.retry_or_fail(ZkError::Other, Resume::List),
            Err(ZkError::Other)
        );
    }
}
