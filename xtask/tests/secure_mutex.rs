//! The mutex unchanged over TLS and SASL DIGEST-MD5: two users' clients over the TLS port of
//! a real server, the lock path ACL'd to one SASL identity. The lock's holders of
//! that identity exclude each other; the other identity cannot even queue. (Here rather than
//! in recipe-mutex: xtask turns on zk-client's `tls` and `sasl-digest`, which recipe-mutex's
//! dev-dependencies must not, or its one-lock example would carry TLS.)

#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use recipe_mutex::{Error, InterProcessMutex};
use zk_client::tls::TlsConfig;
use zk_client::{Acl, Client, CreateMode, CreateOptions, Id, Perms};
use zk_testkit::zk::{ClientAuth, SaslOptions, TlsOptions};
use zk_testkit::{ZkOptions, ZkServer};

async fn connect(zk: &ZkServer, user: &str, password: &str) -> Client {
    let ca = zk.ensemble().pki().unwrap().ca_pem().as_bytes().to_vec();
    Client::builder()
        .hosts(zk.ensemble().secure_connect_string().unwrap())
        .session_timeout(Duration::from_secs(10))
        .tls(TlsConfig::new().ca_pem(&ca).unwrap())
        .sasl_digest(user, password)
        .connect()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mutex_over_tls_and_sasl_with_sasl_acls() {
    let opts = ZkOptions::default()
        .tls(TlsOptions {
            client_auth: ClientAuth::None,
            tls13: false,
        })
        .sasl(SaslOptions {
            users: vec![
                ("bob".into(), "bobsecret".into()),
                ("eve".into(), "evesecret".into()),
            ],
            enforce: true,
        });
    let zk = tokio::task::spawn_blocking(move || ZkServer::start_with(opts))
        .await
        .unwrap()
        .unwrap();
    let admin = connect(&zk, "bob", "bobsecret").await;
    let bob_only = CreateOptions::new(CreateMode::Persistent).acl(vec![Acl {
        perms: Perms::ALL,
        id: Id::new("sasl", "bob"),
    }]);
    // ACLs do not inherit: the lock path itself carries bob's ACL (else the mutex would
    // create it as an open container).
    admin.create("/secured", b"", &bob_only).await.unwrap();
    admin.create("/secured/lock", b"", &bob_only).await.unwrap();

    let busy = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::new();
    for _ in 0..3 {
        let m = InterProcessMutex::new(connect(&zk, "bob", "bobsecret").await, "/secured/lock")
            .unwrap();
        let busy = busy.clone();
        tasks.push(tokio::spawn(async move {
            let mut last = 0;
            for _ in 0..10 {
                let g = m.lock().await.unwrap();
                assert!(!busy.swap(true, Ordering::SeqCst), "two holders");
                assert!(g.fencing_token() > last);
                last = g.fencing_token();
                tokio::task::yield_now().await;
                busy.store(false, Ordering::SeqCst);
                g.release().await.unwrap();
            }
        }));
    }
    for t in tasks {
        tokio::time::timeout(Duration::from_secs(60), t)
            .await
            .unwrap()
            .unwrap();
    }

    // Another SASL identity may not take (or queue for) bob's lock.
    let eve =
        InterProcessMutex::new(connect(&zk, "eve", "evesecret").await, "/secured/lock").unwrap();
    let err = eve.try_lock_for(Duration::from_secs(5)).await.unwrap_err();
    assert!(
        matches!(err, Error::Zk(zk_client::Error::NoAuth)),
        "{err:?}"
    );
    // Nothing of bob's runs is left behind.
    // `/secured/lock` is persistent (made above): a failed listing is a failure, not "empty".
    let left = admin.get_children("/secured/lock").await.unwrap();
    assert!(left.is_empty(), "{left:?}");
    admin.close().await.unwrap();
}
