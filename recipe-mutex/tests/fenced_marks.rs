//! A fenced write refused because the node is gone marks the hold dead even when no watch
//! told it (the watch taken out with the `NoNodeWatch` plant, the way a watch event still in
//! flight would leave it): the holder's `lost()` says `Deleted`, and a cohort does not hand
//! the node on. Its own test binary: the plant switch is the process's.

#![cfg(feature = "plant")]
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::time::Duration;

use recipe_mutex::plant::{self, Plant};
use recipe_mutex::{CohortBound, Error, InterProcessMutex, Loss};
use zk_client::{CreateMode, CreateOptions, Op};

mod support;
use support::{bounded, client, until, wait_children};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_fenced_write_marks_the_hold_and_the_cohort_hands_on_no_dead_node() {
    plant::set(Some(Plant::NoNodeWatch));
    let path = "/t/fenced-marks/cohort";
    let data = "/fenced-marks-data";
    let c = client().await;
    let other = client().await;
    match other
        .create(data, b"0", &CreateOptions::new(CreateMode::Persistent))
        .await
    {
        Ok(_) | Err(zk_client::Error::NodeExists) => {}
        Err(e) => panic!("{e}"),
    }
    let wide = CohortBound {
        handoffs: 1_000,
        hold: Duration::from_secs(30),
    };
    let cohort = InterProcessMutex::new(c.clone(), path)
        .unwrap()
        .cohort(wide);
    let first = cohort.lock().await.unwrap();
    let dead = first.node_path().to_owned();
    let next = tokio::spawn({
        let cohort = cohort.clone();
        async move { cohort.lock().await }
    });
    until(|| cohort.waiting() > 0).await;
    other.delete(&dead, None).await.unwrap();
    // No watch: nothing tells the holder until its fenced write is refused.
    assert!(first.is_valid(), "told without a watch");
    let refused = first
        .fenced_multi(&[Op::set_data(data, "stale", None)])
        .await
        .unwrap_err();
    assert!(matches!(refused, Error::LockLost { .. }), "{refused:?}");
    assert_eq!(bounded(first.lost()).await, Loss::Deleted);
    assert!(!first.is_valid());
    first.release().await.unwrap();
    let second = bounded(next).await.unwrap().unwrap();
    assert_ne!(second.node_path(), dead, "the dead node was handed on");
    assert_eq!(second.local_sequence(), 1);
    second
        .fenced_multi(&[Op::set_data(data, "fresh", None)])
        .await
        .unwrap();
    second.release().await.unwrap();
    plant::set(None);
    wait_children(&other, path, 0).await;
}
