//! Eight tasks of one process contending on one lock for two seconds, first each with its own
//! `InterProcessMutex` (every hand-off goes through the server), then sharing one
//! `CohortMutex` (the process queues once; the lock passes from task to task with no
//! request): the holds each way, the nodes the server made for them, and the last token.
//!
//! `cargo xtask zk start`, then `cargo run --release -p recipe-mutex --example cohort --
//! <connect string>` (default `127.0.0.1:2181`).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use recipe_mutex::{CohortBound, InterProcessMutex};
use tokio::time::Instant;
use zk_client::Client;

const TASKS: usize = 8;
const RUN: Duration = Duration::from_secs(2);

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
    let client = Client::builder().hosts(hosts.as_str()).connect().await?;

    // Each task its own participant: Curator's behaviour, and this crate's default.
    let path = "/examples/cohort/plain";
    let plain = InterProcessMutex::new(client.clone(), path)?;
    let holds = contend(TASKS, {
        let plain = plain.clone();
        move |_| {
            let plain = plain.clone();
            async move { plain.lock().await?.release().await }
        }
    })
    .await?;
    report("each task its own participant", holds, &client, path).await?;

    // The tasks share one place in the queue.
    let path = "/examples/cohort/shared";
    let cohort = InterProcessMutex::new(client.clone(), path)?.cohort(CohortBound::default());
    let last = Arc::new(std::sync::Mutex::new(None));
    let holds = contend(TASKS, {
        let (cohort, last) = (cohort.clone(), last.clone());
        move |_| {
            let (cohort, last) = (cohort.clone(), last.clone());
            async move {
                let guard = cohort.lock().await?;
                let token = guard.fencing_token();
                {
                    let mut last = last
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                    assert!(last.is_none_or(|before| token > before), "tokens increase");
                    *last = Some(token);
                }
                guard.release().await
            }
        }
    })
    .await?;
    report("one cohort", holds, &client, path).await?;
    if let Some(token) = *last
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
    {
        println!(
            "  the last token: czxid {:#x}, the {}th holder of its node",
            token.czxid, token.local
        );
    }
    client.close().await?;
    Ok(())
}

/// `tasks` tasks each looping `cycle` (take the lock, release it) for [`RUN`]; the cycles
/// done.
async fn contend<F, Fut>(tasks: usize, cycle: F) -> Result<u64, Box<dyn std::error::Error>>
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<(), recipe_mutex::Error>> + Send + 'static,
{
    let end = Instant::now() + RUN;
    let cycle = Arc::new(cycle);
    let done = Arc::new(AtomicU64::new(0));
    let mut all = Vec::new();
    for i in 0..tasks {
        let (cycle, done) = (cycle.clone(), done.clone());
        all.push(tokio::spawn(async move {
            while Instant::now() < end {
                cycle(i).await?;
                done.fetch_add(1, Ordering::Relaxed);
            }
            Ok::<_, recipe_mutex::Error>(())
        }));
    }
    for task in all {
        task.await??;
    }
    Ok(done.load(Ordering::Relaxed))
}

/// Prints what `holds` cost at the server: the nodes made under `path` (its children version
/// counts each create and each delete).
async fn report(
    what: &str,
    holds: u64,
    client: &Client,
    path: &str,
) -> Result<(), Box<dyn std::error::Error>> {
    let made = client.exists(path).await?.map_or(0, |s| s.cversion) / 2;
    println!(
        "{what}: {holds} holds in {} s by {TASKS} tasks ({:.0}/s), {made} lock nodes made",
        RUN.as_secs(),
        holds as f64 / RUN.as_secs_f64()
    );
    Ok(())
}
