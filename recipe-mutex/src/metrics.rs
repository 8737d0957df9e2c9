//! Lock metrics through the [`metrics`](https://docs.rs/metrics) facade (feature `metrics`,
//! off by default): the names below, recorded by the driver (attempts), the hold layer
//! (holds and their losses) and the cohorts (hand-offs). Install any `metrics` recorder
//! (a Prometheus exporter, StatsD, your own) and they reach it; with none installed,
//! recording is a no-op.
//!
//! | name | type | labels | what |
//! |---|---|---|---|
//! | [`ACQUIRE_WAIT_SECONDS`] | histogram | `recipe`, `outcome` | how long one lock attempt took, from its first request to its outcome |
//! | [`ACQUISITIONS_TOTAL`] | counter | `recipe` | attempts that took the lock |
//! | [`ACQUIRE_TIMEOUTS_TOTAL`] | counter | `recipe` | attempts whose deadline passed while the lock was busy |
//! | [`ACQUIRE_FAILURES_TOTAL`] | counter | `recipe` | attempts that ended with an error (session lost, no server before the deadline, a node gone) |
//! | [`ACQUIRE_CANCELLATIONS_TOTAL`] | counter | `recipe` | attempts dropped before their outcome (a `select!`, an aborted task) |
//! | [`HOLD_SECONDS`] | histogram | `recipe` | how long a lock node was held, from its grant to the start of its release |
//! | [`LOSSES_TOTAL`] | counter | `recipe`, `kind` | holds that ended lost, by [`Loss`](crate::Loss) |
//! | [`COHORT_BATCH_HANDOFFS`] | histogram | `recipe` | local hand-offs in one cohort batch (one node held by the process, passed from task to task) |
//!
//! Labels: `recipe` is `mutex`, `read`, `write` or `semaphore` (a multi-lock's members count
//! as their own kinds); `outcome` is `acquired`, `timeout`, `failed` or `cancelled`; `kind`
//! is `unsure`, `lost` or `deleted`. The lock's path is deliberately no label: every label
//! value makes a series of its own in the recorder, and lock paths are often made per
//! resource (`/locks/orders/<id>`), which would grow the exporter's memory and the dashboard's
//! cardinality without bound. Count one lock by giving it a recorder of its own
//! ([`metrics::with_local_recorder`](https://docs.rs/metrics/latest/metrics/fn.with_local_recorder.html)
//! around a current-thread runtime), or read its history with the tracing events, which carry
//! the path.
//!
//! A loss is counted once per hold, when the hold ends (its guard released or dropped, which
//! a program does once it learns of the loss), with the kind its `lost()` would give then:
//! `deleted` (its node was seen gone), `lost` (the session expired or was closed) or `unsure`
//! (ended while disconnected). A hold that ends surely held counts none, whatever it went
//! through (a disconnection it survived); a hold still alive when its session is closed counts
//! as `lost` when its guard goes. Counting at the end costs no task and no request per hold.
//! A cohort's node is one hold, whatever the number of local holders it passed through. A
//! semaphore's leases are holds of their own (`recipe = "semaphore"`), one each, while the
//! acquisition that took them together counts once.
//!
//! Without the feature every helper here is an empty inline function over zero-sized types:
//! nothing is measured, and the crate does not depend on `metrics`.

use crate::layer::node::RecipeKind;

/// Histogram, seconds, labels `recipe` and `outcome`: how long one lock attempt took, from
/// its first request to its outcome (acquired, timed out, failed or cancelled).
#[cfg(feature = "metrics")]
pub const ACQUIRE_WAIT_SECONDS: &str = "zk_lock_acquire_wait_seconds";
/// Counter, label `recipe`: lock attempts that took the lock (a cohort's local hand-offs are
/// not counted here, see [`COHORT_BATCH_HANDOFFS`]).
#[cfg(feature = "metrics")]
pub const ACQUISITIONS_TOTAL: &str = "zk_lock_acquisitions_total";
/// Counter, label `recipe`: lock attempts whose deadline passed with a server connected (the
/// lock was busy): `try_lock_for` giving `None`.
#[cfg(feature = "metrics")]
pub const ACQUIRE_TIMEOUTS_TOTAL: &str = "zk_lock_acquire_timeouts_total";
/// Counter, label `recipe`: lock attempts that ended with an error (including a deadline
/// passed with no server reachable, and a node that vanished, which is retried).
#[cfg(feature = "metrics")]
pub const ACQUIRE_FAILURES_TOTAL: &str = "zk_lock_acquire_failures_total";
/// Counter, label `recipe`: lock attempts dropped before their outcome (the acquire future
/// dropped mid-way); their nodes are deleted in the background.
#[cfg(feature = "metrics")]
pub const ACQUIRE_CANCELLATIONS_TOTAL: &str = "zk_lock_acquire_cancellations_total";
/// Histogram, seconds, label `recipe`: how long a lock node was held, from its grant to the
/// start of its release (a cohort's node: from its grant to the batch's end).
#[cfg(feature = "metrics")]
pub const HOLD_SECONDS: &str = "zk_lock_hold_seconds";
/// Counter, labels `recipe` and `kind` (`unsure`, `lost`, `deleted`: the
/// [`Loss`](crate::Loss) variants): holds that ended lost, by what their `lost()` gave then.
#[cfg(feature = "metrics")]
pub const LOSSES_TOTAL: &str = "zk_lock_losses_total";
/// Histogram, label `recipe`: local hand-offs in one cohort batch, recorded when the batch's
/// node is released (0: its first holder had no local successor).
#[cfg(feature = "metrics")]
pub const COHORT_BATCH_HANDOFFS: &str = "zk_lock_cohort_batch_handoffs";

/// Describes every metric above (its unit and help text) to the recorder installed now:
/// call it once after installing yours, for exporters that show descriptions.
#[cfg(feature = "metrics")]
pub fn describe() {
    use ::metrics::{Unit, describe_counter, describe_histogram};
    describe_histogram!(
        ACQUIRE_WAIT_SECONDS,
        Unit::Seconds,
        "How long a ZooKeeper lock attempt took, from its first request to its outcome."
    );
    describe_counter!(
        ACQUISITIONS_TOTAL,
        Unit::Count,
        "ZooKeeper lock attempts that took the lock."
    );
    describe_counter!(
        ACQUIRE_TIMEOUTS_TOTAL,
        Unit::Count,
        "ZooKeeper lock attempts whose deadline passed while the lock was busy."
    );
    describe_counter!(
        ACQUIRE_FAILURES_TOTAL,
        Unit::Count,
        "ZooKeeper lock attempts that ended with an error."
    );
    describe_counter!(
        ACQUIRE_CANCELLATIONS_TOTAL,
        Unit::Count,
        "ZooKeeper lock attempts dropped before their outcome."
    );
    describe_histogram!(
        HOLD_SECONDS,
        Unit::Seconds,
        "How long a ZooKeeper lock node was held."
    );
    describe_counter!(
        LOSSES_TOTAL,
        Unit::Count,
        "ZooKeeper lock holds that ended lost, by kind."
    );
    describe_histogram!(
        COHORT_BATCH_HANDOFFS,
        Unit::Count,
        "Local hand-offs in one cohort batch of a ZooKeeper lock."
    );
}

/// When something measured began: tokio's clock (so paused-time tests see paused time);
/// zero-sized without the feature.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Since {
    #[cfg(feature = "metrics")]
    at: tokio::time::Instant,
}

impl Since {
    /// Now.
    #[inline]
    pub(crate) fn now() -> Self {
        Self {
            #[cfg(feature = "metrics")]
            at: tokio::time::Instant::now(),
        }
    }

    #[cfg(feature = "metrics")]
    fn seconds(self) -> f64 {
        self.at.elapsed().as_secs_f64()
    }
}

/// How a lock attempt ended, for [`attempt_ended`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    Acquired,
    TimedOut,
    Failed,
    Cancelled,
}

impl Outcome {
    #[cfg(feature = "metrics")]
    fn as_str(self) -> &'static str {
        match self {
            Outcome::Acquired => "acquired",
            Outcome::TimedOut => "timeout",
            Outcome::Failed => "failed",
            Outcome::Cancelled => "cancelled",
        }
    }
}

/// A lock attempt of `recipe`, begun at `since`, ended with `outcome`.
#[inline]
pub(crate) fn attempt_ended(recipe: RecipeKind, since: Since, outcome: Outcome) {
    #[cfg(feature = "metrics")]
    {
        let r = recipe.as_str();
        ::metrics::histogram!(ACQUIRE_WAIT_SECONDS, "recipe" => r, "outcome" => outcome.as_str())
            .record(since.seconds());
        let total = match outcome {
            Outcome::Acquired => ACQUISITIONS_TOTAL,
            Outcome::TimedOut => ACQUIRE_TIMEOUTS_TOTAL,
            Outcome::Failed => ACQUIRE_FAILURES_TOTAL,
            Outcome::Cancelled => ACQUIRE_CANCELLATIONS_TOTAL,
        };
        ::metrics::counter!(total, "recipe" => r).increment(1);
    }
    #[cfg(not(feature = "metrics"))]
    let _ = (recipe, since, outcome);
}

/// A hold of `recipe`, begun at `since`, ends now.
#[cfg(feature = "metrics")]
pub(crate) fn hold_ended(recipe: RecipeKind, since: Since) {
    ::metrics::histogram!(HOLD_SECONDS, "recipe" => recipe.as_str()).record(since.seconds());
}

/// A hold of `recipe` could no longer be trusted, for the loss `kind` (`unsure`, `lost` or
/// `deleted`).
#[cfg(feature = "metrics")]
pub(crate) fn lost(recipe: RecipeKind, kind: &'static str) {
    ::metrics::counter!(LOSSES_TOTAL, "recipe" => recipe.as_str(), "kind" => kind).increment(1);
}

/// A cohort batch of `recipe` ended (its node released) after `handoffs` local hand-offs.
#[inline]
pub(crate) fn cohort_batch_ended(recipe: RecipeKind, handoffs: u64) {
    #[cfg(feature = "metrics")]
    ::metrics::histogram!(COHORT_BATCH_HANDOFFS, "recipe" => recipe.as_str())
        .record(handoffs as f64);
    #[cfg(not(feature = "metrics"))]
    let _ = (recipe, handoffs);
}
