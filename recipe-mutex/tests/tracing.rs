//! Feature `tracing`: a subscriber sees what a user watching the logs needs, from a real
//! server: a reconnect (the connection lost, the decision to reconnect, the session back,
//! same id) and a hand-over (the waiter's hold, with the lock's path, its node, its session
//! and `handed_over`), a session timeout the server changed (asked and granted), and a
//! waiter's one report of what it waits behind. One test in this binary: it installs the process's global subscriber.

#![cfg(feature = "tracing")]
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::time::Duration;

use recipe_mutex::InterProcessMutex;
use zk_client::SessionState;
use zk_testkit::FaultProxy;

#[path = "support/collector.rs"]
mod collector;
mod support;
use collector::Collector;
use support::{bounded, client, client_at, server, wait_children};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_sees_a_reconnect_and_a_hand_over() {
    let collector = Collector::default();
    tracing::subscriber::set_global_default(collector.clone()).unwrap();

    // A reconnect: the connection through the proxy is cut; the session comes back.
    let proxy = FaultProxy::start(server().addr()).unwrap();
    let a = client_at(&proxy.addr().to_string(), Duration::from_secs(10)).await;
    let session = format!("{:#x}", a.session_id());
    let from = collector.len();
    // Every change in order: the client reconnects at once, so the latest state alone could
    // skip the disconnect.
    let mut states = a.state_stream();
    proxy.cut();
    for want in [SessionState::Disconnected, SessionState::Connected] {
        assert_eq!(bounded(states.next()).await, Some(want));
    }
    let lost = collector
        .wait_for(from, "connection lost", |e| {
            e.message() == "connection lost: reconnecting" && e.level == tracing::Level::INFO
        })
        .await;
    let seen = collector.get(lost);
    assert!(seen.target.starts_with("zk_client"), "{seen:?}");
    assert_eq!(
        seen.field("server"),
        Some(proxy.addr().to_string().as_str())
    );
    assert_eq!(seen.field("on_purpose"), Some("false"), "{seen:?}");
    collector
        .wait_for(lost, "the session back", |e| {
            e.message() == "session state changed"
                && e.field("to") == Some("Connected")
                && e.field("session") == Some(session.as_str())
        })
        .await;

    // A hand-over: b waits behind a, a releases, b holds.
    let b = client().await;
    let path = "/t/tracing-hand-over";
    let ma = InterProcessMutex::new(a.clone(), path).unwrap();
    let mb = InterProcessMutex::new(b.clone(), path).unwrap();
    let held = bounded(ma.lock()).await.unwrap();
    let first = collector
        .wait_for(from, "a's hold", |e| {
            e.message() == "lock held" && e.field("session") == Some(session.as_str())
        })
        .await;
    let seen = collector.get(first);
    assert_eq!(seen.field("lock"), Some(path), "{seen:?}");
    assert_eq!(seen.field("handed_over"), Some("false"), "{seen:?}");
    assert_eq!(
        seen.field("fencing_token"),
        Some(held.fencing_token().to_string().as_str())
    );
    let from = collector.len();
    let waiting = tokio::spawn(async move { mb.lock().await });
    let b_session = format!("{:#x}", b.session_id());
    // b waits behind a: it watches a's node.
    collector
        .wait_for(from, "b watching a's node", |e| {
            e.message() == "waiting: watching a node"
                && e.field("session") == Some(b_session.as_str())
        })
        .await;
    wait_children(&b, path, 2).await;
    let from = collector.len();
    bounded(held.release()).await.unwrap();
    let second = bounded(waiting).await.unwrap().unwrap();
    let over = collector
        .wait_for(from, "b's hold, handed over", |e| {
            e.message() == "lock held" && e.field("session") == Some(b_session.as_str())
        })
        .await;
    let seen = collector.get(over);
    assert_eq!(seen.field("handed_over"), Some("true"), "{seen:?}");
    assert_eq!(seen.field("lock"), Some(path), "{seen:?}");
    assert!(
        second.node_path().ends_with(seen.field("node").unwrap()),
        "{seen:?}"
    );
    assert!(seen.target.starts_with("recipe_mutex"), "{seen:?}");
    // a's release was logged, before b's hold.
    let released = collector
        .wait_for(from, "a's release", |e| {
            e.message() == "releasing: delete sent"
        })
        .await;
    assert!(released < over);
    bounded(second.release()).await.unwrap();

    // A session timeout the server changed: asked 100 s, the test server allows 10 s at most.
    let from = collector.len();
    let c = client_at(&server().connect_string(), Duration::from_secs(100)).await;
    let granted = c.session_timeout().as_millis().to_string();
    let changed = collector
        .wait_for(from, "the changed session timeout", |e| {
            e.message() == "the server changed the session timeout asked for"
        })
        .await;
    let seen = collector.get(changed);
    assert_eq!(seen.level, tracing::Level::INFO, "{seen:?}");
    assert_eq!(seen.field("asked_ms"), Some("100000"), "{seen:?}");
    assert_eq!(seen.field("granted_ms"), Some(granted.as_str()), "{seen:?}");

    // A waiter that has waited `WAIT_REPORT_AFTER` says once what it waits behind.
    let path = "/t/tracing-still-waiting";
    let held = bounded(InterProcessMutex::new(a.clone(), path).unwrap().lock())
        .await
        .unwrap();
    let from = collector.len();
    let waiter = InterProcessMutex::new(c.clone(), path).unwrap();
    let waiting = tokio::spawn(async move { waiter.lock().await });
    let c_session = format!("{:#x}", c.session_id());
    let report = collector
        .wait_for(from, "the waiting report", |e| {
            e.message() == "still waiting for the lock, behind this node"
                && e.field("session") == Some(c_session.as_str())
        })
        .await;
    let seen = collector.get(report);
    assert_eq!(seen.level, tracing::Level::INFO, "{seen:?}");
    assert_eq!(seen.field("behind"), Some(held.node_path()), "{seen:?}");
    assert_eq!(
        seen.field("behind_session"),
        Some(session.as_str()),
        "{seen:?}"
    );
    let waited: u64 = seen.field("waited_ms").unwrap().parse().unwrap();
    assert!(
        waited >= recipe_mutex::WAIT_REPORT_AFTER.as_millis() as u64,
        "{seen:?}"
    );
    bounded(held.release()).await.unwrap();
    let guard = bounded(waiting).await.unwrap().unwrap();
    bounded(guard.release()).await.unwrap();
    let reports = collector.all(|e| {
        e.message().starts_with("still waiting") && e.field("session") == Some(c_session.as_str())
    });
    assert_eq!(reports.len(), 1, "once: {reports:#?}");
}
