//! Lock parents: against a server that removes empty containers after every request
//! (zk-mem-server's default), found by the real-server suite run on the in-memory server,
//! where `create_parents` used to fail with `ParentMissing` when an ancestor it had just
//! seen was removed before its child was created; and made once for many locks at once.

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use recipe_mutex::{Error, InterProcessMutex};
use zk_client::{Client, CreateMode, CreateOptions};
use zk_mem_server::{MemServer, ServerConfig};

mod support;

/// The bound on the whole run.
const BOUND: Duration = Duration::from_secs(120);

/// Lock parents are containers: the server removes an empty one at any moment, so one made a
/// step ago can be gone when the next level is created. Clients taking and releasing one lock
/// under three levels of parents, on a server that sweeps containers after every request,
/// each get the lock every time (the parents made again, not `ParentMissing`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parents_removed_by_the_container_manager_between_steps_are_made_again() {
    let server = MemServer::new(ServerConfig::new(5));
    let mut tasks = Vec::new();
    for seed in 0..4 {
        let client = server
            .client(
                Client::builder().session_timeout(Duration::from_secs(10)),
                seed,
            )
            .await
            .unwrap();
        tasks.push(tokio::spawn(async move {
            let lock = InterProcessMutex::new(client, "/a/b/c/lock").unwrap();
            for _ in 0..100 {
                lock.lock().await?.release().await?;
            }
            Ok::<_, Error>(())
        }));
    }
    for task in tasks {
        tokio::time::timeout(BOUND, task)
            .await
            .unwrap()
            .unwrap()
            .unwrap();
    }
}

/// Issue 35: one client taking many locks at once under a missing shared parent makes that
/// parent once, not once per lock (the attempts share one `exists` and one `create` per
/// ancestor in the air). Counted from the server's record: every write, failed ones
/// included, takes a zxid, so the zxids between two marker nodes are the writes the locks
/// made: per lock its first create (`NoNode`: no parents yet), its own container, its node,
/// and the two shared ancestors once. Each attempt making the shared ancestors itself, as
/// before, made up to 2 x (N - 1) more (`NodeExists`, each logged and fsynced).
#[tokio::test]
async fn many_locks_of_one_client_make_their_shared_parents_once() {
    const N: i64 = 50;
    let client = support::client().await;
    let opts = CreateOptions::new(CreateMode::Persistent);
    let mark = |name: &'static str| {
        let client = client.clone();
        let opts = opts.clone();
        async move {
            client
                .create_with_stat(name, b"", &opts)
                .await
                .unwrap()
                .1
                .czxid
        }
    };
    let before = mark("/shared-parents-before").await;
    let mut tasks = Vec::new();
    for i in 0..N {
        let lock =
            InterProcessMutex::new(client.clone(), &format!("/shared/parents/lock-{i}")).unwrap();
        tasks.push(tokio::spawn(async move { lock.lock().await }));
    }
    let mut guards = Vec::new();
    for task in tasks {
        guards.push(support::bounded(task).await.unwrap().unwrap());
    }
    let after = mark("/shared-parents-after").await;
    let writes = after - before - 1;
    assert!(
        writes <= 3 * N + 2,
        "{writes} writes for {N} locks under two missing shared ancestors"
    );
    for guard in guards {
        guard.release().await.unwrap();
    }
}
