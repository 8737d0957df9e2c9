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
use zk_mem_server::{MemServer, Pause, ServerConfig, WAIT_BOUND, pause, wait_state};

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

/// Runs job `a` on `client` in a task whose work waits at a pause point; returns when the
/// job holds its lock and waits there, with the pause and the task.
async fn start_job(client: &Client) -> (Pause, tokio::task::JoinHandle<Result<(), Error>>) {
    let (mut paused, point) = pause();
    let client = client.clone();
    let job = tokio::spawn(async move { run_job(&client, "a", point.wait()).await });
    paused.reached().await.unwrap();
    (paused, job)
}

/// Lets the paused job go on: its fenced write is refused (`LockLost`) and no run is
/// recorded.
async fn lets_the_job_go_and_it_writes_nothing(
    server: &MemServer,
    paused: Pause,
    job: tokio::task::JoinHandle<Result<(), Error>>,
) {
    paused.resume();
    let outcome = tokio::time::timeout(WAIT_BOUND, job)
        .await
        .unwrap()
        .unwrap();
    assert!(
        matches!(outcome, Err(Error::LockLost { .. })),
        "{outcome:?}"
    );
    assert_eq!(server.children("/jobs/a/runs"), Some(vec![]));
}

#[tokio::test(start_paused = true)]
async fn a_connection_cut_mid_job_keeps_the_lock_and_the_run_counts() {
    let (server, client) = setup(1).await;
    let (paused, job) = start_job(&client).await;

    // The server drops the connection; the client reconnects to the same session within
    // its timeout, so the lock node (an ephemeral of that session) never went.
    // The cut lands when the client's task next runs: `landed` waits for it, then the
    // client is back.
    assert!(server.cut(client.session_id()));
    server.landed().await.unwrap();
    assert_ne!(client.state(), SessionState::Connected);
    wait_state(&client, SessionState::Connected).await.unwrap();
    paused.resume();
    tokio::time::timeout(WAIT_BOUND, job)
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
    let (paused, job) = start_job(&client).await;

    // The server expires the session (its client was away too long, say): its lock node
    // goes with it, so another worker may take the lock at once.
    assert!(server.expire(client.session_id()));
    let other = server.client(Client::builder(), 3).await.unwrap();
    let lock = InterProcessMutex::new(other.clone(), "/jobs/a/lock").unwrap();
    let taken = tokio::time::timeout(WAIT_BOUND, lock.lock())
        .await
        .unwrap()
        .unwrap();

    // The first worker's write is refused, and says why.
    wait_state(&client, SessionState::Expired).await.unwrap();
    lets_the_job_go_and_it_writes_nothing(&server, paused, job).await;
    taken.release().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_partition_past_the_session_timeout_is_an_expiry_in_no_wall_time() {
    let (server, client) = setup(4).await;
    let (paused, job) = start_job(&client).await;

    // Cut off for an hour of virtual time: the server expires the session at its timeout
    // while the client hears nothing; when the partition heals it learns so.
    assert!(server.partition(client.session_id(), true));
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert!(
        server.ephemerals().is_empty(),
        "the lock node went with the session"
    );
    assert!(server.partition(client.session_id(), false));
    wait_state(&client, SessionState::Expired).await.unwrap();
    lets_the_job_go_and_it_writes_nothing(&server, paused, job).await;
}

#[tokio::test(start_paused = true)]
async fn the_mutex_and_its_guard_give_their_client() {
    let (server, client) = setup(5).await;
    let other = server.client(Client::builder(), 6).await.unwrap();
    let mutex = InterProcessMutex::new(other.clone(), "/jobs/a/lock").unwrap();
    assert_eq!(mutex.client().session_id(), other.session_id());
    let guard = tokio::time::timeout(WAIT_BOUND, mutex.lock())
        .await
        .unwrap()
        .unwrap();
    // A function given the guard reads under the lock with nothing else.
    assert_ne!(guard.client().session_id(), client.session_id());
    assert_eq!(guard.client().session_id(), other.session_id());
    let children = guard.client().get_children("/jobs/a/lock").await.unwrap();
    assert_eq!(children.len(), 1);
    guard.release().await.unwrap();
}
