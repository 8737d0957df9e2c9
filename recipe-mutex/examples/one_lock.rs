//! The smallest useful program: connect, take a lock, print its fencing token, release,
//! close. `cargo run --release --example one_lock -- 127.0.0.1:2181 /app/locks/job`; its
//! stripped size is what a program pays for the lock.

use recipe_mutex::InterProcessMutex;
use zk_client::Client;

#[tokio::main(flavor = "current_thread")]
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
    let mut args = std::env::args().skip(1);
    let hosts = args.next().unwrap_or_else(|| "127.0.0.1:2181".to_owned());
    let path = args.next().unwrap_or_else(|| "/app/locks/job".to_owned());
    let client = Client::builder().hosts(hosts).connect().await?;
    let mutex = InterProcessMutex::new(client.clone(), &path)?;
    let guard = mutex.lock().await?;
    println!(
        "holding {path} with fencing token {}",
        guard.fencing_token()
    );
    guard.release().await?;
    client.close().await?;
    Ok(())
}
