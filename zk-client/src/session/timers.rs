//! [`Timers`]: the session's deadlines, one slot each, and [`Session::handle_timeout`], which
//! acts on those that have passed (a ping, a read timeout, a handshake too slow, the session
//! lost).

use std::time::Instant;

use zk_proto::{Request, xid};

use super::{Phase, Session, SessionState};
use crate::Error;

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

impl<T> Session<T> {
    /// Handles the passing of time: a ping when nothing was sent for a third of the session
    /// timeout, and an error (close the connection) when nothing was read for two thirds of
    /// it, or the handshake took longer than the connect timeout.
    ///
    /// Every deadline that has passed is acted on in one call, so no timer is left in the past
    /// (a driver would wake again at once).
    pub fn handle_timeout(&mut self, now: Instant) -> Result<(), Error> {
        if self.state.is_terminal() && self.phase == Phase::Down {
            // An ended session has no deadlines: one left armed would be due forever.
            self.timers.clear();
            return Ok(());
        }
        if self.phase != Phase::Open && expired(self.timers.lost, now) {
            self.timers.lost = None;
            if !self.state.is_terminal() {
                self.set_state(SessionState::Lost);
            }
        }
        match self.phase {
            Phase::Down => Ok(()),
            Phase::Handshaking | Phase::Authenticating => {
                if expired(self.timers.connect, now) {
                    return Err(Error::ConnectTimeout);
                }
                Ok(())
            }
            Phase::Open => {
                if expired(self.timers.read, now) {
                    return Err(Error::ConnectionLoss);
                }
                if expired(self.timers.ping, now) {
                    // A ping is 12 bytes: it always fits the frame limit.
                    let _ = Request::Ping.encode_frame(xid::PING, &mut self.out, usize::MAX);
                    self.sent(now);
                }
                Ok(())
            }
        }
    }
}
