//! The semaphore's lock metrics (feature `metrics`), counted exactly against a real
//! ZooKeeper server: an acquisition of two leases is one acquisition of recipe `semaphore`
//! and two holds; a semaphore-mutex's lease deleted by another client is one loss of kind
//! `deleted`.

#![cfg(feature = "metrics")]
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use recipe_mutex::Loss;
use recipe_mutex::metrics::{ACQUIRE_WAIT_SECONDS, ACQUISITIONS_TOTAL, HOLD_SECONDS, LOSSES_TOTAL};
use recipe_semaphore::{InterProcessSemaphoreMutex, InterProcessSemaphoreV2};

#[path = "../../recipe-mutex/tests/support/mod.rs"]
mod support;
use support::{bounded, client, wait_children};
#[path = "../../recipe-mutex/tests/support/recorder.rs"]
mod recorder;
use recorder::{recorded, s};

#[test]
fn two_leases_taken_together_are_one_acquisition_and_two_holds() {
    let path = "/t/metrics/sem";
    let keep = recorded(|| async move {
        let c = client().await;
        let pool = InterProcessSemaphoreV2::new(c.clone(), path, 3).unwrap();
        let leases = pool.acquire_many(2).await.unwrap();
        assert_eq!(leases.len(), 2);
        for lease in leases {
            lease.release().await.unwrap();
        }
        wait_children(&c, &format!("{path}/leases"), 0).await;
        c.close().await.unwrap();
    });
    assert_eq!(
        keep.counters(),
        [format!("{} = 1", s(ACQUISITIONS_TOTAL, "recipe=semaphore"))]
    );
    assert_eq!(
        keep.histogram(&s(
            ACQUIRE_WAIT_SECONDS,
            "outcome=acquired,recipe=semaphore"
        ))
        .len(),
        1
    );
    assert_eq!(
        keep.histogram(&s(HOLD_SECONDS, "recipe=semaphore")).len(),
        2
    );
}

#[test]
fn a_semaphore_mutex_lease_deleted_by_another_client_is_one_loss_of_kind_deleted() {
    let path = "/t/metrics/sem-mutex";
    let keep = recorded(|| async move {
        let c = client().await;
        let other = client().await;
        let m = InterProcessSemaphoreMutex::new(c.clone(), path).unwrap();
        let g = m.lock().await.unwrap();
        other.delete(g.node_path(), None).await.unwrap();
        assert_eq!(bounded(g.lost()).await, Loss::Deleted);
        g.release().await.unwrap();
        c.close().await.unwrap();
        other.close().await.unwrap();
    });
    assert_eq!(
        keep.counter(&s(LOSSES_TOTAL, "kind=deleted,recipe=semaphore")),
        1,
        "{:?}",
        keep.counters()
    );
    assert_eq!(keep.counter(&s(ACQUISITIONS_TOTAL, "recipe=semaphore")), 1);
    assert_eq!(
        keep.histogram(&s(HOLD_SECONDS, "recipe=semaphore")).len(),
        1
    );
}
