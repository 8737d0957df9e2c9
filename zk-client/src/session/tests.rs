//! Scripted tests of the session core: a fake server on virtual time, no socket, no sleep.

use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use zk_proto::records::*;
use zk_proto::{
    AddWatchMode, Decode, Encode, ErrorCode, EventType, KeeperState, Reader, ReplyHeader, Request,
    RequestHeader, Response, WatcherEvent, WatcherType, split_frame, xid,
};

use super::*;
use crate::ProtocolError;

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

fn ms(m: u64) -> Duration {
    Duration::from_millis(m)
}

fn cfg() -> SessionConfig {
    SessionConfig {
        session_timeout: secs(6),
        connect_timeout: secs(2),
        ..SessionConfig::default()
    }
}

/// The frames the session wants to send, split.
fn frames(s: &mut Session<u32>) -> Vec<BytesMut> {
    let mut out = Vec::new();
    if let Some(mut buf) = s.poll_transmit() {
        while let Some(f) = split_frame(&mut buf, usize::MAX).unwrap() {
            out.push(f);
        }
        assert!(buf.is_empty());
    }
    out
}

/// The requests the session wants to send, decoded.
fn sent(s: &mut Session<u32>) -> Vec<(i32, Request)> {
    frames(s)
        .iter()
        .map(|f| {
            let (h, r) = Request::decode_frame(f).unwrap();
            (h.xid, r)
        })
        .collect()
}

fn events(s: &mut Session<u32>) -> Vec<SessionEvent<u32>> {
    std::iter::from_fn(|| s.poll_event()).collect()
}

fn reply(xid: i32, zxid: i64, err: ErrorCode, body: Option<&dyn EncodeDyn>) -> Vec<u8> {
    let mut out = BytesMut::new();
    ReplyHeader { xid, zxid, err }.encode(&mut out).unwrap();
    if let Some(b) = body {
        b.encode_dyn(&mut out);
    }
    out.to_vec()
}

trait EncodeDyn {
    fn encode_dyn(&self, out: &mut BytesMut);
}
impl<E: Encode> EncodeDyn for E {
    fn encode_dyn(&self, out: &mut BytesMut) {
        self.encode(out).unwrap();
    }
}

fn notification(event_type: EventType, path: &str) -> Vec<u8> {
    let ev = WatcherEvent {
        event_type,
        state: KeeperState::SyncConnected,
        path: path.into(),
    };
    reply(xid::NOTIFICATION, -1, ErrorCode::Ok, Some(&ev))
}

fn connect_response(timeout_ms: i32, session_id: i64) -> Vec<u8> {
    ConnectResponse {
        protocol_version: 0,
        time_out: timeout_ms,
        session_id,
        passwd: Some(Bytes::from_static(b"0123456789abcdef")),
        read_only: Some(false),
    }
    .to_bytes()
    .unwrap()
    .to_vec()
}

/// A session connected at `t0` with a negotiated timeout of 6 s.
fn connected(t0: Instant) -> Session<u32> {
    let mut s = Session::new(cfg());
    s.handle_connected(t0);
    let hello = frames(&mut s);
    let req = ConnectRequest::decode_exact(&hello[0], "ConnectRequest").unwrap();
    assert_eq!(
        (req.session_id, req.last_zxid_seen, req.time_out),
        (0, 0, 6000)
    );
    assert_eq!(req.passwd.as_deref(), Some(&[0u8; 16][..]));
    assert_eq!(req.read_only, Some(false));
    s.handle_frame(t0, &connect_response(6000, 0x11)).unwrap();
    assert!(matches!(
        events(&mut s)[..],
        [SessionEvent::State(SessionState::Connected)]
    ));
    s
}

fn get_data(path: &str, watch: bool) -> Request {
    Request::GetData(GetDataRequest {
        path: path.into(),
        watch,
    })
}

fn data_reply(xid: i32, zxid: i64, data: &'static [u8]) -> Vec<u8> {
    let body = GetDataResponse {
        data: Some(Bytes::from_static(data)),
        stat: Stat::default(),
    };
    reply(xid, zxid, ErrorCode::Ok, Some(&body))
}

#[test]
fn handshake_then_ping_after_a_third_and_dead_after_two_thirds() {
    let t0 = Instant::now();
    let mut s = connected(t0);
    assert_eq!(s.session_id(), 0x11);
    assert_eq!(s.negotiated_timeout(), secs(6));
    assert_eq!(s.poll_timeout(), Some(t0 + secs(2)));
    s.handle_timeout(t0 + ms(1999)).unwrap(); // spurious: nothing
    assert!(frames(&mut s).is_empty());
    s.handle_timeout(t0 + secs(2)).unwrap();
    assert_eq!(sent(&mut s), [(xid::PING, Request::Ping)]);
    assert_eq!(s.poll_timeout(), Some(t0 + secs(4)));
    // The ping's reply is read: the read deadline moves.
    s.handle_frame(t0 + secs(3), &reply(xid::PING, 0, ErrorCode::Ok, None))
        .unwrap();
    assert_eq!(s.poll_timeout(), Some(t0 + secs(4))); // next ping
    s.handle_timeout(t0 + secs(4)).unwrap();
    assert_eq!(sent(&mut s), [(xid::PING, Request::Ping)]);
    // Nothing read since t0 + 3 s: dead at t0 + 7 s.
    assert_eq!(s.poll_timeout(), Some(t0 + secs(6)));
    s.handle_timeout(t0 + secs(6)).unwrap();
    assert_eq!(sent(&mut s), [(xid::PING, Request::Ping)]);
    assert_eq!(s.handle_timeout(t0 + secs(7)), Err(Error::ConnectionLoss));
    s.handle_disconnect(t0 + secs(7));
    assert!(matches!(
        events(&mut s)[..],
        [SessionEvent::State(SessionState::Disconnected)]
    ));
    // Only the lost deadline is left: the session timeout after the last frame heard.
    assert_eq!(s.poll_timeout(), Some(t0 + secs(3) + secs(6)));
}

#[test]
fn handshake_times_out() {
    let t0 = Instant::now();
    let mut s: Session<u32> = Session::new(cfg());
    s.handle_connected(t0);
    assert_eq!(s.poll_timeout(), Some(t0 + secs(2)));
    assert_eq!(s.handle_timeout(t0 + secs(2)), Err(Error::ConnectTimeout));
}

#[test]
fn pipelined_replies_go_to_their_callers_in_order() {
    let t0 = Instant::now();
    let mut s = connected(t0);
    for token in 1..=3 {
        s.submit(t0, get_data(&format!("/n{token}"), false), token, None)
            .unwrap();
    }
    let out = sent(&mut s);
    assert_eq!(out.iter().map(|(x, _)| *x).collect::<Vec<_>>(), [1, 2, 3]);
    assert_eq!(s.pending_len(), 3);
    s.handle_frame(t0, &data_reply(1, 5, b"one")).unwrap();
    s.handle_frame(t0, &reply(2, 5, ErrorCode::NoNode, None))
        .unwrap();
    s.handle_frame(t0, &data_reply(3, 6, b"three")).unwrap();
    let got: Vec<(u32, Result<Option<Bytes>, Error>)> = events(&mut s)
        .into_iter()
        .map(|e| match e {
            SessionEvent::Reply { token, result } => (
                token,
                result.map(|r| match r {
                    Response::GetData(d) => d.data,
                    other => panic!("{other:?}"),
                }),
            ),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        got,
        [
            (1, Ok(Some(Bytes::from_static(b"one")))),
            (2, Err(Error::NoNode)),
            (3, Ok(Some(Bytes::from_static(b"three"))))
        ]
    );
    assert_eq!(s.last_zxid(), 6);
}

#[test]
fn a_reply_with_the_wrong_xid_is_a_protocol_error_and_fails_everything() {
    let t0 = Instant::now();
    let mut s = connected(t0);
    s.submit(t0, get_data("/a", false), 1, None).unwrap();
    s.submit(t0, get_data("/b", false), 2, None).unwrap();
    assert_eq!(sent(&mut s).len(), 2);
    let err = s.handle_frame(t0, &data_reply(2, 5, b"")).unwrap_err();
    assert_eq!(
        err,
        Error::Protocol(ProtocolError::UnexpectedXid {
            expected: Some(1),
            got: 2
        })
    );
    s.handle_disconnect(t0);
    let ev = events(&mut s);
    assert!(matches!(
        ev[0],
        SessionEvent::Reply {
            token: 1,
            result: Err(Error::ConnectionLoss)
        }
    ));
    assert!(matches!(
        ev[1],
        SessionEvent::Reply {
            token: 2,
            result: Err(Error::ConnectionLoss)
        }
    ));
    assert!(matches!(
        ev[2],
        SessionEvent::State(SessionState::Disconnected)
    ));
    // A reply nobody waits for is an error too.
    let mut s = connected(t0);
    assert!(s.handle_frame(t0, &data_reply(9, 5, b"")).is_err());
}

#[test]
fn a_malformed_body_fails_its_caller_with_the_decode_error() {
    let t0 = Instant::now();
    let mut s = connected(t0);
    s.submit(t0, get_data("/a", true), 1, Some(WatcherId(7)))
        .unwrap();
    let mut bad = data_reply(1, 5, b"xyz");
    bad.truncate(bad.len() - 3);
    let err = s.handle_frame(t0, &bad).unwrap_err();
    assert!(
        matches!(err, Error::Protocol(ProtocolError::Decode(_))),
        "{err:?}"
    );
    let ev = events(&mut s);
    assert!(matches!(&ev[0], SessionEvent::Reply { token: 1, result: Err(e) } if *e == err));
    assert!(matches!(ev[1], SessionEvent::Unwatched(WatcherId(7))));
}

#[test]
fn watches_are_set_by_successful_replies_and_fire_once() {
    let t0 = Instant::now();
    let mut s = connected(t0);
    let (a, b, c) = (WatcherId(1), WatcherId(2), WatcherId(3));
    s.submit(t0, get_data("/x", true), 1, Some(a)).unwrap();
    s.submit(t0, get_data("/x", true), 2, Some(b)).unwrap();
    s.submit(t0, get_data("/missing", true), 3, Some(c))
        .unwrap();
    let exists = Request::Exists(ExistsRequest {
        path: "/later".into(),
        watch: true,
    });
    s.submit(t0, exists, 4, Some(WatcherId(4))).unwrap();
    s.handle_frame(t0, &data_reply(1, 5, b"")).unwrap();
    s.handle_frame(t0, &data_reply(2, 5, b"")).unwrap();
    s.handle_frame(t0, &reply(3, 5, ErrorCode::NoNode, None))
        .unwrap();
    s.handle_frame(t0, &reply(4, 5, ErrorCode::NoNode, None))
        .unwrap();
    let ev = events(&mut s);
    assert!(
        matches!(ev[2], SessionEvent::Unwatched(WatcherId(3))),
        "{ev:?}"
    );
    assert!(matches!(
        ev[3],
        SessionEvent::Reply {
            token: 3,
            result: Err(Error::NoNode)
        }
    ));
    assert!(matches!(
        ev[4],
        SessionEvent::Reply {
            token: 4,
            result: Err(Error::NoNode)
        }
    ));

    // The event is seen before the reply that follows it on the wire.
    s.submit(t0, get_data("/x", false), 5, None).unwrap();
    s.handle_frame(t0, &notification(EventType::NodeDataChanged, "/x"))
        .unwrap();
    s.handle_frame(t0, &data_reply(5, 6, b"new")).unwrap();
    s.handle_frame(t0, &notification(EventType::NodeCreated, "/later"))
        .unwrap();
    s.handle_frame(t0, &notification(EventType::NodeDataChanged, "/x"))
        .unwrap(); // nobody
    let ev = events(&mut s);
    let kinds: Vec<String> = ev
        .iter()
        .map(|e| match e {
            SessionEvent::Watch { id, event, last } => {
                format!(
                    "watch {} {:?} {} {last}",
                    id.0, event.event_type, event.path
                )
            }
            SessionEvent::Reply { token, .. } => format!("reply {token}"),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "watch 1 NodeDataChanged /x true",
            "watch 2 NodeDataChanged /x true",
            "reply 5",
            "watch 4 NodeCreated /later true"
        ]
    );
}

#[test]
fn persistent_watches_and_their_removal() {
    let t0 = Instant::now();
    let mut s = connected(t0);
    let add = Request::AddWatch(AddWatchRequest {
        path: "/p".into(),
        mode: AddWatchMode::PersistentRecursive,
    });
    s.submit(t0, add, 1, Some(WatcherId(1))).unwrap();
    s.handle_frame(
        t0,
        &reply(
            1,
            5,
            ErrorCode::Ok,
            Some(&ErrorResponse { err: ErrorCode::Ok }),
        ),
    )
    .unwrap();
    s.handle_frame(t0, &notification(EventType::NodeCreated, "/p/a/b"))
        .unwrap();
    s.handle_frame(t0, &notification(EventType::NodeDeleted, "/p"))
        .unwrap();
    let remove = Request::RemoveWatches(RemoveWatchesRequest {
        path: "/p".into(),
        watcher_type: WatcherType::PersistentRecursive,
    });
    s.submit(t0, remove, 2, None).unwrap();
    s.handle_frame(t0, &reply(2, 5, ErrorCode::Ok, None))
        .unwrap();
    let ev: Vec<(EventType, bool)> = events(&mut s)
        .into_iter()
        .filter_map(|e| match e {
            SessionEvent::Watch { event, last, .. } => Some((event.event_type, last)),
            _ => None,
        })
        .collect();
    assert_eq!(
        ev,
        [
            (EventType::NodeCreated, false),
            (EventType::NodeDeleted, false),
            (EventType::PersistentWatchRemoved, true)
        ]
    );
}

#[test]
fn expiry_on_reconnect_ends_everything() {
    let t0 = Instant::now();
    let mut s = connected(t0);
    s.submit(t0, get_data("/x", true), 1, Some(WatcherId(1)))
        .unwrap();
    s.handle_frame(t0, &data_reply(1, 42, b"")).unwrap();
    s.submit(t0, get_data("/y", false), 2, None).unwrap();
    s.handle_disconnect(t0 + secs(1));
    events(&mut s);
    assert_eq!(
        s.submit(t0 + secs(1), get_data("/y", false), 3, None)
            .unwrap_err()
            .1,
        Error::NotConnected
    );

    // The next connection resends the session id, its password and the last zxid seen.
    s.handle_connected(t0 + secs(2));
    let req = ConnectRequest::decode_exact(&frames(&mut s)[0], "ConnectRequest").unwrap();
    assert_eq!((req.session_id, req.last_zxid_seen), (0x11, 42));
    assert_eq!(req.passwd.as_deref(), Some(&b"0123456789abcdef"[..]));
    // A zero timeout: the session expired.
    assert_eq!(
        s.handle_frame(t0 + secs(2), &connect_response(0, 0)),
        Err(Error::SessionExpired)
    );
    let ev = events(&mut s);
    assert!(
        matches!(ev[0], SessionEvent::State(SessionState::Expired)),
        "{ev:?}"
    );
    assert!(matches!(
        &ev[1],
        SessionEvent::Watch { id: WatcherId(1), event, last: true }
            if event.event_type == EventType::None && event.state == KeeperState::Expired
    ));
    s.handle_disconnect(t0 + secs(2));
    assert!(events(&mut s).is_empty());
    assert_eq!(
        s.submit(t0, get_data("/y", false), 4, None).unwrap_err().1,
        Error::SessionExpired
    );
}

#[test]
fn close_session_ends_in_closed() {
    let t0 = Instant::now();
    let mut s = connected(t0);
    s.submit(t0, Request::CloseSession, 1, None).unwrap();
    assert_eq!(sent(&mut s), [(1, Request::CloseSession)]);
    assert_eq!(
        s.submit(t0, get_data("/y", false), 2, None).unwrap_err().1,
        Error::Closed
    );
    s.handle_frame(t0, &reply(1, 9, ErrorCode::Ok, None))
        .unwrap();
    let ev = events(&mut s);
    assert!(matches!(
        ev[0],
        SessionEvent::Reply {
            token: 1,
            result: Ok(Response::Empty)
        }
    ));
    assert!(matches!(ev[1], SessionEvent::State(SessionState::Closed)));
    s.handle_disconnect(t0);
    assert!(events(&mut s).is_empty());
}

#[test]
fn auth_replies_are_matched_apart_and_a_failure_is_terminal() {
    let t0 = Instant::now();
    let mut s = connected(t0);
    let auth = |id: &str| {
        Request::Auth(AuthPacket {
            auth_type: 0,
            scheme: "digest".into(),
            auth: Some(Bytes::from(id.to_owned())),
        })
    };
    s.submit(t0, get_data("/a", false), 1, None).unwrap();
    s.submit(t0, auth("u:p"), 2, None).unwrap();
    s.submit(t0, auth("u:bad"), 3, None).unwrap();
    let xids: Vec<i32> = sent(&mut s).iter().map(|(x, _)| *x).collect();
    assert_eq!(xids, [1, xid::AUTH, xid::AUTH]);
    // The server answers auth at once, ahead of the pipeline.
    s.handle_frame(t0, &reply(xid::AUTH, 0, ErrorCode::Ok, None))
        .unwrap();
    assert_eq!(
        s.handle_frame(t0, &reply(xid::AUTH, 0, ErrorCode::AuthFailed, None)),
        Err(Error::AuthFailed)
    );
    let ev = events(&mut s);
    assert!(matches!(
        ev[0],
        SessionEvent::Reply {
            token: 2,
            result: Ok(Response::Empty)
        }
    ));
    assert!(matches!(
        ev[1],
        SessionEvent::Reply {
            token: 3,
            result: Err(Error::AuthFailed)
        }
    ));
    assert!(matches!(
        ev[2],
        SessionEvent::State(SessionState::AuthFailed)
    ));
    // The read written before the failed credentials may have been served: uncertain.
    assert!(matches!(
        ev[3],
        SessionEvent::Reply {
            token: 1,
            result: Err(Error::ConnectionLoss)
        }
    ));
}

#[test]
fn an_oversized_request_is_refused_before_the_wire() {
    let t0 = Instant::now();
    let mut s = connected(t0);
    let big = Request::SetData(SetDataRequest {
        path: "/a".into(),
        data: Some(Bytes::from(vec![0u8; 2 << 20])),
        version: -1,
    });
    let (token, err) = s.submit(t0, big, 1, None).unwrap_err();
    assert_eq!(token, 1);
    assert!(matches!(err, Error::TooLarge { .. }), "{err:?}");
    assert!(s.poll_transmit().is_none());
    assert_eq!(s.pending_len(), 0);
    // The xid was not used: the next request still gets xid 1.
    s.submit(t0, get_data("/a", false), 2, None).unwrap();
    assert_eq!(sent(&mut s)[0].0, 1);
}

#[test]
fn requests_before_connecting_fail_as_not_sent() {
    let mut s: Session<u32> = Session::new(cfg());
    let (_, err) = s
        .submit(Instant::now(), get_data("/a", false), 1, None)
        .unwrap_err();
    // Not `ConnectionLoss`: nothing left, so nothing can have been applied.
    assert_eq!(err, Error::NotConnected);
    assert!(!err.is_uncertain());
    let mut r = Reader::new(&[]);
    assert!(RequestHeader::decode(&mut r).is_err());
}

#[test]
fn reconnect_restores_watches_before_new_requests() {
    let t0 = Instant::now();
    let mut s = connected(t0);
    s.submit(t0, get_data("/d", true), 1, Some(WatcherId(1)))
        .unwrap();
    let exists = Request::Exists(ExistsRequest {
        path: "/e".into(),
        watch: true,
    });
    s.submit(t0, exists, 2, Some(WatcherId(2))).unwrap();
    let kids = Request::GetChildren(GetChildrenRequest {
        path: "/c".into(),
        watch: true,
    });
    s.submit(t0, kids, 3, Some(WatcherId(3))).unwrap();
    s.handle_frame(t0, &data_reply(1, 7, b"")).unwrap();
    s.handle_frame(t0, &reply(2, 8, ErrorCode::NoNode, None))
        .unwrap();
    let body = GetChildrenResponse { children: vec![] };
    s.handle_frame(t0, &reply(3, 9, ErrorCode::Ok, Some(&body)))
        .unwrap();
    sent(&mut s);
    s.handle_disconnect(t0 + secs(1));
    events(&mut s);

    s.handle_connected(t0 + secs(2));
    let req = ConnectRequest::decode_exact(&frames(&mut s)[0], "ConnectRequest").unwrap();
    assert_eq!((req.session_id, req.last_zxid_seen), (0x11, 9));
    s.handle_frame(t0 + secs(2), &connect_response(6000, 0x11))
        .unwrap();
    s.submit(t0 + secs(2), get_data("/new", false), 4, None)
        .unwrap();
    let out = sent(&mut s);
    let expected = SetWatches {
        relative_zxid: 9,
        data_watches: vec!["/d".into()],
        exist_watches: vec!["/e".into()],
        child_watches: vec!["/c".into()],
    };
    assert_eq!(out[0], (xid::SET_WATCHES, Request::SetWatches(expected)));
    assert_eq!(out[1], (4, get_data("/new", false)));
    // A change made while away fires now.
    s.handle_frame(
        t0 + secs(2),
        &reply(xid::SET_WATCHES, 9, ErrorCode::Ok, None),
    )
    .unwrap();
    s.handle_frame(t0 + secs(2), &notification(EventType::NodeCreated, "/e"))
        .unwrap();
    let ev = events(&mut s);
    assert!(matches!(
        ev[0],
        SessionEvent::State(SessionState::Connected)
    ));
    assert!(
        matches!(
            &ev[1],
            SessionEvent::Watch {
                id: WatcherId(2),
                last: true,
                ..
            }
        ),
        "{ev:?}"
    );
}

#[test]
fn persistent_watches_are_restored_with_set_watches2_in_bounded_frames() {
    let t0 = Instant::now();
    let mut s = connected(t0);
    let long = "x".repeat(1000);
    let mut token = 0;
    for i in 0..300 {
        token += 1;
        let path = format!("/{long}{i}");
        s.submit(
            t0,
            get_data(&path, true),
            token,
            Some(WatcherId(token.into())),
        )
        .unwrap();
        s.handle_frame(t0, &data_reply(i32::try_from(token).unwrap(), 5, b""))
            .unwrap();
    }
    let add = Request::AddWatch(AddWatchRequest {
        path: "/p".into(),
        mode: AddWatchMode::Persistent,
    });
    s.submit(t0, add, 999, Some(WatcherId(999))).unwrap();
    s.handle_frame(
        t0,
        &reply(
            301,
            6,
            ErrorCode::Ok,
            Some(&ErrorResponse { err: ErrorCode::Ok }),
        ),
    )
    .unwrap();
    sent(&mut s);
    s.handle_disconnect(t0);
    s.handle_connected(t0);
    frames(&mut s);
    s.handle_frame(t0, &connect_response(6000, 0x11)).unwrap();
    let out = frames(&mut s);
    assert!(
        out.len() >= 3,
        "300 KB of paths need several frames, got {}",
        out.len()
    );
    let mut data = 0;
    let mut persistent = Vec::new();
    for f in &out {
        assert!(f.len() < SET_WATCHES_MAX_BYTES + 2048);
        match Request::decode_frame(f).unwrap() {
            (h, Request::SetWatches2(w)) => {
                assert_eq!(h.xid, xid::SET_WATCHES);
                assert_eq!(w.relative_zxid, 6);
                data += w.data_watches.len();
                persistent.extend(w.persistent_watches);
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!((data, persistent), (300, vec!["/p".to_owned()]));
}

#[test]
fn no_server_for_the_session_timeout_means_lost_and_a_late_answer_is_expired() {
    let t0 = Instant::now();
    let mut s = connected(t0);
    s.handle_frame(t0 + secs(1), &reply(xid::PING, 0, ErrorCode::Ok, None))
        .unwrap();
    s.handle_disconnect(t0 + secs(2));
    assert!(matches!(
        events(&mut s)[..],
        [SessionEvent::State(SessionState::Disconnected)]
    ));
    // Lost 6 s after the last frame heard (t0 + 1 s), whatever the reconnect attempts do.
    assert_eq!(s.poll_timeout(), Some(t0 + secs(7)));
    s.handle_connected(t0 + secs(3));
    frames(&mut s);
    assert_eq!(s.poll_timeout(), Some(t0 + secs(5))); // this attempt's connect deadline
    assert_eq!(s.handle_timeout(t0 + secs(5)), Err(Error::ConnectTimeout));
    s.handle_disconnect(t0 + secs(5));
    assert!(events(&mut s).is_empty(), "still Disconnected, not again");
    s.handle_timeout(t0 + ms(6999)).unwrap();
    assert!(events(&mut s).is_empty());
    s.handle_timeout(t0 + secs(7)).unwrap();
    assert!(matches!(
        events(&mut s)[..],
        [SessionEvent::State(SessionState::Lost)]
    ));
    assert_eq!(s.poll_timeout(), None);
    // A server answers at last: the session is gone.
    s.handle_connected(t0 + secs(20));
    frames(&mut s);
    assert_eq!(
        s.handle_frame(t0 + secs(20), &connect_response(0, 0)),
        Err(Error::SessionExpired)
    );
    assert!(matches!(
        events(&mut s)[..],
        [SessionEvent::State(SessionState::Expired)]
    ));
}

/// Found by the `session_bytes` fuzz body: a handshake noticed late, past both its connect
/// deadline and the session-lost one. One call reports both (it reported `Lost` and left the
/// connect deadline in the past for another round).
#[test]
fn one_late_timeout_acts_on_every_deadline_due() {
    let t0 = Instant::now();
    let mut s = connected(t0);
    s.handle_disconnect(t0 + secs(1));
    s.handle_connected(t0 + secs(5));
    frames(&mut s);
    events(&mut s);
    // Lost at t0 + 6 s (the last frame heard at t0), the handshake's deadline at t0 + 7 s.
    assert_eq!(s.handle_timeout(t0 + secs(8)), Err(Error::ConnectTimeout));
    assert!(matches!(
        events(&mut s)[..],
        [SessionEvent::State(SessionState::Lost)]
    ));
    s.handle_disconnect(t0 + secs(8));
    assert_eq!(s.poll_timeout(), None);
}

#[test]
fn a_reconnect_within_the_timeout_is_connected_again_and_not_lost() {
    let t0 = Instant::now();
    let mut s = connected(t0);
    s.handle_disconnect(t0 + secs(1));
    s.handle_connected(t0 + secs(2));
    frames(&mut s);
    s.handle_frame(t0 + secs(2), &connect_response(6000, 0x11))
        .unwrap();
    let ev = events(&mut s);
    assert!(matches!(
        ev[..],
        [
            SessionEvent::State(SessionState::Disconnected),
            SessionEvent::State(SessionState::Connected)
        ]
    ));
    // Only the connection's timers are left: no Lost later.
    assert_eq!(s.poll_timeout(), Some(t0 + secs(4)));
    s.handle_timeout(t0 + secs(4)).unwrap();
    assert!(events(&mut s).is_empty());
}

#[test]
fn a_read_only_server_refusing_a_new_session_says_not_read_only() {
    let t0 = Instant::now();
    let mut s: Session<u32> = Session::new(SessionConfig {
        can_be_read_only: true,
        ..cfg()
    });
    s.handle_connected(t0);
    frames(&mut s);
    // What ZooKeeper 3.8's ReadOnlyRequestProcessor sends for a createSession.
    let refusal = reply(0, 0, ErrorCode::NotReadOnly, None);
    assert_eq!(s.handle_frame(t0, &refusal), Err(Error::NotReadOnly));
}

#[test]
fn a_session_from_a_read_only_server_is_replaced_by_a_read_write_one() {
    let t0 = Instant::now();
    let mut s: Session<u32> = Session::new(SessionConfig {
        can_be_read_only: true,
        ..cfg()
    });
    s.handle_connected(t0);
    frames(&mut s);
    let ro = ConnectResponse {
        protocol_version: 0,
        time_out: 6000,
        session_id: 0x77,
        passwd: Some(Bytes::from_static(&[1; 16])),
        read_only: Some(true),
    };
    s.handle_frame(t0, &ro.to_bytes().unwrap()).unwrap();
    assert!(matches!(
        events(&mut s)[..],
        [SessionEvent::State(SessionState::ConnectedReadOnly)]
    ));
    s.handle_disconnect(t0);
    // Never seen by a read-write server: ask for a new session, accept a new id.
    s.handle_connected(t0);
    let req = ConnectRequest::decode_exact(&frames(&mut s)[0], "ConnectRequest").unwrap();
    assert_eq!(req.session_id, 0);
    s.handle_frame(t0, &connect_response(6000, 0x88)).unwrap();
    assert_eq!(s.session_id(), 0x88);
    s.handle_disconnect(t0);
    // From now on the session is resumed, and only this one is accepted.
    s.handle_connected(t0);
    let req = ConnectRequest::decode_exact(&frames(&mut s)[0], "ConnectRequest").unwrap();
    assert_eq!(req.session_id, 0x88);
    assert!(s.handle_frame(t0, &connect_response(6000, 0x99)).is_err());
}

fn auth(id: &str) -> Request {
    Request::Auth(AuthPacket {
        auth_type: 0,
        scheme: "digest".into(),
        auth: Some(Bytes::from(id.to_owned())),
    })
}

#[test]
fn credentials_are_sent_again_on_every_new_connection_before_the_watches() {
    let t0 = Instant::now();
    let mut s = connected(t0);
    s.submit(t0, auth("u:p"), 1, None).unwrap();
    s.submit(t0, get_data("/d", true), 2, Some(WatcherId(7)))
        .unwrap();
    let _ = sent(&mut s);
    s.handle_frame(t0, &reply(xid::AUTH, 0, ErrorCode::Ok, None))
        .unwrap();
    s.handle_frame(t0, &data_reply(1, 5, b"x")).unwrap();
    let _ = events(&mut s);
    s.handle_disconnect(t0);
    let _ = events(&mut s);
    s.handle_connected(t0 + secs(1));
    let _ = frames(&mut s);
    s.handle_frame(t0 + secs(1), &connect_response(6000, 0x11))
        .unwrap();
    let out = sent(&mut s);
    assert_eq!(out.len(), 2, "{out:?}");
    assert_eq!(out[0], (xid::AUTH, auth("u:p")));
    assert_eq!(out[1].0, xid::SET_WATCHES);
    // The replay's reply completes nobody, and a failure of it ends the session.
    s.handle_frame(t0 + secs(1), &reply(xid::AUTH, 0, ErrorCode::Ok, None))
        .unwrap();
    assert!(
        !events(&mut s)
            .iter()
            .any(|e| matches!(e, SessionEvent::Reply { .. }))
    );
    s.handle_disconnect(t0 + secs(2));
    s.handle_connected(t0 + secs(2));
    let _ = frames(&mut s);
    s.handle_frame(t0 + secs(2), &connect_response(6000, 0x11))
        .unwrap();
    let _ = sent(&mut s);
    assert_eq!(
        s.handle_frame(
            t0 + secs(2),
            &reply(xid::AUTH, 0, ErrorCode::AuthFailed, None)
        ),
        Err(Error::AuthFailed)
    );
    assert_eq!(s.state(), SessionState::AuthFailed);
}

#[test]
fn an_error_reply_with_a_body_fails_only_its_caller() {
    let t0 = Instant::now();
    let mut s = connected(t0);
    s.submit(t0, get_data("/a", false), 1, None).unwrap();
    s.submit(t0, get_data("/b", false), 2, None).unwrap();
    let _ = sent(&mut s);
    // NoNode, with bytes after the header (ignored, as the Java client does).
    let mut frame = reply(1, 4, ErrorCode::NoNode, None);
    frame.extend_from_slice(&[0, 0, 0, 0, 1, 2, 3]);
    s.handle_frame(t0, &frame).unwrap();
    s.handle_frame(t0, &data_reply(2, 5, b"b")).unwrap();
    let ev = events(&mut s);
    assert!(matches!(
        ev[0],
        SessionEvent::Reply {
            token: 1,
            result: Err(Error::NoNode)
        }
    ));
    assert!(matches!(
        ev[1],
        SessionEvent::Reply {
            token: 2,
            result: Ok(_)
        }
    ));
}

#[test]
fn a_reply_with_a_string_that_is_not_utf8_fails_only_its_caller() {
    let t0 = Instant::now();
    let mut s = connected(t0);
    s.submit(
        t0,
        Request::GetChildren(GetChildrenRequest {
            path: "/a".into(),
            watch: false,
        }),
        1,
        None,
    )
    .unwrap();
    s.submit(t0, get_data("/b", false), 2, None).unwrap();
    let _ = sent(&mut s);
    let mut frame = reply(1, 4, ErrorCode::Ok, None);
    frame.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 2, 0xff, 0xfe]);
    s.handle_frame(t0, &frame).unwrap();
    s.handle_frame(t0, &data_reply(2, 5, b"b")).unwrap();
    let ev = events(&mut s);
    assert!(matches!(
        ev[0],
        SessionEvent::Reply {
            token: 1,
            result: Err(Error::Protocol(_))
        }
    ));
    assert!(matches!(
        ev[1],
        SessionEvent::Reply {
            token: 2,
            result: Ok(_)
        }
    ));
    assert_eq!(s.state(), SessionState::Connected);
}

#[test]
fn pings_come_at_least_every_ten_seconds() {
    let t0 = Instant::now();
    let mut s: Session<u32> = Session::new(SessionConfig {
        session_timeout: secs(60),
        ..cfg()
    });
    s.handle_connected(t0);
    let _ = frames(&mut s);
    s.handle_frame(t0, &connect_response(60_000, 0x11)).unwrap();
    assert_eq!(s.poll_timeout(), Some(t0 + MAX_PING_INTERVAL));
    s.handle_timeout(t0 + MAX_PING_INTERVAL).unwrap();
    assert_eq!(sent(&mut s), [(xid::PING, Request::Ping)]);
}

#[test]
fn once_a_session_exists_an_attempt_gets_its_share_of_the_session_timeout() {
    let t0 = Instant::now();
    let mut s: Session<u32> = Session::new(SessionConfig {
        session_timeout: secs(6),
        connect_timeout: secs(10),
        ..cfg()
    });
    s.set_host_count(3);
    // The first connection: the connect timeout.
    assert_eq!(s.connect_budget(), secs(10));
    s.handle_connected(t0);
    assert_eq!(s.poll_timeout(), Some(t0 + secs(10)));
    let _ = frames(&mut s);
    s.handle_frame(t0, &connect_response(6000, 0x11)).unwrap();
    s.handle_disconnect(t0 + secs(1));
    // A reconnect: 6 s over 3 servers.
    assert_eq!(s.connect_budget(), secs(2));
    s.handle_connected(t0 + secs(1));
    assert_eq!(s.poll_timeout(), Some(t0 + secs(3)));
    assert_eq!(s.handle_timeout(t0 + secs(3)), Err(Error::ConnectTimeout));
}

/// One server: an attempt gets a third of the session timeout, not all of it, so an attempt a
/// starting server accepts and never answers leaves room for two more (issue 51, item 5).
#[test]
fn with_one_server_an_attempt_gets_a_third_of_the_session_timeout() {
    let t0 = Instant::now();
    let mut s: Session<u32> = Session::new(SessionConfig {
        session_timeout: secs(6),
        connect_timeout: secs(10),
        ..cfg()
    });
    s.handle_connected(t0);
    let _ = frames(&mut s);
    s.handle_frame(t0, &connect_response(6000, 0x11)).unwrap();
    s.handle_disconnect(t0 + secs(1));
    assert_eq!(s.connect_budget(), secs(2));
    s.set_host_count(2);
    assert_eq!(s.connect_budget(), secs(2));
    s.set_host_count(6);
    assert_eq!(s.connect_budget(), secs(1));
}

#[test]
fn an_unbounded_connect_timeout_does_not_overflow() {
    let t0 = Instant::now();
    let mut s: Session<u32> = Session::new(SessionConfig {
        connect_timeout: Duration::MAX,
        ..cfg()
    });
    s.handle_connected(t0);
    assert_eq!(s.poll_timeout(), None);
    s.handle_timeout(t0 + secs(3600)).unwrap();
}

#[test]
fn dropping_the_last_persistent_watcher_of_a_path_removes_the_watch_on_the_server() {
    let t0 = Instant::now();
    let mut s = connected(t0);
    let add = |path: &str| {
        Request::AddWatch(AddWatchRequest {
            path: path.into(),
            mode: AddWatchMode::Persistent,
        })
    };
    s.submit(t0, add("/p"), 1, Some(WatcherId(1))).unwrap();
    s.submit(t0, add("/p"), 2, Some(WatcherId(2))).unwrap();
    s.submit(t0, get_data("/q", true), 3, Some(WatcherId(3)))
        .unwrap();
    s.submit(t0, add("/q"), 4, Some(WatcherId(4))).unwrap();
    let _ = sent(&mut s);
    let added = ErrorResponse { err: ErrorCode::Ok };
    for xid in 1..=2 {
        s.handle_frame(t0, &reply(xid, 3, ErrorCode::Ok, Some(&added)))
            .unwrap();
    }
    s.handle_frame(t0, &data_reply(3, 3, b"q")).unwrap();
    s.handle_frame(t0, &reply(4, 3, ErrorCode::Ok, Some(&added)))
        .unwrap();
    let _ = events(&mut s);
    // Another watcher of /p is left: nothing for the server.
    assert_eq!(s.forget_watch("/p", WatcherId(1)), None);
    // The last: the server's watch goes too.
    assert_eq!(
        s.forget_watch("/p", WatcherId(2)),
        Some(Request::RemoveWatches(RemoveWatchesRequest {
            path: "/p".into(),
            watcher_type: WatcherType::Any,
        }))
    );
    // /q has a one-shot watcher left, which `Any` would remove on 3.8: keep the watch.
    assert_eq!(s.forget_watch("/q", WatcherId(4)), None);
}

#[test]
fn closing_locally_ends_everything_here() {
    let t0 = Instant::now();
    let mut s = connected(t0);
    s.submit(t0, get_data("/d", true), 1, Some(WatcherId(1)))
        .unwrap();
    s.close_locally();
    let ev = events(&mut s);
    assert!(ev.iter().any(|e| matches!(
        e,
        SessionEvent::Reply {
            token: 1,
            result: Err(Error::Closed)
        }
    )));
    assert!(
        ev.iter()
            .any(|e| matches!(e, SessionEvent::State(SessionState::Closed)))
    );
    assert_eq!(s.poll_timeout(), None);
    assert!(s.poll_transmit().is_none());
}

/// A two-step mechanism: sends `hello`, answers `challenge` with `answer`, then needs `ok`.
#[derive(Debug)]
struct Scripted;

struct ScriptedRun {
    answered: bool,
}

impl crate::sasl::Mechanism for Scripted {
    fn start(&self) -> Box<dyn crate::sasl::Exchange> {
        Box::new(ScriptedRun { answered: false })
    }
}

impl crate::sasl::Exchange for ScriptedRun {
    fn initial(&mut self) -> Vec<u8> {
        b"hello".to_vec()
    }

    fn step(&mut self, token: &[u8]) -> Result<crate::sasl::Step, String> {
        match (self.answered, token) {
            (false, b"challenge") => {
                self.answered = true;
                Ok(crate::sasl::Step::Respond(b"answer".to_vec()))
            }
            (true, b"ok") => Ok(crate::sasl::Step::Done),
            _ => Err(format!("unexpected token {token:?}")),
        }
    }
}

fn sasl_token(req: &Request) -> &[u8] {
    match req {
        Request::Sasl(r) => r.token.as_deref().unwrap_or_default(),
        other => panic!("not a SASL request: {other:?}"),
    }
}

fn sasl_reply(xid: i32, token: &[u8]) -> Vec<u8> {
    let body = SetSaslResponse {
        token: Some(Bytes::copy_from_slice(token)),
    };
    reply(xid, 0, ErrorCode::Ok, Some(&body))
}

/// A session with the scripted mechanism whose handshake was answered at `t0`: its first
/// SASL request's xid.
fn authenticating(s: &mut Session<u32>, t0: Instant) -> i32 {
    s.handle_connected(t0);
    let _ = frames(s);
    s.handle_frame(t0, &connect_response(6000, 0x11)).unwrap();
    let out = sent(s);
    assert_eq!(out.len(), 1, "only the SASL token goes first: {out:?}");
    assert_eq!(sasl_token(&out[0].1), b"hello");
    out[0].0
}

#[test]
fn sasl_runs_before_anything_else_and_the_session_opens_after_it() {
    let t0 = Instant::now();
    let mut s = Session::new(cfg());
    s.set_sasl(Arc::new(Scripted));
    let xid = authenticating(&mut s, t0);
    // Not connected yet: nothing else may be sent.
    assert!(events(&mut s).is_empty());
    assert!(matches!(
        s.submit(t0, get_data("/a", false), 1, None),
        Err((1, Error::NotConnected))
    ));
    s.handle_frame(t0, &sasl_reply(xid, b"challenge")).unwrap();
    let out = sent(&mut s);
    assert_eq!(sasl_token(&out[0].1), b"answer");
    assert!(out[0].0 > xid, "an ordinary, increasing xid");
    s.handle_frame(t0, &sasl_reply(out[0].0, b"ok")).unwrap();
    assert!(matches!(
        events(&mut s)[..],
        [SessionEvent::State(SessionState::Connected)]
    ));
    s.submit(t0, get_data("/a", true), 2, Some(WatcherId(3)))
        .unwrap();
    let (gx, _) = sent(&mut s)[0].clone();
    s.handle_frame(t0, &data_reply(gx, 5, b"x")).unwrap();
    let _ = events(&mut s);
    // A reconnect runs the exchange again, before the watches are restored.
    s.handle_disconnect(t0 + secs(1));
    let _ = events(&mut s);
    let xid = authenticating(&mut s, t0 + secs(1));
    s.handle_frame(t0 + secs(1), &sasl_reply(xid, b"challenge"))
        .unwrap();
    let out = sent(&mut s);
    s.handle_frame(t0 + secs(1), &sasl_reply(out[0].0, b"ok"))
        .unwrap();
    let out = sent(&mut s);
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(out[0].0, xid::SET_WATCHES);
}

#[test]
fn a_refused_password_ends_the_session_with_auth_failed() {
    let t0 = Instant::now();
    let mut s = Session::new(cfg());
    s.set_sasl(Arc::new(Scripted));
    let xid = authenticating(&mut s, t0);
    let err = s
        .handle_frame(t0, &reply(xid, 0, ErrorCode::AuthFailed, None))
        .unwrap_err();
    assert_eq!(err, Error::AuthFailed);
    assert_eq!(s.state(), SessionState::AuthFailed);
    assert_eq!(s.ended_error(), Some(Error::AuthFailed));
}

#[test]
fn a_server_that_fails_the_mechanism_ends_the_session_with_the_reason() {
    let t0 = Instant::now();
    let mut s = Session::new(cfg());
    s.set_sasl(Arc::new(Scripted));
    let xid = authenticating(&mut s, t0);
    let err = s
        .handle_frame(t0, &sasl_reply(xid, b"nonsense"))
        .unwrap_err();
    assert!(matches!(err, Error::Sasl(_)), "{err:?}");
    assert_eq!(s.state(), SessionState::AuthFailed);
    assert!(matches!(
        s.submit(t0, get_data("/a", false), 1, None),
        Err((1, Error::Sasl(_)))
    ));
}

#[test]
fn a_silent_sasl_server_times_the_connection_out() {
    let t0 = Instant::now();
    let mut s = Session::new(cfg());
    s.set_sasl(Arc::new(Scripted));
    let _ = authenticating(&mut s, t0);
    // The handshake's deadline (connect timeout 2 s) goes on through the exchange.
    assert_eq!(s.poll_timeout(), Some(t0 + secs(2)));
    assert_eq!(s.handle_timeout(t0 + secs(2)), Err(Error::ConnectTimeout));
    s.handle_disconnect(t0 + secs(2));
    assert!(!s.state().is_terminal());
}

#[test]
fn a_server_requiring_sasl_ends_the_session_with_auth_required() {
    let t0 = Instant::now();
    let mut s = connected(t0);
    s.submit(t0, get_data("/a", false), 1, None).unwrap();
    s.submit(t0, get_data("/b", false), 2, None).unwrap();
    let out = sent(&mut s);
    let err = s
        .handle_frame(
            t0,
            &reply(out[0].0, 0, ErrorCode::SessionClosedRequireSaslAuth, None),
        )
        .unwrap_err();
    assert_eq!(err, Error::AuthRequired);
    assert_eq!(s.state(), SessionState::AuthFailed);
    let failed: Vec<_> = events(&mut s)
        .into_iter()
        .filter_map(|e| match e {
            SessionEvent::Reply { token, result } => Some((token, result)),
            _ => None,
        })
        .collect();
    // The request answered so was refused; the one written after it may have been served.
    assert_eq!(
        failed,
        vec![
            (1, Err(Error::AuthRequired)),
            (2, Err(Error::ConnectionLoss))
        ]
    );
    // Also when it answers a ping so.
    let mut s = connected(t0);
    s.handle_timeout(t0 + secs(2)).unwrap();
    assert_eq!(sent(&mut s)[0].0, xid::PING);
    let err = s
        .handle_frame(
            t0,
            &reply(xid::PING, 0, ErrorCode::SessionClosedRequireSaslAuth, None),
        )
        .unwrap_err();
    assert_eq!(err, Error::AuthRequired);
}

// ---- Sent or not: every path that fails requests in flight (issue 24, item 2) -----------

/// Submits a read with token `token` and returns its frame's length once handed out.
fn handed(s: &mut Session<u32>, t0: Instant, token: u32) -> usize {
    s.submit(t0, get_data("/x", false), token, None).unwrap();
    frames(s).iter().map(|f| f.len() + 4).sum()
}

/// The tokens' results, in the order they came.
fn results(s: &mut Session<u32>) -> Vec<(u32, Result<Response, Error>)> {
    events(s)
        .into_iter()
        .filter_map(|e| match e {
            SessionEvent::Reply { token, result } => Some((token, result)),
            _ => None,
        })
        .collect()
}

/// A close that gives up on the server: a request written fails as uncertain
/// (`ConnectionLoss`: the server may still apply it), one left in the driver's buffer or
/// never handed out fails as `Closed` (surely not applied).
#[test]
fn a_close_that_gives_up_fails_written_requests_as_uncertain() {
    let t0 = Instant::now();
    let mut s = connected(t0);
    handed(&mut s, t0, 1);
    let unwritten = handed(&mut s, t0, 2);
    s.submit(t0, get_data("/y", false), 3, None).unwrap(); // never handed out
    s.handle_unsent(unwritten);
    s.close_locally();
    let got = results(&mut s);
    assert_eq!(
        got,
        vec![
            (1, Err(Error::ConnectionLoss)),
            (2, Err(Error::Closed)),
            (3, Err(Error::Closed)),
        ]
    );
    assert!(got[0].1.as_ref().unwrap_err().is_uncertain());
    assert!(!got[1].1.as_ref().unwrap_err().is_uncertain());
    // A request partly written counts as written.
    let mut s = connected(t0);
    let len = handed(&mut s, t0, 1);
    s.handle_unsent(len - 1);
    s.close_locally();
    assert_eq!(results(&mut s), vec![(1, Err(Error::ConnectionLoss))]);
    // A driver that says nothing makes everything handed out count as written.
    let mut s = connected(t0);
    handed(&mut s, t0, 1);
    s.close_locally();
    assert_eq!(results(&mut s), vec![(1, Err(Error::ConnectionLoss))]);
}

/// A lost connection: written requests fail as `ConnectionLoss`, the ones never written as
/// `NotConnected`. A later `Lost` fails nothing more (nothing is in flight without a
/// connection), and requests then fail as not sent.
#[test]
fn a_lost_connection_fails_unwritten_requests_as_not_sent() {
    let t0 = Instant::now();
    let mut s = connected(t0);
    handed(&mut s, t0, 1);
    let unwritten = handed(&mut s, t0, 2);
    // The read deadline: nothing heard for two thirds of the timeout.
    assert_eq!(s.handle_timeout(t0 + secs(4)), Err(Error::ConnectionLoss));
    s.handle_unsent(unwritten);
    s.handle_disconnect(t0 + secs(4));
    assert_eq!(
        results(&mut s),
        vec![
            (1, Err(Error::ConnectionLoss)),
            (2, Err(Error::NotConnected))
        ]
    );
    s.handle_timeout(t0 + secs(6)).unwrap();
    assert_eq!(s.state(), SessionState::Lost);
    assert!(results(&mut s).is_empty());
    let (_, err) = s
        .submit(t0 + secs(6), get_data("/x", false), 3, None)
        .unwrap_err();
    assert_eq!(err, Error::NotConnected);
}

/// Failed credentials end the session: the auth's caller gets `AuthFailed`, a request
/// written after it `ConnectionLoss`, one never written `AuthFailed`.
#[test]
fn an_auth_failure_fails_unwritten_requests_with_the_reason() {
    let t0 = Instant::now();
    let mut s = connected(t0);
    s.submit(t0, auth("u:bad"), 1, None).unwrap();
    frames(&mut s);
    handed(&mut s, t0, 2);
    let unwritten = handed(&mut s, t0, 3);
    s.handle_unsent(unwritten);
    let err = s
        .handle_frame(t0, &reply(xid::AUTH, 0, ErrorCode::AuthFailed, None))
        .unwrap_err();
    assert_eq!(err, Error::AuthFailed);
    assert_eq!(
        results(&mut s),
        vec![
            (1, Err(Error::AuthFailed)),
            (2, Err(Error::ConnectionLoss)),
            (3, Err(Error::AuthFailed)),
        ]
    );
    // A server requiring SASL: the request it answers so is refused, the one written after
    // it is uncertain, the one never written is refused too.
    let mut s = connected(t0);
    handed(&mut s, t0, 1);
    handed(&mut s, t0, 2);
    let unwritten = handed(&mut s, t0, 3);
    s.handle_unsent(unwritten);
    let err = s
        .handle_frame(
            t0,
            &reply(1, 0, ErrorCode::SessionClosedRequireSaslAuth, None),
        )
        .unwrap_err();
    assert_eq!(err, Error::AuthRequired);
    assert_eq!(
        results(&mut s),
        vec![
            (1, Err(Error::AuthRequired)),
            (2, Err(Error::ConnectionLoss)),
            (3, Err(Error::AuthRequired)),
        ]
    );
}

/// A reply that cannot be decoded: its caller gets the decode error, which is uncertain (the
/// server answered, so it may have applied the request); the connection then goes, and the
/// others fail as written or not.
#[test]
fn a_reply_that_cannot_be_decoded_is_uncertain_and_the_others_fail_as_written_or_not() {
    let t0 = Instant::now();
    let mut s = connected(t0);
    handed(&mut s, t0, 1);
    handed(&mut s, t0, 2);
    let unwritten = handed(&mut s, t0, 3);
    let mut bad = data_reply(1, 5, b"xyz");
    bad.truncate(bad.len() - 3);
    let err = s.handle_frame(t0, &bad).unwrap_err();
    assert!(err.is_uncertain(), "{err:?}");
    s.handle_unsent(unwritten);
    s.handle_disconnect(t0);
    assert_eq!(
        results(&mut s),
        vec![
            (1, Err(err)),
            (2, Err(Error::ConnectionLoss)),
            (3, Err(Error::NotConnected)),
        ]
    );
}

/// Issue 24, item 4: bytes after the fields we know (a newer server's) are ignored, as Java
/// ignores them, in the handshake's answer, a reply and a notification; a frame cut short is
/// still refused.
#[test]
fn bytes_after_the_known_fields_are_ignored_as_java_does() {
    let t0 = Instant::now();
    let mut s = Session::new(cfg());
    s.handle_connected(t0);
    frames(&mut s);
    let mut hello = connect_response(6000, 0x11);
    hello.extend([0, 0, 0, 1, 9]);
    s.handle_frame(t0, &hello).unwrap();
    assert_eq!(s.state(), SessionState::Connected);
    s.submit(t0, get_data("/a", true), 1, Some(WatcherId(1)))
        .unwrap();
    frames(&mut s);
    let mut answer = data_reply(1, 5, b"v");
    answer.extend([1, 2, 3]);
    s.handle_frame(t0, &answer).unwrap();
    let mut event = notification(EventType::NodeDataChanged, "/a");
    event.extend([4, 5, 6]);
    s.handle_frame(t0, &event).unwrap();
    let ev = events(&mut s);
    assert!(
        matches!(&ev[1], SessionEvent::Reply { token: 1, result: Ok(Response::GetData(r)) } if r.data.as_deref() == Some(&b"v"[..])),
        "{ev:?}"
    );
    assert!(
        matches!(&ev[2], SessionEvent::Watch { id: WatcherId(1), event, .. } if event.path == "/a"),
        "{ev:?}"
    );
    // Short is still an error.
    s.submit(t0, get_data("/b", false), 2, None).unwrap();
    frames(&mut s);
    let mut cut = data_reply(2, 6, b"v");
    cut.truncate(cut.len() - 1);
    assert!(s.handle_frame(t0, &cut).is_err());
}

#[test]
fn a_watcher_forgotten_while_its_request_is_in_flight_is_never_registered() {
    let t0 = Instant::now();
    let mut s = connected(t0);
    // Many requests in flight: the forget looks its watcher up, it does not scan them.
    s.submit(t0, get_data("/a", true), 1, Some(WatcherId(1)))
        .unwrap();
    s.submit(t0, get_data("/b", true), 2, Some(WatcherId(2)))
        .unwrap();
    // One watcher, one request at a time.
    assert!(matches!(
        s.submit(t0, get_data("/c", true), 3, Some(WatcherId(1))),
        Err((3, Error::InvalidArgument(_)))
    ));
    let _ = sent(&mut s);
    assert_eq!(s.forget_watch("/a", WatcherId(1)), None);
    s.handle_frame(t0, &data_reply(1, 3, b"a")).unwrap();
    s.handle_frame(t0, &data_reply(2, 3, b"b")).unwrap();
    let _ = events(&mut s);
    // /a's event reaches nobody; /b's reaches its watcher.
    s.handle_frame(t0, &notification(EventType::NodeDeleted, "/a"))
        .unwrap();
    s.handle_frame(t0, &notification(EventType::NodeDeleted, "/b"))
        .unwrap();
    let fired: Vec<WatcherId> = events(&mut s)
        .into_iter()
        .filter_map(|e| match e {
            SessionEvent::Watch { id, .. } => Some(id),
            _ => None,
        })
        .collect();
    assert_eq!(fired, [WatcherId(2)]);
    // Its request answered, the id is free again.
    s.submit(t0, get_data("/a", true), 4, Some(WatcherId(1)))
        .unwrap();
}

/// A burst of 10,000 requests in flight (each registering a watch) sizes the session's
/// queues; once it has drained they give their memory back (issue 51, item 2: a process
/// holding 10,000 locks kept 290 B a lock of empty queue after acquiring them all at once).
#[test]
fn a_drained_burst_gives_its_queues_memory_back() {
    let t0 = Instant::now();
    let mut s = connected(t0);
    let n: u32 = 10_000;
    for token in 1..=n {
        let path = format!("/n{token}");
        s.submit(
            t0,
            get_data(&path, true),
            token,
            Some(WatcherId(token.into())),
        )
        .unwrap();
    }
    let _ = frames(&mut s);
    assert!(s.pending.capacity() >= n as usize);
    for xid in 1..=n {
        s.handle_frame(t0, &data_reply(xid as i32, 5, b"")).unwrap();
    }
    assert_eq!(events(&mut s).len(), n as usize);
    assert_eq!(s.pending_len(), 0);
    assert!(
        s.pending.capacity() <= 2 * KEEP_CAPACITY,
        "{}",
        s.pending.capacity()
    );
    assert!(
        s.events.capacity() <= 2 * KEEP_CAPACITY,
        "{}",
        s.events.capacity()
    );
    assert!(
        s.watches_in_flight.capacity() <= 4 * KEEP_CAPACITY,
        "{}",
        s.watches_in_flight.capacity()
    );
}
