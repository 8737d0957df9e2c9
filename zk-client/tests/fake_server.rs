//! `zk-client` against a scripted fake ZooKeeper server on loopback (see `support`): broken
//! replies, broken frames, vanishing servers, refused handshakes, pipelining, cancellation,
//! heartbeats, use after close, local validation and the order of watch events.
//!
//! Every test is bounded by [`bounded`], so a hang fails instead of blocking, and waits for
//! events (a reply, a state change, the socket closing), never for time to pass. The timing
//! tests (heartbeats, read and connect timeouts, session loss, back-off) run the same task
//! over in-memory streams on tokio's paused clock, in `src/io/tests.rs`.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod support;

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bytes::Bytes;
use tokio::task::{JoinHandle, JoinSet};
use zk_client::{
    Client, ClientBuilder, CreateMode, CreateOptions, Error, EventType, KeeperState, ProtocolError,
    SessionState, Stat, WatchedEvent,
};
use zk_proto::records::{ConnectResponse, SetWatches};
use zk_proto::{DEFAULT_MAX_FRAME_LEN, DecodeError, ErrorCode, OpCode, Request, xid};

use support::*;

/// How long any test may take before it counts as hung.
const BOUND: Duration = Duration::from_secs(5);

/// Runs `f`, failing the test if it takes longer than [`BOUND`].
async fn bounded<F: Future>(f: F) -> F::Output {
    tokio::time::timeout(BOUND, f)
        .await
        .expect("the test hung: no progress within the bound")
}

/// A builder with a long session timeout (no pings or read timeouts during a test).
fn builder() -> ClientBuilder {
    Client::builder()
        .session_timeout(Duration::from_secs(30))
        .connect_timeout(Duration::from_secs(2))
}

/// A fake server and a client connected to it, the server granting `timeout_ms`.
async fn connected_with(builder: ClientBuilder, timeout_ms: i32) -> (Client, FakeServer, Conn) {
    let srv = FakeServer::bind().await;
    let (client, (conn, request)) = tokio::join!(
        builder.hosts(srv.hosts()).connect(),
        srv.accept_session(timeout_ms)
    );
    assert_eq!(request.session_id, 0, "a new session");
    (client.expect("connect"), srv, conn)
}

async fn connected() -> (Client, FakeServer, Conn) {
    connected_with(builder(), 30_000).await
}

/// `get_data(path)` on its own task.
fn spawn_get(client: &Client, path: &str) -> JoinHandle<Result<(Bytes, Stat), Error>> {
    let client = client.clone();
    let path = path.to_owned();
    tokio::spawn(async move { client.get_data(&path).await })
}

/// Reads `n` `getData` requests; returns `(xid, path)` in arrival order, checking that the
/// xids increase (the order the session expects replies in).
async fn read_gets(conn: &mut Conn, n: usize) -> Vec<(i32, String)> {
    let mut sent = Vec::with_capacity(n);
    for _ in 0..n {
        let (header, request) = conn.read_request().await;
        assert_eq!(header.op, OpCode::GetData);
        sent.push((header.xid, get_data_path(&request)));
    }
    assert!(
        sent.windows(2).all(|w| w[0].0 < w[1].0),
        "xids not increasing: {sent:?}"
    );
    sent
}

/// Waits until the session state is `state`.
async fn wait_state(client: &Client, state: SessionState) {
    client
        .state_watch()
        .wait_for(|s| *s == state)
        .await
        .expect("the session task ended");
}

/// Polls `f` once: `Some` if it is ready now.
fn now_or_never<F: Future + Unpin>(f: &mut F) -> Option<F::Output> {
    let mut cx = Context::from_waker(Waker::noop());
    match Pin::new(f).poll(&mut cx) {
        Poll::Ready(v) => Some(v),
        Poll::Pending => None,
    }
}

/// The scenario of a server breaking the protocol after requests for `/a` and `/b` were sent:
/// `respond` gets their `(xid, path)` in order and returns the bytes the server writes. Every
/// caller must get `ConnectionLoss`, the client must close the connection without sending
/// anything more, and the state must become `Disconnected`.
async fn breach(respond: impl FnOnce(&[(i32, String)]) -> Vec<u8>) {
    let (client, _srv, mut conn) = connected().await;
    let calls = ["/a", "/b"].map(|p| spawn_get(&client, p));
    let sent = read_gets(&mut conn, 2).await;
    conn.send(&respond(&sent)).await;
    let after = conn.read_to_eof().await;
    assert!(after.is_empty(), "sent after the breach: {after:?}");
    for call in calls {
        assert_eq!(call.await.unwrap(), Err(Error::ConnectionLoss));
    }
    wait_state(&client, SessionState::Disconnected).await;
}

// 1.
#[tokio::test]
async fn malformed_reply_body_fails_its_caller_with_a_decode_error() {
    bounded(async {
        let (client, _srv, mut conn) = connected().await;
        let calls: HashMap<&str, _> = ["/a", "/b", "/c"]
            .into_iter()
            .map(|p| (p, spawn_get(&client, p)))
            .collect();
        let sent = read_gets(&mut conn, 3).await;
        let [(ok_xid, ok_path), (bad_xid, bad_path), (_, lost_path)] = &sent[..] else {
            unreachable!()
        };
        // The first gets a good reply, the second a GetDataResponse cut inside its Stat, the
        // third nothing.
        let mut truncated = data_payload(*bad_xid, b"hello");
        truncated.truncate(truncated.len() - 20);
        let mut bytes = data_reply(*ok_xid, b"fine");
        bytes.extend(framed(&truncated));
        conn.send(&bytes).await;

        let after = conn.read_to_eof().await;
        assert!(after.is_empty(), "sent after the bad reply: {after:?}");
        let mut calls = calls;
        let ok = calls.remove(ok_path.as_str()).unwrap().await.unwrap();
        assert_eq!(ok, Ok((Bytes::from_static(b"fine"), stat_of(*ok_xid))));
        let bad = calls.remove(bad_path.as_str()).unwrap().await.unwrap();
        assert!(
            matches!(
                bad,
                Err(Error::Protocol(ProtocolError::Decode(
                    DecodeError::UnexpectedEnd { .. }
                )))
            ),
            "{bad:?}"
        );
        let lost = calls.remove(lost_path.as_str()).unwrap().await.unwrap();
        assert_eq!(lost, Err(Error::ConnectionLoss));
        wait_state(&client, SessionState::Disconnected).await;
    })
    .await;
}

// 2.
#[tokio::test]
async fn bad_length_prefix_fails_every_caller_and_closes() {
    // Frames from the server may be 1 KiB longer than the request limit (a reply to a read
    // of data at the limit carries a little more than the data).
    let max_plus_one = i32::try_from(DEFAULT_MAX_FRAME_LEN + 1024 + 1).unwrap();
    for len in [i32::MAX, max_plus_one, -1, i32::MIN] {
        // A client that reserved `len` bytes or waited for them would not finish in time.
        bounded(breach(|_| len.to_be_bytes().to_vec())).await;
    }
}

// 3.
#[tokio::test]
async fn out_of_order_replies_fail_every_caller() {
    bounded(breach(|sent| {
        let mut bytes = data_reply(sent[1].0, b"second");
        bytes.extend(data_reply(sent[0].0, b"first"));
        bytes
    }))
    .await;
}

// 4.
#[tokio::test]
async fn reply_for_an_unknown_xid_fails_every_caller() {
    bounded(breach(|sent| data_reply(sent[1].0 + 100, b"nobody's"))).await;
}

// 4, with nobody waiting at all.
#[tokio::test]
async fn reply_while_nothing_is_pending_closes_the_connection() {
    bounded(async {
        let (client, _srv, mut conn) = connected().await;
        conn.send(&empty_reply(1, ErrorCode::Ok)).await;
        let after = conn.read_to_eof().await;
        assert!(after.is_empty(), "{after:?}");
        wait_state(&client, SessionState::Disconnected).await;
    })
    .await;
}

// 5.
#[tokio::test]
async fn server_vanishing_mid_request_gives_connection_loss() {
    bounded(async {
        let (client, _srv, mut conn) = connected().await;
        let call = spawn_get(&client, "/a");
        read_gets(&mut conn, 1).await;
        drop(conn);
        // Well before the 20 s read timeout.
        assert_eq!(call.await.unwrap(), Err(Error::ConnectionLoss));
        wait_state(&client, SessionState::Disconnected).await;
        // While it reconnects, a new request fails at once rather than waiting, and says it
        // was not sent (so it surely was not applied).
        let not_sent = client.get_data("/b").await;
        assert_eq!(not_sent, Err(Error::NotConnected));
        assert!(!not_sent.unwrap_err().is_uncertain());
    })
    .await;
}

// 6. The connect timeout: see `io::tests::an_unanswered_handshake_ends_at_the_connect_timeout`,
// on tokio's paused clock.

/// Connects to a server that answers the handshake with `answer` and then, if `hang_up`,
/// closes; returns what `connect` gave. The connect timeout is a minute, so an error must come
/// from the answer, not from the clock.
async fn connect_answered(answer: Vec<u8>, hang_up: bool) -> Result<Client, Error> {
    let srv = FakeServer::bind().await;
    let (result, after) = tokio::join!(
        builder()
            .connect_timeout(Duration::from_secs(60))
            .hosts(srv.hosts())
            .connect(),
        async {
            let mut conn = srv.accept().await;
            conn.read_connect().await;
            conn.send(&answer).await;
            if hang_up {
                return Vec::new();
            }
            conn.read_to_eof().await
        }
    );
    assert!(after.is_empty(), "sent after the handshake: {after:?}");
    srv.assert_no_connection_waiting();
    result
}

// 7.
#[tokio::test]
async fn handshake_with_timeout_zero_fails_with_session_expired() {
    bounded(async {
        let expired = ConnectResponse {
            time_out: 0,
            session_id: 0,
            passwd: Some(Bytes::from_static(&[0; 16])),
            ..session(0)
        };
        let result = connect_answered(framed(&encoded(&[&expired])), false).await;
        assert_eq!(result.err(), Some(Error::SessionExpired));
    })
    .await;
}

/// Answers to a `ConnectRequest` that are not a `ConnectResponse`, and whether the server
/// hangs up after writing them.
fn garbage_answers() -> Vec<(&'static str, Vec<u8>, bool)> {
    // A password whose length runs past the frame.
    let mut lying = encoded(&[&session(30_000)]);
    lying.truncate(16);
    lying.extend(100i32.to_be_bytes());
    lying.extend([7; 16]);
    vec![
        ("short frame", framed(&[1, 2, 3]), false),
        ("HTTP", b"HTTP/1.1 400 Bad Request\r\n\r\n".to_vec(), false),
        ("a length that lies", framed(&lying), false),
        ("negative length", (-7i32).to_be_bytes().to_vec(), false),
        ("half a frame, then EOF", vec![0, 0, 0, 40, 1, 2, 3], true),
    ]
}

// 8.
#[tokio::test]
async fn garbage_instead_of_a_connect_response_fails_connect_promptly() {
    for (what, answer, hang_up) in garbage_answers() {
        let result = bounded(connect_answered(answer, hang_up)).await;
        assert!(
            matches!(
                result,
                Err(Error::NotZooKeeper { .. } | Error::Unreachable { .. })
            ),
            "{what}: {result:?}"
        );
    }
}

// 8, the error says the server is not ZooKeeper, names it, and keeps the protocol error.
#[tokio::test]
async fn garbage_handshake_reports_the_protocol_error() {
    let result = bounded(connect_answered(framed(&[1, 2, 3]), false)).await;
    assert!(
        matches!(&result, Err(Error::NotZooKeeper { detail, .. }) if detail.contains("malformed frame")),
        "{result:?}"
    );
    let http = b"HTTP/1.1 400 Bad Request\r\n\r\n".to_vec();
    let result = bounded(connect_answered(http, false)).await;
    assert!(
        matches!(&result, Err(Error::NotZooKeeper { server, detail }) if detail.contains("frame") && server.starts_with("127.0.0.1:")),
        "{result:?}"
    );
}

// Issue 24, item 4: bytes after the fields we know (a newer server's) are ignored, as Java
// ignores them: in the handshake's answer, a reply, an error reply and a notification. A
// length that runs past the frame is still refused.
#[tokio::test]
async fn trailing_bytes_after_known_fields_are_ignored_as_java_does() {
    bounded(async {
        const EXTRA: [u8; 6] = [0, 0, 0, 2, 0xab, 0xcd];
        let with_extra = |payload: Vec<u8>| framed(&[payload, EXTRA.to_vec()].concat());
        let srv = FakeServer::bind().await;
        let (client, mut conn) = tokio::join!(builder().hosts(srv.hosts()).connect(), async {
            let mut conn = srv.accept().await;
            conn.read_connect().await;
            conn.send(&with_extra(encoded(&[&session(30_000)]))).await;
            conn
        });
        let client = client.expect("a handshake answer with trailing bytes connects");
        let (got, ()) = tokio::join!(client.get_data_and_watch("/t"), async {
            let (header, _) = conn.read_request().await;
            conn.send(&with_extra(data_payload(header.xid, b"v"))).await;
        });
        let (data, _, watcher) = got.expect("a reply with trailing bytes is read");
        assert_eq!(&data[..], b"v");
        let (got, ()) = tokio::join!(client.get_data("/missing"), async {
            let (header, _) = conn.read_request().await;
            let payload = reply_payload(header.xid, ErrorCode::NoNode, None);
            conn.send(&with_extra(payload)).await;
        });
        assert_eq!(got, Err(Error::NoNode));
        let mut event = notification(EventType::NodeDataChanged, "/t");
        event.drain(..4);
        conn.send(&with_extra(event)).await;
        assert_eq!(watcher.await.event_type, EventType::NodeDataChanged);
        assert_eq!(client.state(), SessionState::Connected);
        // Still refused: a data length that runs past the end of the frame.
        let (got, ()) = tokio::join!(client.get_data("/lie"), async {
            let (header, _) = conn.read_request().await;
            let mut payload = reply_payload(header.xid, ErrorCode::Ok, None);
            payload.extend(1000i32.to_be_bytes());
            payload.extend(b"short");
            conn.send(&framed(&payload)).await;
        });
        assert!(
            matches!(got, Err(Error::Protocol(ProtocolError::Decode(_)))),
            "{got:?}"
        );
        wait_state(&client, SessionState::Disconnected).await;
    })
    .await;
}

// 9.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pipelined_requests_from_many_tasks_each_get_their_own_reply() {
    const TASKS: usize = 8;
    const PER_TASK: usize = 25;
    const N: usize = TASKS * PER_TASK;
    bounded(async {
        let (client, _srv, mut conn) = connected().await;
        let mut tasks = JoinSet::new();
        for t in 0..TASKS {
            let client = client.clone();
            tasks.spawn(async move {
                let mut mine = JoinSet::new();
                for i in 0..PER_TASK {
                    let client = client.clone();
                    let path = format!("/n/{t}/{i}");
                    mine.spawn(async move {
                        let result = client.get_data(&path).await;
                        (path, result)
                    });
                }
                mine.join_all().await
            });
        }
        // All N are read before any is answered: they are all in flight at once.
        let sent = read_gets(&mut conn, N).await;
        let xids: Vec<i32> = sent.iter().map(|(x, _)| *x).collect();
        assert_eq!(xids, (1..=i32::try_from(N).unwrap()).collect::<Vec<_>>());
        let xid_of: HashMap<String, i32> = sent.iter().map(|(x, p)| (p.clone(), *x)).collect();
        assert_eq!(xid_of.len(), N, "a path was sent twice");
        // Answer in order, in small writes that cut frames anywhere.
        let replies: Vec<u8> = sent
            .iter()
            .flat_map(|(x, p)| data_reply(*x, format!("data of {p}").as_bytes()))
            .collect();
        for chunk in replies.chunks(37) {
            conn.send(chunk).await;
        }
        let mut seen = HashSet::new();
        for (path, result) in tasks.join_all().await.into_iter().flatten() {
            let xid = xid_of[&path];
            let expected = (Bytes::from(format!("data of {path}")), stat_of(xid));
            assert_eq!(result, Ok(expected), "{path}");
            seen.insert(path);
        }
        assert_eq!(seen.len(), N);
        assert_eq!(client.state(), SessionState::Connected);
    })
    .await;
}

// 10.
#[tokio::test]
async fn dropped_callers_do_not_desynchronize_the_session() {
    bounded(async {
        let (client, _srv, mut conn) = connected().await;

        // A is dropped once the server has it; B is sent while A's reply is still due.
        let (a_xid, a_request) = {
            let a = client.get_data("/a");
            tokio::pin!(a);
            tokio::select! {
                r = &mut a => panic!("A finished before the server answered: {r:?}"),
                (header, request) = conn.read_request() => (header.xid, request),
            }
        };
        assert_eq!(get_data_path(&a_request), "/a");
        let b = spawn_get(&client, "/b");
        let sent = read_gets(&mut conn, 1).await;
        let (b_xid, ref b_path) = sent[0];
        assert_eq!(b_path, "/b");
        let mut bytes = data_reply(a_xid, b"for A");
        bytes.extend(data_reply(b_xid, b"for B"));
        conn.send(&bytes).await;
        assert_eq!(
            b.await.unwrap(),
            Ok((Bytes::from_static(b"for B"), stat_of(b_xid)))
        );

        // C times out before the server looks at it; the late reply goes nowhere and D gets
        // its own.
        let c = tokio::time::timeout(Duration::from_millis(1), client.get_data("/c")).await;
        assert!(c.is_err(), "C was answered: {c:?}");
        let d = spawn_get(&client, "/d");
        let sent = read_gets(&mut conn, 2).await;
        let paths: Vec<&str> = sent.iter().map(|(_, p)| p.as_str()).collect();
        assert_eq!(paths, ["/c", "/d"]);
        let mut bytes = data_reply(sent[0].0, b"for C");
        bytes.extend(data_reply(sent[1].0, b"for D"));
        conn.send(&bytes).await;
        assert_eq!(
            d.await.unwrap(),
            Ok((Bytes::from_static(b"for D"), stat_of(sent[1].0)))
        );
        assert_eq!(client.state(), SessionState::Connected);
    })
    .await;
}

// 11. Heartbeats and the read timeout: see
// `io::tests::heartbeat_read_timeout_and_session_loss_to_the_millisecond`, on the paused clock.

// 12.
#[tokio::test]
async fn calls_after_close_fail_with_closed_without_touching_the_wire() {
    bounded(async {
        let (client, srv, mut conn) = connected().await;
        let ((), closed) = tokio::join!(
            async {
                let (header, request) = conn.read_request().await;
                assert_eq!(request, Request::CloseSession);
                conn.send(&empty_reply(header.xid, ErrorCode::Ok)).await;
            },
            client.close()
        );
        assert_eq!(closed, Ok(()));
        wait_state(&client, SessionState::Closed).await;

        let opts = CreateOptions::new(CreateMode::Persistent);
        assert_eq!(client.get_data("/a").await, Err(Error::Closed));
        assert_eq!(client.set_data("/a", b"x", None).await, Err(Error::Closed));
        assert_eq!(client.create("/a", b"x", &opts).await, Err(Error::Closed));
        assert_eq!(client.exists("/a").await, Err(Error::Closed));
        assert_eq!(client.get_children("/").await, Err(Error::Closed));
        assert_eq!(client.close().await, Ok(()));

        // Nothing followed closeSession on the wire, the session task ended, and it did not
        // connect again.
        let after = conn.read_to_eof().await;
        assert!(after.is_empty(), "sent after close: {after:?}");
        let mut states = client.state_watch();
        while states.changed().await.is_ok() {}
        srv.assert_no_connection_waiting();
    })
    .await;
}

// 13.
#[tokio::test]
async fn invalid_paths_and_large_data_fail_before_the_wire() {
    bounded(async {
        let (client, _srv, mut conn) = connected_with(builder().max_data_len(1024), 30_000).await;
        let opts = CreateOptions::new(CreateMode::Persistent);
        for bad in ["", "a", "a/b", "/a/", "/a//b", "/a/./b", "/a/../b", "/a\0b"] {
            let got = client.get_data(bad).await;
            assert!(
                matches!(got, Err(Error::InvalidPath(_))),
                "{bad:?}: {got:?}"
            );
            let got = client.create(bad, b"x", &opts).await;
            assert!(
                matches!(got, Err(Error::InvalidPath(_))),
                "{bad:?}: {got:?}"
            );
            let got = client.delete(bad, None).await;
            assert!(
                matches!(got, Err(Error::InvalidPath(_))),
                "{bad:?}: {got:?}"
            );
        }
        let big = vec![0u8; 2048];
        let too_large = Error::TooLarge {
            len: 2048,
            max: 1024,
        };
        let got = client.set_data("/a", &big, None).await;
        assert_eq!(got.err(), Some(too_large.clone()));
        let got = client.create("/a", &big, &opts).await;
        assert_eq!(got.err(), Some(too_large));
        // Data within the limit, but the whole request over it (1 KiB of data + 1 KiB).
        let long_path = format!("/{}", "p".repeat(1100));
        let got = client.set_data(&long_path, &big[..1024], None).await;
        assert!(
            matches!(got, Err(Error::TooLarge { max: 2048, .. })),
            "{got:?}"
        );

        // Nothing reached the server: its next frame is the next request, with the first xid.
        let (got, (header, request)) = tokio::join!(client.get_data("/ok"), async {
            let (header, request) = conn.read_request().await;
            conn.send(&data_reply(header.xid, b"ok")).await;
            (header, request)
        });
        assert_eq!((header.xid, get_data_path(&request)), (1, "/ok".to_owned()));
        assert_eq!(got, Ok((Bytes::from_static(b"ok"), stat_of(1))));
    })
    .await;
}

// 14.
#[tokio::test]
async fn watch_event_is_delivered_before_the_reply_that_follows_it() {
    bounded(async {
        let (client, _srv, mut conn) = connected().await;
        let mut watchers = Vec::new();
        for path in ["/w1", "/w2"] {
            let (got, ()) = tokio::join!(client.get_data_and_watch(path), async {
                let (header, request) = conn.read_request().await;
                assert_eq!(request.op_code(), OpCode::GetData);
                assert!(matches!(&request, Request::GetData(r) if r.watch && r.path == path));
                conn.send(&data_reply(header.xid, b"v1")).await;
            });
            let (data, _, watcher) = got.unwrap();
            assert_eq!(&data[..], b"v1");
            watchers.push((path, watcher));
        }

        // /w1: the event and the next reply in one write; /w2: in two writes.
        for (i, (path, watcher)) in watchers.iter_mut().enumerate() {
            assert!(now_or_never(watcher).is_none(), "{path} fired early");
            let (got, ()) = tokio::join!(client.get_data("/x"), async {
                let (header, _) = conn.read_request().await;
                let event = notification(EventType::NodeDataChanged, path);
                let reply = data_reply(header.xid, b"x");
                if i == 0 {
                    conn.send(&[event, reply].concat()).await;
                } else {
                    conn.send(&event).await;
                    conn.send(&reply).await;
                }
            });
            assert!(got.is_ok(), "{got:?}");
            let event = now_or_never(watcher);
            assert_eq!(
                event,
                Some(WatchedEvent {
                    event_type: EventType::NodeDataChanged,
                    state: KeeperState::SyncConnected,
                    path: (*path).to_owned(),
                }),
                "{path}: the watch event was not delivered before the reply after it"
            );
        }
    })
    .await;
}

// Beyond the list: dropping the last handle closes the session on the wire.
#[tokio::test]
async fn dropping_the_last_client_closes_the_session() {
    bounded(async {
        let (client, srv, mut conn) = connected().await;
        let states = client.state_watch();
        drop(client);
        let (header, request) = conn.read_request().await;
        assert_eq!(request, Request::CloseSession);
        conn.send(&empty_reply(header.xid, ErrorCode::Ok)).await;
        assert!(conn.read_to_eof().await.is_empty());
        let mut states = states;
        while states.changed().await.is_ok() {}
        assert_eq!(*states.borrow(), SessionState::Closed);
        srv.assert_no_connection_waiting();
    })
    .await;
}

/// Reconnects after the connection `conn` is dropped: checks the client resumes its session
/// and returns the new connection.
async fn reconnect(client: &Client, srv: &FakeServer, conn: Conn, last_xid: i32) -> Conn {
    drop(conn);
    wait_state(client, SessionState::Disconnected).await;
    let (conn, request) = srv.accept_session(30_000).await;
    assert_eq!(request.session_id, SESSION_ID);
    assert_eq!(request.passwd.as_deref(), Some(&PASSWD[..]));
    assert_eq!(request.last_zxid_seen, zxid_of(last_xid));
    wait_state(client, SessionState::Connected).await;
    conn
}

// Beyond the list: watches survive a reconnect (SetWatches), those of dropped callers do not.
#[tokio::test]
async fn reconnect_restores_live_watches_only() {
    bounded(async {
        let (client, srv, mut conn) = connected().await;
        // A live data watch on /live.
        let (got, ()) = tokio::join!(client.get_data_and_watch("/live"), async {
            let (header, _) = conn.read_request().await;
            conn.send(&data_reply(header.xid, b"v")).await;
        });
        let (_, _, _live) = got.unwrap();
        // A watching read on /dead whose caller gives up before the reply.
        let dead_xid = {
            let dead = client.get_data_and_watch("/dead");
            tokio::pin!(dead);
            tokio::select! {
                r = &mut dead => panic!("answered early: {r:?}"),
                (header, _) = conn.read_request() => header.xid,
            }
        };
        conn.send(&data_reply(dead_xid, b"v")).await;
        // Flush: a reply to a later request means the one to /dead was handled.
        let (got, ()) = tokio::join!(client.get_data("/sync"), async {
            let (header, _) = conn.read_request().await;
            conn.send(&data_reply(header.xid, b"")).await;
        });
        got.unwrap();

        let mut conn = reconnect(&client, &srv, conn, dead_xid + 1).await;
        let (header, request) = conn.read_request().await;
        assert_eq!(header.xid, xid::SET_WATCHES);
        let Request::SetWatches(set) = request else {
            panic!("expected SetWatches, got {request:?}")
        };
        assert_eq!(
            set,
            SetWatches {
                relative_zxid: zxid_of(dead_xid + 1),
                data_watches: vec!["/live".to_owned()],
                exist_watches: vec![],
                child_watches: vec![],
            }
        );
    })
    .await;
}
