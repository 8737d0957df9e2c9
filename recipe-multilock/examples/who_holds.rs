//! The operator's question when a lock is stuck: who holds it, from which machine, and who
//! waits behind whom? Prints a lock's queue as the server has it, for any lock of ours or
//! Curator's (they share the layout): the mutex, the read/write lock, the semaphore.
//!
//! `cargo run -p recipe-multilock --example who_holds -- <connect string> <lock path> [LEASES]`
//!
//! The kind is told from the path's children: `__READ__`/`__WRIT__` nodes are a read/write
//! lock's, a `leases` child a semaphore's (of `LEASES` leases, 1 by default: the tree does not
//! say how many), anything else a mutex's. Each line: whether it holds or whom it waits
//! behind, its node, its session, and its data (the holder's address, as ours and Curator's
//! write by default). A path with no node says there is no such lock; a lock's node with
//! nobody in it, that nobody holds or waits.

use recipe_mutex::InterProcessMutex;
use recipe_rwlock::InterProcessReadWriteLock;
use recipe_semaphore::InterProcessSemaphoreV2;
use zk_client::Client;

type Result<T> = std::result::Result<T, Box<dyn std::error::Error + Send + Sync>>;

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
    let mut args = std::env::args().skip(1);
    let (Some(hosts), Some(path)) = (args.next(), args.next()) else {
        return Err("usage: who_holds <connect string> <lock path> [LEASES]".into());
    };
    let leases: u32 = match args.next() {
        Some(n) => n.parse().map_err(|e| format!("LEASES {n:?}: {e}"))?,
        None => 1,
    };
    let client = Client::builder().hosts(hosts).connect().await?;
    let children = match client.get_children(&path).await {
        Ok(children) => children,
        Err(zk_client::Error::NoNode) => {
            // Nothing to tell a lock's kind by, and nobody in it: say so rather than call it
            // an empty mutex.
            println!(
                "{path}: no such lock: no node at this path, so nobody holds or waits \
                 (a lock's node is made by its first acquire and goes after its last \
                 participant: an idle lock looks the same; check the path)"
            );
            client.close().await?;
            return Ok(());
        }
        Err(e) => return Err(e.into()),
    };
    let (kind, queue) = if children
        .iter()
        .any(|c| c.contains("__READ__") || c.contains("__WRIT__"))
    {
        let lock = InterProcessReadWriteLock::new(client.clone(), &path)?;
        ("read/write lock", lock.queue().await?)
    } else if children.iter().any(|c| c == "leases") {
        let semaphore = InterProcessSemaphoreV2::new(client.clone(), &path, leases)?;
        ("semaphore", semaphore.queue().await?)
    } else {
        let mutex = InterProcessMutex::new(client.clone(), &path)?;
        ("mutex", mutex.queue().await?)
    };
    if queue.is_empty() {
        println!("{path}: a {kind}, nobody holds or waits");
    } else {
        println!("{path}: a {kind}, {} participant(s)", queue.len());
    }
    for participant in &queue {
        println!("  {participant}");
    }
    client.close().await?;
    Ok(())
}
