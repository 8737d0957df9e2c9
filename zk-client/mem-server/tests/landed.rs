//! What a client sees of each fault, and when: right after a fault's call the client has not
//! heard of it yet; after `MemServer::landed` it has. And the shipped test helpers
//! (`wait_state`, `pause`) ending in their errors rather than hanging. All on tokio's paused
//! clock, with no sleeps.

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use zk_client::{Client, CreateMode, CreateOptions, SessionState};
use zk_mem_server::{MemServer, ServerConfig, WaitError, pause, wait_state};

async fn connected(seed: u64) -> (MemServer, Client) {
    let server = MemServer::new(ServerConfig::new(seed));
    let builder = Client::builder().session_timeout(Duration::from_secs(6));
    let client = server.client(builder, seed).await.unwrap();
    assert_eq!(client.state(), SessionState::Connected);
    (server, client)
}

#[tokio::test(start_paused = true)]
async fn a_cut_is_seen_once_landed_and_the_client_then_reconnects_to_its_session() {
    let (server, client) = connected(1).await;
    let session = client.session_id();
    assert!(server.cut(session));
    // The call has returned, the client's task has not run: what the issue met.
    assert_eq!(client.state(), SessionState::Connected);
    server.landed().await.unwrap();
    assert!(!client.state().is_connected(), "{:?}", client.state());
    // Having seen the loss, the client comes back to the same session; a write then works.
    wait_state(&client, SessionState::Connected).await.unwrap();
    assert_eq!(client.session_id(), session);
    let p = CreateOptions::new(CreateMode::Persistent);
    assert_eq!(client.create("/after", b"", &p).await, Ok("/after".into()));
}

#[tokio::test(start_paused = true)]
async fn an_expiry_is_seen_as_expired_once_landed() {
    let (server, client) = connected(2).await;
    assert!(server.expire(client.session_id()));
    assert_eq!(client.state(), SessionState::Connected);
    server.landed().await.unwrap();
    assert_eq!(client.state(), SessionState::Expired);
}

#[tokio::test(start_paused = true)]
async fn an_expiry_behind_refused_connections_lands_as_a_disconnect_then_expired_on_accept() {
    let (server, client) = connected(3).await;
    server.refuse(true);
    assert!(server.expire(client.session_id()));
    server.landed().await.unwrap();
    // It cannot reconnect to be told: what it can see is the lost connection.
    assert!(!client.state().is_connected(), "{:?}", client.state());
    assert!(!client.state().is_terminal(), "{:?}", client.state());
    server.refuse(false);
    server.landed().await.unwrap();
    assert_eq!(client.state(), SessionState::Expired);
}

#[tokio::test(start_paused = true)]
async fn down_and_stop_are_seen_as_disconnects_and_the_session_survives_a_stop() {
    let (server, client) = connected(4).await;
    server.down();
    server.landed().await.unwrap();
    assert!(!client.state().is_connected(), "{:?}", client.state());
    server.up();
    wait_state(&client, SessionState::Connected).await.unwrap();

    let session = client.session_id();
    server.stop();
    assert_eq!(client.state(), SessionState::Connected);
    server.landed().await.unwrap();
    assert!(!client.state().is_connected(), "{:?}", client.state());
    server.start();
    wait_state(&client, SessionState::Connected).await.unwrap();
    assert_eq!(client.session_id(), session);
}

#[tokio::test(start_paused = true)]
async fn stall_partition_and_refuse_land_at_once_the_client_seeing_nothing_yet() {
    let (server, client) = connected(5).await;
    let session = client.session_id();
    let t0 = tokio::time::Instant::now();
    assert!(server.stall(session, true));
    server.landed().await.unwrap();
    server.refuse(true);
    server.landed().await.unwrap();
    assert!(server.partition(session, true));
    // A cut while partitioned reaches the client only on the heal.
    assert!(server.cut(session));
    server.landed().await.unwrap();
    assert_eq!(
        tokio::time::Instant::now(),
        t0,
        "no time passed: nothing waited for"
    );
    assert_eq!(client.state(), SessionState::Connected);

    // Its own clock tells it in the end: the read deadline (two thirds of 6 s), then Lost.
    wait_state(&client, SessionState::Lost).await.unwrap();
    assert!(t0.elapsed() >= Duration::from_secs(4));
}

#[tokio::test(start_paused = true)]
async fn a_write_after_a_landed_cut_and_a_reconnect_is_not_refused_not_connected() {
    // The trap: without `landed`, `wait_state(Connected)` right after the cut returns
    // at once (the state still reads Connected) and the write fails NotConnected.
    let (server, client) = connected(6).await;
    assert!(server.cut(client.session_id()));
    server.landed().await.unwrap();
    wait_state(&client, SessionState::Connected).await.unwrap();
    let p = CreateOptions::new(CreateMode::Persistent);
    assert_eq!(client.create("/x", b"", &p).await, Ok("/x".into()));
}

#[tokio::test(start_paused = true)]
async fn wait_state_says_never_when_the_session_ends_in_another_state() {
    let (server, client) = connected(7).await;
    server.expire(client.session_id());
    let waited = wait_state(&client, SessionState::Disconnected).await;
    // It may pass Disconnected before this wait reads it; it ends Expired either way.
    if let Err(e) = waited {
        assert!(matches!(e, WaitError::Never { .. }), "{e}");
    }
    let never = wait_state(&client, SessionState::Connected).await;
    assert!(matches!(never, Err(WaitError::Never { .. })), "{never:?}");
}

#[tokio::test(start_paused = true)]
async fn wait_state_times_out_within_its_bound_on_the_paused_clock() {
    let (server, client) = connected(8).await;
    let t0 = tokio::time::Instant::now();
    // Connected, and nothing will take it elsewhere.
    let waited = wait_state(&client, SessionState::Lost).await;
    assert_eq!(
        waited,
        Err(WaitError::TimedOut {
            what: format!("session {:#x} in state Lost", client.session_id()),
            bound: zk_mem_server::WAIT_BOUND,
        })
    );
    assert_eq!(t0.elapsed(), zk_mem_server::WAIT_BOUND);
    drop(server);
}

#[tokio::test(start_paused = true)]
async fn a_pause_is_reached_held_and_resumed_and_a_dropped_point_says_never() {
    let (mut paused, point) = pause();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let task = tokio::spawn(async move {
        tx.send("before").unwrap();
        point.wait().await;
        tx.send("after").unwrap();
    });
    paused.reached().await.unwrap();
    assert_eq!(rx.recv().await, Some("before"));
    // Held there: nothing more comes while the test does its part.
    tokio::task::yield_now().await;
    assert!(rx.try_recv().is_err());
    paused.reached().await.unwrap();
    paused.resume();
    assert_eq!(rx.recv().await, Some("after"));
    task.await.unwrap();

    let (mut paused, point) = pause();
    drop(point);
    assert!(matches!(
        paused.reached().await,
        Err(WaitError::Never { .. })
    ));

    let (mut paused, _point) = pause();
    assert!(matches!(
        paused.reached().await,
        Err(WaitError::TimedOut { .. })
    ));
}
