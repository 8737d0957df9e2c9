//! recipe-mutex's `InterProcessMutex` over the wire server, on tokio's paused clock: two
//! clients (two sessions) contend for one lock path and never hold it at once.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use recipe_mutex::InterProcessMutex;
use zk_client::Client;
use zk_mem_server::{MemServer, ServerConfig};

/// Holds the lock `rounds` times, checking on each hold that nobody else holds it.
async fn contend(
    client: Client,
    holders: Arc<AtomicUsize>,
    holds: Arc<AtomicUsize>,
    pause_ms: u64,
    rounds: usize,
) {
    let mutex = InterProcessMutex::new(client, "/locks/m").unwrap();
    for _ in 0..rounds {
        let guard = mutex.lock().await.unwrap();
        assert_eq!(
            holders.fetch_add(1, Ordering::SeqCst),
            0,
            "two holders at once"
        );
        holds.fetch_add(1, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(pause_ms)).await;
        holders.fetch_sub(1, Ordering::SeqCst);
        guard.release().await.unwrap();
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

#[tokio::test(start_paused = true)]
async fn two_clients_contending_never_hold_the_mutex_at_once() {
    let server = MemServer::new(ServerConfig::new(11));
    let builder = Client::builder().session_timeout(Duration::from_secs(6));
    let a = server.client(builder.clone(), 1).await.unwrap();
    let b = server.client(builder, 2).await.unwrap();
    assert_ne!(a.session_id(), b.session_id());
    let holders = Arc::new(AtomicUsize::new(0));
    let holds = Arc::new(AtomicUsize::new(0));
    let run = async {
        tokio::join!(
            tokio::spawn(contend(a.clone(), holders.clone(), holds.clone(), 7, 10)),
            tokio::spawn(contend(b.clone(), holders.clone(), holds.clone(), 5, 10)),
        )
    };
    let (ra, rb) = tokio::time::timeout(Duration::from_secs(600), run)
        .await
        .expect("both finish");
    ra.unwrap();
    rb.unwrap();
    assert_eq!(holds.load(Ordering::SeqCst), 20);
    // The lock's parent is a container: swept with its last child, or empty.
    let left = server.children("/locks/m").unwrap_or_default();
    assert!(left.is_empty(), "no node left behind: {left:?}");
    assert!(server.ephemerals().is_empty());
}

/// The same contention while the server cuts one of the two connections every few
/// hundred milliseconds (seeded): sessions survive, so every hold is still exclusive, and every
/// round completes.
#[tokio::test(start_paused = true)]
async fn exclusion_holds_through_cut_connections() {
    let server = MemServer::new(ServerConfig::new(12));
    let builder = Client::builder().session_timeout(Duration::from_secs(6));
    let a = server.client(builder.clone(), 3).await.unwrap();
    let b = server.client(builder, 4).await.unwrap();
    let sessions = [a.session_id(), b.session_id()];
    let holders = Arc::new(AtomicUsize::new(0));
    let holds = Arc::new(AtomicUsize::new(0));
    let cuts = Arc::new(AtomicUsize::new(0));
    let cutter = {
        let (server, cuts) = (server.clone(), cuts.clone());
        tokio::spawn(async move {
            let mut rng = zk_sim::rng::Rng::new(12);
            loop {
                tokio::time::sleep(Duration::from_millis(20 + rng.below(200))).await;
                if server.cut(sessions[rng.index(2)]) {
                    cuts.fetch_add(1, Ordering::SeqCst);
                }
            }
        })
    };
    let run = async {
        tokio::join!(
            tokio::spawn(contend(a.clone(), holders.clone(), holds.clone(), 30, 40)),
            tokio::spawn(contend(b.clone(), holders.clone(), holds.clone(), 20, 40)),
        )
    };
    let (ra, rb) = tokio::time::timeout(Duration::from_secs(600), run)
        .await
        .expect("both finish");
    ra.unwrap();
    rb.unwrap();
    assert_eq!(holds.load(Ordering::SeqCst), 80);
    cutter.abort();
    let cuts = cuts.load(Ordering::SeqCst);
    assert!(cuts >= 4, "cut {cuts} times while contending");
    assert_eq!(server.sessions().len(), 2, "no session expired");
}
