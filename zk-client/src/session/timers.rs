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
    /// Report the session lost: no server has answered for the whole session timeout, so the
    /// ensemble has expired it (it cannot tell us while we cannot reach it).
    pub lost: Option<Instant>,
}

impl Timers {
    pub(crate) fn earliest(&self) -> Option<Instant> {
        [self.ping, self.read, self.connect, self.lost]
            .into_iter()
            .flatten()
            .min()
    }

    /// Clears the connection's deadlines; the lost deadline outlives connections.
    pub(crate) fn clear_connection(&mut self) {
        *self = Timers {
            lost: self.lost,
            ..Timers::default()
        };
    }

    pub(crate) fn clear(&mut self) {
        *self = Timers::default();
    }
}

/// Whether the deadline is set and has passed.
pub(crate) fn expired(deadline: Option<Instant>, now: Instant) -> bool {
    deadline.is_some_and(|d| now >= d)
}
