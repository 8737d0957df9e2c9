//! [`WireSession`]: a blocking ZooKeeper session built from zk-proto alone over a
//! `std::net::TcpStream`, for the demo and protocol smoke tests.
//!
//! It shows the bytes on the wire with nothing in between: handshake, requests framed with
//! [`Request::encode_frame`], replies split with [`split_frame`] and decoded by the opcode of
//! the request they answer. It sends one request at a time and has no heartbeats or
//! reconnects: the product client is `zk-client`.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use bytes::BytesMut;
use zk_proto::records::{ConnectRequest, ConnectResponse};
use zk_proto::{
    DEFAULT_MAX_FRAME_LEN, Decode, ErrorCode, ReplyHeader, Request, Response, ServerFrame,
    WatcherEvent, encode_frame, split_frame, xid,
};

/// An error of the wire session.
pub type WireError = Box<dyn std::error::Error + Send + Sync>;

/// One session over one connection.
pub struct WireSession {
    stream: TcpStream,
    buf: BytesMut,
    next_xid: i32,
    /// The server's answer to the handshake.
    pub handshake: ConnectResponse,
    /// Watch notifications received so far, oldest first.
    pub events: Vec<WatcherEvent>,
    /// The zxid of the last reply.
    pub last_zxid: i64,
    /// Frames sent and received, and their bytes (with length prefixes).
    pub stats: WireStats,
}

/// Traffic counters of a [`WireSession`].
#[derive(Debug, Default, Clone, Copy)]
pub struct WireStats {
    /// Frames sent.
    pub frames_out: u64,
    /// Bytes sent.
    pub bytes_out: u64,
    /// Frames received.
    pub frames_in: u64,
    /// Bytes received.
    pub bytes_in: u64,
}

impl WireSession {
    /// Connects to `addr` and opens a new session asking for `timeout`.
    pub fn connect(addr: SocketAddr, timeout: Duration) -> Result<WireSession, WireError> {
        let stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
        stream.set_read_timeout(Some(Duration::from_secs(10)))?;
        stream.set_nodelay(true)?;
        let mut session = WireSession {
            stream,
            buf: BytesMut::with_capacity(64 * 1024),
            next_xid: 1,
            handshake: ConnectResponse::default(),
            events: Vec::new(),
            last_zxid: 0,
            stats: WireStats::default(),
        };
        let request = ConnectRequest {
            protocol_version: 0,
            last_zxid_seen: 0,
            time_out: i32::try_from(timeout.as_millis()).unwrap_or(i32::MAX),
            session_id: 0,
            passwd: Some(vec![0u8; 16].into()),
            read_only: Some(false),
        };
        let mut out = BytesMut::new();
        encode_frame(&request, &mut out, DEFAULT_MAX_FRAME_LEN)?;
        session.send(&out)?;
        let frame = session.read_frame()?;
        session.handshake = ConnectResponse::decode_exact(&frame, "ConnectResponse")?;
        if session.handshake.time_out <= 0 {
            return Err("the server refused the session (timeout 0)".into());
        }
        Ok(session)
    }

    fn send(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.stats.frames_out += 1;
        self.stats.bytes_out += bytes.len() as u64;
        self.stream.write_all(bytes)
    }

    fn read_frame(&mut self) -> Result<BytesMut, WireError> {
        loop {
            if let Some(frame) = split_frame(&mut self.buf, DEFAULT_MAX_FRAME_LEN)? {
                self.stats.frames_in += 1;
                self.stats.bytes_in += 4 + frame.len() as u64;
                return Ok(frame);
            }
            let mut chunk = [0u8; 16 * 1024];
            let n = self.stream.read(&mut chunk)?;
            if n == 0 {
                return Err("the server closed the connection".into());
            }
            self.buf
                .extend_from_slice(chunk.get(..n).unwrap_or_default());
        }
    }

    /// Sends `request` and waits for its reply, keeping any watch notification that arrives
    /// first in [`WireSession::events`]. Returns the reply's result code and body.
    pub fn call(&mut self, request: &Request) -> Result<(ErrorCode, Option<Response>), WireError> {
        let this_xid = match request {
            Request::Ping => xid::PING,
            Request::Auth(_) => xid::AUTH,
            Request::SetWatches(_) | Request::SetWatches2(_) => xid::SET_WATCHES,
            _ => {
                let x = self.next_xid;
                self.next_xid = if x == i32::MAX { 1 } else { x + 1 };
                x
            }
        };
        let mut out = BytesMut::new();
        request.encode_frame(this_xid, &mut out, DEFAULT_MAX_FRAME_LEN)?;
        self.send(&out)?;
        let op = request.op_code();
        loop {
            let frame = self.read_frame()?;
            match ServerFrame::decode(&frame, |x| (x == this_xid).then_some(op))? {
                ServerFrame::Notification(_, event) => self.events.push(event),
                ServerFrame::Reply(ReplyHeader { zxid, err, .. }, body) => {
                    if zxid > 0 {
                        self.last_zxid = zxid;
                    }
                    return Ok((err, body));
                }
            }
        }
    }

    /// Like [`WireSession::call`], but a result code other than `Ok` is an error.
    pub fn call_ok(&mut self, request: &Request) -> Result<Option<Response>, WireError> {
        match self.call(request)? {
            (ErrorCode::Ok, body) => Ok(body),
            (err, _) => Err(format!("{:?} failed: {err}", request.op_code()).into()),
        }
    }

    /// Waits for the next watch notification (or returns one already received).
    pub fn next_event(&mut self) -> Result<WatcherEvent, WireError> {
        if !self.events.is_empty() {
            return Ok(self.events.remove(0));
        }
        let frame = self.read_frame()?;
        match ServerFrame::decode(&frame, |_| None)? {
            ServerFrame::Notification(_, event) => Ok(event),
            ServerFrame::Reply(header, _) => Err(format!("unexpected reply {header:?}").into()),
        }
    }

    /// Sends `closeSession` and waits for its reply: the session's ephemeral nodes are gone
    /// when this returns.
    pub fn close(mut self) -> Result<WireStats, WireError> {
        self.call_ok(&Request::CloseSession)?;
        Ok(self.stats)
    }
}
