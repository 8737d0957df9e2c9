//! Two clients (two sessions, as two processes would have) share one mutex: a timed acquire
//! that gives up while the other holds, a hand-off, fencing tokens that grow with each holder,
//! and a nested hold taken from the guard where Curator would re-enter.
//!
//! `cargo xtask zk start`, then `cargo run -p recipe-mutex --example mutex -- <connect string>`
//! (default `127.0.0.1:2181`).

use std::time::Duration;

use recipe_mutex::{InterProcessMutex, MutexGuard};
use zk_client::Client;

/// Code that needs the lock while its caller holds it takes the caller's guard.
fn audit(guard: &MutexGuard) {
    let nested = guard.reenter();
    println!(
        "  audit runs under the same hold (holds counted: {}), no round trip",
        nested.hold_count()
    );
}

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
    let path = "/examples/mutex";
    let a = InterProcessMutex::new(alice.clone(), path)?;
    let b = InterProcessMutex::new(bob.clone(), path)?;

    let held = a.lock().await?;
    println!("alice holds {path}; fencing token {}", held.fencing_token());
    audit(&held);
    match b.try_lock_for(Duration::from_millis(300)).await? {
        None => println!("bob gave up after 300 ms: alice still holds it, and bob left no node"),
        Some(_) => return Err("bob got the lock while alice held it".into()),
    }
    let waiting = tokio::spawn(async move { b.lock().await });
    let first = held.fencing_token();
    held.release().await?;
    println!("alice released it");
    let next = waiting.await??;
    println!(
        "bob holds it now; his fencing token {} is greater than alice's {first}: a store that \
         remembers the highest token it saw refuses alice's late writes",
        next.fencing_token()
    );
    next.release().await?;
    alice.close().await?;
    bob.close().await?;
    Ok(())
}
