//! The semaphore mutex (Curator's `InterProcessSemaphoreMutex`): not reentrant, so a second
//! `lock()` queues until the guard is released, here from another task.
//!
//! `cargo xtask zk start`, then
//! `cargo run -p recipe-semaphore --example semaphore_mutex -- <connect string>`.

use std::time::Duration;

use recipe_semaphore::InterProcessSemaphoreMutex;
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
    let client = Client::builder().hosts(hosts).connect().await?;
    let job = InterProcessSemaphoreMutex::new(client.clone(), "/examples/job")?;
    let guard = job.lock().await?;
    println!("holding the job lock (token {})", guard.fencing_token());
    match job.try_lock_for(Duration::from_millis(300)).await? {
        None => println!(
            "a second lock() in the same program waits like any other client: none within 300 ms"
        ),
        Some(_) => return Err("the semaphore mutex was taken twice".into()),
    }
    let releaser = tokio::spawn(async move { guard.release().await });
    let again = job.lock().await?;
    releaser.await??;
    println!(
        "released from another task, then taken again (token {})",
        again.fencing_token()
    );
    again.release().await?;
    client.close().await?;
    Ok(())
}
