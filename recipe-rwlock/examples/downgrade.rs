//! The read/write lock: two readers at once, a writer that waits for them, and a downgrade
//! (`WriteGuard::downgrade`) that turns a write hold into a read hold while a second writer
//! stays queued behind it.
//!
//! `cargo xtask zk start`, then
//! `cargo run -p recipe-rwlock --example downgrade -- <connect string>`.

use std::time::Duration;

use recipe_rwlock::InterProcessReadWriteLock;
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
    let (alice, bob) = (connect().await?, connect().await?);
    let path = "/examples/catalog";
    let a = InterProcessReadWriteLock::new(alice.clone(), path)?;
    let b = InterProcessReadWriteLock::new(bob.clone(), path)?;

    let (r1, r2) = (a.read_lock().lock().await?, b.read_lock().lock().await?);
    println!("alice and bob read at the same time");
    let writer = {
        let a = a.clone();
        tokio::spawn(async move { a.write_lock().lock().await })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    println!("alice's writer is still waiting: {}", !writer.is_finished());
    r1.release().await?;
    r2.release().await?;
    let write = writer.await??;
    println!(
        "both readers left: alice writes (token {})",
        write.fencing_token()
    );

    let second = {
        let b = b.clone();
        tokio::spawn(async move { b.write_lock().lock().await })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    let token = write.fencing_token();
    let read = write.downgrade().await?;
    println!(
        "alice downgraded: she reads on with her write's token ({}, was {token}); bob's queued writer is still waiting: {}",
        read.fencing_token(),
        !second.is_finished()
    );
    read.release().await?;
    let bob_writes = second.await??;
    println!(
        "alice stopped reading: bob writes (token {})",
        bob_writes.fencing_token()
    );
    bob_writes.release().await?;
    alice.close().await?;
    bob.close().await?;
    Ok(())
}
