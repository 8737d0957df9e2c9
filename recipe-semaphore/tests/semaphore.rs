//! InterProcessSemaphoreV2 and InterProcessSemaphoreMutex against a real ZooKeeper server
//! started by the tests: Curator's TestInterProcessSemaphore and
//! TestInterProcessSemaphoreMutex behaviours that apply (over-subscription never exceeds N,
//! timeouts, returnAll, release in another task, max leases from a shared count and its
//! change, node data, the mutex's non-reentrancy, no orphans after cancellations and
//! expiries), the deadlock Curator's multi-lease acquire can fall into, and faults.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use recipe_semaphore::{Error, InterProcessSemaphoreMutex, InterProcessSemaphoreV2, SharedCount};
use zk_client::{Client, SessionState};
use zk_testkit::FaultProxy;

#[path = "../../recipe-mutex/tests/support/mod.rs"]
mod support;
use support::{bounded, client, client_at, server, wait_children, wait_state};

fn sem(c: &Client, path: &str, n: u32) -> InterProcessSemaphoreV2 {
    InterProcessSemaphoreV2::new(c.clone(), path, n).unwrap()
}

fn leases(path: &str) -> String {
    format!("{path}/leases")
}

fn locks(path: &str) -> String {
    format!("{path}/locks")
}

/// Curator's testSimple2 / testThreads, over sessions: many tasks on 3 leases, never more
/// than 3 at once, every task finishes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversubscribed_leases_never_exceed_the_maximum() {
    let path = "/t/sem-over";
    const MAX: u32 = 3;
    let holding = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for i in 0..4 {
        let s = sem(&client().await, path, MAX);
        for _ in 0..3 {
            let (s, holding, peak) = (s.clone(), holding.clone(), peak.clone());
            tasks.push(tokio::spawn(async move {
                for _ in 0..5 {
                    let qty = if i == 0 { 2 } else { 1 };
                    let got = s.acquire_many(qty).await.unwrap();
                    let now = holding.fetch_add(got.len(), Ordering::SeqCst) + got.len();
                    peak.fetch_max(now, Ordering::SeqCst);
                    tokio::task::yield_now().await;
                    holding.fetch_sub(got.len(), Ordering::SeqCst);
                    recipe_semaphore::return_all(got).await.unwrap();
                }
            }));
        }
    }
    for t in tasks {
        bounded(t).await.unwrap();
    }
    let peak = peak.load(Ordering::SeqCst);
    assert!(peak <= MAX as usize, "{peak} leases at once");
    assert!(peak >= 2, "no concurrency at all: {peak}");
    let c = client().await;
    wait_children(&c, &leases(path), 0).await;
    wait_children(&c, &locks(path), 0).await;
}

/// testGetParticipantNodes, testReleaseInChangingThread, testSetNodeData, lease data.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn participants_data_and_a_release_from_another_task() {
    let path = "/t/sem-basic";
    let c = client().await;
    let s = sem(&c, path, 2);
    s.set_node_data(Bytes::from_static(b"worker-7"));
    let a = s.acquire().await.unwrap();
    let b = s
        .try_acquire_for(Duration::from_secs(5))
        .await
        .unwrap()
        .unwrap();
    assert_ne!(a.fencing_token(), b.fencing_token());
    assert_eq!(a.data().await.unwrap(), Bytes::from_static(b"worker-7"));
    // Child names, as Curator gives them (issue 23, defect 15).
    let mut nodes = s.participant_nodes().await.unwrap();
    nodes.sort();
    let name = |p: &str| p.rsplit('/').next().unwrap().to_owned();
    let mut ours = vec![name(a.node_path()), name(b.node_path())];
    ours.sort();
    assert_eq!(nodes, ours);
    assert!(a.node_path().starts_with("/t/sem-basic/leases/_c_"));
    assert!(a.node_path().contains("-lease-"));
    assert!(a.is_valid());
    // The inner lock is released once held: nothing left under locks/.
    wait_children(&c, &locks(path), 0).await;
    bounded(tokio::spawn(async move { a.release().await }))
        .await
        .unwrap()
        .unwrap();
    drop(b); // returned in the background
    wait_children(&c, &leases(path), 0).await;
}

/// testNoOrphans / timeouts: a full semaphore times out, leaving nothing; `qty` 0 or over a
/// fixed maximum is refused at once; returnAll frees the leases for the next.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeouts_bad_counts_and_return_all() {
    let path = "/t/sem-timeout";
    let c = client().await;
    let s = sem(&c, path, 3);
    assert_eq!(
        s.acquire_many(0).await.err(),
        Some(Error::BadLeaseCount { asked: 0, max: 3 })
    );
    assert_eq!(
        s.acquire_many(4).await.err(),
        Some(Error::BadLeaseCount { asked: 4, max: 3 })
    );
    let all = s.acquire_many(3).await.unwrap();
    assert_eq!(all.len(), 3);
    let other = sem(&client().await, path, 3);
    let start = tokio::time::Instant::now();
    assert!(
        other
            .try_acquire_for(Duration::from_millis(300))
            .await
            .unwrap()
            .is_none()
    );
    assert!(start.elapsed() >= Duration::from_millis(300));
    // Its lease and inner lock node are gone (deleted before it returned, or just after).
    wait_children(&c, &leases(path), 3).await;
    wait_children(&c, &locks(path), 0).await;
    // A zero timeout on a full semaphore gives up at once, too.
    assert!(
        other
            .try_acquire_many_for(2, Duration::ZERO)
            .await
            .unwrap()
            .is_none()
    );
    recipe_semaphore::return_all(all).await.unwrap();
    let two = bounded(other.try_acquire_many_for(2, Duration::ZERO))
        .await
        .unwrap()
        .expect("free leases are taken even with a zero timeout");
    recipe_semaphore::return_all(two).await.unwrap();
    wait_children(&c, &leases(path), 0).await;
}

/// The maximum from a shared count (Curator's testMaxPerSession/SharedCount use): a waiter
/// gets its lease when the count grows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_maximum_follows_a_shared_count() {
    let path = "/t/sem-count";
    let c = client().await;
    let count = SharedCount::start(c.clone(), "/t/sem-count-max", 1)
        .await
        .unwrap();
    assert_eq!(count.count(), 1);
    let s = InterProcessSemaphoreV2::with_shared_count(c.clone(), path, &count).unwrap();
    let first = s.acquire().await.unwrap();
    let waiter = {
        let s = s.clone();
        tokio::spawn(async move { s.acquire().await })
    };
    wait_children(&c, &leases(path), 2).await;
    assert!(!waiter.is_finished());
    // Another client raises the count.
    let other = SharedCount::start(client().await, "/t/sem-count-max", 99)
        .await
        .unwrap();
    assert_eq!(other.count(), 1, "an existing count is not reseeded");
    other.set_count(2).await.unwrap();
    let second = bounded(waiter).await.unwrap().unwrap();
    assert_eq!(s.max_leases(), 2);
    assert!(count.try_set_count(3).await.unwrap());
    recipe_semaphore::return_all([first, second]).await.unwrap();
    wait_children(&c, &leases(path), 0).await;
}

/// Issue 23, defect 11: a shared count of 0 (paused) or below the quantity asked waits, within
/// the deadline, as Curator's does (it used to fail at once with `BadLeaseCount`), and grants
/// when the count rises; the wait takes no inner lock, so it stops no other client.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shared_count_below_the_ask_waits_for_it_to_grow() {
    let path = "/t/sem-count-zero";
    let c = client().await;
    let count = SharedCount::start(c.clone(), "/t/sem-count-zero-max", 0)
        .await
        .unwrap();
    let s = InterProcessSemaphoreV2::with_shared_count(c.clone(), path, &count).unwrap();
    assert_eq!(
        s.acquire_many(0)
            .await
            .err()
            .map(|e| matches!(e, Error::BadLeaseCount { .. })),
        Some(true)
    );
    assert!(
        bounded(s.try_acquire_for(Duration::from_millis(200)))
            .await
            .unwrap()
            .is_none(),
        "granted by a paused semaphore"
    );
    let waiter = {
        let s = s.clone();
        tokio::spawn(async move { s.acquire_many(2).await })
    };
    // Nothing taken meanwhile: no inner-lock node, no lease.
    wait_children(&c, &locks(path), 0).await;
    wait_children(&c, &leases(path), 0).await;
    count.set_count(1).await.unwrap();
    assert!(!waiter.is_finished());
    count.set_count(2).await.unwrap();
    let two = bounded(waiter).await.unwrap().unwrap();
    assert_eq!(two.len(), 2);
    recipe_semaphore::return_all(two).await.unwrap();
    wait_children(&c, &leases(path), 0).await;
}

/// Issue 23, defect 9: the task that follows a semaphore's shared count ends with its last
/// handle (1,000 semaphores made and dropped left 1,000 tasks until the count changed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_semaphore_stops_following_its_count() {
    let c = client().await;
    let count = SharedCount::start(c.clone(), "/t/sem-count-tasks", 1)
        .await
        .unwrap();
    let metrics = tokio::runtime::Handle::current().metrics();
    let before = metrics.num_alive_tasks();
    for _ in 0..1000 {
        let s =
            InterProcessSemaphoreV2::with_shared_count(c.clone(), "/t/sem-tasks", &count).unwrap();
        drop(s);
    }
    bounded(async {
        while metrics.num_alive_tasks() > before {
            tokio::task::yield_now().await;
        }
    })
    .await;
}

/// Issue 23, defect 12: `return_all` sends every delete at once (4 leases took 4 round trips
/// one after another: 914 ms at 100 ms each way). Counted in round trips: through a proxy that
/// delays each direction by 300 ms, all four returns take one round trip (600 ms), well short
/// of the two and a half that would mean they were not in one flight.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn return_all_sends_every_delete_in_one_flight() {
    let path = "/t/sem-return-all";
    let c = client().await;
    let proxy = FaultProxy::start(server().addr()).unwrap();
    let pc = client_at(&proxy.addr().to_string(), Duration::from_secs(20)).await;
    let s = sem(&pc, path, 4);
    let four = s.acquire_many(4).await.unwrap();
    wait_children(&c, &leases(path), 4).await;
    let one_way = Duration::from_millis(300);
    proxy.delay(one_way);
    let started = std::time::Instant::now();
    bounded(recipe_semaphore::return_all(four)).await.unwrap();
    let took = started.elapsed();
    assert!(took < one_way * 5, "took {took:?}: not one flight");
    wait_children(&c, &leases(path), 0).await;
}

/// Issue 23, defect 2: a lease dropped outside the runtime (on a plain thread) while
/// disconnected is still returned once the connection is back, on the runtime it was taken on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_dropped_off_the_runtime_while_disconnected_is_still_returned() {
    let path = "/t/sem-off-runtime";
    let c = client().await;
    let proxy = FaultProxy::start(server().addr()).unwrap();
    let pc = client_at(&proxy.addr().to_string(), Duration::from_secs(20)).await;
    let session = pc.session_id();
    let lease = sem(&pc, path, 1).acquire().await.unwrap();
    let node = lease.node_path().to_owned();
    proxy.refuse(true);
    proxy.cut();
    wait_state(&pc, |s| s == SessionState::Disconnected).await;
    std::thread::spawn(move || drop(lease)).join().unwrap();
    proxy.refuse(false);
    support::wait_gone(&c, &node).await;
    assert_eq!(pc.state(), SessionState::Connected);
    assert_eq!(pc.session_id(), session, "returned by us, not by an expiry");
}

/// Two clients each asking for 2 of 2 leases, over and over with no timeout: Curator's
/// one-at-a-time acquisition can leave each holding one for ever; ours takes both under one
/// hold of the inner lock, so they all finish.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multi_lease_acquisitions_do_not_deadlock() {
    let path = "/t/sem-deadlock";
    let mut tasks = Vec::new();
    for _ in 0..3 {
        let s = sem(&client().await, path, 2);
        tasks.push(tokio::spawn(async move {
            for _ in 0..15 {
                let both = s.acquire_many(2).await.unwrap();
                assert_eq!(both.len(), 2);
                recipe_semaphore::return_all(both).await.unwrap();
            }
        }));
    }
    for t in tasks {
        bounded(t).await.unwrap();
    }
}

/// The semaphore mutex is not reentrant, by construction (issue 23, defect 6): a second
/// `lock()` in the holding task, on this handle or another, queues like any other client and
/// is granted once the guard is released, from another task (Curator lets any thread release).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_semaphore_mutex_queues_a_second_lock_and_releases_from_anywhere() {
    let path = "/t/semmutex";
    let c = client().await;
    let m = InterProcessSemaphoreMutex::new(c.clone(), path).unwrap();
    let g = m.lock().await.unwrap();
    assert!(
        bounded(m.try_lock_for(Duration::from_millis(200)))
            .await
            .unwrap()
            .is_none()
    );
    let second_handle = InterProcessSemaphoreMutex::new(c.clone(), path).unwrap();
    assert!(
        bounded(second_handle.try_lock_for(Duration::from_millis(200)))
            .await
            .unwrap()
            .is_none()
    );
    // What timed out left nothing: one lease.
    wait_children(&c, &leases(path), 1).await;
    let queued = {
        let m = second_handle.clone();
        tokio::spawn(async move { m.lock().await })
    };
    let first = g.fencing_token();
    bounded(tokio::spawn(async move { g.release().await }))
        .await
        .unwrap()
        .unwrap();
    let g2 = bounded(queued).await.unwrap().unwrap();
    assert!(
        g2.fencing_token() > first,
        "fencing tokens increase: {first} then {}",
        g2.fencing_token()
    );
    let remote = InterProcessSemaphoreMutex::new(client().await, path).unwrap();
    assert!(
        remote
            .try_lock_for(Duration::from_millis(200))
            .await
            .unwrap()
            .is_none()
    );
    assert!(second_handle.is_acquired_in_this_process());
    std::thread::spawn(move || drop(g2)).join().unwrap();
    bounded(remote.lock())
        .await
        .unwrap()
        .release()
        .await
        .unwrap();
    wait_children(&c, &leases(path), 0).await;
}

/// testNoOrphans: acquisitions dropped at random points under contention leave no lease and
/// no inner-lock node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_acquisitions_leave_no_orphans() {
    let path = "/t/sem-orphans";
    let c = client().await;
    let holder = sem(&c, path, 2);
    let held = holder.acquire().await.unwrap();
    let mut tasks = Vec::new();
    for i in 0..4u64 {
        let s = sem(&client().await, path, 2);
        tasks.push(tokio::spawn(async move {
            for j in 0..10u64 {
                let cut = Duration::from_micros((i * 997 + j * 1_301) % 4_000);
                if let Ok(got) = tokio::time::timeout(cut, s.acquire_many(1 + (j % 2) as u32)).await
                {
                    recipe_semaphore::return_all(got.unwrap()).await.unwrap();
                }
            }
        }));
    }
    for t in tasks {
        bounded(t).await.unwrap();
    }
    held.release().await.unwrap();
    wait_children(&c, &leases(path), 0).await;
    wait_children(&c, &locks(path), 0).await;
}

/// A lease's release dropped after its first poll (the delete sent, its reply not in) still
/// returns the lease: every round the whole semaphore is taken again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_dropped_with_its_delete_in_flight_still_returns_the_lease() {
    let path = "/t/sem-dropped-release";
    let c = client().await;
    let s = sem(&c, path, 1);
    for _ in 0..20 {
        let lease = bounded(s.acquire()).await.unwrap();
        let mut release = Box::pin(lease.release());
        let first =
            std::future::poll_fn(|cx| std::task::Poll::Ready(release.as_mut().poll(cx).is_ready()))
                .await;
        assert!(!first, "a release needs the server's reply");
        drop(release);
    }
    let last = bounded(s.acquire()).await.unwrap();
    last.release().await.unwrap();
    wait_children(&c, &leases(path), 0).await;
}

/// A lease holder's session expires: its lease goes with it, and a waiter gets it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_holder_gives_its_lease_to_a_waiter() {
    let path = "/t/sem-expire";
    let proxy = FaultProxy::start(server().addr()).unwrap();
    let doomed = client_at(&proxy.addr().to_string(), Duration::from_secs(2)).await;
    let lease = sem(&doomed, path, 1).acquire().await.unwrap();
    let token = lease.fencing_token();
    let waiter = sem(&client().await, path, 1);
    let acquiring = tokio::spawn(async move { waiter.acquire().await });
    let c = client().await;
    wait_children(&c, &leases(path), 2).await;
    proxy.stall();
    let next = bounded(acquiring).await.unwrap().unwrap();
    assert!(next.fencing_token() > token);
    wait_state(&doomed, |s| s == SessionState::Lost).await;
    assert!(!lease.is_valid());
    // The release waits through Lost, and ends with the verdict: expired.
    let release = tokio::spawn(lease.release());
    next.release().await.unwrap();
    proxy.pass();
    assert_eq!(
        bounded(release).await.unwrap(),
        Err(Error::Lock(recipe_mutex::Error::SessionExpired))
    );
}

/// A connection cut while the waiter holds the inner lock with its lease created (between the
/// lease create and the inner release): the session survives, the attempt goes on, and once
/// it holds the inner lock is released and nothing is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_between_the_lease_and_the_inner_release_loses_nothing() {
    let path = "/t/sem-cut";
    let c = client().await;
    let holder = sem(&c, path, 1).acquire().await.unwrap();
    let proxy = FaultProxy::start(server().addr()).unwrap();
    let pc = client_at(&proxy.addr().to_string(), Duration::from_secs(20)).await;
    let session = pc.session_id();
    let waiter = sem(&pc, path, 1);
    let acquiring = tokio::spawn(async move { waiter.acquire().await });
    // It holds the inner lock and has created its lease: it waits on the count.
    wait_children(&c, &leases(path), 2).await;
    wait_children(&c, &locks(path), 1).await;
    proxy.refuse(true);
    proxy.cut();
    wait_state(&pc, |s| s == SessionState::Disconnected).await;
    holder.release().await.unwrap();
    proxy.refuse(false);
    wait_state(&pc, |s| s == SessionState::Connected).await;
    assert_eq!(pc.session_id(), session);
    let lease = bounded(acquiring).await.unwrap().unwrap();
    wait_children(&c, &locks(path), 0).await;
    wait_children(&c, &leases(path), 1).await;
    lease.release().await.unwrap();
    wait_children(&c, &leases(path), 0).await;
}

/// Another client deletes our nodes. A waiter's inner-lock node deleted by hand: it gives its
/// lease back and queues again (else a second client could add a lease beside its own and both
/// would wait for ever); a holder's lease deleted by hand frees that lease for a waiter (a
/// count is all the recipe has). Nothing of ours is left at the end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_deleted_by_another_client() {
    let path = "/t/sem-meddle";
    let meddler = client().await;
    let holder = sem(&client().await, path, 1).acquire().await.unwrap();
    let waiter = sem(&client().await, path, 1);
    let acquiring = {
        let waiter = waiter.clone();
        tokio::spawn(async move { waiter.acquire().await })
    };
    // The waiter holds the inner lock and has its lease: it waits on the count.
    wait_children(&meddler, &leases(path), 2).await;
    wait_children(&meddler, &locks(path), 1).await;
    let inner = meddler.get_children(&locks(path)).await.unwrap();
    meddler
        .delete(&format!("{}/{}", locks(path), inner[0]), None)
        .await
        .unwrap();
    // It starts over: a new inner node, and its lease back in the count.
    bounded(async {
        loop {
            let (kids, watcher) = meddler.get_children_and_watch(&locks(path)).await.unwrap();
            if kids.len() == 1 && kids[0] != inner[0] {
                return;
            }
            watcher.await;
        }
    })
    .await;
    wait_children(&meddler, &leases(path), 2).await;
    // Now the holder's lease goes by another's hand: the waiter gets the lease.
    meddler.delete(holder.node_path(), None).await.unwrap();
    let lease = bounded(acquiring).await.unwrap().unwrap();
    lease.release().await.unwrap();
    drop(holder); // its delete finds nothing: fine
    wait_children(&meddler, &leases(path), 0).await;
    wait_children(&meddler, &locks(path), 0).await;
}

/// Issue 34, defect 2: `Duration::MAX` is "forever" (it panicked: "overflow when adding
/// duration to instant"): `try_acquire_for`, `try_acquire_many_for` and the semaphore mutex's
/// `try_lock_for` wait as their untimed forms do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timeout_of_duration_max_means_no_deadline() {
    let path = "/t/sem-forever";
    let c = client().await;
    let s = sem(&c, path, 2);
    let one = bounded(s.try_acquire_for(Duration::MAX))
        .await
        .unwrap()
        .expect("free");
    let other = sem(&client().await, path, 2);
    let waiting = tokio::spawn(async move {
        let two = other.try_acquire_many_for(2, Duration::MAX).await.unwrap();
        recipe_semaphore::return_all(two.expect("no deadline: waits for both")).await
    });
    wait_children(&c, &locks(path), 1).await;
    one.release().await.unwrap();
    bounded(waiting).await.unwrap().unwrap();
    let m = InterProcessSemaphoreMutex::new(c.clone(), "/t/sem-mutex-forever").unwrap();
    let g = bounded(m.try_lock_for(Duration::MAX))
        .await
        .unwrap()
        .expect("free");
    g.release().await.unwrap();
}

/// Issue 37: the leases as the server has them: the first N hold, the one asker past them
/// waits; each with its session and, by default, this host's address. The semaphore mutex
/// likewise, with N = 1.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_queue_shows_who_holds_a_lease_and_who_waits() {
    let path = "/t/sem-queue";
    let (a, b) = (client().await, client().await);
    let two = bounded(sem(&a, path, 2).acquire_many(2)).await.unwrap();
    let waiting = tokio::spawn({
        let s = sem(&b, path, 2);
        async move { s.acquire().await }
    });
    wait_children(&a, &leases(path), 3).await;
    let queue = bounded(sem(&b, path, 2).queue()).await.unwrap();
    assert_eq!(queue.len(), 3, "{queue:#?}");
    assert!(queue[0].holds() && queue[1].holds(), "{queue:#?}");
    assert!(!queue[2].holds(), "{queue:#?}");
    assert_eq!(queue[2].session_id, b.session_id());
    assert!(
        queue.iter().all(|p| &p.data[..] == b"127.0.0.1"),
        "{queue:#?}"
    );
    let held: Vec<&str> = two.iter().map(|l| l.node_path()).collect();
    assert_eq!([queue[0].node.as_str(), queue[1].node.as_str()], held[..]);
    bounded(recipe_semaphore::return_all(two)).await.unwrap();
    let lease = bounded(waiting).await.unwrap().unwrap();
    bounded(lease.release()).await.unwrap();

    let m = InterProcessSemaphoreMutex::new(a.clone(), "/t/sem-queue-mutex").unwrap();
    let guard = bounded(m.lock()).await.unwrap();
    let queue = bounded(m.queue()).await.unwrap();
    assert_eq!(queue.len(), 1);
    assert!(queue[0].holds());
    assert_eq!(queue[0].node, guard.node_path());
    bounded(guard.release()).await.unwrap();
}

/// A lease, and a semaphore mutex's guard, whose node another client deletes while the
/// session lives are told: `lost()` says `Deleted`, `is_valid()` is false; the other leases
/// stand.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_and_a_semaphore_mutex_are_told_when_another_client_deletes_their_node() {
    let path = "/t/sem-deleted";
    let c = client().await;
    let other = client().await;
    let pool = sem(&c, path, 2);
    let mut leases_held = pool.acquire_many(2).await.unwrap();
    let kept = leases_held.pop().unwrap();
    let doomed = leases_held.pop().unwrap();
    other.delete(doomed.node_path(), None).await.unwrap();
    assert_eq!(
        bounded(doomed.lost()).await,
        recipe_semaphore::Loss::Deleted
    );
    assert!(!doomed.is_valid());
    assert!(kept.is_valid(), "the other lease stands");
    pool.return_all([doomed, kept]).await.unwrap();
    wait_children(&c, &leases(path), 0).await;

    let mpath = "/t/semmutex-deleted";
    let g = InterProcessSemaphoreMutex::new(c.clone(), mpath)
        .unwrap()
        .lock()
        .await
        .unwrap();
    other.delete(g.node_path(), None).await.unwrap();
    assert_eq!(bounded(g.lost()).await, recipe_semaphore::Loss::Deleted);
    assert!(!g.is_valid());
    g.release().await.unwrap();
    wait_children(&c, &leases(mpath), 0).await;
}
