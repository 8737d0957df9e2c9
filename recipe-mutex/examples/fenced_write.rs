//! A write fenced by the lock: `guard.fenced_multi(ops)` puts the guard's `check_op` in the
//! same `multi` as the write, so the write commits only while the lock node exists. Here another client deletes the holder's
//! node (as an expired session or an operator would), and the holder's next fenced write is
//! refused by the server instead of overwriting the new holder's work.
//!
//! `cargo xtask zk start`, then
//! `cargo run -p recipe-mutex --example fenced_write -- <connect string>`.

use recipe_mutex::InterProcessMutex;
use zk_client::{Client, CreateMode, CreateOptions, Op};

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
    let (holder, other) = (connect().await?, connect().await?);
    let register = "/examples/fenced-register";
    match holder
        .create(register, b"0", &CreateOptions::new(CreateMode::Persistent))
        .await
    {
        Ok(_) | Err(zk_client::Error::NodeExists) => {}
        Err(e) => return Err(e.into()),
    }
    let mutex = InterProcessMutex::new(holder.clone(), "/examples/fenced-lock")?;
    let guard = mutex.lock().await?;
    let write = |value: &'static str| [Op::set_data(register, value, None)];
    guard.fenced_multi(&write("1")).await?;
    println!("while the lock is held, the fenced write of 1 commits");

    other.delete(guard.node_path(), None).await?;
    println!("another client deleted the holder's lock node: the lock is gone");
    match guard.fenced_multi(&write("2")).await {
        Err(e @ recipe_mutex::Error::LockLost { .. }) => {
            println!("the holder's next fenced write is refused: {e}")
        }
        Err(e) => return Err(e.into()),
        Ok(_) => return Err("a write under a lost lock committed".into()),
    }
    let (value, _) = other.get_data(register).await?;
    println!(
        "the register still holds {}",
        String::from_utf8_lossy(&value)
    );
    drop(guard); // its node is already gone: nothing to delete
    holder.close().await?;
    other.close().await?;
    Ok(())
}
