//! A server that stops reading (issue 24, item 1): through the test kit's fault proxy, over
//! plain TCP and over TLS, a session with megabytes of writes stuck in its buffers loses the
//! connection at its read deadline, answers new calls, and closes within its close timeout.
//! Against real ZooKeeper servers started here; every wait is bounded.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::time::{Duration, Instant};

use zk_client::*;
use zk_testkit::{FaultProxy, ZkServer};

const BOUND: Duration = Duration::from_secs(30);
const CLOSE_TIMEOUT: Duration = Duration::from_secs(2);

fn builder(hosts: &str) -> ClientBuilder {
    Client::builder()
        .hosts(hosts)
        .session_timeout(Duration::from_secs(3))
        .connect_timeout(Duration::from_secs(2))
        .close_timeout(CLOSE_TIMEOUT)
}

/// Stalls `proxy` under the connected `c`, then sends 30 × 1 MB `set_data`: the session must
/// go `Disconnected` at its read deadline, every write must end (uncertain or not sent), a new
/// call must return, and `close()` must return within its close timeout.
async fn a_peer_that_stops_reading(c: Client, proxy: &FaultProxy) {
    let mut states = c.state_stream();
    proxy.stall();
    let data = vec![7u8; 1_000_000];
    let writes: Vec<_> = (0..30)
        .map(|_| {
            let (c, data) = (c.clone(), data.clone());
            tokio::spawn(async move { c.set_data("/stalled", &data, None).await })
        })
        .collect();
    let disconnected = tokio::time::timeout(BOUND, async {
        while let Some(s) = states.next().await {
            if s == SessionState::Disconnected {
                return;
            }
        }
    });
    disconnected
        .await
        .expect("Disconnected at the read deadline");
    for w in writes {
        let result = tokio::time::timeout(BOUND, w)
            .await
            .expect("every write ends");
        match result.unwrap() {
            Err(Error::ConnectionLoss | Error::NotConnected) => {}
            other => panic!("{other:?}"),
        }
    }
    let call = tokio::time::timeout(BOUND, c.exists("/")).await;
    assert!(
        call.is_ok(),
        "a new call returns while the server is stalled"
    );
    let t0 = Instant::now();
    let closed = tokio::time::timeout(BOUND, c.close()).await;
    assert!(closed.is_ok(), "close returns");
    let took = t0.elapsed();
    assert!(
        took <= CLOSE_TIMEOUT + Duration::from_millis(500),
        "close took {took:?}"
    );
    println!("FIGURE stalled close took {took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_plain_server_cannot_hang_the_session_or_its_close() {
    let zk = ZkServer::start().unwrap();
    let proxy = FaultProxy::start(zk.addr()).unwrap();
    let c = builder(&proxy.addr().to_string()).connect().await.unwrap();
    a_peer_that_stops_reading(c, &proxy).await;
}

#[cfg(feature = "tls")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_tls_server_cannot_hang_the_session_or_its_close() {
    use zk_client::tls::TlsConfig;
    use zk_testkit::ZkOptions;
    use zk_testkit::zk::{ClientAuth, TlsOptions};

    let opts = ZkOptions::default().tls(TlsOptions {
        client_auth: ClientAuth::None,
        tls13: true,
    });
    let zk = ZkServer::start_with(opts).unwrap();
    let ens = zk.ensemble();
    let proxy = FaultProxy::start(ens.secure_addr(0).unwrap()).unwrap();
    let tls = TlsConfig::new()
        .ca_pem(ens.pki().unwrap().ca_pem().as_bytes())
        .unwrap();
    let c = builder(&proxy.addr().to_string())
        .tls(tls)
        .connect()
        .await
        .unwrap();
    a_peer_that_stops_reading(c, &proxy).await;
}
