//! The layer's one clock: tokio's, read here and only here (so paused-time tests drive it),
//! with the deadlines built on it. The driver and the turns both wait by it.

use tokio::time::Instant;

/// The clock: tokio's, as a `std` instant for the machines.
pub fn now() -> std::time::Instant {
    Instant::now().into_std()
}

/// The deadline `timeout` from now, for the surfaces' `try_*_for(timeout)`; `None` (no
/// deadline: wait as long as it takes) when it is too far to be an instant, as
/// `Duration::MAX`, which many callers write for "forever", is.
pub fn deadline_in(timeout: std::time::Duration) -> Option<Instant> {
    Instant::now().checked_add(timeout)
}

/// `deadline` plus one [`DEADLINE_GRACE`](recipes_core::DEADLINE_GRACE), saturating: at the
/// end of what an instant can hold, the deadline itself.
pub fn with_grace(deadline: Instant) -> Instant {
    deadline
        .checked_add(recipes_core::DEADLINE_GRACE)
        .unwrap_or(deadline)
}

/// Sleeps until `deadline`, or forever without one.
pub async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}
