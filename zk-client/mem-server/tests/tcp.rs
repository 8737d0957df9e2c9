//! The server over loopback TCP ([`MemServer::listen`]), on the real clock: a client built
//! from a connect string of two of its ports sees the tree the in-memory clients see, rides
//! a cut to the same session, is refused while the server is down, and hears an expiry.
//! Every wait is bounded; the ports close with the runtime.

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use zk_client::{Client, CreateMode, CreateOptions, Error, SessionState};
use zk_mem_server::{MemServer, ServerConfig};

/// The bound on every wait (each one takes milliseconds).
const BOUND: Duration = Duration::from_secs(20);

async fn wait_state(c: &Client, want: SessionState) {
    let mut states = c.state_watch();
    tokio::time::timeout(BOUND, states.wait_for(|s| *s == want))
        .await
        .unwrap_or_else(|_| panic!("no {want:?} in time (now {:?})", c.state()))
        .unwrap();
}

#[tokio::test]
async fn a_tcp_client_shares_the_tree_rides_a_cut_and_hears_its_expiry() {
    let server = MemServer::new(ServerConfig::new(21));
    let (a, b) = (server.listen().unwrap(), server.listen().unwrap());
    assert_ne!(a.port(), b.port());
    assert!(a.ip().is_loopback());
    let tcp = tokio::time::timeout(
        BOUND,
        Client::builder()
            .hosts(format!("{a},{b}"))
            .session_timeout(Duration::from_secs(4))
            .connect(),
    )
    .await
    .unwrap()
    .unwrap();
    let port = tcp.server_addr().unwrap().port();
    assert!(port == a.port() || port == b.port(), "connected to {port}");

    // One tree, whichever way a client came in.
    let memory = server.client(Client::builder(), 1).await.unwrap();
    let eph = CreateOptions::new(CreateMode::Ephemeral);
    tcp.create("/from-tcp", b"t", &eph).await.unwrap();
    assert_eq!(memory.get_data("/from-tcp").await.unwrap().0, b"t".to_vec());
    assert_eq!(
        server.ephemerals(),
        vec![("/from-tcp".to_owned(), tcp.session_id())]
    );

    // A cut: the client reconnects to the same session (maybe through the other port).
    let session = tcp.session_id();
    let mut states = tcp.state_stream();
    assert!(server.cut(session));
    tokio::time::timeout(BOUND, async {
        while let Some(state) = states.next().await {
            if state == SessionState::Disconnected {
                break;
            }
        }
    })
    .await
    .unwrap();
    wait_state(&tcp, SessionState::Connected).await;
    assert_eq!(tcp.session_id(), session);
    assert!(tcp.exists("/from-tcp").await.unwrap().is_some());

    // Down: the connection drops and reconnects are turned away until up.
    server.down();
    wait_state(&tcp, SessionState::Disconnected).await;
    assert!(matches!(
        tcp.exists("/from-tcp").await,
        Err(Error::ConnectionLoss | Error::NotConnected)
    ));
    server.up();
    wait_state(&tcp, SessionState::Connected).await;
    assert_eq!(tcp.session_id(), session);

    // Expired by the server: the ephemeral goes and the client hears it.
    assert!(server.expire(session));
    wait_state(&tcp, SessionState::Expired).await;
    assert!(server.exists("/from-tcp").is_none());
}

#[tokio::test]
async fn the_ports_close_when_the_server_is_gone() {
    let server = MemServer::new(ServerConfig::new(22));
    let addr = server.listen().unwrap();
    drop(server);
    // The accept loop is aborted with the server's last handle; the runtime drops it (and
    // its listener) at its next turn. Without that, the port would keep accepting until a
    // connection came to find the server gone.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let refused = tokio::net::TcpStream::connect(addr).await;
    assert!(refused.is_err(), "{addr} still accepts connections");
}
