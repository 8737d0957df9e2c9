//! A holder whose node is deleted while its session lives (another client's bug, an operator's
//! `deleteall`) is told: `lost()` says `Deleted`, `is_valid()` is false, a fenced write is
//! refused with `LockLost` and nothing sent; the same when the delete happens while the
//! holder is disconnected (the restored watch tells on the reconnect); a cohort never hands
//! the dead node on. Against a real ZooKeeper server started by the tests.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::time::Duration;

use recipe_mutex::{CohortBound, Error, InterProcessMutex, Loss};
use zk_client::{Client, CreateMode, CreateOptions, Op, SessionState};
use zk_testkit::FaultProxy;

mod support;
use support::{bounded, client, client_at, server, until, wait_children, wait_state};

/// A persistent node at `path` holding "0", for fenced writes.
async fn data_node(c: &Client, path: &str) {
    let persistent = CreateOptions::new(CreateMode::Persistent);
    match c.create(path, b"0", &persistent).await {
        Ok(_) | Err(zk_client::Error::NodeExists) => {}
        Err(e) => panic!("{e}"),
    }
    c.set_data(path, b"0", None).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_is_told_when_another_client_deletes_its_node() {
    let path = "/t/deleted/mutex";
    let data = "/deleted-mutex-data";
    let c = client().await;
    let other = client().await;
    data_node(&other, data).await;
    let m = InterProcessMutex::new(c.clone(), path).unwrap();
    let g = m.lock().await.unwrap();
    assert!(g.is_valid());
    let waiter = InterProcessMutex::new(other.clone(), path).unwrap();
    let waiting = tokio::spawn(async move { waiter.lock().await });
    wait_children(&other, path, 2).await;
    // An operator's delete: the waiter is granted at once, and the holder must know.
    other.delete(g.node_path(), None).await.unwrap();
    assert_eq!(bounded(g.lost()).await, Loss::Deleted);
    assert!(!g.is_valid());
    assert_eq!(c.state(), SessionState::Connected, "the session lives on");
    let refused = g
        .fenced_multi(&[Op::set_data(data, "stale", None)])
        .await
        .unwrap_err();
    assert!(
        matches!(&refused, Error::LockLost { why, .. } if why.contains("its node is gone")),
        "{refused:?}"
    );
    let g2 = bounded(waiting).await.unwrap().unwrap();
    assert!(g2.is_valid());
    assert_eq!(&other.get_data(data).await.unwrap().0[..], b"0");
    // Releasing a hold whose node is gone is no error: there is nothing left to delete.
    g.release().await.unwrap();
    g2.release().await.unwrap();
    wait_children(&other, path, 0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_deleted_while_the_holder_is_disconnected_is_told_on_the_reconnect() {
    let proxy = FaultProxy::start(server().addr()).unwrap();
    let path = "/t/deleted/offline";
    let other = client().await;
    let c = client_at(&proxy.addr().to_string(), Duration::from_secs(10)).await;
    let g = InterProcessMutex::new(c.clone(), path)
        .unwrap()
        .lock()
        .await
        .unwrap();
    proxy.stall();
    assert_eq!(bounded(g.lost()).await, Loss::Unsure);
    other.delete(g.node_path(), None).await.unwrap();
    proxy.pass();
    // The client reconnects (the session lived). Whether the watch was set before the stall
    // (restored on the reconnect, the server firing it for a node gone meanwhile) or its read
    // failed for want of a connection (sent again once connected), the holder learns now.
    wait_state(&c, |s| s == SessionState::Connected).await;
    assert_eq!(bounded(g.lost()).await, Loss::Deleted);
    assert!(!g.is_valid());
    g.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revocable_holder_hears_the_revoke_and_then_the_delete_on_one_watch() {
    let path = "/t/deleted/revocable";
    let c = client().await;
    let other = client().await;
    let m = InterProcessMutex::new(c.clone(), path).unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    m.make_revocable(move || {
        let _ = tx.send(());
    });
    let g = m.lock().await.unwrap();
    recipe_mutex::revoke(&other, g.node_path()).await.unwrap();
    bounded(rx.recv()).await.unwrap();
    assert!(g.is_valid(), "a revoke is a request, not a loss");
    other.delete(g.node_path(), None).await.unwrap();
    assert_eq!(bounded(g.lost()).await, Loss::Deleted);
    assert!(rx.try_recv().is_err(), "the listener is called once");
    drop(g);
    wait_children(&other, path, 0).await;
}

/// The cohort's defect: the dead node was handed from local holder to local holder, each one
/// `is_valid()`. Now the holder is told, and the next local waiter gets a new node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cohort_never_hands_on_a_node_deleted_under_it() {
    let path = "/t/deleted/cohort";
    let c = client().await;
    let other = client().await;
    let wide = CohortBound {
        handoffs: 1_000,
        hold: Duration::from_secs(30),
    };
    let cohort = InterProcessMutex::new(c.clone(), path)
        .unwrap()
        .cohort(wide);
    let first = cohort.lock().await.unwrap();
    let dead = first.node_path().to_owned();
    let first_token = first.fencing_token();
    let next = tokio::spawn({
        let cohort = cohort.clone();
        async move { cohort.lock().await }
    });
    until(|| cohort.waiting() > 0).await;
    other.delete(&dead, None).await.unwrap();
    assert_eq!(bounded(first.lost()).await, Loss::Deleted);
    assert!(!first.is_valid());
    first.release().await.unwrap();
    let second = bounded(next).await.unwrap().unwrap();
    assert_ne!(second.node_path(), dead, "the dead node was handed on");
    assert_eq!(second.local_sequence(), 1, "a node of its own");
    assert!(second.is_valid());
    assert!(second.fencing_token() > first_token);
    second.release().await.unwrap();
    wait_children(&other, path, 0).await;
}
