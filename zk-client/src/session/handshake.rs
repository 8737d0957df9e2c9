//! The handshake: the `ConnectRequest` queued when a connection is up, the `ConnectResponse`
//! that grants (or refuses, or expires) the session, and opening the session on the connection
//! once it is granted (and authenticated, when SASL is set).

use std::time::{Duration, Instant};

use bytes::Bytes;
use zk_proto::records::{ConnectRequest, ConnectResponse};
use zk_proto::{Decode, ReplyHeader, encode_frame};

use super::sasl::SaslRun;
use super::{Phase, Session, SessionState};
use crate::{Error, ProtocolError};

impl<T> Session<T> {
    /// A TCP connection is up: queues the `ConnectRequest` (resuming this session if it has
    /// one) and starts the connect deadline.
    pub fn handle_connected(&mut self, now: Instant) {
        if self.state.is_terminal() {
            return;
        }
        // A session made by a read-only server is known to no read-write one: until a
        // read-write server has seen us, every connection asks for a new session (as the Java
        // client does).
        let (session_id, passwd) = match (&self.passwd, self.seen_rw_server) {
            (Some(passwd), true) => (self.session_id, passwd.clone()),
            _ => (0, Bytes::from_static(&[0; 16])),
        };
        let request = ConnectRequest {
            protocol_version: 0,
            last_zxid_seen: self.last_zxid,
            time_out: i32::try_from(self.cfg.session_timeout.as_millis()).unwrap_or(i32::MAX),
            session_id,
            passwd: Some(passwd),
            read_only: Some(self.cfg.can_be_read_only),
        };
        self.out.clear();
        self.handed = 0;
        self.unsent = 0;
        // A handshake is a few dozen bytes: it always fits the frame limit.
        let _ = encode_frame(&request, &mut self.out, usize::MAX);
        self.phase = Phase::Handshaking;
        self.timers.clear_connection();
        // `None` (no deadline) for a budget too large to add, such as `Duration::MAX`.
        self.timers.connect = now.checked_add(self.connect_budget());
    }

    pub(super) fn handle_handshake(&mut self, now: Instant, frame: &[u8]) -> Result<(), Error> {
        // Bytes after the fields we know are ignored, as Java does (a newer server's fields).
        let resp = match ConnectResponse::decode_prefix(frame) {
            Ok(resp) => resp,
            Err(e) => return Err(refused_handshake(frame).unwrap_or(e.into())),
        };
        if resp.time_out <= 0 {
            self.end(SessionState::Expired);
            return Err(Error::SessionExpired);
        }
        if self.seen_rw_server && resp.session_id != self.session_id {
            return Err(ProtocolError::Unexpected("server answered with another session").into());
        }
        self.session_id = resp.session_id;
        self.passwd = resp.passwd;
        let negotiated = Duration::from_millis(u64::try_from(resp.time_out).unwrap_or(0));
        if negotiated != self.negotiated && negotiated != self.cfg.session_timeout {
            // The server bounds the timeout (2 to 20 ticks by default): say so once per change.
            crate::log::info!(
                session = %format_args!("{:#x}", resp.session_id),
                asked_ms = u64::try_from(self.cfg.session_timeout.as_millis()).unwrap_or(u64::MAX),
                granted_ms = u64::try_from(negotiated.as_millis()).unwrap_or(u64::MAX),
                "the server changed the session timeout asked for"
            );
        }
        self.negotiated = negotiated;
        self.last_heard = Some(now);
        let read_only = resp.read_only == Some(true);
        if !read_only {
            self.seen_rw_server = true;
        }
        match &self.sasl {
            Some(mechanism) => {
                // The handshake's deadline goes on until the exchange is done.
                let connect = self.timers.connect;
                self.timers.clear();
                self.timers.connect = connect;
                self.phase = Phase::Authenticating;
                let mut exchange = mechanism.start();
                let token = exchange.initial();
                let xid = self.send_sasl(token);
                self.exchange = Some(SaslRun {
                    exchange,
                    xid,
                    read_only,
                });
            }
            None => self.open(now, read_only),
        }
        Ok(())
    }

    /// The session is usable on this connection: requests flow, credentials and watches
    /// are sent again.
    pub(super) fn open(&mut self, now: Instant, read_only: bool) {
        self.phase = Phase::Open;
        self.timers.clear();
        self.timers.read = Some(now + self.negotiated * 2 / 3);
        self.timers.ping = now.checked_add(self.ping_interval());
        let state = if read_only {
            SessionState::ConnectedReadOnly
        } else {
            SessionState::Connected
        };
        self.set_state(state);
        // As the Java client: credentials first (the server keeps them per connection, and a
        // watch restored on an ACL'd node needs them), then the watches.
        self.replay_auths();
        self.restore_watches();
    }
}

/// A read-only server that cannot create a session (it would be a write, unless the servers
/// run with `localSessionsEnabled`) answers the handshake with a bare `ReplyHeader` carrying
/// `NotReadOnly` instead of a `ConnectResponse`. Recognise that, and any other such refusal.
fn refused_handshake(frame: &[u8]) -> Option<Error> {
    let header = ReplyHeader::decode_exact(frame, "ReplyHeader").ok()?;
    Error::from_code(header.err)
}
