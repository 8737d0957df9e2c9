//! The machine on scripted connections, on virtual time.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use zk_proto::records::{
    CheckVersionRequest, ConnectResponse, CreateRequest, DeleteRequest, GetDataRequest,
    SetDataRequest, SetWatches,
};
use zk_proto::{
    CreateMode, EventType, MultiOp, MultiRequest, MultiResult, OpCode, Response, ServerFrame,
    records::Acl, xid,
};

use super::*;

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

/// A machine and a connected session on connection 1 (timeout 6 s), at `t0`.
fn connected(t0: Instant) -> (ServerMachine, ConnId, i64, Bytes) {
    let mut m = ServerMachine::new(ServerConfig::new(1), t0);
    let (conn, id, passwd) = handshake(&mut m, t0, 0, None, 6000);
    let (id, passwd) = (id.unwrap(), passwd);
    (m, conn, id, passwd)
}

/// Opens a connection and shakes hands: the connection, the granted session (`None` for
/// a refusal) and password.
fn handshake(
    m: &mut ServerMachine,
    now: Instant,
    session_id: i64,
    passwd: Option<Bytes>,
    time_out: i32,
) -> (ConnId, Option<i64>, Bytes) {
    let conn = m.handle_accept();
    let req = ConnectRequest {
        protocol_version: 0,
        last_zxid_seen: 0,
        time_out,
        session_id,
        passwd: Some(passwd.unwrap_or_else(|| Bytes::from_static(&[0; 16]))),
        read_only: Some(false),
    };
    m.handle_frame(now, conn, &req.to_bytes().unwrap());
    // (A session moving here first cuts its old connection.)
    let frame = std::iter::from_fn(|| m.poll_output())
        .find_map(|o| match o {
            Output::Send(to, frame) if to == conn => Some(frame),
            _ => None,
        })
        .expect("an answer");
    let resp = ConnectResponse::decode_exact(&frame[4..], "ConnectResponse").unwrap();
    let granted = (resp.time_out > 0).then_some(resp.session_id);
    (conn, granted, resp.passwd.unwrap())
}

/// Sends `req` on `conn` and returns every output, frames decoded (replies as answers
/// to `req`).
fn send(
    m: &mut ServerMachine,
    now: Instant,
    conn: ConnId,
    xid: i32,
    req: Request,
) -> Vec<(ConnId, Result<ServerFrame, Output>)> {
    let op = req.op_code();
    let mut out = BytesMut::new();
    req.encode_frame(xid, &mut out, usize::MAX).unwrap();
    m.handle_frame(now, conn, &out[4..]);
    drain(m, op)
}

fn drain(m: &mut ServerMachine, op: OpCode) -> Vec<(ConnId, Result<ServerFrame, Output>)> {
    std::iter::from_fn(|| m.poll_output())
        .map(|o| match o {
            Output::Send(conn, frame) => (
                conn,
                Ok(ServerFrame::decode(&frame[4..], |_| Some(op)).unwrap()),
            ),
            Output::Close(conn) | Output::Cut(conn) => (conn, Err(o)),
        })
        .collect()
}

fn create(path: &str, mode: CreateMode) -> Request {
    Request::Create(CreateRequest {
        path: path.into(),
        data: None,
        acl: Acl::open_unsafe().into(),
        mode,
    })
}

#[test]
fn timeouts_are_clamped_and_a_wrong_password_is_refused_then_closed() {
    let t0 = Instant::now();
    let mut m = ServerMachine::new(ServerConfig::new(1), t0);
    let (_, id, passwd) = handshake(&mut m, t0, 0, None, 100);
    assert_eq!(m.sessions()[0].timeout, secs(4), "raised to the minimum");
    let id = id.unwrap();
    let (conn, refused, _) = handshake(&mut m, t0, id, Some(Bytes::from_static(b"x")), 6000);
    assert_eq!(refused, None);
    assert_eq!(m.poll_output(), Some(Output::Close(conn)));
    let (_, resumed, again) = handshake(&mut m, t0, id, Some(passwd.clone()), 90_000);
    assert_eq!((resumed, again), (Some(id), passwd));
    assert_eq!(m.sessions()[0].timeout, secs(40), "lowered to the maximum");
}

#[test]
fn a_silent_session_expires_at_its_deadline_and_others_hear_of_its_ephemerals() {
    let t0 = Instant::now();
    let (mut m, a, _, _) = connected(t0);
    let (b, b_id, _) = handshake(&mut m, t0 + secs(1), 0, None, 6000);
    send(&mut m, t0, a, 1, create("/e", CreateMode::Ephemeral));
    let get = Request::GetData(GetDataRequest {
        path: "/e".into(),
        watch: true,
    });
    send(&mut m, t0 + secs(1), b, 1, get);
    assert_eq!(m.poll_timeout(), Some(t0 + secs(6)));
    m.handle_timeout(t0 + secs(6) - Duration::from_millis(1));
    assert!(m.poll_output().is_none(), "not yet");
    m.handle_timeout(t0 + secs(6));
    let out = drain(&mut m, OpCode::GetData);
    let [
        (to_b, Ok(ServerFrame::Notification(_, event))),
        (to_a, Err(Output::Cut(_))),
    ] = &out[..]
    else {
        panic!("{out:?}")
    };
    assert_eq!((*to_b, *to_a), (b, a));
    assert_eq!(
        (event.event_type, event.path.as_str()),
        (EventType::NodeDeleted, "/e")
    );
    assert!(m.tree().get("/e").is_none());
    assert_eq!(m.sessions().len(), 1);
    assert_eq!(m.poll_timeout(), Some(t0 + secs(7)), "b's deadline");
    assert!(b_id.is_some());
}

#[test]
fn set_watches_fires_what_changed_since_the_clients_zxid_and_sets_the_rest() {
    let t0 = Instant::now();
    let (mut m, a, id, passwd) = connected(t0);
    for path in ["/d", "/same", "/p"] {
        send(&mut m, t0, a, 1, create(path, CreateMode::Persistent));
    }
    let seen = m.zxid();
    m.handle_disconnect(a);
    let set = Request::SetData(SetDataRequest {
        path: "/d".into(),
        data: None,
        version: -1,
    });
    let (b, _, _) = handshake(&mut m, t0, 0, None, 6000);
    send(&mut m, t0, b, 1, set);
    send(&mut m, t0, b, 2, create("/p/c", CreateMode::Persistent));
    send(&mut m, t0, b, 3, create("/new", CreateMode::Persistent));

    let (a, resumed, _) = handshake(&mut m, t0, id, Some(passwd), 6000);
    assert_eq!(resumed, Some(id));
    let watches = SetWatches {
        relative_zxid: seen,
        data_watches: vec!["/d".into(), "/same".into(), "/gone".into()],
        exist_watches: vec!["/new".into(), "/absent".into()],
        child_watches: vec!["/p".into()],
    };
    let events: Vec<(EventType, String)> = send(
        &mut m,
        t0,
        a,
        xid::SET_WATCHES,
        Request::SetWatches(watches),
    )
    .into_iter()
    .filter_map(|(_, f)| match f {
        Ok(ServerFrame::Notification(_, e)) => Some((e.event_type, e.path)),
        Ok(ServerFrame::Reply(h, _)) => {
            assert_eq!(h.xid, xid::SET_WATCHES, "the reply comes last");
            None
        }
        Err(o) => panic!("{o:?}"),
    })
    .collect();
    let expected = [
        (EventType::NodeDataChanged, "/d"),
        (EventType::NodeDeleted, "/gone"),
        (EventType::NodeCreated, "/new"),
        (EventType::NodeChildrenChanged, "/p"),
    ];
    assert_eq!(
        events,
        expected.map(|(e, p)| (e, p.to_owned())),
        "changed since {seen}"
    );
    assert_eq!(m.watch_count(), 2, "/same and /absent are set");
}

#[test]
fn a_failed_multi_changes_nothing_and_says_which_op_failed() {
    let t0 = Instant::now();
    let (mut m, a, _, _) = connected(t0);
    let multi = MultiRequest {
        ops: vec![
            MultiOp::Create(CreateRequest {
                path: "/x".into(),
                data: None,
                acl: Acl::open_unsafe().into(),
                mode: CreateMode::Persistent,
            }),
            MultiOp::Delete(DeleteRequest {
                path: "/nope".into(),
                version: -1,
            }),
            MultiOp::Check(CheckVersionRequest {
                path: "/".into(),
                version: -1,
            }),
        ],
    };
    let before = m.zxid();
    let out = send(&mut m, t0, a, 1, Request::Multi(multi));
    let [(_, Ok(ServerFrame::Reply(header, Some(Response::Multi(r)))))] = &out[..] else {
        panic!("{out:?}")
    };
    assert_eq!((header.err, header.zxid), (ErrorCode::Ok, before + 1));
    assert_eq!(
        r.results,
        [
            MultiResult::Error(ErrorCode::Ok),
            MultiResult::Error(ErrorCode::NoNode),
            MultiResult::Error(ErrorCode::RuntimeInconsistency)
        ]
    );
    assert!(m.tree().get("/x").is_none());
}
