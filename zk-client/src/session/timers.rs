//! [`Timers`]: the session's deadlines, one slot each.

use std::time::Instant;

/// The deadlines a connection has. Each is set or cleared by the session; the IO task sleeps
/// until the earliest and then calls `Session::handle_timeout`, where a spurious wake-up does
/// nothing.
#[derive(Debug, Default, Clone)]
pub(crate) struct Timers {
    /// Send a ping (nothing sent for a third of the session timeout).
    pub ping: Option<Instant>,
    /// Declare the connection dead (nothing read for two thirds of the session timeout).
    pub read: Option<Instant>,
    /// Give up on the handshake.
    pub connect: Option<Instant>,
}

impl Timers {
    pub(crate) fn earliest(&self) -> Option<Instant> {
        [self.ping, self.read, self.connect]
            .into_iter()
            .flatten()
            .min()
    }

    pub(crate) fn clear(&mut self) {
        *self = Timers::default();
    }
}

/// Whether the deadline is set and has passed.
pub(crate) fn expired(deadline: Option<Instant>, now: Instant) -> bool {
    deadline.is_some_and(|d| now >= d)
}
