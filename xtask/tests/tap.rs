//! The bench's counting proxy ([`Tap`]) in front of a real server: one zk-client session's
//! requests, round trips, `fsync`ed writes, bytes and a notification, counted exactly; a
//! four-letter word passed through uncounted.
//!
//! Every wait is bounded ([`PATIENCE`]); nothing sleeps.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::time::Duration;

use bytes::BytesMut;
use xtask::bench::tap::Tap;
use zk_client::{Client, CreateMode, CreateOptions, EventType};
use zk_proto::records::{
    Acl, CreateRequest, CreateResponse, DeleteRequest, GetChildrenRequest, GetChildrenResponse,
    WatcherEvent,
};
use zk_proto::{DEFAULT_MAX_FRAME_LEN, Encode, KeeperState, OpCode, Request};

/// How long a step may take before the test fails.
const PATIENCE: Duration = Duration::from_secs(10);

/// The length of `request` as a frame on the wire.
fn framed(request: &Request) -> u64 {
    let mut out = BytesMut::new();
    request
        .encode_frame(1, &mut out, DEFAULT_MAX_FRAME_LEN)
        .unwrap();
    out.len() as u64
}

/// The length of a reply frame with `body` after its 16-byte header.
fn reply(body: Option<&dyn Encode>) -> u64 {
    4 + 16 + body.map_or(0, |b| b.encoded_len() as u64)
}

#[test]
fn a_session_through_the_tap_is_counted_exactly() {
    let zk = xtask::ZkServer::start().unwrap();
    let tap = Tap::start(zk.addr()).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let persistent = CreateOptions::new(CreateMode::Persistent);
    let (before, after) = rt.block_on(async {
        let client = tokio::time::timeout(
            PATIENCE,
            Client::builder()
                .hosts(tap.addr().to_string())
                .session_timeout(Duration::from_secs(30))
                .connect(),
        )
        .await
        .expect("connect: over PATIENCE")
        .unwrap();
        client.create("/tap", b"", &persistent).await.unwrap();
        let before = tap.counts();

        // create + getChildren pipelined (both are sent before either is awaited), then a
        // delete once both are answered; the delete fires the child watch.
        let (created, listed) = tokio::time::timeout(PATIENCE, async {
            tokio::join!(
                client.create("/tap/a", b"x", &persistent),
                client.get_children_and_watch("/tap"),
            )
        })
        .await
        .expect("create + getChildren: over PATIENCE");
        assert_eq!(created.unwrap(), "/tap/a");
        let (children, watcher) = listed.unwrap();
        assert_eq!(children, ["a"]);
        tokio::time::timeout(PATIENCE, client.delete("/tap/a", None))
            .await
            .expect("delete: over PATIENCE")
            .unwrap();
        let event = tokio::time::timeout(PATIENCE, watcher)
            .await
            .expect("the child watch: over PATIENCE");
        assert_eq!(event.event_type, EventType::NodeChildrenChanged);
        let after = tap.counts();
        client.close().await.unwrap();
        (before, after)
    });

    let window = after.since(&before);
    assert_eq!(window.requests, 3, "{window:?}");
    assert_eq!(window.op(OpCode::Create), 1);
    assert_eq!(window.op(OpCode::GetChildren), 1);
    assert_eq!(window.op(OpCode::Delete), 1);
    assert_eq!(window.round_trips, 2, "{window:?}");
    assert_eq!(window.fsync_writes, 2);
    assert_eq!(window.replies, 3);
    assert_eq!(window.notifications, 1);
    assert_eq!((window.connections, window.handshakes), (0, 0));

    // The bytes are those of the frames written, each way.
    let sent = framed(&Request::Create(CreateRequest {
        path: "/tap/a".into(),
        data: Some("x".into()),
        acl: Acl::open_unsafe().into(),
        mode: CreateMode::Persistent,
    })) + framed(&Request::GetChildren(GetChildrenRequest {
        path: "/tap".into(),
        watch: true,
    })) + framed(&Request::Delete(DeleteRequest {
        path: "/tap/a".into(),
        version: -1,
    }));
    assert_eq!(window.bytes_sent, sent);
    let received = reply(Some(&CreateResponse {
        path: "/tap/a".into(),
    })) + reply(Some(&GetChildrenResponse {
        children: vec!["a".into()],
    })) + reply(None)
        + reply(Some(&WatcherEvent {
            event_type: EventType::NodeChildrenChanged,
            state: KeeperState::SyncConnected,
            path: "/tap".into(),
        }));
    assert_eq!(window.bytes_received, received);
    // Nothing else went by (pings aside, had one fallen in the window).
    assert_eq!(window.forwarded_up, sent + window.ping_bytes_sent);
    assert_eq!(window.forwarded_down, received + window.ping_bytes_received);

    // The session's whole life: one connection, one handshake, its close a logged write.
    assert_eq!((after.connections, after.handshakes), (1, 1));
    let closed = tap.counts();
    assert_eq!(closed.op(OpCode::CloseSession), 1);
    assert_eq!(closed.uncounted_connections, 0);

    // A four-letter word goes through, uncounted.
    let ruok = xtask::four_letter(tap.addr(), "ruok", PATIENCE).unwrap();
    assert_eq!(ruok, "imok");
    let probed = tap.counts().since(&closed);
    assert_eq!((probed.connections, probed.uncounted_connections), (1, 1));
    assert_eq!(probed.requests, 0);
    drop(tap);
}
