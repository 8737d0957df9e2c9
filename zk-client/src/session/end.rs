//! How a connection ends (the driver's [`Session::handle_disconnect`] and
//! [`Session::handle_unsent`]) and how the session ends for good: requests in flight fail,
//! as certainly unsent or as uncertain, and every watcher gets its final event.

use std::time::Instant;

use super::pending::Effect;
use super::{Phase, Session, SessionEvent, SessionState, WatchedEvent};
use crate::Error;
use zk_proto::EventType;

impl<T> Session<T> {
    /// Ends the session here and now, without telling the server (which expires it after its
    /// timeout): pending requests fail, with [`Error::Closed`] if they were never written and
    /// [`Error::ConnectionLoss`] if they were (the server may still apply them), and every
    /// watcher gets its final event. For a close that could not reach a server in time.
    pub fn close_locally(&mut self) {
        self.closing = true;
        self.phase = Phase::Down;
        self.out.clear();
        // Already ended or not, nothing is due any more (`end` returns early on an ended one).
        self.timers.clear();
        self.end(SessionState::Closed);
    }

    /// The connection is gone. Every request written on it fails with `ConnectionLoss` (it
    /// may or may not have been applied), every request never written with `NotConnected`
    /// (see [`Session::handle_unsent`]); watches stay registered for a later reconnect.
    ///
    /// From then on, if no server answers for the negotiated session timeout (counted from
    /// the last frame heard), [`Session::handle_timeout`] reports [`SessionState::Lost`].
    pub fn handle_disconnect(&mut self, _now: Instant) {
        if self.phase == Phase::Down && self.pending.is_empty() && self.auths.is_empty() {
            return;
        }
        self.phase = Phase::Down;
        self.exchange = None;
        self.timers.clear_connection();
        if self.state.is_connected() {
            self.timers.lost = self.last_heard.map(|heard| heard + self.negotiated);
        }
        self.out.clear();
        let err = self.ended_error().unwrap_or(Error::NotConnected);
        self.fail_pending(&err);
        if self.closing {
            self.end(SessionState::Closed);
        } else if self.state.is_connected() {
            self.set_state(SessionState::Disconnected);
        }
    }

    /// Fails every request in flight: with `ConnectionLoss` if any of its bytes was written
    /// (the server may apply it), else with `unsent` (it surely was not).
    fn fail_pending(&mut self, unsent: &Error) {
        let written = self.handed.saturating_sub(self.unsent);
        let err = |at: u64| {
            if at < written {
                Error::ConnectionLoss
            } else {
                unsent.clone()
            }
        };
        for p in std::mem::take(&mut self.pending) {
            let p = self.settle(p);
            if let Effect::Watch { id, .. } = p.effect {
                self.events.push_back(SessionEvent::Unwatched(id));
            }
            self.events.push_back(SessionEvent::Reply {
                token: p.token,
                result: Err(err(p.at)),
            });
        }
        for (at, token) in std::mem::take(&mut self.auths) {
            if let Some(token) = token {
                self.events.push_back(SessionEvent::Reply {
                    token,
                    result: Err(err(at)),
                });
            }
        }
    }

    /// The driver is giving up the connection with the last `n` bytes handed out by
    /// [`Session::poll_transmit`] never written (they sat in its buffer, the peer not
    /// reading). The requests in them fail as certainly not sent rather than as uncertain.
    /// Call it before [`Session::handle_disconnect`] or [`Session::close_locally`]; a driver
    /// that never calls it makes every request handed out count as written.
    pub fn handle_unsent(&mut self, n: usize) {
        self.unsent = (n as u64).min(self.handed);
    }

    /// Ends the session for good with `err` as the reason requests fail from now on; returns
    /// it (the error that closes the connection).
    pub(super) fn end_with(&mut self, state: SessionState, err: Error) -> Error {
        if !self.state.is_terminal() {
            self.ended_by = Some(err.clone());
            self.end(state);
        }
        err
    }

    /// Ends the session for good: pending requests fail, every watcher gets a final event.
    pub(super) fn end(&mut self, state: SessionState) {
        if self.state.is_terminal() {
            return;
        }
        self.set_state(state);
        self.timers.clear();
        let err = self.ended_error().unwrap_or_else(|| state.error());
        self.fail_pending(&err);
        for id in self.watches.drain() {
            let event = WatchedEvent {
                event_type: EventType::None,
                state: state.keeper_state(),
                path: String::new(),
            };
            self.events.push_back(SessionEvent::Watch {
                id,
                event,
                last: true,
            });
        }
    }
}
