//! The async layer's simulator, checked: its ledger sees an overlap when there is one (a
//! negative control), and two critical sections joined in one task never hold one mutex at
//! once over 10,000 rounds (issue 23: ownership by task let both hold).

#![allow(clippy::unwrap_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use recipe_mutex::InterProcessMutex;
use zk_client::{Client, CreateMode, CreateOptions};
use zk_sim::layer::ledger::{Ledger, Mode};
use zk_sim::wire::{SimServer, WireConfig};

async fn client(server: &SimServer, seed: u64) -> Client {
    let builder = Client::builder().session_timeout(Duration::from_secs(6));
    server.client(builder, seed).await.unwrap()
}

#[tokio::test(start_paused = true)]
async fn the_ledger_sees_an_overlap_and_nothing_else() {
    let server = SimServer::new(WireConfig::new(3));
    let c = client(&server, 1).await;
    let opts = CreateOptions::new(CreateMode::Ephemeral);
    for node in ["/a", "/b", "/c"] {
        c.create(node, b"", &opts).await.unwrap();
    }
    let mut ledger = Ledger::default();
    let first = ledger.begin(&server, "/lock", Mode::Exclusive, "/a", 1, None);
    assert!(ledger.violations.is_empty());
    // Two exclusive holds whose nodes both exist: an overlap.
    ledger.begin(&server, "/lock", Mode::Exclusive, "/b", 2, None);
    assert_eq!(ledger.violations.len(), 1, "{:?}", ledger.violations);
    // A hold whose node is gone no longer counts (its session expired, say).
    let mut ledger = Ledger::default();
    let gone = ledger.begin(&server, "/lock", Mode::Write, "/a", 1, None);
    c.delete("/a", None).await.unwrap();
    ledger.begin(&server, "/lock", Mode::Write, "/b", 2, None);
    assert!(ledger.violations.is_empty(), "{:?}", ledger.violations);
    ledger.end(gone);
    // Readers share; a reader beside a writer only for that writer's downgrade.
    let r1 = ledger.begin(&server, "/rw", Mode::Read, "/b", 3, None);
    ledger.end(r1);
    let w = ledger.begin(&server, "/rw", Mode::Write, "/b", 4, None);
    ledger.begin(&server, "/rw", Mode::Read, "/c", 4, Some(w));
    assert!(ledger.violations.is_empty(), "{:?}", ledger.violations);
    ledger.begin(&server, "/rw", Mode::Read, "/c", 5, Some(first));
    assert_eq!(ledger.violations.len(), 1, "{:?}", ledger.violations);
    // Leases: at most N.
    let mut ledger = Ledger::default();
    ledger.begin(&server, "/sem", Mode::Lease(2), "/b", 1, None);
    ledger.begin(&server, "/sem", Mode::Lease(2), "/c", 2, None);
    assert!(ledger.violations.is_empty());
    c.create("/d", b"", &opts).await.unwrap();
    ledger.begin(&server, "/sem", Mode::Lease(2), "/d", 3, None);
    assert_eq!(ledger.violations.len(), 1, "{:?}", ledger.violations);
}

#[tokio::test(start_paused = true)]
async fn joined_sections_in_one_task_never_hold_at_once() {
    let server = SimServer::new(WireConfig::new(4));
    let c = client(&server, 2).await;
    let m = InterProcessMutex::new(c.clone(), "/locks/joined").unwrap();
    let inside = AtomicUsize::new(0);
    let peak = AtomicUsize::new(0);
    let section = || async {
        let g = m.lock().await.unwrap();
        peak.fetch_max(inside.fetch_add(1, Ordering::SeqCst) + 1, Ordering::SeqCst);
        tokio::task::yield_now().await;
        inside.fetch_sub(1, Ordering::SeqCst);
        g.release().await.unwrap();
    };
    for _ in 0..10_000 {
        tokio::join!(section(), section());
    }
    assert_eq!(peak.load(Ordering::SeqCst), 1, "two holders at once");
    assert!(server.ephemerals().is_empty());
}
