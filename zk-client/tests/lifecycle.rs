//! A session's life around its connections, against real servers started by the tests and
//! xtask's fault proxy: credentials that survive a reconnect, a close that always closes
//! (also while disconnected, and when the last handle is dropped mid-handshake), a reconnect
//! that does not spend the whole session on a server that accepts TCP but never answers, and
//! connect errors that say what happened and where.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::time::Duration;

use tokio::io::AsyncWriteExt;
use zk_client::*;
use zk_testkit::{FaultProxy, ZkServer};

const BOUND: Duration = Duration::from_secs(60);

fn builder(hosts: &str, session: Duration) -> ClientBuilder {
    Client::builder()
        .hosts(hosts)
        .session_timeout(session)
        .connect_timeout(Duration::from_secs(10))
}

async fn wait_state(c: &Client, want: impl Fn(SessionState) -> bool) {
    let mut states = c.state_watch();
    tokio::time::timeout(BOUND, states.wait_for(|s| want(*s)))
        .await
        .expect("state within the bound")
        .unwrap();
}

/// Waits until `path` is gone, at most `within`.
async fn gone_within(observer: &Client, path: &str, within: Duration) -> bool {
    tokio::time::timeout(within, async {
        loop {
            match observer.exists_and_watch(path).await.unwrap() {
                (None, _) => return,
                (Some(_), w) => drop(w.await),
            }
        }
    })
    .await
    .is_ok()
}

/// Defect 1: the server keeps authentication per connection; after a reconnect (same
/// session) the credentials must be sent again, or a `creator_all` node says `NoAuth`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_survive_a_reconnect() {
    let zk = ZkServer::start().unwrap();
    let proxy = FaultProxy::start(zk.addr()).unwrap();
    let c = builder(&proxy.addr().to_string(), Duration::from_secs(10))
        .digest_auth("alice", "secret")
        .connect()
        .await
        .unwrap();
    let opts = CreateOptions::new(CreateMode::Persistent).acl(Acl::creator_all());
    c.create("/secret", b"x", &opts).await.unwrap();
    c.get_data("/secret").await.unwrap();
    let session = c.session_id();
    // Every change in order: the client reconnects at once, so the latest state alone could
    // skip the disconnect.
    let mut states = c.state_stream();
    proxy.cut();
    for want in [SessionState::Disconnected, SessionState::Connected] {
        let got = tokio::time::timeout(BOUND, states.next())
            .await
            .expect("in time");
        assert_eq!(got, Some(want));
    }
    assert_eq!(c.session_id(), session, "the same session");
    let (data, _) = c.get_data("/secret").await.expect("still authenticated");
    assert_eq!(&data[..], b"x");
    c.close().await.unwrap();
}

/// Defect 3: `close()` while disconnected ends the client at once when no server comes back
/// within the close timeout (it returned `ConnectionLoss`, and the task reconnected and
/// resumed the session).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_while_disconnected_closes_within_the_close_timeout() {
    let zk = ZkServer::start().unwrap();
    let proxy = FaultProxy::start(zk.addr()).unwrap();
    let c = builder(&proxy.addr().to_string(), Duration::from_secs(10))
        .close_timeout(Duration::from_millis(500))
        .connect()
        .await
        .unwrap();
    proxy.refuse(true);
    proxy.cut();
    wait_state(&c, |s| s == SessionState::Disconnected).await;
    let closed = tokio::time::timeout(Duration::from_secs(5), c.close()).await;
    assert_eq!(closed, Ok(Ok(())), "close returns within its timeout");
    assert_eq!(c.state(), SessionState::Closed);
    assert_eq!(c.exists("/").await, Err(Error::Closed));
    // A server back later changes nothing: the client stays closed.
    let accepted = proxy.accepted();
    proxy.refuse(false);
    assert_eq!(c.exists("/").await, Err(Error::Closed));
    assert_eq!(c.state(), SessionState::Closed);
    assert!(proxy.accepted() <= accepted + 1);
}

/// Defect 3: a close while disconnected reaches the server when one comes back within the
/// close timeout: the session is closed there (its ephemeral node goes at once, not after
/// the session timeout).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_while_disconnected_closes_the_session_on_a_returning_server() {
    let zk = ZkServer::start().unwrap();
    let observer = builder(&zk.connect_string(), Duration::from_secs(10))
        .connect()
        .await
        .unwrap();
    let proxy = FaultProxy::start(zk.addr()).unwrap();
    let c = builder(&proxy.addr().to_string(), Duration::from_secs(10))
        .close_timeout(Duration::from_secs(20))
        .connect()
        .await
        .unwrap();
    c.create("/eph", b"", &CreateOptions::new(CreateMode::Ephemeral))
        .await
        .unwrap();
    proxy.refuse(true);
    proxy.cut();
    wait_state(&c, |s| s == SessionState::Disconnected).await;
    let closing = tokio::spawn({
        let c = c.clone();
        async move { c.close().await }
    });
    proxy.refuse(false);
    assert!(
        gone_within(&observer, "/eph", Duration::from_secs(5)).await,
        "the ephemeral node outlived the close (session timeout 10 s)"
    );
    assert_eq!(
        tokio::time::timeout(BOUND, closing).await.unwrap().unwrap(),
        Ok(())
    );
    assert_eq!(c.state(), SessionState::Closed);
}

/// Defect 2: dropping the last handle while a reconnect's handshake is under way still
/// closes the session (the close was submitted mid-handshake, failed, and was forgotten: the
/// session and its ephemeral nodes lived on until the process exited).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_last_handle_mid_handshake_closes_the_session() {
    let zk = ZkServer::start().unwrap();
    let observer = builder(&zk.connect_string(), Duration::from_secs(10))
        .connect()
        .await
        .unwrap();
    let proxy = FaultProxy::start(zk.addr()).unwrap();
    let c = builder(&proxy.addr().to_string(), Duration::from_secs(10))
        .close_timeout(Duration::from_secs(20))
        .connect()
        .await
        .unwrap();
    c.create("/eph2", b"", &CreateOptions::new(CreateMode::Ephemeral))
        .await
        .unwrap();
    // The next connection is accepted but its handshake hangs.
    proxy.stall();
    proxy.cut();
    assert!(proxy.wait_accepted(2, BOUND), "no reconnect attempt");
    drop(c);
    proxy.pass();
    assert!(
        gone_within(&observer, "/eph2", Duration::from_secs(6)).await,
        "the dropped client's session lived on (session timeout 10 s)"
    );
}

/// Defect 4: once a session exists, a reconnect that lands on servers that accept TCP but
/// never answer gives each its share of the session timeout (Java's rule), and reaches the
/// healthy one before the session is lost. With the fixed 10 s connect timeout it waited on
/// the first silent one while the 3 s session expired.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_servers_do_not_use_up_the_session() {
    let zk = ZkServer::start().unwrap();
    let proxies: Vec<FaultProxy> = (0..3)
        .map(|_| FaultProxy::start(zk.addr()).unwrap())
        .collect();
    let hosts = proxies
        .iter()
        .map(|p| p.addr().to_string())
        .collect::<Vec<_>>()
        .join(",");
    let c = builder(&hosts, Duration::from_secs(3))
        .connect()
        .await
        .unwrap();
    let session = c.session_id();
    let current = c.server_addr().unwrap();
    let mut states = c.state_stream();
    // Every server but one other than the current goes silent; the current one drops us.
    let healthy = proxies.iter().position(|p| p.addr() != current).unwrap();
    for (i, p) in proxies.iter().enumerate() {
        if i != healthy {
            p.stall();
        }
    }
    proxies.iter().find(|p| p.addr() == current).unwrap().cut();
    let mut seen = Vec::new();
    let back = tokio::time::timeout(BOUND, async {
        while let Some(s) = states.next().await {
            seen.push(s);
            if s == SessionState::Connected || s.is_terminal() || s == SessionState::Lost {
                return s;
            }
        }
        SessionState::Closed
    })
    .await
    .unwrap();
    assert_eq!(back, SessionState::Connected, "states: {seen:?}");
    assert_eq!(c.session_id(), session);
    assert_eq!(c.server_addr(), Some(proxies[healthy].addr()));
    c.exists("/").await.unwrap();
}

/// Truthful errors: a refused connection says so, with the server, at once (it was a
/// `ConnectTimeout` after 0.00 s).
#[tokio::test]
async fn a_refused_connection_is_reported_as_such() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let err = builder(&addr.to_string(), Duration::from_secs(10))
        .connect()
        .await
        .unwrap_err();
    match &err {
        Error::Unreachable { server, error } => {
            assert_eq!(server, &addr.to_string());
            assert_eq!(error.0.kind(), std::io::ErrorKind::ConnectionRefused);
        }
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().contains(&addr.to_string()), "{err}");
}

/// Truthful errors: a name that does not resolve names itself.
#[tokio::test]
async fn a_name_that_does_not_resolve_is_reported_with_the_name() {
    let err = builder("no-such-host.invalid:2181", Duration::from_secs(10))
        .connect()
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::Unreachable { server, .. } if server == "no-such-host.invalid:2181"),
        "{err:?}"
    );
}

/// Truthful errors: a peer that is not ZooKeeper (an HTTP server) is named and described
/// (it was "frame length 1213486160 is over the limit", with no address).
#[tokio::test]
async fn a_server_that_is_not_zookeeper_is_reported_as_such() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let _ = s
                .write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
                .await;
        }
    });
    let err = builder(&addr.to_string(), Duration::from_secs(10))
        .connect()
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::NotZooKeeper { server, .. } if server == &addr.to_string()),
        "{err:?}"
    );
    assert!(err.to_string().contains("does not speak"), "{err}");
}

/// Truthful errors: the connect string's mistakes are named.
#[tokio::test]
async fn connect_string_mistakes_are_named() {
    for (input, says) in [
        ("zk://127.0.0.1:2181", "no scheme"),
        ("127.0.0.1:1 127.0.0.1:2", "not spaces"),
        ("127.0.0.1:70000", "out of range"),
        ("127.0.0.1:2181,", "empty host"),
    ] {
        let err = Client::builder().hosts(input).connect().await.unwrap_err();
        assert!(err.to_string().contains(says), "{input}: {err}");
    }
}

/// A session handed to another client (its id and password): the successor resumes it, with
/// its ephemeral nodes, while the first can no longer reach the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_can_be_resumed_by_another_client() {
    let zk = ZkServer::start().unwrap();
    let observer = builder(&zk.connect_string(), Duration::from_secs(10))
        .connect()
        .await
        .unwrap();
    let proxy = FaultProxy::start(zk.addr()).unwrap();
    let first = builder(&proxy.addr().to_string(), Duration::from_secs(10))
        .close_timeout(Duration::from_millis(200))
        .connect()
        .await
        .unwrap();
    first
        .create("/handed", b"", &CreateOptions::new(CreateMode::Ephemeral))
        .await
        .unwrap();
    let (id, password) = (first.session_id(), first.session_password());
    assert_eq!(password.len(), 16);
    proxy.refuse(true);
    proxy.cut();
    let second = builder(&zk.connect_string(), Duration::from_secs(10))
        .resume_session(id, password.clone())
        .connect()
        .await
        .unwrap();
    assert_eq!(second.session_id(), id);
    assert_eq!(
        observer
            .exists("/handed")
            .await
            .unwrap()
            .map(|s| s.ephemeral_owner),
        Some(id)
    );
    second.delete("/handed", None).await.unwrap();
    // A wrong password is refused by the server: the session ends at once.
    let mut wrong = password.to_vec();
    wrong[0] ^= 0xff;
    let refused = builder(&zk.connect_string(), Duration::from_secs(10))
        .resume_session(id, wrong)
        .connect()
        .await;
    assert_eq!(refused.err(), Some(Error::SessionExpired));
    drop(first);
    second.close().await.unwrap();
}

/// `update_server_list`: a client whose server leaves the list moves to a listed one, with
/// the same session; one whose server stays, stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_server_list_keeps_the_session() {
    let zk = ZkServer::start().unwrap();
    let a = FaultProxy::start(zk.addr()).unwrap();
    let b = FaultProxy::start(zk.addr()).unwrap();
    let c = builder(&a.addr().to_string(), Duration::from_secs(10))
        .connect()
        .await
        .unwrap();
    let session = c.session_id();
    c.update_server_list(&format!("{},{}", a.addr(), b.addr()))
        .unwrap();
    c.exists("/").await.unwrap();
    assert_eq!(c.server_addr(), Some(a.addr()), "a listed server is kept");
    c.update_server_list(&b.addr().to_string()).unwrap();
    wait_state(&c, |s| s == SessionState::Disconnected).await;
    wait_state(&c, |s| s == SessionState::Connected).await;
    assert_eq!(c.server_addr(), Some(b.addr()));
    assert_eq!(c.session_id(), session);
    assert!(matches!(
        c.update_server_list("127.0.0.1:1/other"),
        Err(Error::InvalidHosts { .. })
    ));
    c.close().await.unwrap();
}
