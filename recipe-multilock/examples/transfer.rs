//! A transfer between two accounts under a multi-lock: both accounts' locks are taken (in one
//! canonical order, whatever order the caller gives, so two opposite transfers cannot
//! deadlock), and the balances are written in one `multi` fenced by both locks.
//!
//! `cargo xtask zk start`, then
//! `cargo run -p recipe-multilock --example transfer -- <connect string>`. Each run opens both
//! accounts at 100 and prints `alice has 75, bob has 125; together 200 (was 200)`.

use recipe_multilock::InterProcessMultiLock;
use zk_client::{Client, CreateMode, CreateOptions, Op};

type Result<T> = std::result::Result<T, Box<dyn std::error::Error + Send + Sync>>;

async fn balance(client: &Client, account: &str) -> Result<i64> {
    let (data, _) = client.get_data(&format!("{account}/balance")).await?;
    Ok(String::from_utf8_lossy(&data).parse()?)
}

async fn transfer(client: &Client, from: &str, to: &str, amount: i64) -> Result<()> {
    let both = InterProcessMultiLock::new(client.clone(), &[from, to])?;
    let guard = both.lock().await?;
    let (a, b) = (balance(client, from).await?, balance(client, to).await?);
    // Both balances in one transaction that commits only while both locks are held.
    guard
        .fenced_multi(&[
            Op::set_data(format!("{from}/balance"), (a - amount).to_string(), None),
            Op::set_data(format!("{to}/balance"), (b + amount).to_string(), None),
        ])
        .await?;
    guard.release().await?;
    Ok(())
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

async fn run() -> Result<()> {
    let hosts = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:2181".into());
    let client = Client::builder().hosts(hosts).connect().await?;
    let persistent = CreateOptions::new(CreateMode::Persistent);
    let accounts = ["/examples/bank/alice", "/examples/bank/bob"];
    for account in accounts {
        for path in ["/examples", "/examples/bank", account] {
            match client.create(path, b"", &persistent).await {
                Ok(_) | Err(zk_client::Error::NodeExists) => {}
                Err(e) => return Err(e.into()),
            }
        }
        let balance = format!("{account}/balance");
        match client.create(&balance, b"100", &persistent).await {
            Ok(_) | Err(zk_client::Error::NodeExists) => {}
            Err(e) => return Err(e.into()),
        }
    }
    let [alice, bob] = accounts;
    // Every run opens both accounts at 100 (under both locks, fenced), so it prints the same
    // each time instead of spending the balances of earlier runs.
    let both = InterProcessMultiLock::new(client.clone(), &accounts)?;
    let guard = both.lock().await?;
    let opening: Vec<Op> = accounts
        .iter()
        .map(|account| Op::set_data(format!("{account}/balance"), "100", None))
        .collect();
    guard.fenced_multi(&opening).await?;
    guard.release().await?;
    let before = balance(&client, alice).await? + balance(&client, bob).await?;
    // Opposite transfers at once: the canonical order rules out a deadlock.
    let c2 = client.clone();
    let other = tokio::spawn(async move { transfer(&c2, bob, alice, 5).await });
    transfer(&client, alice, bob, 30).await?;
    other.await??;
    let (a, b) = (balance(&client, alice).await?, balance(&client, bob).await?);
    println!(
        "alice has {a}, bob has {b}; together {} (was {before})",
        a + b
    );
    client.close().await?;
    Ok(())
}
