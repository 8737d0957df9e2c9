//! Testing your code without Java: a user's function that runs a job under an
//! `InterProcessMutex`, tested against zk-mem-server's in-memory ZooKeeper on tokio's paused
//! clock, with the server cutting the connection mid-job (the lock is kept: the run counts)
//! and expiring the session mid-job (the lock is lost: the run records nothing, and the next
//! worker takes the lock at once). The README's "Testing your code without Java" shows this
//! file; every wait is bounded on virtual time, and the whole file runs in milliseconds.

#![allow(clippy::unwrap_used)]

use std::future::Future;
use std::time::Duration;

use recipe_mutex::{Error, InterProcessMutex};
use zk_client::{Client, CreateMode, CreateOptions, Op, SessionState};
use zk_mem_server::{MemServer, ServerConfig};

/// The code under test, as a user writes it: runs `work` while holding job `job`'s lock,
/// then records the run under `/jobs/{job}/runs` with a fenced write, which commits only
/// while the lock is still held.
async fn run_job(client: &Client, job: &str, work: impl Future<Output = ()>) -> Result<(), Error> {
    let lock = InterProcessMutex::new(client.clone(), &format!("/jobs/{job}/lock"))?;
    let guard = lock.lock().await?;
    work.await;
    let run = Op::create(
        format!("/jobs/{job}/runs/run-"),
        b"done".to_vec(),
        CreateOptions::new(CreateMode::PersistentSequential),
    );
    guard.fenced_multi(&[run]).await?;
    guard.release().await
}

/// The bound on every wait: free on the paused clock.
const BOUND: Duration = Duration::from_secs(600);

/// A server with `/jobs/a/runs`, and a client of it.
async fn setup(seed: u64) -> (MemServer, Client) {
    let server = MemServer::new(ServerConfig::new(seed));
    let client = server
        .client(
            Client::builder().session_timeout(Duration::from_secs(10)),
            seed,
        )
        .await
        .unwrap();
    let persistent = CreateOptions::new(CreateMode::Persistent);
    for path in ["/jobs", "/jobs/a", "/jobs/a/runs"] {
        client.create(path, b"", &persistent).await.unwrap();
    }
    (server, client)
}

/// Runs job `a` on `client` in a task whose work waits for the test's word; returns when
/// the job holds its lock, with the word's sender and the task.
async fn start_job(
    client: &Client,
) -> (
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<Result<(), Error>>,
) {
    let (started_tx, started_rx) = tokio::sync::oneshot::channel();
    let (go_tx, go_rx) = tokio::sync::oneshot::channel::<()>();
    let client = client.clone();
    let job = tokio::spawn(async move {
        run_job(&client, "a", async move {
            let _ = started_tx.send(());
            let _ = go_rx.await;
        })
        .await
    });
    tokio::time::timeout(BOUND, started_rx)
        .await
        .unwrap()
        .unwrap();
    (go_tx, job)
}

/// Waits until `client`'s session is in state `want`.
async fn wait_state(client: &Client, want: SessionState) {
    let mut states = client.state_watch();
    tokio::time::timeout(BOUND, states.wait_for(|s| *s == want))
        .await
        .unwrap()
        .unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_connection_cut_mid_job_keeps_the_lock_and_the_run_counts() {
    let (server, client) = setup(1).await;
    let (go, job) = start_job(&client).await;

    // The server drops the connection; the client reconnects to the same session within
    // its timeout, so the lock node (an ephemeral of that session) never went.
    // (A request made while it is disconnected fails at once with `NotConnected`, so the
    // job's work here outlasts the blip.)
    let mut states = client.state_stream();
    assert!(server.cut(client.session_id()));
    let seen = tokio::time::timeout(BOUND, async {
        let mut seen = Vec::new();
        while let Some(state) = states.next().await {
            seen.push(state);
            if state == SessionState::Connected {
                return seen;
            }
        }
        seen
    })
    .await
    .unwrap();
    assert_eq!(seen.first(), Some(&SessionState::Disconnected), "{seen:?}");
    go.send(()).unwrap();
    tokio::time::timeout(BOUND, job)
        .await
        .unwrap()
        .unwrap()
        .unwrap();

    assert_eq!(server.children("/jobs/a/runs").unwrap().len(), 1);
    // Released: the lock node is gone (and its container with it).
    assert!(server.ephemerals().is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_session_expired_mid_job_loses_the_lock_and_records_nothing() {
    let (server, client) = setup(2).await;
    let (go, job) = start_job(&client).await;

    // The server expires the session (its client was away too long, say): its lock node
    // goes with it, so another worker may take the lock at once.
    assert!(server.expire(client.session_id()));
    let other = server.client(Client::builder(), 3).await.unwrap();
    let lock = InterProcessMutex::new(other.clone(), "/jobs/a/lock").unwrap();
    let taken = tokio::time::timeout(BOUND, lock.lock())
        .await
        .unwrap()
        .unwrap();

    // The first worker's write is refused, and says why.
    wait_state(&client, SessionState::Expired).await;
    go.send(()).unwrap();
    let outcome = tokio::time::timeout(BOUND, job).await.unwrap().unwrap();
    assert!(
        matches!(outcome, Err(Error::LockLost { .. })),
        "{outcome:?}"
    );
    assert_eq!(server.children("/jobs/a/runs"), Some(vec![]));
    taken.release().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_partition_past_the_session_timeout_is_an_expiry_in_no_wall_time() {
    let (server, client) = setup(4).await;
    let (go, job) = start_job(&client).await;

    // Cut off for an hour of virtual time: the server expires the session at its timeout
    // while the client hears nothing; when the partition heals it learns so.
    assert!(server.partition(client.session_id(), true));
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert!(
        server.ephemerals().is_empty(),
        "the lock node went with the session"
    );
    assert!(server.partition(client.session_id(), false));
    wait_state(&client, SessionState::Expired).await;
    go.send(()).unwrap();
    let outcome = tokio::time::timeout(BOUND, job).await.unwrap().unwrap();
    assert!(
        matches!(outcome, Err(Error::LockLost { .. })),
        "{outcome:?}"
    );
    assert_eq!(server.children("/jobs/a/runs"), Some(vec![]));
}
