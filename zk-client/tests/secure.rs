//! TLS and SASL DIGEST-MD5 against real ZooKeeper 3.8 servers with a secure client port and
//! JAAS users, started by the test kit (certificates made per run). Built with the features
//! `tls` and `sasl-digest` (CI runs the suite with every feature on).

#![cfg(all(feature = "tls", feature = "sasl-digest"))]
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::sync::OnceLock;
use std::time::Duration;

use zk_client::tls::TlsConfig;
use zk_client::*;
use zk_testkit::zk::{ClientAuth, SaslOptions, TlsOptions};
use zk_testkit::{FaultProxy, ZkOptions, ZkServer};

const WAIT: Duration = Duration::from_secs(20);

fn users() -> SaslOptions {
    SaslOptions {
        users: vec![
            ("bob".into(), "bobsecret".into()),
            ("alice".into(), "alicesecret".into()),
        ],
        enforce: false,
    }
}

/// TLS 1.3 only, without client certificates, and SASL users (not enforced).
fn server() -> &'static ZkServer {
    static SERVER: OnceLock<ZkServer> = OnceLock::new();
    SERVER.get_or_init(|| {
        let opts = ZkOptions::default()
            .tls(TlsOptions {
                client_auth: ClientAuth::None,
                tls13: true,
            })
            .config("ssl.enabledProtocols", "TLSv1.3")
            .sasl(users());
        ZkServer::start_with(opts).expect("start a TLS + SASL ZooKeeper")
    })
}

/// Mutual TLS (client certificates required), TLS 1.3 and 1.2.
fn mtls_server() -> &'static ZkServer {
    static SERVER: OnceLock<ZkServer> = OnceLock::new();
    SERVER.get_or_init(|| {
        let opts = ZkOptions::default().tls(TlsOptions {
            client_auth: ClientAuth::Need,
            tls13: true,
        });
        ZkServer::start_with(opts).expect("start a mutual-TLS ZooKeeper")
    })
}

fn secure_hosts(zk: &ZkServer) -> String {
    zk.ensemble().secure_connect_string().unwrap()
}

fn ca(zk: &ZkServer) -> TlsConfig {
    ensemble_ca(zk.ensemble())
}

/// Trusts the ensemble's test CA.
fn ensemble_ca(ens: &zk_testkit::Ensemble) -> TlsConfig {
    TlsConfig::new()
        .ca_pem(ens.pki().unwrap().ca_pem().as_bytes())
        .unwrap()
}

/// A 3-member ensemble with `opts`, started off the runtime's threads.
async fn ensemble(opts: ZkOptions) -> zk_testkit::Ensemble {
    tokio::task::spawn_blocking(move || zk_testkit::Ensemble::start(3, opts))
        .await
        .unwrap()
        .unwrap()
}

fn builder(hosts: &str) -> ClientBuilder {
    Client::builder()
        .hosts(hosts)
        .session_timeout(Duration::from_secs(10))
        .connect_timeout(Duration::from_secs(5))
}

async fn identities(c: &Client) -> Vec<(String, String)> {
    c.who_am_i()
        .await
        .unwrap()
        .into_iter()
        .map(|i| (i.auth_scheme, i.user))
        .collect()
}

/// A plain connection authenticated as `user`.
async fn sasl(hosts: &str, user: &str, password: &str) -> Result<Client, Error> {
    builder(hosts).sasl_digest(user, password).connect().await
}

/// Create options whose ACL lets only the SASL identity `user` do anything.
fn sasl_only(user: &str, mode: CreateMode) -> CreateOptions {
    CreateOptions::new(mode).acl(vec![Acl {
        perms: Perms::ALL,
        id: Id::new("sasl", user),
    }])
}

/// Waits (bounded) for the next `Connected` on `states`; the states seen until then.
async fn until_connected(states: &mut StateStream) -> Vec<SessionState> {
    let mut seen = Vec::new();
    tokio::time::timeout(WAIT, async {
        while let Some(s) = states.next().await {
            seen.push(s);
            if s == SessionState::Connected {
                break;
            }
        }
    })
    .await
    .unwrap();
    seen
}

/// Connects to `hosts` with `tls`, which must fail in TLS: the failure, and the error (for its
/// message).
async fn tls_refusal(hosts: &str, tls: TlsConfig) -> (TlsFailure, Error) {
    let err = builder(hosts).tls(tls).connect().await.unwrap_err();
    match &err {
        Error::Tls { failure, .. } => (failure.clone(), err),
        _ => panic!("not a TLS failure: {err:?}"),
    }
}

fn has(ids: &[(String, String)], scheme: &str, user: &str) -> bool {
    ids.iter().any(|(s, u)| s == scheme && u == user)
}

#[tokio::test]
async fn tls_with_server_authentication() {
    let zk = server();
    let c = builder(&secure_hosts(zk))
        .tls(ca(zk))
        .connect()
        .await
        .unwrap();
    c.create(
        "/tls-plain",
        b"over tls",
        &CreateOptions::new(CreateMode::Ephemeral),
    )
    .await
    .unwrap();
    let (data, _) = c.get_data("/tls-plain").await.unwrap();
    assert_eq!(&data[..], b"over tls");
    assert_eq!(c.server_addr(), zk.ensemble().secure_addr(0));
    c.close().await.unwrap();
}

/// A rustls configuration of our own: TLS 1.2 only, the test CA, maybe the client identity.
fn tls12_only(zk: &ZkServer, identity: bool) -> TlsConfig {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    use zk_client::tls::rustls;
    let pki = zk.ensemble().pki().unwrap();
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(pki.ca_pem().as_bytes()) {
        roots.add(cert.unwrap()).unwrap();
    }
    let builder = rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_protocol_versions(&[&rustls::version::TLS12])
    .unwrap()
    .with_root_certificates(roots);
    let config = if identity {
        let chain = CertificateDer::pem_slice_iter(pki.client_cert_pem().as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        let key = PrivateKeyDer::from_pem_slice(pki.client_key_pem().as_bytes()).unwrap();
        builder.with_client_auth_cert(chain, key).unwrap()
    } else {
        builder.with_no_client_auth()
    };
    TlsConfig::from_rustls(std::sync::Arc::new(config))
}

#[tokio::test]
async fn mutual_tls_presents_the_client_certificate_over_tls_1_3_and_1_2() {
    let zk = mtls_server();
    let pki = zk.ensemble().pki().unwrap();
    let tls13 = ca(zk)
        .client_identity_pem(
            pki.client_cert_pem().as_bytes(),
            pki.client_key_pem().as_bytes(),
        )
        .unwrap();
    let cn = format!("CN={}", zk_testkit::zk::secure::CLIENT_CN);
    for tls in [tls13, tls12_only(zk, true)] {
        let c = builder(&secure_hosts(zk)).tls(tls).connect().await.unwrap();
        let ids = identities(&c).await;
        assert!(has(&ids, "x509", &cn), "{ids:?}");
        c.close().await.unwrap();
    }

    // Without a certificate the server refuses, and the error says why: in TLS 1.3 the
    // refusal comes after the handshake, on the first read; in 1.2 during the handshake.
    for tls in [ca(zk), tls12_only(zk, false)] {
        let (failure, err) = tls_refusal(&secure_hosts(zk), tls).await;
        assert_eq!(failure, TlsFailure::ClientCertificateRequired, "{err:?}");
        assert!(
            err.to_string().contains("requires a client certificate"),
            "{err}"
        );
    }
}

#[tokio::test]
async fn a_wrong_ca_a_wrong_name_and_a_plain_port_are_refused_with_clear_errors() {
    let zk = server();
    let dir = std::env::temp_dir().join(format!("zk-client-other-ca-{}", std::process::id()));
    let other = zk_testkit::zk::TestPki::generate(&dir).unwrap();
    let wrong_ca = TlsConfig::new().ca_pem(other.ca_pem().as_bytes()).unwrap();
    let (failure, err) = tls_refusal(&secure_hosts(zk), wrong_ca).await;
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(failure, TlsFailure::UnknownCa, "{err:?}");
    assert!(err.to_string().contains("unknown CA"), "{err}");

    let wrong_name = ca(zk).server_name("zk.example.com");
    let (failure, err) = tls_refusal(&secure_hosts(zk), wrong_name).await;
    let expected = "zk.example.com".to_owned();
    assert_eq!(failure, TlsFailure::NameMismatch { expected }, "{err:?}");

    // The certificate names localhost too: reached by that name, TLS accepts it. (`localhost`
    // may resolve to ::1 first, where the server does not listen: a refused connection is
    // not TLS's doing, a TLS failure is.)
    let port = zk.ensemble().secure_addr(0).unwrap().port();
    match builder(&format!("localhost:{port}"))
        .tls(ca(zk))
        .connect()
        .await
    {
        Ok(c) => c.close().await.unwrap(),
        Err(e) => assert!(!matches!(e, Error::Tls { .. }), "{e:?}"),
    }

    // TLS to the plain client port: the server does not speak TLS there.
    let (failure, err) = tls_refusal(&zk.connect_string(), ca(zk)).await;
    assert_eq!(failure, TlsFailure::NotTls, "{err:?}");
}

#[tokio::test]
async fn sasl_digest_authenticates_and_acls_follow_the_identity() {
    let zk = server();
    let bob = sasl(&zk.connect_string(), "bob", "bobsecret")
        .await
        .unwrap();
    assert!(has(&identities(&bob).await, "sasl", "bob"));
    let only_bob = sasl_only("bob", CreateMode::Persistent);
    bob.create("/sasl-bob", b"secret", &only_bob).await.unwrap();
    assert_eq!(&bob.get_data("/sasl-bob").await.unwrap().0[..], b"secret");

    let alice = sasl(&zk.connect_string(), "alice", "alicesecret")
        .await
        .unwrap();
    assert_eq!(
        alice.get_data("/sasl-bob").await.unwrap_err(),
        Error::NoAuth
    );
    let anonymous = builder(&zk.connect_string()).connect().await.unwrap();
    assert_eq!(
        anonymous.get_data("/sasl-bob").await.unwrap_err(),
        Error::NoAuth
    );
    bob.delete("/sasl-bob", None).await.unwrap();
    for c in [bob, alice, anonymous] {
        c.close().await.unwrap();
    }
}

#[tokio::test]
async fn a_wrong_sasl_password_ends_the_session_with_auth_failed() {
    let zk = server();
    let err = sasl(&zk.connect_string(), "bob", "not-his-password")
        .await
        .unwrap_err();
    assert_eq!(err, Error::AuthFailed);
    let err = sasl(&zk.connect_string(), "nobody", "x").await.unwrap_err();
    assert_eq!(err, Error::AuthFailed);
}

#[tokio::test]
async fn an_enforcing_server_closes_a_session_without_sasl_with_auth_required() {
    let opts = ZkOptions::default().sasl(SaslOptions {
        enforce: true,
        ..users()
    });
    let zk = ZkServer::start_with(opts).unwrap();
    // The handshake passes; the first request is answered "SASL required" and the session
    // ends for good (reconnecting would only end the same way).
    let c = builder(&zk.connect_string()).connect().await.unwrap();
    let err = c.exists("/").await.unwrap_err();
    assert_eq!(err, Error::AuthRequired);
    assert!(err.to_string().contains("requires SASL"), "{err}");
    let mut states = c.state_watch();
    tokio::time::timeout(WAIT, states.wait_for(|s| s.is_terminal()))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(c.state(), SessionState::AuthFailed);
    // With credentials the same server serves.
    let bob = sasl(&zk.connect_string(), "bob", "bobsecret")
        .await
        .unwrap();
    assert!(bob.exists("/").await.unwrap().is_some());
    bob.close().await.unwrap();
}

#[tokio::test]
async fn sasl_over_tls_survives_a_cut_and_authenticates_again() {
    let zk = server();
    let proxy = FaultProxy::start(zk.ensemble().secure_addr(0).unwrap()).unwrap();
    let c = builder(&proxy.addr().to_string())
        .tls(ca(zk))
        .sasl_digest("bob", "bobsecret")
        .connect()
        .await
        .unwrap();
    assert!(has(&identities(&c).await, "sasl", "bob"));
    let only_bob = sasl_only("bob", CreateMode::Ephemeral);
    c.create("/tls-sasl-cut", b"kept", &only_bob).await.unwrap();
    let (_, _, watcher) = c.get_data_and_watch("/tls-sasl-cut").await.unwrap();
    let session = c.session_id();

    let mut states = c.state_stream();
    proxy.cut();
    let seen = until_connected(&mut states).await;
    assert_eq!(seen, [SessionState::Disconnected, SessionState::Connected]);
    assert!(proxy.accepted() >= 2);
    assert_eq!(c.session_id(), session);
    // The new connection is TLS again and authenticated again before anything else: the
    // node only bob may read is readable, and the watch restored on it fires.
    assert!(has(&identities(&c).await, "sasl", "bob"));
    assert_eq!(&c.get_data("/tls-sasl-cut").await.unwrap().0[..], b"kept");
    c.set_data("/tls-sasl-cut", b"changed", None).await.unwrap();
    let event = tokio::time::timeout(WAIT, watcher).await.unwrap();
    assert_eq!(event.event_type, EventType::NodeDataChanged);
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ensemble_over_tls_and_sasl_keeps_the_session_across_a_member_kill() {
    let opts = ZkOptions::default()
        .tls(TlsOptions::default())
        .sasl(users());
    let mut zk = ensemble(opts).await;
    let hosts = zk.secure_connect_string().unwrap();
    let tls = ensemble_ca(&zk);
    let c = builder(&hosts)
        .tls(tls)
        .sasl_digest("bob", "bobsecret")
        .connect()
        .await
        .unwrap();
    let only_bob = sasl_only("bob", CreateMode::Persistent);
    c.create("/ensemble-tls", b"v1", &only_bob).await.unwrap();
    let session = c.session_id();

    // Kill the member the session is on: it moves to another one, over TLS, and
    // authenticates there before anything else.
    let on = c.server_addr().unwrap();
    let member = (0..zk.len())
        .find(|&i| zk.secure_addr(i) == Some(on))
        .unwrap();
    let mut states = c.state_stream();
    tokio::task::block_in_place(|| zk.kill(member)).unwrap();
    let seen = until_connected(&mut states).await;
    assert_eq!(seen.last(), Some(&SessionState::Connected));
    assert_ne!(c.server_addr(), Some(on));
    assert_eq!(c.session_id(), session);
    assert!(has(&identities(&c).await, "sasl", "bob"));
    assert_eq!(&c.get_data("/ensemble-tls").await.unwrap().0[..], b"v1");
    c.close().await.unwrap();
}

/// Read-only mode over TLS: a read-only session on the survivor of a quorum loss, then a
/// read-write session again once the quorum is back. (Whether the client's `isro` search,
/// which goes through the TLS connector, or the survivor dropping its read-only connections
/// gets it there first is not pinned down here.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_mode_over_tls_and_back_to_read_write() {
    let opts = ZkOptions::default()
        .tls(TlsOptions::default())
        .system_property("readonlymode.enabled", "true")
        .config("localSessionsEnabled", "true")
        .config("localSessionsUpgradingEnabled", "true");
    let mut ens = ensemble(opts).await;
    let hosts = ens.secure_connect_string().unwrap();
    let tls = ensemble_ca(&ens);
    tokio::task::block_in_place(|| {
        ens.kill(1).unwrap();
        ens.kill(2).unwrap();
    });
    tokio::task::block_in_place(|| ens.wait_mode(0, zk_testkit::Mode::ReadOnly, WAIT)).unwrap();
    let ro = builder(&hosts)
        .tls(tls)
        .can_be_read_only(true)
        .connect_timeout(Duration::from_secs(1))
        .connect()
        .await
        .unwrap();
    assert_eq!(ro.state(), SessionState::ConnectedReadOnly);
    let mut states = ro.state_stream();
    tokio::task::block_in_place(|| {
        ens.start_member(1).unwrap();
        ens.start_member(2).unwrap();
    });
    let seen = until_connected(&mut states).await;
    assert_eq!(seen.last(), Some(&SessionState::Connected), "{seen:?}");
    ro.create("/rw-again", b"", &CreateOptions::new(CreateMode::Ephemeral))
        .await
        .unwrap();
    ro.close().await.unwrap();
}
