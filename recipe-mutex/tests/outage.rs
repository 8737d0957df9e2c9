//! What an outage does to each acquire (issue 37), against a real server that is killed and
//! restarted: a busy lock with the server up is `Ok(None)`; with the server down, a timed
//! acquire ends at its deadline with `Error::Unavailable` (how long, which servers, how each
//! attempt failed), never `Ok(None)`; an untimed one waits on through the outage, says so
//! once at `warn` (feature `tracing`), and holds once the server is back (the session
//! survived the restart). One test in this binary: it installs the process's global
//! subscriber.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::time::Duration;

use recipe_mutex::{Error, InterProcessMutex};
use zk_client::SessionState;
use zk_testkit::ZkServer;

#[cfg(feature = "tracing")]
#[path = "support/collector.rs"]
mod collector;
mod support;
use support::{bounded, client_at, wait_children, wait_state};

#[cfg(feature = "tracing")]
const OUTAGE_WARNING: &str = "waiting through an outage";
#[cfg(feature = "tracing")]
const DEADLINE_WARNING: &str = "deadline passed with no server";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outage_is_an_error_for_a_timed_acquire_and_a_wait_for_an_untimed_one() {
    #[cfg(feature = "tracing")]
    let collector = {
        let collector = collector::Collector::default();
        tracing::subscriber::set_global_default(collector.clone()).unwrap();
        collector
    };
    // A server of this test's own: it is killed and restarted.
    let mut server = ZkServer::start().unwrap();
    let hosts = server.connect_string();
    let timeout = Duration::from_secs(4);
    let path = "/t/outage";
    let holder = client_at(&hosts, timeout).await;
    let held = bounded(InterProcessMutex::new(holder.clone(), path).unwrap().lock())
        .await
        .unwrap();
    let waiter = client_at(&hosts, timeout).await;
    let mutex = InterProcessMutex::new(waiter.clone(), path).unwrap();

    // Busy, with the server up: `Ok(None)`.
    let busy = bounded(mutex.try_lock_for(Duration::from_millis(300))).await;
    assert!(matches!(busy, Ok(None)), "{busy:?}");

    // An untimed waiter, queued behind the holder before the outage.
    let untimed = tokio::spawn({
        let mutex = mutex.clone();
        async move { mutex.lock().await }
    });
    wait_children(&holder, path, 2).await;

    server.kill().unwrap();
    wait_state(&waiter, |s| s != SessionState::Connected).await;

    // Timed, in the outage: an error that says so, at the deadline.
    let started = tokio::time::Instant::now();
    let ended = bounded(mutex.try_lock_for(Duration::from_secs(2))).await;
    let took = started.elapsed();
    let Err(Error::Unavailable(outage)) = &ended else {
        panic!("a timed acquire in an outage must say so: {ended:?}");
    };
    assert!(took >= Duration::from_secs(2), "ended early: {took:?}");
    assert!(outage.lasted >= Duration::from_secs(2), "{outage:?}");
    assert_eq!(outage.servers, vec![hosts.clone()]);
    assert!(!outage.attempts.is_empty(), "no attempt named: {outage:?}");
    let text = ended.as_ref().unwrap_err().to_string();
    assert!(
        text.starts_with(
            "the deadline passed with no server to ask: no ZooKeeper server connected for"
        ) && text.contains(&hosts)
            && text.contains("refused"),
        "{text}"
    );

    // Untimed: it waits on past the client's local `Lost` (the session may survive) ...
    wait_state(&waiter, |s| s == SessionState::Lost).await;
    #[cfg(feature = "tracing")]
    collector
        .wait_for(0, "the outage warning", |e| {
            e.level == tracing::Level::WARN && e.message().starts_with(OUTAGE_WARNING)
        })
        .await;
    assert!(!untimed.is_finished(), "the untimed acquire gave up");

    // ... and holds once the server is back: the sessions survived the restart, the holder's
    // release goes through, the waiter's turn comes.
    server.restart().unwrap();
    bounded(held.release()).await.unwrap();
    let guard = bounded(untimed).await.unwrap().unwrap();
    assert_eq!(guard.node().session_id, waiter.session_id());

    #[cfg(feature = "tracing")]
    {
        let session = format!("{:#x}", waiter.session_id());
        let mine = |e: &collector::Seen| e.field("session") == Some(session.as_str());
        // Once, for the untimed waiter (the timed attempt ended before the client's `Lost`),
        // not once per state change.
        let warned = collector.all(|e| mine(e) && e.message().starts_with(OUTAGE_WARNING));
        assert_eq!(warned.len(), 1, "{warned:#?}");
        let deadline = collector.all(|e| mine(e) && e.message().starts_with(DEADLINE_WARNING));
        assert_eq!(deadline.len(), 1, "{deadline:#?}");
        assert!(
            deadline[0]
                .field("outage")
                .is_some_and(|o| o.contains(&hosts)),
            "{deadline:?}"
        );
    }
    bounded(guard.release()).await.unwrap();
}
