//! The demo's semaphore part: a pool of two connections shared by six workers, and the
//! semaphore mutex refusing re-entry.

use super::*;

pub(super) async fn semaphore_demo(server: &ZkServer) -> Result<(), Box<dyn std::error::Error>> {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use recipe_semaphore::{InterProcessSemaphoreMutex, InterProcessSemaphoreV2};
    use zk_client::Client;

    step(
        "recipe-semaphore: 6 workers in 3 sessions share a pool of 2 connections (InterProcessSemaphoreV2)",
    );
    let path = "/demo/pool";
    let in_use = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let mut clients = Vec::new();
    let mut tasks = Vec::new();
    for session in 0..3 {
        let client = Client::builder()
            .hosts(server.connect_string())
            .connect()
            .await?;
        let pool = InterProcessSemaphoreV2::new(client.clone(), path, 2)?;
        clients.push(client);
        for worker in 0..2 {
            let (pool, in_use, peak) = (pool.clone(), in_use.clone(), peak.clone());
            let name = format!("session {session}, worker {worker}");
            tasks.push(tokio::spawn(async move {
                let lease = pool.acquire().await?;
                let now = in_use.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(now, Ordering::SeqCst);
                println!(
                    "{name} takes a connection ({now} of 2 in use) with lease {}",
                    short(lease.node_path())
                );
                tokio::time::sleep(std::time::Duration::from_millis(40)).await;
                in_use.fetch_sub(1, Ordering::SeqCst);
                lease.release().await?;
                Ok::<(), recipe_semaphore::Error>(())
            }));
        }
    }
    for t in tasks {
        t.await??;
    }
    println!(
        "at most {} connections were in use at once (the pool has 2)",
        peak.load(Ordering::SeqCst)
    );

    step(
        "recipe-semaphore: a non-reentrant mutex: a second lock() queues until the guard is released, from another task",
    );
    let client = clients.first().cloned().ok_or("no client")?;
    let mutex = InterProcessSemaphoreMutex::new(client, "/demo/job")?;
    let guard = mutex.lock().await?;
    println!(
        "a task holds /demo/job, with fencing token {}; another task will release that guard in 200 ms",
        guard.fencing_token()
    );
    let releaser = tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        guard.release().await
    });
    println!(
        "the same task asks again: the mutex is not re-entrant, so this waits for the first guard's release"
    );
    let second = mutex.lock().await?;
    println!(
        "the first guard is released: the second lock() returns, with fencing token {}",
        second.fencing_token()
    );
    releaser.await??;
    second.release().await?;
    for client in clients {
        client.close().await?;
    }
    Ok(())
}
