//! The async layer's simulator, checked: its ledger judges holds from the server's tree (a
//! node not granted, not owned, missing or shared is caught: negative controls; a node deleted
//! by another client excuses its own holder alone, until the bound, and is never handed on
//! once its loss was told), and two critical sections joined in one task never hold one mutex at
//! once over 10,000 rounds (issue 23: ownership by task let both hold).

#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use recipe_mutex::InterProcessMutex;
use zk_client::{Client, CreateMode, CreateOptions};
use zk_mem_server::{MemServer, ServerConfig};
use zk_sim_layer::ledger::{Claim, Ledger, Mode, TOLD_BOUND};

async fn client(server: &MemServer, seed: u64) -> Client {
    let builder = Client::builder().session_timeout(Duration::from_secs(6));
    server.client(builder, seed).await.unwrap()
}

#[tokio::test(start_paused = true)]
async fn the_ledger_judges_holds_from_the_tree_and_nothing_else() {
    let server = MemServer::new(ServerConfig::new(3));
    let c = client(&server, 1).await;
    let other = client(&server, 2).await;
    let me = c.session_id();
    let persistent = CreateOptions::new(CreateMode::Persistent);
    let seq = CreateOptions::new(CreateMode::EphemeralSequential);
    for dir in ["/m", "/rw", "/sem"] {
        c.create(dir, b"", &persistent).await.unwrap();
    }
    let claim = |thing, mode, node, session| Claim {
        thing,
        mode,
        node,
        session,
        token: server.exists(node.unwrap_or("/")).map_or(0, |s| s.czxid),
        local: 0,
    };
    // A mutex: the first node by sequence holds; the second does not, though it exists.
    let first = c.create("/m/_c_a-lock-", b"", &seq).await.unwrap();
    let second = c.create("/m/_c_b-lock-", b"", &seq).await.unwrap();
    let mut ledger = Ledger::default();
    let held = ledger.begin(&server, claim("/m", Mode::Exclusive, Some(&first), me));
    assert!(ledger.violations.is_empty(), "{:?}", ledger.violations);
    ledger.begin(&server, claim("/m", Mode::Exclusive, Some(&second), me));
    assert_eq!(
        ledger.violations.len(),
        1,
        "not granted: {:?}",
        ledger.violations
    );
    // Owned by another session; no node at all; a node that is gone.
    let mut ledger = Ledger::default();
    ledger.begin(
        &server,
        claim("/m", Mode::Exclusive, Some(&first), other.session_id()),
    );
    ledger.begin(&server, claim("/m", Mode::Exclusive, None, me));
    ledger.begin(&server, claim("/m", Mode::Exclusive, Some("/m/gone"), me));
    assert_eq!(ledger.violations.len(), 3, "{:?}", ledger.violations);
    // Two holds of one granted node at once: an overlap (and a token that did not grow).
    let mut ledger = Ledger::default();
    ledger.begin(&server, claim("/m", Mode::Exclusive, Some(&first), me));
    ledger.begin(&server, claim("/m", Mode::Exclusive, Some(&first), me));
    assert_eq!(ledger.violations.len(), 2, "{:?}", ledger.violations);
    // A cohort's local holders of one node, one after the other: their local sequence must
    // grow; two at once overlap.
    let mut ledger = Ledger::default();
    let local = |n| Claim {
        local: n,
        ..claim("/m", Mode::Exclusive, Some(&first), me)
    };
    let id = ledger.begin(&server, local(1));
    ledger.end(&server, id);
    let id = ledger.begin(&server, local(2));
    ledger.end(&server, id);
    assert!(ledger.violations.is_empty(), "{:?}", ledger.violations);
    let id = ledger.begin(&server, local(2));
    ledger.end(&server, id);
    assert_eq!(ledger.violations.len(), 1, "{:?}", ledger.violations);
    ledger.begin(&server, local(3));
    ledger.begin(&server, local(4));
    assert_eq!(ledger.violations.len(), 2, "{:?}", ledger.violations);
    // A live hold whose node goes while its session lives no longer holds.
    let mut ledger = Ledger::default();
    let id = ledger.begin(&server, claim("/m", Mode::Exclusive, Some(&first), me));
    c.delete(&first, None).await.unwrap();
    ledger.end(&server, id);
    assert_eq!(ledger.violations.len(), 1, "{:?}", ledger.violations);
    let _ = held;
    // Readers: not behind a write node; a downgrade's read node (its write's sequence,
    // EPHEMERAL) beside its write.
    let w = c.create("/rw/_c_w-__WRIT__", b"", &seq).await.unwrap();
    let r = c.create("/rw/_c_r-__READ__", b"", &seq).await.unwrap();
    let down = w.replace("_c_w-__WRIT__", "_c_d-__READ__");
    let eph = CreateOptions::new(CreateMode::Ephemeral);
    c.create(&down, b"", &eph).await.unwrap();
    let mut ledger = Ledger::default();
    let wid = ledger.begin(&server, claim("/rw", Mode::Write, Some(&w), me));
    ledger.begin(&server, claim("/rw", Mode::Read, Some(&down), me));
    assert!(ledger.violations.is_empty(), "{:?}", ledger.violations);
    ledger.begin(&server, claim("/rw", Mode::Read, Some(&r), me));
    assert_eq!(ledger.violations.len(), 1, "{:?}", ledger.violations);
    ledger.end(&server, wid);
    // Readers of one node: a cohort's local readers, each with its own place; never two
    // plain readers, nor two with one place.
    let read = |n| Claim {
        local: n,
        ..claim("/rw", Mode::Read, Some(&down), me)
    };
    let mut ledger = Ledger::default();
    ledger.begin(&server, read(1));
    ledger.begin(&server, read(2));
    assert!(ledger.violations.is_empty(), "{:?}", ledger.violations);
    ledger.begin(&server, read(2));
    assert_eq!(ledger.violations.len(), 1, "{:?}", ledger.violations);
    let mut ledger = Ledger::default();
    ledger.begin(&server, read(0));
    ledger.begin(&server, read(0));
    assert_eq!(ledger.violations.len(), 1, "{:?}", ledger.violations);
    // Leases: among the first N by sequence.
    let mut ledger = Ledger::default();
    let mut leases = Vec::new();
    for _ in 0..3 {
        leases.push(c.create("/sem/_c_x-lease-", b"", &seq).await.unwrap());
    }
    ledger.begin(&server, claim("/sem", Mode::Lease(2), Some(&leases[0]), me));
    ledger.begin(&server, claim("/sem", Mode::Lease(2), Some(&leases[1]), me));
    assert!(ledger.violations.is_empty(), "{:?}", ledger.violations);
    ledger.begin(&server, claim("/sem", Mode::Lease(2), Some(&leases[2]), me));
    assert_eq!(
        ledger.violations.len(),
        1,
        "the third is not granted: {:?}",
        ledger.violations
    );
    // A hold whose session the server already ended is stale: it never counts.
    let mut ledger = Ledger::default();
    let gone = other.session_id();
    server.expire(gone);
    ledger.begin(&server, claim("/m", Mode::Exclusive, Some(&second), gone));
    assert!(ledger.violations.is_empty(), "{:?}", ledger.violations);
    assert_eq!(ledger.stale, 1);
}

#[tokio::test(start_paused = true)]
async fn a_held_node_deleted_by_another_client_is_excused_for_its_holder_alone_until_the_bound() {
    let server = MemServer::new(ServerConfig::new(5));
    let c = client(&server, 1).await;
    let o = client(&server, 2).await;
    let meddler = client(&server, 3).await;
    let (me, them) = (c.session_id(), o.session_id());
    let persistent = CreateOptions::new(CreateMode::Persistent);
    let seq = CreateOptions::new(CreateMode::EphemeralSequential);
    for dir in ["/m", "/n", "/k", "/rw", "/x"] {
        c.create(dir, b"", &persistent).await.unwrap();
    }
    fn claim<'a>(
        server: &MemServer,
        thing: &'a str,
        mode: Mode,
        node: &'a str,
        session: i64,
        local: u64,
    ) -> Claim<'a> {
        Claim {
            thing,
            mode,
            node: Some(node),
            session,
            token: server.exists(node).map_or(0, |s| s.czxid),
            local,
        }
    }
    async fn meddle(meddler: &Client, ledger: &mut Ledger, node: &str) {
        ledger.meddle(node);
        meddler.delete(node, None).await.unwrap();
    }
    // The holder of a deleted node is excused while the next waiter holds, and may end.
    let first = c.create("/m/_c_a-lock-", b"", &seq).await.unwrap();
    let second = o.create("/m/_c_b-lock-", b"", &seq).await.unwrap();
    let third = c.create("/m/_c_c-lock-", b"", &seq).await.unwrap();
    let mut ledger = Ledger::default();
    let held = ledger.begin(
        &server,
        claim(&server, "/m", Mode::Exclusive, &first, me, 0),
    );
    meddle(&meddler, &mut ledger, &first).await;
    ledger.meddled(&first, true);
    ledger.begin(
        &server,
        claim(&server, "/m", Mode::Exclusive, &second, them, 0),
    );
    ledger.end(&server, held);
    assert!(ledger.violations.is_empty(), "{:?}", ledger.violations);
    assert_eq!((ledger.meddles, ledger.ended_first), (1, 1));
    // Nobody else: a hold behind the next waiter is not granted, as before.
    ledger.begin(
        &server,
        claim(&server, "/m", Mode::Exclusive, &third, me, 0),
    );
    assert_eq!(ledger.violations.len(), 1, "{:?}", ledger.violations);
    // A delete that did not take excuses nothing.
    let gone = o.create("/x/_c_b-lock-", b"", &seq).await.unwrap();
    let mut ledger = Ledger::default();
    ledger.meddle(&gone);
    ledger.meddled(&gone, false);
    o.delete(&gone, None).await.unwrap();
    ledger.begin(
        &server,
        claim(&server, "/x", Mode::Exclusive, &gone, them, 0),
    );
    assert_eq!(ledger.violations.len(), 1, "{:?}", ledger.violations);
    // A cohort's node, deleted: a local holder that began before any was told is excused; one
    // handed the node after a holder of it was told is not (a node known dead handed on).
    let node = c.create("/k/_c_a-lock-", b"", &seq).await.unwrap();
    let mut ledger = Ledger::default();
    let one = ledger.begin(&server, claim(&server, "/k", Mode::Exclusive, &node, me, 1));
    meddle(&meddler, &mut ledger, &node).await;
    ledger.meddled(&node, true);
    let since = tokio::time::Instant::now();
    ledger.end(&server, one);
    let two = ledger.begin(&server, claim(&server, "/k", Mode::Exclusive, &node, me, 2));
    assert!(ledger.violations.is_empty(), "{:?}", ledger.violations);
    ledger.told(&node, since);
    ledger.end(&server, two);
    ledger.begin(&server, claim(&server, "/k", Mode::Exclusive, &node, me, 3));
    assert_eq!(ledger.violations.len(), 1, "{:?}", ledger.violations);
    assert!(
        ledger.violations[0].contains("known dead"),
        "{:?}",
        ledger.violations
    );
    // A deleted writer's downgrade leaves a read node level with its dead write node, ahead of
    // the next writer until the downgrade sees it and deletes it: the next writer still holds;
    // a read hold on that leftover beside it does not.
    let w1 = c.create("/rw/_c_w-__WRIT__", b"", &seq).await.unwrap();
    let w2 = o.create("/rw/_c_v-__WRIT__", b"", &seq).await.unwrap();
    let mut ledger = Ledger::default();
    let w = ledger.begin(&server, claim(&server, "/rw", Mode::Write, &w1, me, 0));
    meddle(&meddler, &mut ledger, &w1).await;
    ledger.meddled(&w1, true);
    ledger.end(&server, w);
    let left = w1.replace("_c_w-__WRIT__", "_c_d-__READ__");
    let eph = CreateOptions::new(CreateMode::Ephemeral);
    c.create(&left, b"", &eph).await.unwrap();
    let next = ledger.begin(&server, claim(&server, "/rw", Mode::Write, &w2, them, 0));
    assert!(ledger.violations.is_empty(), "{:?}", ledger.violations);
    ledger.begin(&server, claim(&server, "/rw", Mode::Read, &left, me, 0));
    assert_eq!(ledger.violations.len(), 1, "{:?}", ledger.violations);
    ledger.end(&server, next);
    // Past the bound the deleted holder is judged as any: it holds nothing (the sessions live
    // on, pinging, while the paused clock runs past the bound).
    let first = c.create("/n/_c_a-lock-", b"", &seq).await.unwrap();
    let second = o.create("/n/_c_b-lock-", b"", &seq).await.unwrap();
    let mut ledger = Ledger::default();
    ledger.begin(
        &server,
        claim(&server, "/n", Mode::Exclusive, &first, me, 0),
    );
    meddle(&meddler, &mut ledger, &first).await;
    ledger.meddled(&first, true);
    tokio::time::sleep(TOLD_BOUND + Duration::from_secs(1)).await;
    assert!(server.sessions().iter().any(|s| s.id == me));
    ledger.begin(
        &server,
        claim(&server, "/n", Mode::Exclusive, &second, them, 0),
    );
    assert_eq!(ledger.violations.len(), 1, "{:?}", ledger.violations);
    assert!(
        ledger.violations[0].contains("past the bound"),
        "{:?}",
        ledger.violations
    );
}

#[tokio::test(start_paused = true)]
async fn joined_sections_in_one_task_never_hold_at_once() {
    let server = MemServer::new(ServerConfig::new(4));
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
