//! A scripted fake ZooKeeper server on loopback, in the style of h2's mock
//! (`tests/h2-support/src/mock.rs`): the test accepts a connection, reads the client's frames
//! decoded with `zk-proto`, and writes whatever bytes it wants, well-formed or not.
//!
//! Everything here panics on surprise (a bad frame from the client, a failed write): a test
//! that meets one fails on the spot.

use std::net::SocketAddr;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use zk_proto::records::{ConnectRequest, ConnectResponse, GetDataResponse, Stat};
use zk_proto::{
    DEFAULT_MAX_FRAME_LEN, Decode, Encode, ErrorCode, EventType, KeeperState, ReplyHeader, Request,
    RequestHeader, WatcherEvent, split_frame,
};

/// The session id the fake server hands out.
pub const SESSION_ID: i64 = 0x5eed_0001;

/// The session password the fake server hands out.
pub const PASSWD: [u8; 16] = [7; 16];

/// A listener on `127.0.0.1:0`.
pub struct FakeServer {
    listener: TcpListener,
    addr: SocketAddr,
}

impl FakeServer {
    /// Binds a fresh port.
    pub async fn bind() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("local_addr");
        Self { listener, addr }
    }

    /// The connect string for the client.
    pub fn hosts(&self) -> String {
        self.addr.to_string()
    }

    /// Accepts the next connection.
    pub async fn accept(&self) -> Conn {
        let (stream, _) = self.listener.accept().await.expect("accept");
        stream.set_nodelay(true).expect("nodelay");
        Conn {
            stream,
            buf: BytesMut::new(),
        }
    }

    /// Accepts the next connection and completes its handshake, granting a session timeout
    /// of `timeout_ms`. Returns the connection and the client's `ConnectRequest`.
    pub async fn accept_session(&self, timeout_ms: i32) -> (Conn, ConnectRequest) {
        let mut conn = self.accept().await;
        let request = conn.read_connect().await;
        conn.send(&framed(&encoded(&[&session(timeout_ms)]))).await;
        (conn, request)
    }

    /// Panics if a connection is waiting to be accepted: the kernel completes a TCP handshake
    /// before `connect` returns, so any attempt the client made is in the backlog by now.
    pub fn assert_no_connection_waiting(self) {
        let listener = self.listener.into_std().expect("into_std");
        listener.set_nonblocking(true).expect("nonblocking");
        match listener.accept() {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => panic!("accept failed: {e}"),
            Ok((_, peer)) => panic!("the client connected again (from {peer})"),
        }
    }
}

/// One accepted connection and the bytes read from it but not yet split into frames.
pub struct Conn {
    stream: TcpStream,
    buf: BytesMut,
}

impl Conn {
    /// The next frame from the client (without its length prefix), or `None` when the client
    /// closed the connection. Cancel-safe: bytes read stay in the buffer.
    pub async fn read_frame(&mut self) -> Option<BytesMut> {
        loop {
            if let Some(frame) =
                split_frame(&mut self.buf, DEFAULT_MAX_FRAME_LEN).expect("client sent a bad frame")
            {
                return Some(frame);
            }
            match self.stream.read_buf(&mut self.buf).await {
                Ok(0) => {
                    assert!(self.buf.is_empty(), "the client closed inside a frame");
                    return None;
                }
                Ok(_) => {}
                // The client closed with our bytes unread: also a close.
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return None,
                Err(e) => panic!("read failed: {e}"),
            }
        }
    }

    /// The client's handshake.
    pub async fn read_connect(&mut self) -> ConnectRequest {
        let frame = self
            .read_frame()
            .await
            .expect("EOF before the ConnectRequest");
        ConnectRequest::decode_exact(&frame, "ConnectRequest").expect("bad ConnectRequest")
    }

    /// The next request.
    pub async fn read_request(&mut self) -> (RequestHeader, Request) {
        let frame = self.read_frame().await.expect("EOF, expected a request");
        Request::decode_frame(&frame).expect("bad request frame")
    }

    /// Reads until the client closes the connection; returns the requests read meanwhile.
    pub async fn read_to_eof(&mut self) -> Vec<(RequestHeader, Request)> {
        let mut requests = Vec::new();
        while let Some(frame) = self.read_frame().await {
            requests.push(Request::decode_frame(&frame).expect("bad request frame"));
        }
        requests
    }

    /// Writes raw bytes.
    pub async fn send(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).await.expect("write");
    }
}

/// The bytes of `parts`, one after the other.
pub fn encoded(parts: &[&dyn Encode]) -> Vec<u8> {
    let mut out = BytesMut::new();
    for part in parts {
        part.encode(&mut out).expect("encode");
    }
    out.to_vec()
}

/// `payload` behind its 4-byte length prefix.
pub fn framed(payload: &[u8]) -> Vec<u8> {
    let len = i32::try_from(payload.len()).expect("frame too long");
    let mut out = len.to_be_bytes().to_vec();
    out.extend_from_slice(payload);
    out
}

/// A `ConnectResponse` granting our session with `timeout_ms`.
pub fn session(timeout_ms: i32) -> ConnectResponse {
    ConnectResponse {
        protocol_version: 0,
        time_out: timeout_ms,
        session_id: SESSION_ID,
        passwd: Some(Bytes::from_static(&PASSWD)),
        read_only: Some(false),
    }
}

/// The zxid the fake server puts in the reply to `xid`.
pub fn zxid_of(xid: i32) -> i64 {
    1000 + i64::from(xid)
}

/// The payload of a reply: header (zxid from [`zxid_of`]), then the body if any.
pub fn reply_payload(xid: i32, err: ErrorCode, body: Option<&dyn Encode>) -> Vec<u8> {
    let header = ReplyHeader {
        xid,
        zxid: zxid_of(xid),
        err,
    };
    match body {
        Some(body) => encoded(&[&header, body]),
        None => encoded(&[&header]),
    }
}

/// The `Stat` the fake server gives the node read by request `xid`.
pub fn stat_of(xid: i32) -> Stat {
    Stat {
        mzxid: zxid_of(xid),
        version: xid,
        ..Stat::default()
    }
}

/// The payload of a successful `getData` reply carrying `data`.
pub fn data_payload(xid: i32, data: &[u8]) -> Vec<u8> {
    let body = GetDataResponse {
        data: Some(Bytes::copy_from_slice(data)),
        stat: stat_of(xid),
    };
    reply_payload(xid, ErrorCode::Ok, Some(&body))
}

/// A whole successful `getData` reply frame carrying `data`.
pub fn data_reply(xid: i32, data: &[u8]) -> Vec<u8> {
    framed(&data_payload(xid, data))
}

/// A whole reply frame without a body (an error code, or an empty success).
pub fn empty_reply(xid: i32, err: ErrorCode) -> Vec<u8> {
    framed(&reply_payload(xid, err, None))
}

/// A whole watch notification frame (xid -1).
pub fn notification(event_type: EventType, path: &str) -> Vec<u8> {
    let header = ReplyHeader {
        xid: zk_proto::xid::NOTIFICATION,
        zxid: -1,
        err: ErrorCode::Ok,
    };
    let event = WatcherEvent {
        event_type,
        state: KeeperState::SyncConnected,
        path: path.to_owned(),
    };
    framed(&encoded(&[&header, &event]))
}

/// The path of a `getData` request (panics on any other request).
pub fn get_data_path(request: &Request) -> String {
    match request {
        Request::GetData(r) => r.path.clone(),
        other => panic!("expected getData, got {other:?}"),
    }
}
