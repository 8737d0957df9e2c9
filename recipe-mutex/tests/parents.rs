//! Lock parents against a server that removes empty containers after every request
//! (zk-mem-server's default): found by the real-server suite run on the in-memory server,
//! where `create_parents` used to fail with `ParentMissing` when an ancestor it had just
//! seen was removed before its child was created.

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use recipe_mutex::{Error, InterProcessMutex};
use zk_client::Client;
use zk_mem_server::{MemServer, ServerConfig};

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
