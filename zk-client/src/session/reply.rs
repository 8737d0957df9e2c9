//! Frames from the server: [`Session::handle_frame`] routes each by the connection's phase;
//! once the session is open, replies are matched to the oldest request in flight, and
//! notifications go to their watchers.

use std::time::Instant;

use zk_proto::{
    Decode, DecodeError, ErrorCode, OpCode, Reader, ReplyHeader, Response, WatcherEvent, xid,
};

use super::pending::{Effect, Pending};
use super::watches::Fired;
use super::{Phase, Session, SessionEvent, SessionState, WatchedEvent};
use crate::{Error, ProtocolError};

impl<T> Session<T> {
    /// Handles one frame from the server. An error means the connection must be closed.
    pub fn handle_frame(&mut self, now: Instant, frame: &[u8]) -> Result<(), Error> {
        if self.phase != Phase::Down && self.session_id != 0 {
            self.last_heard = Some(now);
        }
        match self.phase {
            Phase::Down => Err(ProtocolError::Unexpected("frame while not connected").into()),
            Phase::Handshaking => self.handle_handshake(now, frame),
            Phase::Authenticating => self.handle_sasl(now, frame),
            Phase::Open => {
                // An ended session waits for no more frames (its connection is being closed).
                if !self.state.is_terminal() {
                    self.timers.read = Some(now + self.negotiated * 2 / 3);
                }
                self.handle_reply(frame)
            }
        }
    }

    fn handle_reply(&mut self, frame: &[u8]) -> Result<(), Error> {
        let mut r = Reader::new(frame);
        let header = ReplyHeader::decode(&mut r)?;
        if header.err == ErrorCode::SessionClosedRequireSaslAuth {
            // The server requires SASL (`enforce.auth`) and closes the session, whichever
            // request (a ping too) it answers so: every connection would end the same way.
            // The request it answers was refused; the others fail as the session's end says.
            self.refused(header.xid, Error::AuthRequired);
            return Err(self.end_with(SessionState::AuthFailed, Error::AuthRequired));
        }
        match header.xid {
            xid::NOTIFICATION => {
                let event = match WatcherEvent::decode(&mut r) {
                    Ok(event) => event,
                    // A path that is not UTF-8 matches no watch of ours (ours are valid
                    // strings); the Java client decodes it lossily, with the same effect.
                    Err(DecodeError::BadUtf8 { .. }) => return Ok(()),
                    Err(e) => return Err(e.into()),
                };
                // Bytes after the event are ignored, as Java does.
                self.dispatch_event(event);
                Ok(())
            }
            xid::PING | xid::SET_WATCHES => Ok(()),
            xid::AUTH => {
                let (_, token) = self.auths.pop_front().ok_or(ProtocolError::UnexpectedXid {
                    expected: None,
                    got: header.xid,
                })?;
                if header.err == ErrorCode::AuthFailed {
                    if let Some(token) = token {
                        self.events.push_back(SessionEvent::Reply {
                            token,
                            result: Err(Error::AuthFailed),
                        });
                    }
                    self.end(SessionState::AuthFailed);
                    return Err(Error::AuthFailed);
                }
                let result = match Error::from_code(header.err) {
                    None => Ok(Response::Empty),
                    Some(e) => Err(e),
                };
                if let Some(token) = token {
                    self.events.push_back(SessionEvent::Reply { token, result });
                }
                Ok(())
            }
            got => {
                let expected = self.pending.front().map(|p| p.xid);
                if expected != Some(got) {
                    return Err(ProtocolError::UnexpectedXid { expected, got }.into());
                }
                let Some(p) = self.pending.pop_front() else {
                    return Err(ProtocolError::UnexpectedXid { expected, got }.into());
                };
                let p = self.settle(p);
                if header.zxid > 0 {
                    self.last_zxid = header.zxid;
                }
                self.complete(p, header.err, r)
            }
        }
    }

    fn complete(&mut self, p: Pending<T>, err: ErrorCode, mut r: Reader<'_>) -> Result<(), Error> {
        // An error reply's body, if the server sent one, is not read, nor are bytes after a
        // body (as the Java client: a newer server's fields).
        let decoded = if err.is_ok() {
            Response::decode(p.op, &mut r).map(Some)
        } else {
            Ok(None)
        };
        let body = match decoded {
            Ok(body) => body,
            Err(DecodeError::BadUtf8 { at, offset }) => {
                // A string that is not UTF-8: this reply cannot be read, but the frame was
                // whole, so the connection and the other requests go on.
                let e = Error::from(DecodeError::BadUtf8 { at, offset });
                self.events.push_back(SessionEvent::Reply {
                    token: p.token,
                    result: Err(e),
                });
                if let Effect::Watch { id, .. } = p.effect {
                    self.events.push_back(SessionEvent::Unwatched(id));
                }
                return Ok(());
            }
            Err(e) => {
                // The server did answer, but with bytes we cannot read: the caller gets the
                // decode error and the connection goes.
                let e = Error::from(e);
                self.events.push_back(SessionEvent::Reply {
                    token: p.token,
                    result: Err(e.clone()),
                });
                if let Effect::Watch { id, .. } = p.effect {
                    self.events.push_back(SessionEvent::Unwatched(id));
                }
                return Err(e);
            }
        };
        crate::log::debug!(xid = p.xid, op = ?p.op, result = ?err, "reply");
        self.apply_effect(&p.effect, err);
        if p.op == OpCode::CloseSession {
            self.events.push_back(SessionEvent::Reply {
                token: p.token,
                result: Ok(Response::Empty),
            });
            self.end(SessionState::Closed);
            return Ok(());
        }
        let result = match (body, Error::from_code(err)) {
            (Some(body), _) => Ok(body),
            (None, Some(e)) => Err(e),
            (None, None) => Err(ProtocolError::Unexpected("reply without a body").into()),
        };
        self.events.push_back(SessionEvent::Reply {
            token: p.token,
            result,
        });
        Ok(())
    }

    /// A request leaving [`Session::pending`]: its watch effect is dropped if its watcher was
    /// forgotten meanwhile.
    pub(super) fn settle(&mut self, mut p: Pending<T>) -> Pending<T> {
        if let Effect::Watch { id, .. } = &p.effect {
            if self.watches_in_flight.remove(id) == Some(false) {
                p.effect = Effect::None;
            }
            super::give_back_map_after_burst(&mut self.watches_in_flight);
        }
        super::give_back_after_burst(&mut self.pending);
        p
    }

    fn apply_effect(&mut self, effect: &Effect, err: ErrorCode) {
        match effect {
            Effect::None => {}
            Effect::Watch {
                path,
                kind,
                id,
                on_missing,
            } => {
                let kind = match err {
                    ErrorCode::Ok => Some(*kind),
                    ErrorCode::NoNode => *on_missing,
                    _ => None,
                };
                match kind {
                    Some(kind) => self.watches.add(path, kind, *id),
                    None => self.events.push_back(SessionEvent::Unwatched(*id)),
                }
            }
            Effect::RemoveWatches { path, which } => {
                if err.is_ok() {
                    self.remove_watches_locally(path, *which);
                }
            }
        }
    }

    fn dispatch_event(&mut self, event: WatcherEvent) {
        for Fired { id, last } in self.watches.fire(event.event_type, &event.path) {
            let event = WatchedEvent {
                event_type: event.event_type,
                state: event.state,
                path: event.path.clone(),
            };
            self.events
                .push_back(SessionEvent::Watch { id, event, last });
        }
    }

    /// The server answered request `xid` (the oldest in flight) with a refusal: it fails
    /// with `err`, the others stay in flight.
    fn refused(&mut self, xid: i32, err: Error) {
        if xid == xid::AUTH {
            if let Some((_, Some(token))) = self.auths.pop_front() {
                self.events.push_back(SessionEvent::Reply {
                    token,
                    result: Err(err),
                });
            }
            return;
        }
        if self.pending.front().map(|p| p.xid) != Some(xid) {
            return;
        }
        if let Some(p) = self.pending.pop_front() {
            let p = self.settle(p);
            if let Effect::Watch { id, .. } = p.effect {
                self.events.push_back(SessionEvent::Unwatched(id));
            }
            self.events.push_back(SessionEvent::Reply {
                token: p.token,
                result: Err(err),
            });
        }
    }
}
