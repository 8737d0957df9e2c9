//! Admission (`layer::driver::admission`) against a real server: a burst of acquires on one
//! client has at most `ACQUIRES_IN_FLIGHT` attempts with requests out at once, and an attempt
//! waiting behind a holder gives its slot back, so waiters can never starve a free lock.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use recipe_mutex::InterProcessMutex;
use recipe_mutex::layer::driver::admission::{ACQUIRES_IN_FLIGHT, admitted};
use tokio::task::JoinSet;
use zk_testkit::FaultProxy;

mod support;
use support::{bounded, client, client_at, server, until, wait_children};

/// `n` acquires of free locks `<dir>/l-<i>` on one client whose server a stalled proxy
/// silences (the parents made first, so that each attempt's first requests are its own),
/// returned once every task has started and the bound is admitted.
struct Burst {
    setup: zk_client::Client,
    proxy: FaultProxy,
    client: zk_client::Client,
    tasks: JoinSet<recipe_mutex::MutexGuard>,
}

async fn stalled_burst(dir: &str, n: usize) -> Burst {
    let setup = client().await;
    recipe_mutex::layer::driver::create_parents(&setup, dir)
        .await
        .unwrap();
    let proxy = FaultProxy::start(server().addr()).unwrap();
    let c = client_at(&proxy.addr().to_string(), Duration::from_secs(30)).await;
    proxy.stall();
    let started = Arc::new(AtomicUsize::new(0));
    let mut tasks = JoinSet::new();
    for i in 0..n {
        let mutex = InterProcessMutex::new(c.clone(), &format!("{dir}/l-{i}")).unwrap();
        let started = Arc::clone(&started);
        tasks.spawn(async move {
            started.fetch_add(1, Ordering::SeqCst);
            mutex.lock().await.unwrap()
        });
    }
    until(|| started.load(Ordering::SeqCst) == n && admitted(&c) == ACQUIRES_IN_FLIGHT).await;
    Burst {
        setup,
        proxy,
        client: c,
        tasks,
    }
}

/// With the server silent (a stalled proxy), twice the bound of acquires on free locks: exactly
/// the bound are admitted, the rest wait for a slot, and one with a deadline starts without a
/// slot once its deadline passes; once the server answers, every one holds and every slot is
/// back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_is_admitted_the_bound_at_a_time() {
    let n = 2 * ACQUIRES_IN_FLIGHT;
    let Burst {
        setup,
        proxy,
        client: c,
        mut tasks,
    } = stalled_burst("/admission/burst", n).await;
    // Every task has run up to its first wait: still the bound, the others waiting for a slot.
    for _ in 0..100 {
        tokio::task::yield_now().await;
    }
    assert_eq!(admitted(&c), ACQUIRES_IN_FLIGHT);
    // An acquire with a deadline does not wait for a slot past it: it starts without one, and
    // returns (not holding: the server is silent) while every slot is still taken.
    let late = InterProcessMutex::new(c.clone(), "/admission/burst/late").unwrap();
    let gave_up = bounded(late.try_lock_for(Duration::from_millis(100))).await;
    assert!(!matches!(gave_up, Ok(Some(_))), "{gave_up:?}");
    assert_eq!(admitted(&c), ACQUIRES_IN_FLIGHT);
    proxy.pass();
    let mut guards = Vec::new();
    while let Some(guard) = bounded(tasks.join_next()).await {
        guards.push(guard.unwrap());
    }
    assert_eq!(guards.len(), n);
    assert_eq!(admitted(&c), 0);
    for guard in guards {
        guard.release().await.unwrap();
    }
    c.close().await.unwrap();
    setup.close().await.unwrap();
}

/// More waiters than slots, each behind another client's holder: every one gives its slot
/// back once it waits, so a free lock of the same client is still taken at once; then each
/// waiter holds as its holder releases.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_give_their_slots_back() {
    let holder = client().await;
    let waiter = client().await;
    let n = ACQUIRES_IN_FLIGHT + 8;
    let mut held = Vec::new();
    for i in 0..n {
        let path = format!("/admission/busy/l-{i}");
        held.push(
            bounded(
                InterProcessMutex::new(holder.clone(), &path)
                    .unwrap()
                    .lock(),
            )
            .await
            .unwrap(),
        );
    }
    let mut tasks = JoinSet::new();
    for i in 0..n {
        let mutex =
            InterProcessMutex::new(waiter.clone(), &format!("/admission/busy/l-{i}")).unwrap();
        tasks.spawn(async move { mutex.lock().await.unwrap() });
    }
    // Every waiter's node is queued behind its holder's.
    for i in 0..n {
        wait_children(&holder, &format!("/admission/busy/l-{i}"), 2).await;
    }
    until(|| admitted(&waiter) == 0).await;
    let free = InterProcessMutex::new(waiter.clone(), "/admission/free").unwrap();
    let guard = bounded(free.lock()).await.unwrap();
    guard.release().await.unwrap();
    for guard in held {
        guard.release().await.unwrap();
    }
    let mut taken = 0;
    while let Some(guard) = bounded(tasks.join_next()).await {
        guard.unwrap().release().await.unwrap();
        taken += 1;
    }
    assert_eq!(taken, n);
    waiter.close().await.unwrap();
    holder.close().await.unwrap();
}

/// Dropped at either await of admission (waiting for a slot, or admitted with its requests
/// out): every slot comes back at once, before the server answers, and what the admitted
/// attempts created is deleted once it does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_attempts_give_their_slots_back() {
    let n = ACQUIRES_IN_FLIGHT + 16;
    let Burst {
        setup,
        proxy,
        client: c,
        mut tasks,
    } = stalled_burst("/admission/dropped", n).await;
    tasks.abort_all();
    while bounded(tasks.join_next()).await.is_some() {}
    // Still silent: the slots are back all the same (the background owns the requests out).
    until(|| admitted(&c) == 0).await;
    proxy.pass();
    for i in 0..n {
        wait_children(&setup, &format!("/admission/dropped/l-{i}"), 0).await;
    }
    let guard = bounded(
        InterProcessMutex::new(c.clone(), "/admission/dropped/after")
            .unwrap()
            .lock(),
    )
    .await
    .unwrap();
    guard.release().await.unwrap();
    c.close().await.unwrap();
    setup.close().await.unwrap();
}
