//! A semaphore of 3 leases shared by 10 tasks on two sessions: never more than 3 leases at
//! once, every task served.
//!
//! `cargo xtask zk start`, then `cargo run -p recipe-semaphore --example pool -- <connect string>`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use recipe_semaphore::InterProcessSemaphoreV2;
use zk_client::Client;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    // Built with `--features tracing`: the client's and the lock's events on stderr.
    #[cfg(feature = "tracing")]
    tracing_subscriber::fmt()
        .with_max_level(tracing_subscriber::filter::LevelFilter::INFO)
        .with_writer(std::io::stderr)
        .init();
    match run().await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    let hosts = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:2181".into());
    let connect = || Client::builder().hosts(hosts.as_str()).connect();
    let clients = [connect().await?, connect().await?];
    let in_use = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for (i, client) in clients.iter().cycle().take(10).enumerate() {
        let client = client.clone();
        let (in_use, peak) = (in_use.clone(), peak.clone());
        tasks.push(tokio::spawn(async move {
            let pool = InterProcessSemaphoreV2::new(client, "/examples/pool", 3)?;
            let lease = pool.acquire().await?;
            let now = in_use.fetch_add(1, Ordering::SeqCst) + 1;
            peak.fetch_max(now, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(100)).await;
            in_use.fetch_sub(1, Ordering::SeqCst);
            lease.release().await?;
            Ok::<_, recipe_semaphore::Error>(i)
        }));
    }
    for task in tasks {
        let i = task.await??;
        println!("task {i} had a lease and returned it");
    }
    println!(
        "at most {} of the 3 leases were in use at once",
        peak.load(Ordering::SeqCst)
    );
    for client in clients {
        client.close().await?;
    }
    Ok(())
}
