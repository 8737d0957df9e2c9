//! The session side of SASL: the exchange run on every connection right after its
//! handshake, before anything else is sent (the mechanisms themselves are in `crate::sasl`).

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use zk_proto::records::{GetSaslRequest, SetSaslResponse};
use zk_proto::{Decode, ErrorCode, Reader, ReplyHeader, Request};

use super::{Session, SessionState};
use crate::sasl::{self, Mechanism};
use crate::{Error, ProtocolError};

/// A SASL exchange under way on the current connection.
pub(super) struct SaslRun {
    pub(super) exchange: Box<dyn sasl::Exchange>,
    /// The xid of the token in flight.
    pub(super) xid: i32,
    /// Whether the server is read-only (the state to enter once authenticated).
    pub(super) read_only: bool,
}

impl std::fmt::Debug for SaslRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SaslRun").field("xid", &self.xid).finish()
    }
}

impl<T> Session<T> {
    /// Authenticates every connection with `mechanism` right after its handshake, before
    /// anything else is sent; the session is `Connected` only once it succeeds.
    #[cfg_attr(not(feature = "sasl-digest"), allow(dead_code))]
    pub(crate) fn set_sasl(&mut self, mechanism: Arc<dyn Mechanism>) {
        self.sasl = Some(mechanism);
    }

    /// Sends a SASL token; its xid.
    pub(super) fn send_sasl(&mut self, token: Vec<u8>) -> i32 {
        let xid = self.xids.next();
        let request = Request::Sasl(GetSaslRequest {
            token: Some(Bytes::from(token)),
        });
        // A token is at most a few hundred bytes: it fits any frame limit.
        let _ = request.encode_frame(xid, &mut self.out, usize::MAX);
        xid
    }

    /// A reply in the SASL exchange: answer, or open the session, or end it.
    pub(super) fn handle_sasl(&mut self, now: Instant, frame: &[u8]) -> Result<(), Error> {
        let mut r = Reader::new(frame);
        let header = ReplyHeader::decode(&mut r)?;
        let expected = self.exchange.as_ref().map(|run| run.xid);
        if expected != Some(header.xid) {
            return Err(ProtocolError::UnexpectedXid {
                expected,
                got: header.xid,
            }
            .into());
        }
        if !header.err.is_ok() {
            // A wrong password: the server answers `AuthFailed` and closes.
            let err = match header.err {
                ErrorCode::SessionClosedRequireSaslAuth => Error::AuthRequired,
                _ => Error::AuthFailed,
            };
            return Err(self.end_with(SessionState::AuthFailed, err));
        }
        // Bytes after the reply are ignored, as Java does.
        let reply = SetSaslResponse::decode(&mut r)?;
        let token = reply.token.unwrap_or_default();
        let Some(mut run) = self.exchange.take() else {
            return Err(ProtocolError::Unexpected("SASL reply without an exchange").into());
        };
        match run.exchange.step(&token) {
            Ok(sasl::Step::Respond(token)) => {
                run.xid = self.send_sasl(token);
                self.exchange = Some(run);
                Ok(())
            }
            Ok(sasl::Step::Done) => {
                self.open(now, run.read_only);
                Ok(())
            }
            Err(why) => Err(self.end_with(SessionState::AuthFailed, Error::Sasl(why))),
        }
    }
}
