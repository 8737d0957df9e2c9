//! A lease's `Sequencer`, checked by another client (a service outside ZooKeeper that trusts
//! nothing the holder says): valid while held, at once after the acquire; refused once the
//! lease is returned, deleted by another client or its session closed; a lease still waiting
//! for its count is pending, and valid once granted, also to a check that was waiting for it;
//! two attempts of one session; the semaphore mutex's guard. Against a real ZooKeeper server
//! started by the tests.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::time::Duration;

use recipe_semaphore::{
    InterProcessSemaphoreMutex, InterProcessSemaphoreV2, NodeKind, Sequencer, SequencerCheck,
};
use zk_client::Client;

#[path = "../../recipe-mutex/tests/support/mod.rs"]
mod support;
use support::{bounded, client, wait_children};

fn sem(c: &Client, path: &str, n: u32) -> InterProcessSemaphoreV2 {
    InterProcessSemaphoreV2::new(c.clone(), path, n).unwrap()
}

/// The sequencer as a service receives it: text, parsed.
fn over_the_wire(s: &Sequencer) -> Sequencer {
    let text = s.to_string();
    assert!(text.starts_with("zk-seq:1:lease:"), "{text}");
    text.parse().unwrap()
}

/// The sequencer a waiting lease's owner could present: its node, czxid and session, all
/// true (read from the server), but not granted.
async fn sequencer_of(service: &Client, node: &str) -> Sequencer {
    let (_, stat) = service.get_data(node).await.unwrap();
    Sequencer::new(NodeKind::Lease, node, stat.czxid, stat.ephemeral_owner).unwrap()
}

/// The children of `dir` other than `but`, as full paths.
async fn others(c: &Client, dir: &str, but: &[&str]) -> Vec<String> {
    let mut kids: Vec<String> = c
        .get_children(dir)
        .await
        .unwrap()
        .into_iter()
        .map(|k| format!("{dir}/{k}"))
        .filter(|k| !but.contains(&k.as_str()))
        .collect();
    kids.sort();
    kids
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_lease_is_valid_at_once_and_refused_once_returned() {
    let path = "/t/lease-seq/holds";
    let c = client().await;
    let service = client().await;
    let lease = sem(&c, path, 2).acquire().await.unwrap();
    // Checked at once: the inner lock's delete may still be in flight (the lease is given
    // before it is acknowledged); the check waits for it.
    let s = over_the_wire(&lease.sequencer());
    assert_eq!(s.kind(), NodeKind::Lease);
    assert_eq!(s.lock_path(), path);
    assert_eq!(s.node(), lease.node_path());
    assert_eq!(s.czxid(), lease.fencing_token());
    assert_eq!(s.session_id(), c.session_id());
    assert_eq!(s.check(&service).await.unwrap(), SequencerCheck::Valid);
    // With the inner lock gone, the first read decides (no wait).
    wait_children(&service, &format!("{path}/locks"), 0).await;
    assert_eq!(
        s.check_within(&service, Duration::ZERO).await.unwrap(),
        SequencerCheck::Valid
    );
    // A forged session or creation is refused.
    let forged = Sequencer::new(NodeKind::Lease, s.node(), s.czxid(), service.session_id());
    assert_eq!(
        forged.unwrap().check(&service).await.unwrap(),
        SequencerCheck::OtherOwner {
            session_id: c.session_id()
        }
    );
    lease.release().await.unwrap();
    assert_eq!(s.check(&service).await.unwrap(), SequencerCheck::NodeGone);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_deleted_by_another_client_or_with_its_session_closed_is_refused() {
    let path = "/t/lease-seq/deleted";
    let c = client().await;
    let other = client().await;
    let service = client().await;
    let pool = sem(&c, path, 3);
    let deleted = pool.acquire().await.unwrap();
    let kept = pool.acquire().await.unwrap();
    let s_deleted = over_the_wire(&deleted.sequencer());
    let s_kept = over_the_wire(&kept.sequencer());
    assert!(s_deleted.check(&service).await.unwrap().is_valid());
    other.delete(deleted.node_path(), None).await.unwrap();
    assert_eq!(
        s_deleted.check(&service).await.unwrap(),
        SequencerCheck::NodeGone
    );
    assert!(s_kept.check(&service).await.unwrap().is_valid());
    c.close().await.unwrap();
    wait_children(&service, &format!("{path}/leases"), 0).await;
    assert_eq!(
        s_kept.check(&service).await.unwrap(),
        SequencerCheck::NodeGone
    );
    drop((deleted, kept));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_lease_is_pending_and_valid_once_granted() {
    let path = "/t/lease-seq/waiting";
    let leases = format!("{path}/leases");
    let c = client().await;
    let other = client().await;
    let service = client().await;
    let held = sem(&c, path, 1).acquire().await.unwrap();
    let waiter = sem(&other, path, 1);
    let waiting = tokio::spawn(async move { waiter.acquire().await });
    // The waiter holds the inner lock and has made its lease: 2 leases for 1.
    wait_children(&service, &leases, 2).await;
    let node = others(&service, &leases, &[held.node_path()]).await;
    let s = over_the_wire(&sequencer_of(&service, &node[0]).await);
    assert_eq!(s.session_id(), other.session_id());
    assert_eq!(
        s.check_within(&service, Duration::ZERO).await.unwrap(),
        SequencerCheck::Pending
    );
    // Waiting for it to settle does not make it valid while the holder holds.
    assert_eq!(
        s.check_within(&service, Duration::from_millis(200))
            .await
            .unwrap(),
        SequencerCheck::Pending
    );
    // A check waiting as long as it takes is answered by the grant.
    let check = {
        let (s, service) = (s.clone(), service.clone());
        tokio::spawn(async move { s.check_within(&service, Duration::MAX).await })
    };
    held.release().await.unwrap();
    let granted = bounded(waiting).await.unwrap().unwrap();
    assert_eq!(
        granted.sequencer(),
        s,
        "the waiter's lease names the same node"
    );
    assert_eq!(
        bounded(check).await.unwrap().unwrap(),
        SequencerCheck::Valid
    );
    assert_eq!(s.check(&service).await.unwrap(), SequencerCheck::Valid);
    granted.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_attempts_of_one_session_the_granted_lease_is_valid_the_waiting_one_pending() {
    let path = "/t/lease-seq/one-session";
    let leases = format!("{path}/leases");
    let c = client().await;
    let service = client().await;
    let pool = sem(&c, path, 1);
    // Both attempts start together: both inner lock nodes are made before the first lease.
    let (p1, p2) = (pool.clone(), pool.clone());
    let mut first = tokio::spawn(async move { p1.acquire().await });
    let mut second = tokio::spawn(async move { p2.acquire().await });
    wait_children(&service, &leases, 2).await;
    let (granted, waiting) = tokio::select! {
        r = &mut first => (r.unwrap().unwrap(), second),
        r = &mut second => (r.unwrap().unwrap(), first),
    };
    let s_granted = over_the_wire(&granted.sequencer());
    // The session holds the inner lock again (for the other attempt), perhaps with a node
    // made before this lease: the lease is still told granted, the other attempt's lease
    // being newer.
    assert_eq!(
        s_granted.check(&service).await.unwrap(),
        SequencerCheck::Valid
    );
    let node = others(&service, &leases, &[granted.node_path()]).await;
    let s_waiting = sequencer_of(&service, &node[0]).await;
    assert_eq!(s_waiting.session_id(), c.session_id());
    assert_eq!(
        s_waiting
            .check_within(&service, Duration::ZERO)
            .await
            .unwrap(),
        SequencerCheck::Pending
    );
    granted.release().await.unwrap();
    let next = bounded(waiting).await.unwrap().unwrap();
    assert_eq!(next.sequencer(), s_waiting);
    assert_eq!(
        s_waiting.check(&service).await.unwrap(),
        SequencerCheck::Valid
    );
    assert_eq!(
        s_granted.check(&service).await.unwrap(),
        SequencerCheck::NodeGone
    );
    next.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_semaphore_mutex_guard_gives_a_lease_sequencer() {
    let path = "/t/lease-seq/mutex";
    let c = client().await;
    let service = client().await;
    let m = InterProcessSemaphoreMutex::new(c.clone(), path).unwrap();
    let g = m.lock().await.unwrap();
    let s = over_the_wire(&g.sequencer());
    assert_eq!(s.lock_path(), path);
    assert_eq!(s.czxid(), g.fencing_token());
    assert_eq!(s.check(&service).await.unwrap(), SequencerCheck::Valid);
    // Another client's lock() queues behind the guard, holding the inner lock: its lease is
    // pending.
    let m2 = InterProcessSemaphoreMutex::new(client().await, path).unwrap();
    let queued = tokio::spawn(async move { m2.lock().await });
    let leases = format!("{path}/leases");
    wait_children(&service, &leases, 2).await;
    let node = others(&service, &leases, &[g.node_path()]).await;
    let s2 = sequencer_of(&service, &node[0]).await;
    assert_eq!(
        s2.check_within(&service, Duration::ZERO).await.unwrap(),
        SequencerCheck::Pending
    );
    assert_eq!(s.check(&service).await.unwrap(), SequencerCheck::Valid);
    g.release().await.unwrap();
    assert_eq!(s.check(&service).await.unwrap(), SequencerCheck::NodeGone);
    let g2 = bounded(queued).await.unwrap().unwrap();
    assert_eq!(s2.check(&service).await.unwrap(), SequencerCheck::Valid);
    g2.release().await.unwrap();
}
