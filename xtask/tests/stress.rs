//! The mutex under cancellation: `cargo xtask stress mutex`'s cancelling tasks, for a few
//! seconds, on a test server. Lives here because it shares xtask's stress loop.

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use recipe_mutex::InterProcessMutex;
use zk_client::Client;

async fn client(hosts: &str) -> Client {
    Client::builder()
        .hosts(hosts)
        .session_timeout(Duration::from_secs(10))
        .connect()
        .await
        .unwrap()
}

/// Tasks that cancel their acquires at random points, in several sessions: the lock
/// directory stays bounded by the number of tasks (each cancel costs O(1) requests, never a
/// listing of the queue) and nothing is left at the end (the first driver listed the whole
/// directory per cancel and grew it past 7,000 nodes).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancellation_under_contention_stays_bounded_and_leaves_nothing() {
    const SESSIONS: usize = 4;
    const TASKS: usize = 8;
    let zk = zk_testkit::ZkServer::start().unwrap();
    let hosts = zk.connect_string();
    let run_for = Duration::from_secs(3);
    let path = "/t/stress";
    let observer = client(&hosts).await;
    let end = tokio::time::Instant::now() + run_for;
    let mut sessions = Vec::new();
    let mut mutexes = Vec::new();
    for s in 0..SESSIONS {
        let m = InterProcessMutex::new(client(&hosts).await, path).unwrap();
        mutexes.push(m.clone());
        // The same cancelling tasks as `cargo xtask stress mutex`.
        sessions.push(tokio::spawn(async move {
            xtask::stress::cancelling_tasks(&m, TASKS, run_for, s as u64).await
        }));
    }
    let mut peak = 0;
    while tokio::time::Instant::now() < end {
        let n = observer
            .get_children(path)
            .await
            .map(|k| k.len())
            .unwrap_or(0);
        peak = peak.max(n);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let bound = Duration::from_secs(60);
    let (mut granted, mut cancelled) = (0, 0);
    for s in sessions {
        let (g, c) = tokio::time::timeout(bound, s).await.unwrap().unwrap();
        granted += g;
        cancelled += c;
    }
    tokio::time::timeout(bound, async {
        loop {
            let (kids, watcher) = match observer.get_children_and_watch(path).await {
                Ok(r) => r,
                Err(zk_client::Error::NoNode) => return,
                Err(e) => panic!("{e}"),
            };
            if kids.is_empty() {
                return;
            }
            watcher.await;
        }
    })
    .await
    .unwrap();
    eprintln!("FIGURE stress: {granted} granted, {cancelled} cancelled, peak directory {peak}");
    assert!(granted > 0, "no lock granted");
    assert!(
        cancelled > 0,
        "nothing was cancelled: the test tests nothing"
    );
    assert!(
        peak <= 2 * SESSIONS * TASKS,
        "directory grew to {peak} with {} tasks",
        SESSIONS * TASKS
    );
    drop(mutexes);
}
