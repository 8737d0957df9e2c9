//! InterProcessMultiLock against real ZooKeeper servers started by the tests: Curator's
//! TestInterProcessMultiMutex behaviours that apply, the canonical order (no deadlock between
//! opposite orders), all or nothing, mixed members, cancellation, and a bank transfer on a
//! 3-member ensemble with a leader kill.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use recipe_multilock::{Error, InterProcessMultiLock, Lock, MemberError};
use recipe_mutex::InterProcessMutex;
use recipe_rwlock::InterProcessReadWriteLock;
use recipe_semaphore::InterProcessSemaphoreMutex;
use zk_client::{Client, CreateMode, CreateOptions, EventType, Op};
use zk_testkit::{Ensemble, ZkOptions};

// The mutex's real-server test helpers (one server per test binary, clients, bounded waits).
#[path = "../../recipe-mutex/tests/support/mod.rs"]
mod support;
use support::{bounded, client, client_at, until, wait_children};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_are_taken_in_canonical_order_and_released_in_reverse() {
    let c = client().await;
    let multi = InterProcessMultiLock::new(c.clone(), &["/t/ml-order/b", "/t/ml-order/a"]).unwrap();
    let paths: Vec<&str> = multi.members().iter().map(|m| m.path()).collect();
    assert_eq!(paths, ["/t/ml-order/a", "/t/ml-order/b"]);
    let g = multi.lock().await.unwrap();
    let nodes: Vec<String> = g.members().map(|m| m.node_path().to_owned()).collect();
    assert!(nodes[0].starts_with("/t/ml-order/a/") && nodes[1].starts_with("/t/ml-order/b/"));
    let tokens = g.fencing_tokens();
    assert!(tokens[0] < tokens[1], "a's node was created first");
    assert!(multi.is_acquired_in_this_process());
    // One persistent recursive watch sees both deletes, in the server's (zxid) order, on one
    // stream: b's node must go first.
    let mut deletes = c
        .add_watch("/t/ml-order", zk_client::AddWatchMode::PersistentRecursive)
        .await
        .unwrap();
    g.release().await.unwrap();
    let mut order = Vec::new();
    while order.len() < 2 {
        let event = bounded(deletes.next()).await.unwrap();
        if event.event_type == EventType::NodeDeleted {
            order.push(event.path);
        }
    }
    assert_eq!(order, [nodes[1].clone(), nodes[0].clone()]);
    assert!(!multi.is_acquired_in_this_process());
}

/// A member that cannot be taken in time: the members taken before it are released (in the
/// background, last first), and nothing of ours is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_that_cannot_be_taken_releases_the_others() {
    let c = client().await;
    let other = InterProcessMutex::new(client().await, "/t/ml-partial/b")
        .unwrap()
        .lock()
        .await
        .unwrap();
    let multi =
        InterProcessMultiLock::new(c.clone(), &["/t/ml-partial/a", "/t/ml-partial/b"]).unwrap();
    assert!(
        multi
            .try_lock_for(Duration::from_millis(300))
            .await
            .unwrap()
            .is_none()
    );
    assert!(!multi.is_acquired_in_this_process());
    wait_children(&c, "/t/ml-partial/a", 0).await;
    wait_children(&c, "/t/ml-partial/b", 1).await;
    other.release().await.unwrap();
    // Now it succeeds, and releases both.
    let g = multi.lock().await.unwrap();
    assert!(multi.is_acquired_in_this_process());
    g.release().await.unwrap();
    wait_children(&c, "/t/ml-partial/a", 0).await;
    wait_children(&c, "/t/ml-partial/b", 0).await;
}

/// A member that fails (here: one on a client already closed) stops the acquisition at once,
/// releases what was taken, and names the member.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_member_stops_the_acquisition_and_is_named() {
    let c = client().await;
    let closed = client().await;
    closed.close().await.unwrap();
    let members: Vec<Arc<dyn Lock>> = vec![
        Arc::new(InterProcessMutex::new(closed, "/t/ml-fail/z").unwrap()),
        Arc::new(InterProcessMutex::new(c.clone(), "/t/ml-fail/a").unwrap()),
    ];
    let multi = InterProcessMultiLock::from_locks(members).unwrap();
    let err = bounded(multi.lock()).await.unwrap_err();
    assert_eq!(
        err,
        Error::Member(MemberError {
            path: "/t/ml-fail/z".into(),
            kind: recipe_multilock::LockKind::Mutex,
            error: recipe_mutex::Error::SessionExpired,
        })
    );
    wait_children(&c, "/t/ml-fail/a", 0).await;
}

/// Issue 23, defects 7 and 8: members that would wait for each other are refused at
/// construction: a path given twice (the multi-lock never completed), and a read and a write
/// of one read/write lock, whatever their order (a downgrade is `downgrade()`; sorting the
/// read first turned Curator's [write, read] into a refused upgrade).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_that_would_wait_for_each_other_are_refused() {
    let c = client().await;
    assert_eq!(
        InterProcessMultiLock::new(c.clone(), &["/t/ml-dup/a", "/t/ml-dup/b", "/t/ml-dup/a"]).err(),
        Some(Error::DuplicatePath {
            path: "/t/ml-dup/a".into()
        })
    );
    let rw = InterProcessReadWriteLock::new(c.clone(), "/t/ml-dup/rw").unwrap();
    for (first, second) in [(true, false), (false, true)] {
        let side = |write: bool| -> Arc<dyn Lock> {
            match write {
                true => Arc::new(rw.write_lock().clone()),
                false => Arc::new(rw.read_lock().clone()),
            }
        };
        let refused = InterProcessMultiLock::from_locks(vec![side(first), side(second)]);
        assert_eq!(
            refused.err(),
            Some(Error::ReadAndWrite {
                path: "/t/ml-dup/rw".into()
            })
        );
    }
    // Cohorted sides too (their kinds are `CohortRead` and `CohortWrite`), in either order,
    // and a cohort read beside a plain write.
    let cohort = InterProcessReadWriteLock::new(c.clone(), "/t/ml-dup/crw")
        .unwrap()
        .cohort(recipe_mutex::CohortBound::default());
    let plain = InterProcessReadWriteLock::new(c.clone(), "/t/ml-dup/crw").unwrap();
    let pairs: [(Arc<dyn Lock>, Arc<dyn Lock>); 3] = [
        (
            Arc::new(cohort.read_lock().clone()),
            Arc::new(cohort.write_lock().clone()),
        ),
        (
            Arc::new(cohort.write_lock().clone()),
            Arc::new(cohort.read_lock().clone()),
        ),
        (
            Arc::new(cohort.read_lock().clone()),
            Arc::new(plain.write_lock().clone()),
        ),
    ];
    for (a, b) in pairs {
        assert_eq!(
            InterProcessMultiLock::from_locks(vec![a, b]).err(),
            Some(Error::ReadAndWrite {
                path: "/t/ml-dup/crw".into()
            })
        );
    }
    // A mutex and a semaphore mutex on one path: the same refusal as a path given twice.
    let twice: Vec<Arc<dyn Lock>> = vec![
        Arc::new(InterProcessMutex::new(c.clone(), "/t/ml-dup/m").unwrap()),
        Arc::new(InterProcessSemaphoreMutex::new(c.clone(), "/t/ml-dup/m").unwrap()),
    ];
    assert!(matches!(
        InterProcessMultiLock::from_locks(twice),
        Err(Error::DuplicatePath { .. })
    ));
}

/// Issue 23: a multi-lock is a `Lock` itself, so multi-locks nest. An outer multi-lock over
/// a multi-lock {a, c} and b takes a, b, c in one canonical order (the inner one's members
/// join the set, so nesting cannot reintroduce a deadlock between ours), refuses a path the
/// inner one already has, and code generic over `dyn Lock` takes and releases a multi-lock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multi_locks_nest() {
    let c = client().await;
    let (a, b, d) = ("/t/ml-nest/a", "/t/ml-nest/b", "/t/ml-nest/c");
    let inner = Arc::new(InterProcessMultiLock::new(c.clone(), &[d, a]).unwrap());
    let b_lock: Arc<dyn Lock> = Arc::new(InterProcessMutex::new(c.clone(), b).unwrap());
    let outer =
        InterProcessMultiLock::from_locks(vec![inner.clone() as Arc<dyn Lock>, b_lock]).unwrap();
    let paths: Vec<&str> = outer.members().iter().map(|m| m.path()).collect();
    assert_eq!(paths, [a, b, d]);
    let g = bounded(outer.lock()).await.unwrap();
    let tokens = g.fencing_tokens();
    assert!(
        tokens.windows(2).all(|w| w[0] < w[1]),
        "taken in order: {tokens:?}"
    );
    // The inner multi-lock queues behind the outer's hold of its members.
    assert!(
        bounded(inner.try_lock_for(Duration::from_millis(200)))
            .await
            .unwrap()
            .is_none()
    );
    g.release().await.unwrap();
    // A path the inner multi-lock has, given again: refused.
    let again: Arc<dyn Lock> = Arc::new(InterProcessMutex::new(c.clone(), a).unwrap());
    assert_eq!(
        InterProcessMultiLock::from_locks(vec![inner.clone() as Arc<dyn Lock>, again]).err(),
        Some(Error::DuplicatePath { path: a.into() })
    );
    // Through `dyn Lock`: a guard of every member, released together.
    let generic: &dyn Lock = inner.as_ref();
    assert_eq!(generic.kind(), recipe_multilock::LockKind::Multi);
    let g = bounded(generic.lock()).await.unwrap();
    assert_eq!(g.holds().len(), 2);
    assert!(g.is_valid());
    g.release().await.unwrap();
    for path in [a, b, d] {
        wait_children(&c, path, 0).await;
    }
}

/// Issue 23, defect 4: a timed multi-lock on a connection that dies while it waits returns
/// within its deadline and one grace (it took 8 s for 1.5 s: the members taken were released
/// one awaited delete after another); their deletes go on in the background. The deadline
/// passed with no server: `Unavailable` for the member that waited, not `Ok(None)`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_multi_lock_on_a_dead_connection_keeps_its_deadline() {
    let c = client().await;
    let (a, b) = ("/t/ml-dead/a", "/t/ml-dead/b");
    let holder = InterProcessMutex::new(c.clone(), b)
        .unwrap()
        .lock()
        .await
        .unwrap();
    let proxy = zk_testkit::FaultProxy::start(support::server().addr()).unwrap();
    let pc = client_at(&proxy.addr().to_string(), Duration::from_secs(20)).await;
    let multi = InterProcessMultiLock::new(pc.clone(), &[a, b]).unwrap();
    let timeout = Duration::from_millis(1500);
    let started = std::time::Instant::now();
    let attempt = tokio::spawn(async move { multi.try_lock_for(timeout).await });
    // `a` held, `b` queued behind the holder: the connection dies.
    wait_children(&c, a, 1).await;
    wait_children(&c, b, 2).await;
    proxy.refuse(true);
    proxy.cut();
    let got = bounded(attempt).await.unwrap();
    let took = started.elapsed();
    // An outage, not a busy lock (issue 37): the member waiting at the deadline says so.
    match &got {
        Err(Error::Member(member)) => {
            assert_eq!(member.path, b, "{got:?}");
            assert!(
                matches!(member.error, recipe_mutex::Error::Unavailable(_)),
                "{got:?}"
            );
        }
        other => panic!("{other:?}"),
    }
    let bound = timeout + recipes_core::DEADLINE_GRACE + Duration::from_millis(250);
    assert!(took < bound, "took {took:?}, bound {bound:?}");
    proxy.refuse(false);
    wait_children(&c, a, 0).await;
    wait_children(&c, b, 1).await;
    holder.release().await.unwrap();
    wait_children(&c, b, 0).await;
}

/// Mixed members: a mutex and a read/write lock's write lock; a reader elsewhere blocks the set.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mixed_members_are_all_or_nothing() {
    let c = client().await;
    let rw = InterProcessReadWriteLock::new(c.clone(), "/t/ml-mixed/rw").unwrap();
    let members: Vec<Arc<dyn Lock>> = vec![
        Arc::new(rw.write_lock().clone()),
        Arc::new(InterProcessMutex::new(c.clone(), "/t/ml-mixed/m").unwrap()),
    ];
    let multi = InterProcessMultiLock::from_locks(members).unwrap();
    let reader = InterProcessReadWriteLock::new(client().await, "/t/ml-mixed/rw").unwrap();
    let r = reader.read_lock().lock().await.unwrap();
    assert!(
        multi
            .try_lock_for(Duration::from_millis(300))
            .await
            .unwrap()
            .is_none()
    );
    wait_children(&c, "/t/ml-mixed/m", 0).await;
    r.release().await.unwrap();
    let g = bounded(multi.lock()).await.unwrap();
    assert!(g.is_valid());
    assert_eq!(g.check_ops().len(), 2);
    drop(g); // released in the background, last first
    wait_children(&c, "/t/ml-mixed/m", 0).await;
    wait_children(&c, "/t/ml-mixed/rw", 0).await;
}

/// Curator's testMultiMutex: a mutex and a semaphore mutex under one multi-lock; while it is
/// held, neither can be taken alone from another session; taking the set again in the same
/// task queues like any other participant (it times out here, leaving nothing); once
/// released, both are free.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mutex_and_a_semaphore_mutex_together() {
    let c = client().await;
    let (m_path, s_path) = ("/t/ml-semmix/m", "/t/ml-semmix/s");
    let mutex = InterProcessMutex::new(c.clone(), m_path).unwrap();
    let members: Vec<Arc<dyn Lock>> = vec![
        Arc::new(InterProcessSemaphoreMutex::new(c.clone(), s_path).unwrap()),
        Arc::new(mutex.clone()),
    ];
    let multi = InterProcessMultiLock::from_locks(members).unwrap();
    let g = multi.lock().await.unwrap();
    assert_eq!(g.fencing_tokens().len(), 2);
    let other = client().await;
    let lone_mutex = InterProcessMutex::new(other.clone(), m_path).unwrap();
    let lone_sem = InterProcessSemaphoreMutex::new(other.clone(), s_path).unwrap();
    let short = Duration::from_millis(200);
    assert!(lone_mutex.try_lock_for(short).await.unwrap().is_none());
    assert!(lone_sem.try_lock_for(short).await.unwrap().is_none());
    // Again in the same task: it queues, and times out.
    assert!(bounded(multi.try_lock_for(short)).await.unwrap().is_none());
    wait_children(&c, m_path, 1).await;
    assert!(mutex.is_acquired_in_this_process());
    g.release().await.unwrap();
    assert!(!mutex.is_acquired_in_this_process());
    let a = bounded(lone_mutex.lock()).await.unwrap();
    let b = bounded(lone_sem.lock()).await.unwrap();
    a.release().await.unwrap();
    b.release().await.unwrap();
    wait_children(&c, m_path, 0).await;
    wait_children(&c, &format!("{s_path}/leases"), 0).await;
}

/// The deadlock case: multi-locks over {a, b} and {b, a}, in several tasks of two sessions,
/// with no timeout, all finish (Curator's order would let them deadlock).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opposite_orders_do_not_deadlock() {
    let (c1, c2) = (client().await, client().await);
    let mut tasks = Vec::new();
    for i in 0..8 {
        let c = if i % 2 == 0 { c1.clone() } else { c2.clone() };
        let paths = if i % 2 == 0 {
            ["/t/ml-deadlock/a", "/t/ml-deadlock/b"]
        } else {
            ["/t/ml-deadlock/b", "/t/ml-deadlock/a"]
        };
        let multi = InterProcessMultiLock::new(c, &paths).unwrap();
        tasks.push(tokio::spawn(async move {
            for _ in 0..5 {
                let g = multi.lock().await.unwrap();
                tokio::task::yield_now().await;
                g.release().await.unwrap();
            }
        }));
    }
    for t in tasks {
        bounded(t).await.unwrap();
    }
}

/// Cancellation at random points leaves no node in any member.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_multi_acquires_leave_no_node() {
    let observer = client().await;
    let holder = InterProcessMutex::new(observer.clone(), "/t/ml-cancel/c")
        .unwrap()
        .lock()
        .await
        .unwrap();
    let mut tasks = Vec::new();
    for t in 0..6u64 {
        let multi = InterProcessMultiLock::new(
            client().await,
            &["/t/ml-cancel/a", "/t/ml-cancel/b", "/t/ml-cancel/c"],
        )
        .unwrap();
        tasks.push(tokio::spawn(async move {
            for i in 0..10u64 {
                let wait = Duration::from_micros((t * 7919 + i * 104_729) % 5_000);
                let _ = tokio::time::timeout(wait, multi.lock()).await;
            }
        }));
    }
    for t in tasks {
        bounded(t).await.unwrap();
    }
    holder.release().await.unwrap();
    for m in ["a", "b", "c"] {
        wait_children(&observer, &format!("/t/ml-cancel/{m}"), 0).await;
    }
}

fn balance(data: &[u8]) -> i64 {
    std::str::from_utf8(data).unwrap().parse().unwrap()
}

/// Accounts as nodes; concurrent transfers, each under a multi-lock over its two accounts and
/// committed as one guarded `multi`; a 3-member ensemble whose leader is killed in the middle.
/// Money is neither made nor lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bank_transfers_conserve_the_total_across_a_leader_kill() {
    const ACCOUNTS: usize = 5;
    const START: i64 = 1_000;
    let mut ens = tokio::task::block_in_place(|| Ensemble::start(3, ZkOptions::default())).unwrap();
    let hosts = ens.connect_string();
    let long = Duration::from_secs(20);
    let setup = client_at(&hosts, long).await;
    let open = CreateOptions::new(CreateMode::Persistent);
    recipe_mutex::layer::driver::create_parents(&setup, "/bank/acct")
        .await
        .unwrap();
    for i in 0..ACCOUNTS {
        let data = START.to_string();
        setup
            .create(&format!("/bank/acct/{i}"), data.as_bytes(), &open)
            .await
            .unwrap();
    }
    let committed = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for t in 0..6u64 {
        let c = client_at(&hosts, long).await;
        let committed = committed.clone();
        tasks.push(tokio::spawn(async move {
            let mut done = 0;
            for n in 0..25u64 {
                let from = ((t + n) % ACCOUNTS as u64) as usize;
                let to = ((t * 3 + n * 7 + 1) % ACCOUNTS as u64) as usize;
                if from == to {
                    continue;
                }
                if transfer(&c, from, to, (n % 7 + 1) as i64).await.is_ok() {
                    done += 1;
                    committed.fetch_add(1, Ordering::SeqCst);
                }
            }
            done
        }));
    }
    // Kill the leader while the transfers run: once a few have committed.
    let leader = tokio::task::block_in_place(|| ens.wait_leader(Duration::from_secs(30))).unwrap();
    bounded(async {
        while committed.load(Ordering::SeqCst) < 10 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    tokio::task::block_in_place(|| ens.kill(leader)).unwrap();
    let at_kill = committed.load(Ordering::SeqCst);
    let mut done = 0;
    for t in tasks {
        done += bounded(t).await.unwrap();
    }
    let check = client_at(&hosts, long).await;
    let mut total = 0;
    for i in 0..ACCOUNTS {
        let (data, _) = bounded(check.get_data(&format!("/bank/acct/{i}")))
            .await
            .unwrap();
        total += balance(&data);
    }
    eprintln!("FIGURE bank: {done} transfers committed, {at_kill} before the leader kill");
    assert!(done > at_kill, "no transfer after the kill");
    assert_eq!(total, START * ACCOUNTS as i64);
}

/// One transfer: lock both accounts, read, write both under the locks' check ops.
async fn transfer(c: &Client, from: usize, to: usize, amount: i64) -> Result<(), Error> {
    let lock_paths = [format!("/bank/locks/{from}"), format!("/bank/locks/{to}")];
    let multi = InterProcessMultiLock::new(c.clone(), &[&lock_paths[0], &lock_paths[1]])?;
    let guard = multi.lock().await?;
    let read = |i: usize| {
        let c = c.clone();
        async move { c.get_data(&format!("/bank/acct/{i}")).await }
    };
    let (Ok((a, sa)), Ok((b, sb))) = (read(from).await, read(to).await) else {
        return Ok(());
    };
    let mut ops = guard.check_ops();
    ops.push(Op::SetData {
        path: format!("/bank/acct/{from}"),
        data: Bytes::from((balance(&a) - amount).to_string()),
        version: Some(sa.version),
    });
    ops.push(Op::SetData {
        path: format!("/bank/acct/{to}"),
        data: Bytes::from((balance(&b) + amount).to_string()),
        version: Some(sb.version),
    });
    let committed = c.multi(&ops).await;
    let _ = guard.release().await;
    match committed {
        Ok(_) => Ok(()),
        Err(error) => Err(Error::Member(MemberError {
            path: "/bank".into(),
            kind: recipe_multilock::LockKind::Multi,
            error: error.into(),
        })),
    }
}

/// Issue 34, defect 2: `Duration::MAX` is "forever" (it panicked: "overflow when adding
/// duration to instant"): the multi-lock waits for a held member as `lock()` does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timeout_of_duration_max_means_no_deadline() {
    let c = client().await;
    let held = InterProcessMutex::new(client().await, "/t/ml-forever/b").unwrap();
    let g = held.lock().await.unwrap();
    let multi =
        InterProcessMultiLock::new(c.clone(), &["/t/ml-forever/a", "/t/ml-forever/b"]).unwrap();
    let waiting = tokio::spawn(async move {
        let all = multi.try_lock_for(Duration::MAX).await.unwrap();
        all.expect("no deadline: waits for b").release().await
    });
    wait_children(&c, "/t/ml-forever/b", 2).await;
    g.release().await.unwrap();
    bounded(waiting).await.unwrap().unwrap();
}

/// A member whose node another client deletes while the session lives: the multi-guard is
/// told (`lost()` says `Deleted`, `is_valid()` false), and its fenced write is refused naming
/// that member.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_deleted_by_another_client_is_told_to_the_multi_guard() {
    let c = client().await;
    let other = client().await;
    let multi =
        InterProcessMultiLock::new(c.clone(), &["/t/ml-deleted/a", "/t/ml-deleted/b"]).unwrap();
    let g = multi.lock().await.unwrap();
    let b = g.members().nth(1).unwrap().node_path().to_owned();
    other.delete(&b, None).await.unwrap();
    assert_eq!(bounded(g.lost()).await, recipe_multilock::Loss::Deleted);
    assert!(!g.is_valid());
    let refused = g
        .fenced_multi(&[Op::check("/t/ml-deleted/a", None)])
        .await
        .unwrap_err();
    assert!(
        matches!(&refused, recipe_mutex::Error::LockLost { node, .. } if *node == b),
        "{refused:?}"
    );
    g.release().await.unwrap();
    wait_children(&c, "/t/ml-deleted/a", 0).await;
    wait_children(&c, "/t/ml-deleted/b", 0).await;
}

/// A multi-lock over a cohort member: its guard says each member's local sequence (the
/// cohort's place, 0 for a member whose node is its own), which with the fencing tokens
/// orders every holder of each member.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_multi_guard_gives_each_members_local_sequence() {
    let c = client().await;
    let wide = recipe_mutex::CohortBound {
        handoffs: 1_000,
        hold: Duration::from_secs(30),
    };
    let cohort = InterProcessMutex::new(c.clone(), "/t/ml-cohort/a")
        .unwrap()
        .cohort(wide);
    let plain = InterProcessMutex::new(c.clone(), "/t/ml-cohort/b").unwrap();
    let first = cohort.lock().await.unwrap();
    assert_eq!(first.local_sequence(), 1);
    let multi = InterProcessMultiLock::from_locks([
        recipe_mutex::IntoLock::into_lock(cohort.clone()),
        recipe_mutex::IntoLock::into_lock(plain),
    ])
    .unwrap();
    let taking = tokio::spawn(async move { multi.lock().await.unwrap() });
    until(|| cohort.waiting() > 0).await;
    first.release().await.unwrap();
    let g = bounded(taking).await.unwrap();
    assert_eq!(
        g.local_sequences(),
        [2, 0],
        "the cohort's hand-off is its second"
    );
    let boxed: Box<dyn recipe_mutex::Guard> = Box::new(g);
    assert_eq!(boxed.local_sequences(), [2, 0]);
    boxed.release().await.unwrap();
    wait_children(&c, "/t/ml-cohort/a", 0).await;
    wait_children(&c, "/t/ml-cohort/b", 0).await;
}

/// A member's node deleted by another client while the multi-lock waits for a later member:
/// the guard does not start out holding it dead; every member is taken again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_deleted_while_later_ones_are_taken_is_taken_again() {
    let c = client().await;
    let other = client().await;
    let (a, b) = ("/t/ml-retake/a", "/t/ml-retake/b");
    let blocker = InterProcessMutex::new(other.clone(), b)
        .unwrap()
        .lock()
        .await
        .unwrap();
    let multi = InterProcessMultiLock::new(c.clone(), &[a, b]).unwrap();
    let taking = tokio::spawn(async move { multi.lock().await.unwrap() });
    // `a` held, `b` waited for behind the blocker.
    wait_children(&other, a, 1).await;
    wait_children(&other, b, 2).await;
    let dead = format!("{a}/{}", other.get_children(a).await.unwrap()[0]);
    other.delete(&dead, None).await.unwrap();
    blocker.release().await.unwrap();
    let g = bounded(taking).await.unwrap();
    let held_a = g.members().next().unwrap().node_path().to_owned();
    assert_ne!(held_a, dead, "the guard holds a member deleted under it");
    assert!(g.is_valid());
    g.release().await.unwrap();
    wait_children(&c, a, 0).await;
    wait_children(&c, b, 0).await;
}

/// A member deleted again on every pass: the multi-lock takes its members again
/// `RETAKES` (3) times, then gives up with `NodeVanished` naming that member, leaving no
/// node of its own behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_deleted_on_every_pass_ends_the_lock_after_three_retakes() {
    let c = client().await;
    let other = client().await;
    let (a, b) = ("/t/ml-retakes/a", "/t/ml-retakes/b");
    let blocker = InterProcessMutex::new(other.clone(), b)
        .unwrap()
        .lock()
        .await
        .unwrap();
    let blocker_node = blocker.node_path().rsplit('/').next().unwrap().to_owned();
    let multi = InterProcessMultiLock::new(c.clone(), &[a, b]).unwrap();
    let taking = tokio::spawn(async move { multi.lock().await.map(|_| ()) });
    let mut seen_a: Vec<String> = Vec::new();
    let mut seen_b: Vec<String> = vec![blocker_node];
    for _pass in 0..4 {
        // This pass's node on `a` held and its node on `b` waiting, both new.
        let held = new_child(&other, a, &seen_a).await;
        let waiting = new_child(&other, b, &seen_b).await;
        seen_b.push(waiting);
        other.delete(&format!("{a}/{held}"), None).await.unwrap();
        seen_a.push(held);
    }
    let err = bounded(taking).await.unwrap().unwrap_err();
    assert_eq!(
        err,
        Error::Member(MemberError {
            path: a.to_owned(),
            kind: recipe_multilock::LockKind::Mutex,
            error: recipe_mutex::Error::NodeVanished,
        })
    );
    // Nothing of the multi-lock's is left: `b` has the blocker's node only.
    wait_children(&other, a, 0).await;
    wait_children(&other, b, 1).await;
    blocker.release().await.unwrap();
}

/// Waits until `path` has a child not in `seen`, and gives it.
async fn new_child(c: &Client, path: &str, seen: &[String]) -> String {
    bounded(async {
        loop {
            match c.get_children_and_watch(path).await {
                Ok((kids, watcher)) => {
                    if let Some(new) = kids.into_iter().find(|k| !seen.contains(k)) {
                        return new;
                    }
                    watcher.await;
                }
                Err(zk_client::Error::NoNode) => {
                    if let (None, created) = c.exists_and_watch(path).await.unwrap() {
                        created.await;
                    }
                }
                Err(e) => panic!("{e}"),
            }
        }
    })
    .await
}
