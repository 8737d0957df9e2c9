//! The bytes on the wire: a real handshake and a few requests against a started ZooKeeper,
//! using only zk-proto's encoding and framing over a plain `std::net::TcpStream`.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use bytes::BytesMut;
use zk_proto::records::*;
use zk_proto::{
    CreateMode, DEFAULT_MAX_FRAME_LEN, Decode, ErrorCode, EventType, KeeperState, OpCode,
    ReplyHeader, Request, Response, ServerFrame, encode_frame, split_frame, xid,
};

struct Conn {
    stream: TcpStream,
    buf: BytesMut,
}

impl Conn {
    fn open(addr: std::net::SocketAddr) -> Conn {
        let stream = TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        Conn {
            stream,
            buf: BytesMut::new(),
        }
    }

    fn frame(&mut self) -> BytesMut {
        loop {
            if let Some(f) = split_frame(&mut self.buf, DEFAULT_MAX_FRAME_LEN).unwrap() {
                return f;
            }
            let mut chunk = [0u8; 4096];
            let n = self.stream.read(&mut chunk).unwrap();
            assert!(n > 0, "server closed the connection");
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    fn send(&mut self, xid: i32, req: &Request) {
        let mut out = BytesMut::new();
        req.encode_frame(xid, &mut out, DEFAULT_MAX_FRAME_LEN)
            .unwrap();
        self.stream.write_all(&out).unwrap();
    }

    fn reply(&mut self, xid: i32, op: OpCode) -> (ReplyHeader, Option<Response>) {
        match ServerFrame::decode(&self.frame(), |x| (x == xid).then_some(op)).unwrap() {
            ServerFrame::Reply(h, body) => (h, body),
            other => panic!("expected a reply, got {other:?}"),
        }
    }

    fn handshake(
        addr: std::net::SocketAddr,
        session_id: i64,
        passwd: Buffer,
    ) -> (Conn, ConnectResponse) {
        let mut c = Conn::open(addr);
        let req = ConnectRequest {
            protocol_version: 0,
            last_zxid_seen: 0,
            time_out: 4000,
            session_id,
            passwd,
            read_only: Some(false),
        };
        let mut out = BytesMut::new();
        encode_frame(&req, &mut out, DEFAULT_MAX_FRAME_LEN).unwrap();
        // 4-byte length, then 4 + 8 + 4 + 8 + (4 + 16) + 1 bytes.
        assert_eq!(out.len(), 4 + 45);
        c.stream.write_all(&out).unwrap();
        let frame = c.frame();
        let resp = ConnectResponse::decode_exact(&frame, "ConnectResponse").unwrap();
        (c, resp)
    }
}

#[test]
fn handshake_and_requests_with_zk_proto_over_plain_tcp() {
    let zk = xtask::ZkServer::start().unwrap();
    let (mut c, resp) = Conn::handshake(zk.addr(), 0, Some(vec![0; 16].into()));
    assert_eq!(resp.protocol_version, 0);
    assert!(resp.session_id != 0);
    // The server negotiates 4000 ms within its bounds (2 and 20 ticks).
    assert!(resp.time_out > 0 && resp.time_out <= 4000, "{resp:?}");
    assert_eq!(resp.passwd.as_ref().map(|p| p.len()), Some(16));
    assert_eq!(resp.read_only, Some(false));

    // create2 returns the node's Stat; the Stat agrees with what we sent.
    let create = Request::Create2(CreateRequest {
        path: "/smoke".into(),
        data: Some("hello".into()),
        acl: Acl::open_unsafe().into(),
        mode: CreateMode::Persistent,
    });
    c.send(1, &create);
    let (h, body) = c.reply(1, OpCode::Create2);
    assert_eq!((h.xid, h.err), (1, ErrorCode::Ok));
    let Some(Response::Create2(created)) = body else {
        panic!("{body:?}")
    };
    assert_eq!(created.path, "/smoke");
    assert_eq!(created.stat.data_length, 5);
    assert_eq!(created.stat.czxid, h.zxid);

    // Pipelined: three requests out before any reply is read; replies come in order.
    c.send(
        2,
        &Request::GetData(GetDataRequest {
            path: "/smoke".into(),
            watch: true,
        }),
    );
    c.send(
        3,
        &Request::Exists(ExistsRequest {
            path: "/missing".into(),
            watch: false,
        }),
    );
    c.send(
        4,
        &Request::GetChildren(GetChildrenRequest {
            path: "/".into(),
            watch: false,
        }),
    );
    let (h, body) = c.reply(2, OpCode::GetData);
    assert_eq!(h.err, ErrorCode::Ok);
    let Some(Response::GetData(data)) = body else {
        panic!("{body:?}")
    };
    assert_eq!(data.data.as_deref(), Some(&b"hello"[..]));
    let (h, body) = c.reply(3, OpCode::Exists);
    assert_eq!((h.err, body), (ErrorCode::NoNode, None));
    let (_, body) = c.reply(4, OpCode::GetChildren);
    let Some(Response::GetChildren(kids)) = body else {
        panic!("{body:?}")
    };
    assert!(kids.children.contains(&"smoke".to_owned()), "{kids:?}");

    // A second session changes the data: our data watch fires (xid -1) before its reply.
    let (mut other, _) = Conn::handshake(zk.addr(), 0, Some(vec![0; 16].into()));
    other.send(
        1,
        &Request::SetData(SetDataRequest {
            path: "/smoke".into(),
            data: None,
            version: 0,
        }),
    );
    let (h, _) = other.reply(1, OpCode::SetData);
    assert_eq!(h.err, ErrorCode::Ok);
    match ServerFrame::decode(&c.frame(), |_| None).unwrap() {
        ServerFrame::Notification(h, event) => {
            assert_eq!(h.xid, xid::NOTIFICATION);
            assert_eq!(event.event_type, EventType::NodeDataChanged);
            assert_eq!(event.state, KeeperState::SyncConnected);
            assert_eq!(event.path, "/smoke");
        }
        other => panic!("expected the watch event, got {other:?}"),
    }

    // Ping (xid -2), then an ephemeral and closeSession: the ephemeral is gone at once.
    c.send(xid::PING, &Request::Ping);
    let (h, body) = c.reply(xid::PING, OpCode::Ping);
    assert_eq!((h.xid, body), (xid::PING, Some(Response::Empty)));
    let eph = Request::Create(CreateRequest {
        path: "/smoke/e-".into(),
        data: None,
        acl: Acl::open_unsafe().into(),
        mode: CreateMode::EphemeralSequential,
    });
    c.send(5, &eph);
    let (_, body) = c.reply(5, OpCode::Create);
    let Some(Response::Create(e)) = body else {
        panic!("{body:?}")
    };
    assert_eq!(e.path, "/smoke/e-0000000000");
    c.send(6, &Request::CloseSession);
    let (h, _) = c.reply(6, OpCode::CloseSession);
    assert_eq!(h.err, ErrorCode::Ok);
    other.send(
        2,
        &Request::Exists(ExistsRequest {
            path: e.path.clone(),
            watch: false,
        }),
    );
    let (h, _) = other.reply(2, OpCode::Exists);
    assert_eq!(h.err, ErrorCode::NoNode);

    // Resuming the closed session is refused with a zero timeout.
    let (_, resumed) = Conn::handshake(zk.addr(), resp.session_id, resp.passwd.clone());
    assert_eq!(resumed.time_out, 0, "{resumed:?}");
}
