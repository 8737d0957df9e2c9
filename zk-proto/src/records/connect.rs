//! The handshake: [`ConnectRequest`] and [`ConnectResponse`].
//!
//! Both carry a trailing `readOnly` boolean that is not part of the 3.8 jute classes: the Java
//! client writes it after the request, the server after the response, and each side reads it
//! only if bytes remain (old peers omit it). Here it is an explicit `Option`.

use bytes::BytesMut;

use super::data::Buffer;
use crate::{Decode, DecodeError, Encode, EncodeError, Reader, Visit, Visitor};

/// The first frame a client sends on a new connection.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConnectRequest {
    /// Always 0.
    pub protocol_version: i32,
    /// The last zxid this client saw (0 for a new session); a server behind it refuses us.
    pub last_zxid_seen: i64,
    /// The session timeout asked for, in ms (the server negotiates it).
    pub time_out: i32,
    /// 0 for a new session, else the session to resume.
    pub session_id: i64,
    /// The session's password (16 zero bytes for a new session).
    pub passwd: Buffer,
    /// Whether a read-only server may accept us (`canBeReadOnly`); `None` leaves it out, as
    /// clients older than 3.4 did.
    pub read_only: Option<bool>,
}

/// The server's answer to a [`ConnectRequest`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConnectResponse {
    /// Always 0.
    pub protocol_version: i32,
    /// The negotiated session timeout in ms; 0 means the session to resume has expired.
    pub time_out: i32,
    /// The session's id.
    pub session_id: i64,
    /// The session's password, to resume it on another connection.
    pub passwd: Buffer,
    /// Whether the server is read-only; `None` if the server did not say (old servers).
    pub read_only: Option<bool>,
}

fn decode_read_only(r: &mut Reader<'_>, at: &'static str) -> Result<Option<bool>, DecodeError> {
    if r.remaining() == 0 {
        Ok(None)
    } else {
        r.at(at).bool().map(Some)
    }
}

impl Decode for ConnectRequest {
    const MIN_LEN: usize = 28;
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(Self {
            protocol_version: r.at("ConnectRequest.protocolVersion").i32()?,
            last_zxid_seen: r.at("ConnectRequest.lastZxidSeen").i64()?,
            time_out: r.at("ConnectRequest.timeOut").i32()?,
            session_id: r.at("ConnectRequest.sessionId").i64()?,
            passwd: Buffer::decode(r.at("ConnectRequest.passwd"))?,
            read_only: decode_read_only(r, "ConnectRequest.readOnly")?,
        })
    }
}

impl Encode for ConnectRequest {
    fn encoded_len(&self) -> usize {
        24 + self.passwd.encoded_len() + usize::from(self.read_only.is_some())
    }
    fn encode(&self, out: &mut BytesMut) -> Result<(), EncodeError> {
        self.protocol_version.encode(out)?;
        self.last_zxid_seen.encode(out)?;
        self.time_out.encode(out)?;
        self.session_id.encode(out)?;
        self.passwd.encode(out)?;
        self.read_only.map_or(Ok(()), |b| b.encode(out))
    }
}

impl Visit for ConnectRequest {
    fn visit(&self, tag: &str, v: &mut dyn Visitor) {
        v.start_record(tag);
        v.int("protocolVersion", self.protocol_version);
        v.long("lastZxidSeen", self.last_zxid_seen);
        v.int("timeOut", self.time_out);
        v.long("sessionId", self.session_id);
        self.passwd.visit("passwd", v);
        v.end_record();
        if let Some(b) = self.read_only {
            v.bool("readOnly", b);
        }
    }
}

impl Decode for ConnectResponse {
    const MIN_LEN: usize = 20;
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(Self {
            protocol_version: r.at("ConnectResponse.protocolVersion").i32()?,
            time_out: r.at("ConnectResponse.timeOut").i32()?,
            session_id: r.at("ConnectResponse.sessionId").i64()?,
            passwd: Buffer::decode(r.at("ConnectResponse.passwd"))?,
            read_only: decode_read_only(r, "ConnectResponse.readOnly")?,
        })
    }
}

impl Encode for ConnectResponse {
    fn encoded_len(&self) -> usize {
        16 + self.passwd.encoded_len() + usize::from(self.read_only.is_some())
    }
    fn encode(&self, out: &mut BytesMut) -> Result<(), EncodeError> {
        self.protocol_version.encode(out)?;
        self.time_out.encode(out)?;
        self.session_id.encode(out)?;
        self.passwd.encode(out)?;
        self.read_only.map_or(Ok(()), |b| b.encode(out))
    }
}

impl Visit for ConnectResponse {
    fn visit(&self, tag: &str, v: &mut dyn Visitor) {
        v.start_record(tag);
        v.int("protocolVersion", self.protocol_version);
        v.int("timeOut", self.time_out);
        v.long("sessionId", self.session_id);
        self.passwd.visit("passwd", v);
        v.end_record();
        if let Some(b) = self.read_only {
            v.bool("readOnly", b);
        }
    }
}
