//! What the mutex's real-server tests share: one server per test binary, clients, bounds.

#![allow(dead_code, clippy::unwrap_used)]

use std::sync::OnceLock;
use std::time::Duration;

use zk_client::{Client, SessionState};
use zk_testkit::ZkServer;

/// The longest any single wait in these tests may take.
pub const BOUND: Duration = Duration::from_secs(60);

/// The test binary's server.
pub fn server() -> &'static ZkServer {
    static SERVER: OnceLock<ZkServer> = OnceLock::new();
    SERVER.get_or_init(|| ZkServer::start().expect("start ZooKeeper"))
}

/// A client of `hosts` with session timeout `timeout`.
pub async fn client_at(hosts: &str, timeout: Duration) -> Client {
    Client::builder()
        .hosts(hosts)
        .session_timeout(timeout)
        .connect()
        .await
        .unwrap()
}

/// A client of the test binary's server.
pub async fn client() -> Client {
    client_at(&server().connect_string(), Duration::from_secs(10)).await
}

/// `f`, or a panic after [`BOUND`].
pub async fn bounded<F: std::future::Future>(f: F) -> F::Output {
    tokio::time::timeout(BOUND, f).await.expect("timed out")
}

/// Until `cond` holds (asked once per scheduler turn), or a panic after [`BOUND`]: for
/// states only the code under test can show (a cohort's waiters).
pub async fn until(mut cond: impl FnMut() -> bool) {
    bounded(async {
        while !cond() {
            tokio::task::yield_now().await;
        }
    })
    .await;
}

/// Waits until `path` has `n` children (as the lock queue grows or drains).
pub async fn wait_children(c: &Client, path: &str, n: usize) {
    bounded(async {
        loop {
            let (kids, watcher) = match c.get_children_and_watch(path).await {
                Ok(r) => r,
                Err(zk_client::Error::NoNode) if n == 0 => return,
                Err(zk_client::Error::NoNode) => {
                    // Not there yet: wait for it to be created.
                    if let (None, created) = c.exists_and_watch(path).await.unwrap() {
                        created.await;
                    }
                    continue;
                }
                Err(e) => panic!("{e}"),
            };
            if kids.len() == n {
                return;
            }
            watcher.await;
        }
    })
    .await;
}

/// Waits until `path` does not exist.
pub async fn wait_gone(c: &Client, path: &str) {
    bounded(async {
        loop {
            match c.exists_and_watch(path).await.unwrap() {
                (None, _) => return,
                (Some(_), watcher) => drop(watcher.await),
            }
        }
    })
    .await;
}

/// Waits until `c`'s session is in a state that `pred` accepts.
pub async fn wait_state(c: &Client, pred: impl Fn(SessionState) -> bool) {
    let mut states = c.state_watch();
    bounded(states.wait_for(|s| pred(*s))).await.unwrap();
}
