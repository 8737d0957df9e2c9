//! The lock metrics (feature `metrics`), counted exactly against a real ZooKeeper server
//! started by the tests: an acquire and its release, a `try_lock_for` timeout, an acquire
//! dropped mid-way, a held node deleted by another client, a hold that ends while
//! disconnected, a cohort batch of 3 local hand-offs. Each test runs on its own
//! current-thread runtime inside `metrics`'s `with_local_recorder` (`support/recorder.rs`),
//! so the tests do not see each other's figures.

#![cfg(feature = "metrics")]
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::time::Duration;

use recipe_mutex::metrics::{
    ACQUIRE_CANCELLATIONS_TOTAL, ACQUIRE_FAILURES_TOTAL, ACQUIRE_TIMEOUTS_TOTAL,
    ACQUIRE_WAIT_SECONDS, ACQUISITIONS_TOTAL, COHORT_BATCH_HANDOFFS, HOLD_SECONDS, LOSSES_TOTAL,
};
use recipe_mutex::{CohortBound, InterProcessMutex, Loss};
use zk_testkit::FaultProxy;

mod support;
use support::{bounded, client, client_at, server, until, wait_children};
#[path = "support/recorder.rs"]
mod recorder;
use recorder::{recorded, s};

#[test]
fn an_acquire_and_its_release_count_one_acquisition_and_one_hold() {
    let path = "/t/metrics/cycle";
    let keep = recorded(|| async move {
        let c = client().await;
        let m = InterProcessMutex::new(c.clone(), path).unwrap();
        let g = m.lock().await.unwrap();
        g.release().await.unwrap();
        c.close().await.unwrap();
    });
    assert_eq!(
        keep.counters(),
        [format!("{} = 1", s(ACQUISITIONS_TOTAL, "recipe=mutex"))]
    );
    assert_eq!(
        keep.histogram_counts(),
        [
            format!(
                "{} x 1",
                s(ACQUIRE_WAIT_SECONDS, "outcome=acquired,recipe=mutex")
            ),
            format!("{} x 1", s(HOLD_SECONDS, "recipe=mutex")),
        ]
    );
    let hold = keep.histogram(&s(HOLD_SECONDS, "recipe=mutex"));
    assert!(hold[0] >= 0.0 && hold[0] < 60.0, "{hold:?}");
}

#[test]
fn a_try_lock_for_that_times_out_counts_one_timeout() {
    let path = "/t/metrics/timeout";
    let keep = recorded(|| async move {
        let holder = client().await;
        let g = InterProcessMutex::new(holder.clone(), path)
            .unwrap()
            .lock()
            .await
            .unwrap();
        let c = client().await;
        let m = InterProcessMutex::new(c.clone(), path).unwrap();
        let none = m.try_lock_for(Duration::from_millis(300)).await.unwrap();
        assert!(none.is_none());
        g.release().await.unwrap();
        wait_children(&c, path, 0).await;
        c.close().await.unwrap();
        holder.close().await.unwrap();
    });
    assert_eq!(keep.counter(&s(ACQUIRE_TIMEOUTS_TOTAL, "recipe=mutex")), 1);
    assert_eq!(keep.counter(&s(ACQUISITIONS_TOTAL, "recipe=mutex")), 1);
    assert_eq!(
        keep.histogram(&s(ACQUIRE_WAIT_SECONDS, "outcome=timeout,recipe=mutex"))
            .len(),
        1
    );
    assert_eq!(
        keep.counter(&s(ACQUIRE_CANCELLATIONS_TOTAL, "recipe=mutex")),
        0
    );
    assert_eq!(keep.counter(&s(ACQUIRE_FAILURES_TOTAL, "recipe=mutex")), 0);
}

#[test]
fn an_acquire_dropped_mid_way_counts_one_cancellation() {
    let path = "/t/metrics/dropped";
    let keep = recorded(|| async move {
        let holder = client().await;
        let g = InterProcessMutex::new(holder.clone(), path)
            .unwrap()
            .lock()
            .await
            .unwrap();
        let c = client().await;
        let m = InterProcessMutex::new(c.clone(), path).unwrap();
        let mut acquiring = Box::pin(m.lock());
        // Polled until its node is queued behind the holder's, then dropped.
        tokio::select! {
            taken = &mut acquiring => panic!("took a held lock: {taken:?}"),
            () = wait_children(&holder, path, 2) => {}
        }
        drop(acquiring);
        // Its node is deleted in the background.
        wait_children(&holder, path, 1).await;
        g.release().await.unwrap();
        c.close().await.unwrap();
        holder.close().await.unwrap();
    });
    assert_eq!(
        keep.counter(&s(ACQUIRE_CANCELLATIONS_TOTAL, "recipe=mutex")),
        1
    );
    assert_eq!(
        keep.histogram(&s(ACQUIRE_WAIT_SECONDS, "outcome=cancelled,recipe=mutex"))
            .len(),
        1
    );
    assert_eq!(keep.counter(&s(ACQUISITIONS_TOTAL, "recipe=mutex")), 1);
    assert_eq!(keep.counter(&s(ACQUIRE_TIMEOUTS_TOTAL, "recipe=mutex")), 0);
}

#[test]
fn a_held_node_deleted_by_another_client_counts_one_loss_of_kind_deleted() {
    let path = "/t/metrics/deleted";
    let deleted = s(LOSSES_TOTAL, "kind=deleted,recipe=mutex");
    let keep = recorded(|| async move {
        let c = client().await;
        let other = client().await;
        let g = InterProcessMutex::new(c.clone(), path)
            .unwrap()
            .lock()
            .await
            .unwrap();
        other.delete(g.node_path(), None).await.unwrap();
        assert_eq!(bounded(g.lost()).await, Loss::Deleted);
        g.release().await.unwrap();
        c.close().await.unwrap();
        other.close().await.unwrap();
    });
    assert_eq!(keep.counter(&deleted), 1, "{:?}", keep.counters());
    assert_eq!(
        keep.counter(&s(LOSSES_TOTAL, "kind=lost,recipe=mutex")),
        0,
        "a session closed after the release loses nothing"
    );
    assert_eq!(
        keep.counter(&s(LOSSES_TOTAL, "kind=unsure,recipe=mutex")),
        0
    );
    assert_eq!(keep.histogram(&s(HOLD_SECONDS, "recipe=mutex")).len(), 1);
}

#[test]
fn a_hold_that_ends_while_disconnected_counts_one_loss_of_kind_unsure() {
    let path = "/t/metrics/unsure";
    let keep = recorded(|| async move {
        let proxy = FaultProxy::start(server().addr()).unwrap();
        let c = client_at(&proxy.addr().to_string(), Duration::from_secs(4)).await;
        let observer = client().await;
        let g = InterProcessMutex::new(c.clone(), path)
            .unwrap()
            .lock()
            .await
            .unwrap();
        proxy.stall();
        assert_eq!(bounded(g.lost()).await, Loss::Unsure);
        // Dropped while unsure; its delete goes out once the session is back.
        drop(g);
        proxy.pass();
        wait_children(&observer, path, 0).await;
        c.close().await.unwrap();
        observer.close().await.unwrap();
    });
    assert_eq!(
        keep.counter(&s(LOSSES_TOTAL, "kind=unsure,recipe=mutex")),
        1,
        "{:?}",
        keep.counters()
    );
    assert_eq!(keep.counter(&s(LOSSES_TOTAL, "kind=lost,recipe=mutex")), 0);
    assert_eq!(
        keep.counter(&s(LOSSES_TOTAL, "kind=deleted,recipe=mutex")),
        0
    );
}

#[test]
fn a_cohort_batch_of_four_holders_counts_three_local_hand_offs() {
    let path = "/t/metrics/cohort";
    let keep = recorded(|| async move {
        let c = client().await;
        let bound = CohortBound {
            handoffs: 1_000,
            hold: Duration::from_secs(30),
        };
        let cohort = InterProcessMutex::new(c.clone(), path)
            .unwrap()
            .cohort(bound);
        let first = cohort.lock().await.unwrap();
        let waiters: Vec<_> = (0..3)
            .map(|_| {
                let cohort = cohort.clone();
                tokio::spawn(async move {
                    let g = cohort.lock().await.unwrap();
                    let local = g.local_sequence();
                    g.release().await.unwrap();
                    local
                })
            })
            .collect();
        until(|| cohort.waiting() == 3).await;
        first.release().await.unwrap();
        let mut locals = Vec::new();
        for w in waiters {
            locals.push(bounded(w).await.unwrap());
        }
        locals.sort_unstable();
        assert_eq!(
            locals,
            [2, 3, 4],
            "handed on locally, not through the server"
        );
        wait_children(&c, path, 0).await;
        c.close().await.unwrap();
    });
    assert_eq!(
        keep.histogram(&s(COHORT_BATCH_HANDOFFS, "recipe=mutex")),
        [3.0]
    );
    // One node, taken once and held once, for four local holders.
    assert_eq!(keep.counter(&s(ACQUISITIONS_TOTAL, "recipe=mutex")), 1);
    assert_eq!(keep.histogram(&s(HOLD_SECONDS, "recipe=mutex")).len(), 1);
}
