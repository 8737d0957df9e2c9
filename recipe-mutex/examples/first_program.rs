//! The README's first program (kept identical to it by a test in xtask).

use std::time::Duration;

use recipe_mutex::{InterProcessMutex, Loss};
use zk_client::Client;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    match run().await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    // The connect string `cargo xtask zk start` printed, e.g. 127.0.0.1:36411.
    let hosts = std::env::args()
        .nth(1)
        .expect("usage: first_program HOST:PORT");
    let client = Client::builder()
        .hosts(hosts)
        // If this process dies holding the lock, others wait this long for it.
        .session_timeout(Duration::from_secs(10))
        .connect()
        .await?;
    let mutex = InterProcessMutex::new(client.clone(), "/app/locks/report")?;

    // Wait at most 5 s for the lock.
    let Some(guard) = mutex.try_lock_for(Duration::from_secs(5)).await? else {
        println!("someone else is writing the report; try later");
        return Ok(());
    };
    println!(
        "writing the report, fencing token {}",
        guard.fencing_token()
    );
    tokio::select! {
        () = tokio::time::sleep(Duration::from_secs(1)) => println!("report written"),
        // Stop the work as soon as the lock may be gone.
        loss = guard.lost() => match loss {
            Loss::Unsure => println!("connection lost: stopping, the lock may be someone else's soon"),
            Loss::Lost => println!("session expired: the lock is gone"),
            Loss::Deleted => println!("our lock node was deleted: the lock is gone"),
        },
    }
    guard.release().await?;
    client.close().await?;
    Ok(())
}
