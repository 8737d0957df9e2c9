//! Our own recipes' histories audited: every hold a client had is a grant in the record, no
//! more, each ended by its release, with no overlap (the layout and the rules are Curator's,
//! so the auditor reads ours and Curator's alike).

#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use recipe_mutex::InterProcessMutex;
use recipe_semaphore::InterProcessSemaphoreV2;
use zk_client::Client;
use zk_lock_audit::datadir::{Start, read_into};
use zk_lock_audit::replay::{Audit, EndCause, EventKind, History, LockHistory};
use zk_testkit::ZkServer;

const BOUND: Duration = Duration::from_secs(60);

async fn client(zk: &ZkServer) -> Client {
    Client::builder()
        .hosts(zk.connect_string())
        .session_timeout(Duration::from_secs(20))
        .connect()
        .await
        .unwrap()
}

fn name(path: &str) -> String {
    path.rsplit('/').next().unwrap().to_owned()
}

fn granted(l: &LockHistory) -> BTreeSet<String> {
    l.events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Granted { .. }))
        .map(|e| e.node.clone())
        .collect()
}

fn all_released(l: &LockHistory) -> bool {
    l.events.iter().all(|e| match e.kind {
        EventKind::Ended { cause, .. } => cause == EndCause::OwnDelete,
        _ => true,
    })
}

fn lock<'h>(h: &'h History, path: &str) -> &'h LockHistory {
    h.locks.iter().find(|l| l.path == path).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_mutex_and_semaphore_holds_are_the_records_grants() {
    let zk = tokio::task::block_in_place(ZkServer::start).unwrap();
    let (mutex_path, sem_path) = ("/ours/mutex", "/ours/sem");
    let held = Arc::new(Mutex::new((BTreeSet::new(), BTreeSet::new())));
    let mut tasks = Vec::new();
    for _ in 0..3 {
        let c = client(&zk).await;
        let held = held.clone();
        tasks.push(tokio::spawn(async move {
            let m = InterProcessMutex::new(c.clone(), mutex_path).unwrap();
            let s = InterProcessSemaphoreV2::new(c, sem_path, 2).unwrap();
            for _ in 0..4 {
                let g = m.lock().await.unwrap();
                held.lock().unwrap().0.insert(name(g.node_path()));
                tokio::time::sleep(Duration::from_millis(5)).await;
                g.release().await.unwrap();
                let lease = s.acquire().await.unwrap();
                held.lock().unwrap().1.insert(name(lease.node_path()));
                tokio::time::sleep(Duration::from_millis(20)).await;
                lease.release().await.unwrap();
            }
        }));
    }
    for t in tasks {
        tokio::time::timeout(BOUND, t).await.unwrap().unwrap();
    }
    let (mutex_holds, leases) = held.lock().unwrap().clone();
    assert_eq!((mutex_holds.len(), leases.len()), (12, 12));

    for size in [None, Some(2)] {
        let mut audit = Audit::new(vec!["/ours".into()]);
        if let Some(n) = size {
            audit = audit.with_leases(sem_path, n);
        }
        read_into(&zk.data_dir(), Start::Oldest, &mut audit).unwrap();
        let h = audit.finish();
        assert_eq!(h.anomalies, [], "leases {size:?}");
        let m = lock(&h, mutex_path);
        assert_eq!(granted(m), mutex_holds);
        assert!(all_released(m));
        assert!(m.live.is_empty());
        let l = lock(&h, &format!("{sem_path}/leases"));
        assert_eq!(granted(l), leases, "leases {size:?}");
        assert!(all_released(l));
        let inner = lock(&h, &format!("{sem_path}/locks"));
        assert_eq!(granted(inner).len(), 12, "one inner-lock hold per lease");
    }
}

/// Our read/write lock's downgrade (Curator 5.5's read node, level with the write node): the
/// writer's read node holds from its creation, a writer queued behind stays out until the
/// read is released, and nothing overlaps.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_downgrade_is_read_as_one_hold_continued() {
    let zk = tokio::task::block_in_place(ZkServer::start).unwrap();
    let path = "/ours/rw";
    let (a, b) = (client(&zk).await, client(&zk).await);
    let lock_a = recipe_rwlock::InterProcessReadWriteLock::new(a.clone(), path).unwrap();
    let lock_b = recipe_rwlock::InterProcessReadWriteLock::new(b.clone(), path).unwrap();
    let w = lock_a.write_lock().lock().await.unwrap();
    let w_node = name(w.node_path());
    let queued = tokio::spawn(async move {
        let g = lock_b.write_lock().lock().await.unwrap();
        let node = name(g.node_path());
        g.release().await.unwrap();
        node
    });
    tokio::time::timeout(BOUND, async {
        while a.get_children(path).await.unwrap().len() < 2 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .unwrap();
    let r = w.downgrade().await.unwrap();
    let r_node = name(r.node_path());
    let r_made = a.exists(r.node_path()).await.unwrap().unwrap().czxid;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        !queued.is_finished(),
        "the queued writer waits for the read"
    );
    r.release().await.unwrap();
    let b_node = tokio::time::timeout(BOUND, queued).await.unwrap().unwrap();

    let mut audit = Audit::new(vec![path.into()]);
    read_into(&zk.data_dir(), Start::Oldest, &mut audit).unwrap();
    let h = audit.finish();
    assert_eq!(h.anomalies, []);
    let l = lock(&h, path);
    let grant = |node: &str| {
        l.events
            .iter()
            .find(|e| e.node == node && matches!(e.kind, EventKind::Granted { .. }))
            .map(|e| e.at.zxid)
    };
    let end = |node: &str| {
        l.events
            .iter()
            .find(|e| e.node == node && matches!(e.kind, EventKind::Ended { .. }))
            .map(|e| e.at.zxid)
    };
    assert_eq!(grant(&r_node), Some(r_made), "the read node holds at once");
    assert!(end(&w_node).unwrap() > r_made, "the write node goes after");
    assert_eq!(
        grant(&b_node),
        end(&r_node),
        "the next writer at the read's release"
    );
    assert!(all_released(l));
}
