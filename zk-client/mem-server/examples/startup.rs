//! How long a test waits for its ZooKeeper: a server started and a client's first reply,
//! timed over 200 starts on the real clock (median and worst). The README sets this beside
//! the test kit's Java server.
//!
//! ```sh
//! cargo run --release -p zk-mem-server --example startup
//! ```

use std::time::{Duration, Instant};

use zk_client::Client;
use zk_mem_server::{MemServer, ServerConfig};

const STARTS: usize = 200;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut in_memory = Vec::with_capacity(STARTS);
    let mut over_tcp = Vec::with_capacity(STARTS);
    for seed in 0..STARTS as u64 {
        let started = Instant::now();
        let server = MemServer::new(ServerConfig::new(seed));
        let client = server.client(Client::builder(), seed).await?;
        client.exists("/").await?;
        in_memory.push(started.elapsed());
        client.close().await?;

        let started = Instant::now();
        let server = MemServer::new(ServerConfig::new(seed));
        let addr = server.listen()?;
        let client = Client::builder().hosts(addr.to_string()).connect().await?;
        client.exists("/").await?;
        over_tcp.push(started.elapsed());
        client.close().await?;
    }
    for (name, mut times) in [("in memory", in_memory), ("loopback TCP", over_tcp)] {
        times.sort();
        let median = times.get(times.len() / 2).copied().unwrap_or_default();
        let worst = times.last().copied().unwrap_or_default();
        println!(
            "{name}: server started and first reply in {} median, {} worst ({STARTS} starts)",
            micros(median),
            micros(worst)
        );
    }
    Ok(())
}

fn micros(d: Duration) -> String {
    format!("{} µs", d.as_micros())
}
