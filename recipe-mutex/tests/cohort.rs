//! The cohort mutex (issue 38) against a real ZooKeeper server: local hand-offs with no node
//! each, exclusion with another process's plain mutex, tokens across all holders, the bound
//! that lets other processes in, cancellation that costs nothing at the server, and a node
//! that may be lost never handed on.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use recipe_mutex::{CohortBound, CohortMutex, CohortToken, Error, InterProcessMutex, Loss};
use tokio::task::JoinHandle;
use zk_client::{Client, SessionState};
use zk_testkit::FaultProxy;

mod support;
use support::{bounded, client, client_at, server, until, wait_children, wait_state};

/// How many lock nodes were ever created under `path` (its children version counts creates
/// and deletes: half of it once every node is gone).
async fn creates(c: &Client, path: &str) -> i32 {
    c.exists(path).await.unwrap().map_or(0, |s| s.cversion)
}

/// A local waiter on `cohort`, in a task of its own, once it is queued: the token it gets.
async fn queue_one(cohort: &CohortMutex) -> JoinHandle<Result<CohortToken, Error>> {
    let task = tokio::spawn({
        let cohort = cohort.clone();
        async move { cohort.lock().await.map(|g| g.fencing_token()) }
    });
    waiting(cohort, 1).await;
    task
}

/// Until `n` local waiters wait on `cohort`.
async fn waiting(cohort: &CohortMutex, n: usize) {
    bounded(async {
        while cohort.waiting() < n {
            tokio::task::yield_now().await;
        }
    })
    .await;
}

fn wide() -> CohortBound {
    CohortBound {
        handoffs: 1_000,
        hold: Duration::from_secs(30),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_waiters_pass_the_lock_with_no_node_each_and_exclude_another_process() {
    let path = "/t/cohort/pass";
    let c = client().await;
    let cohort = InterProcessMutex::new(c.clone(), path)
        .unwrap()
        .cohort(wide());
    let other = InterProcessMutex::new(client().await, path).unwrap();
    let busy = Arc::new(AtomicBool::new(false));
    let tokens = Arc::new(StdMutex::new(Vec::<CohortToken>::new()));
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let (cohort, busy, tokens) = (cohort.clone(), busy.clone(), tokens.clone());
        tasks.push(tokio::spawn(async move {
            for _ in 0..25 {
                let g = cohort.lock().await.unwrap();
                assert!(!busy.swap(true, Ordering::SeqCst), "two holders");
                assert!(g.is_valid());
                tokens.lock().unwrap().push(g.fencing_token());
                tokio::task::yield_now().await;
                busy.store(false, Ordering::SeqCst);
                g.release().await.unwrap();
            }
        }));
    }
    // Another process's plain mutex on the same path, in between.
    let plain = {
        let busy = busy.clone();
        tokio::spawn(async move {
            for _ in 0..5 {
                let g = other.lock().await.unwrap();
                assert!(!busy.swap(true, Ordering::SeqCst), "two holders");
                tokio::time::sleep(Duration::from_millis(2)).await;
                busy.store(false, Ordering::SeqCst);
                g.release().await.unwrap();
            }
        })
    };
    for t in tasks {
        bounded(t).await.unwrap();
    }
    bounded(plain).await.unwrap();
    let tokens = tokens.lock().unwrap().clone();
    assert_eq!(tokens.len(), 200);
    assert!(
        tokens.windows(2).all(|w| w[0] < w[1]),
        "(czxid, local) strictly increases across holders: {tokens:?}"
    );
    let nodes = tokens.iter().filter(|t| t.local == 1).count();
    assert!(
        nodes < 100,
        "{nodes} nodes for 200 holds: hand-offs were not local"
    );
    wait_children(&c, path, 0).await;
    // The server's own count: each node made is one create (and one delete).
    let made = creates(&c, path).await / 2;
    assert_eq!(
        made,
        5 + nodes as i32,
        "one node per batch, and the other process's 5"
    );
    assert_eq!(cohort.waiting(), 0);
    assert!(!cohort.is_acquired_in_this_process());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bound_cuts_a_batch_and_lets_another_process_in() {
    let path = "/t/cohort/bound";
    let bound = CohortBound {
        handoffs: 3,
        hold: Duration::from_secs(30),
    };
    let cohort = InterProcessMutex::new(client().await, path)
        .unwrap()
        .cohort(bound);
    let tokens = Arc::new(StdMutex::new(Vec::<CohortToken>::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::new();
    for _ in 0..4 {
        let (cohort, tokens, stop) = (cohort.clone(), tokens.clone(), stop.clone());
        tasks.push(tokio::spawn(async move {
            while !stop.load(Ordering::SeqCst) {
                let g = cohort.lock().await.unwrap();
                tokens.lock().unwrap().push(g.fencing_token());
                tokio::time::sleep(Duration::from_millis(1)).await;
                g.release().await.unwrap();
            }
        }));
    }
    // While the process keeps its tasks contending, another process gets its turns.
    let other = InterProcessMutex::new(client().await, path).unwrap();
    for _ in 0..5 {
        let g = bounded(other.lock()).await.unwrap();
        g.release().await.unwrap();
    }
    stop.store(true, Ordering::SeqCst);
    for t in tasks {
        bounded(t).await.unwrap();
    }
    let tokens = tokens.lock().unwrap().clone();
    let most = tokens.iter().map(|t| t.local).max().unwrap();
    assert!(
        most <= 4,
        "a batch of {most} holders: the bound is 3 hand-offs"
    );
    assert!(most >= 2, "no local hand-off at all");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_local_waiters_cost_nothing_at_the_server() {
    let path = "/t/cohort/cancel";
    let c = client().await;
    let cohort = InterProcessMutex::new(c.clone(), path)
        .unwrap()
        .cohort(wide());
    let holder = cohort.lock().await.unwrap();
    let before = creates(&c, path).await;
    // Twenty local waiters, dropped at once or timed out: no request, no node.
    let mut waiters = Vec::new();
    for _ in 0..10 {
        let cohort = cohort.clone();
        waiters.push(tokio::spawn(async move { cohort.lock().await.map(drop) }));
    }
    for _ in 0..10 {
        let cohort = cohort.clone();
        let timed = cohort
            .try_lock_for(Duration::from_millis(50))
            .await
            .unwrap();
        assert!(timed.is_none());
    }
    waiting(&cohort, 10).await;
    for w in &waiters {
        w.abort();
    }
    for w in waiters {
        assert!(w.await.unwrap_err().is_cancelled());
    }
    assert_eq!(cohort.waiting(), 0);
    assert_eq!(
        creates(&c, path).await,
        before,
        "a local waiter made a node"
    );
    holder.release().await.unwrap();
    wait_children(&c, path, 0).await;

    // Waiters behind another process: one node for all of them, gone when they all leave.
    let other = InterProcessMutex::new(client().await, path).unwrap();
    let held = other.lock().await.unwrap();
    let mut waiters = Vec::new();
    for _ in 0..3 {
        let cohort = cohort.clone();
        waiters.push(tokio::spawn(async move { cohort.lock().await.map(drop) }));
    }
    wait_children(&c, path, 2).await;
    for w in &waiters {
        w.abort();
    }
    wait_children(&c, path, 1).await;
    held.release().await.unwrap();
    wait_children(&c, path, 0).await;
    // A free lock is taken even with a zero timeout (the attempt's replies get a grace).
    let g = bounded(cohort.try_lock_for(Duration::ZERO))
        .await
        .unwrap()
        .expect("a free lock with a zero timeout");
    // Busy, locally: a zero timeout gives up.
    assert!(cohort.try_lock_for(Duration::ZERO).await.unwrap().is_none());
    drop(g);
    wait_children(&c, path, 0).await;
    // The cohort still works, and `Duration::MAX` is no deadline.
    let g = bounded(cohort.try_lock_for(Duration::MAX))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(g.local_sequence(), 1);
    drop(g);
    wait_children(&c, path, 0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_that_may_be_lost_is_released_not_handed_on() {
    let proxy = FaultProxy::start(server().addr()).unwrap();
    let path = "/t/cohort/unsure";
    let observer = client().await;
    let c = client_at(&proxy.addr().to_string(), Duration::from_secs(4)).await;
    let cohort = InterProcessMutex::new(c.clone(), path)
        .unwrap()
        .cohort(wide());
    let first = cohort.lock().await.unwrap();
    let first_token = first.fencing_token();
    let next = queue_one(&cohort).await;
    proxy.stall();
    assert_eq!(bounded(first.lost()).await, Loss::Unsure);
    // Released while unsure: the node goes (once the session is back) and the waiter takes a
    // new one, instead of inheriting a hold nobody can vouch for.
    drop(first);
    proxy.pass();
    let token = bounded(next).await.unwrap().unwrap();
    assert_eq!(token.local, 1, "handed on while unsure: {token:?}");
    assert!(token > first_token);
    wait_children(&observer, path, 0).await;

    // The session expires while held, a local waiter behind: it gets the session's end.
    let holder = cohort.lock().await.unwrap();
    let next = queue_one(&cohort).await;
    proxy.stall();
    wait_children(&observer, path, 0).await; // the server expired the session
    proxy.pass();
    wait_state(&c, |s| s == SessionState::Expired).await;
    assert_eq!(bounded(holder.lost()).await, Loss::Lost);
    drop(holder);
    assert_eq!(bounded(next).await.unwrap(), Err(Error::SessionExpired));
    assert_eq!(cohort.waiting(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guard_dropped_off_the_runtime_hands_on_to_a_local_waiter() {
    let path = "/t/cohort/off-runtime";
    let c = client().await;
    let cohort = InterProcessMutex::new(c.clone(), path)
        .unwrap()
        .cohort(wide());
    let g = cohort.lock().await.unwrap();
    let czxid = g.fencing_token().czxid;
    let next = queue_one(&cohort).await;
    std::thread::spawn(move || drop(g)).join().unwrap();
    let token = bounded(next).await.unwrap().unwrap();
    assert_eq!(token, CohortToken { czxid, local: 2 });
    wait_children(&c, path, 0).await;
    // And with nobody waiting, a guard dropped on a plain thread releases the node.
    let g = cohort.lock().await.unwrap();
    std::thread::spawn(move || drop(g)).join().unwrap();
    wait_children(&c, path, 0).await;
}

/// The defect: with a bound of no hand-off, a guard dropped inside a short-lived runtime's
/// `block_on` started the next attempt on that runtime, which then ended with it: the local
/// waiter waited forever on a free lock. The attempt now runs where the waiters run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guard_dropped_inside_a_short_lived_runtime_strands_no_waiter() {
    let path = "/t/cohort/short-runtime";
    let c = client().await;
    let none = CohortBound {
        handoffs: 0,
        hold: Duration::from_secs(30),
    };
    let cohort = InterProcessMutex::new(c.clone(), path)
        .unwrap()
        .cohort(none);
    let g = cohort.lock().await.unwrap();
    let czxid = g.fencing_token().czxid;
    let next = queue_one(&cohort).await;
    std::thread::spawn(move || {
        let short = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        short.block_on(async move { drop(g) });
        // `short` ends here, with whatever was spawned on it.
    })
    .join()
    .unwrap();
    let token = bounded(next).await.unwrap().unwrap();
    assert_eq!(token.local, 1, "a node of its own");
    assert!(token.czxid > czxid);
    wait_children(&c, path, 0).await;
}

/// The node's attempt runs on the client's runtime, so it outlives the short-lived runtime
/// of the waiter (or the releaser) that happened to start it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attempt_outlives_the_short_lived_runtime_of_a_waiter() {
    let path = "/t/cohort/attempt-outlives";
    let c = client().await;
    let other = InterProcessMutex::new(client().await, path).unwrap();
    let none = CohortBound {
        handoffs: 0,
        hold: Duration::from_secs(30),
    };
    let cohort = InterProcessMutex::new(c.clone(), path)
        .unwrap()
        .cohort(none);
    let g = cohort.lock().await.unwrap();
    let waiter = queue_one(&cohort).await;
    // A second waiter runs on a short-lived runtime of its own, until told to stop.
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let short = std::thread::spawn({
        let cohort = cohort.clone();
        move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                tokio::select! {
                    _ = cohort.lock() => panic!("the short-lived waiter held"),
                    _ = stopped => {}
                }
            });
        }
    });
    until(|| cohort.waiting() >= 2).await;
    // Another process queues first, so the next attempt waits; then the holder goes, and
    // the attempt starts.
    let blocker = tokio::spawn(async move { other.lock().await.unwrap() });
    wait_children(&c, path, 2).await;
    drop(g);
    let blocker = bounded(blocker).await.unwrap();
    wait_children(&c, path, 2).await; // the attempt's node, behind the blocker's
    // The short-lived runtime ends, with its waiter; the attempt goes on.
    stop.send(()).unwrap();
    short.join().unwrap();
    blocker.release().await.unwrap();
    let token = bounded(waiter).await.unwrap().unwrap();
    assert_eq!(token.local, 1);
    assert_eq!(cohort.waiting(), 0);
    wait_children(&c, path, 0).await;
}

/// An attempt dropped before it reports (here: the runtime its client runs on shuts down)
/// tells every waiter left (`AttemptDropped`) instead of leaving it waiting forever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attempt_dropped_before_it_reports_tells_the_waiters() {
    let path = "/t/cohort/attempt-dropped";
    let observer = client().await;
    let blocker = InterProcessMutex::new(observer.clone(), path)
        .unwrap()
        .lock()
        .await
        .unwrap();
    // The cohort's client runs on a runtime of its own, until told to stop.
    let (give, got) = tokio::sync::oneshot::channel();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let hosts = server().connect_string();
    let owner = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            give.send(client_at(&hosts, Duration::from_secs(2)).await)
                .unwrap();
            let _ = stopped.await;
        });
    });
    let c = got.await.unwrap();
    let cohort = InterProcessMutex::new(c, path).unwrap().cohort(wide());
    let waiter = queue_one(&cohort).await;
    wait_children(&observer, path, 2).await; // the attempt waits behind the blocker
    stop.send(()).unwrap();
    owner.join().unwrap();
    assert_eq!(
        bounded(waiter).await.unwrap(),
        Err(Error::AttemptDropped),
        "a waiter left waiting on a dropped attempt"
    );
    assert_eq!(cohort.waiting(), 0);
    blocker.release().await.unwrap();
    // The dropped session's node goes with its session.
    wait_children(&observer, path, 0).await;
}
