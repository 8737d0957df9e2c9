//! `bench queue`'s worker (ours) against a test server: 20 waiters in one process queue behind
//! a hold of the test's own, and drain one by one once it is released.

#![allow(clippy::unwrap_used)]

use std::process::Command;
use std::time::{Duration, Instant};

use recipe_mutex::InterProcessMutex;
use xtask::bench::queue::drain::Drain;
use xtask::bench::queue::lines::{Hold, QueueResult, Queued, parse_holds};
use xtask::bench::queue::ours::now_ns;
use xtask::worker_process::WorkerProcess;
use zk_client::Client;

const WAITERS: u64 = 20;

#[test]
fn twenty_waiters_queue_behind_a_hold_and_drain_one_by_one() {
    let zk = zk_testkit::ZkServer::start().unwrap();
    let rt = xtask::worker_process::side_runtime().unwrap();
    let path = "/t/queue";
    let holder = rt
        .block_on(
            Client::builder()
                .hosts(zk.connect_string())
                .session_timeout(Duration::from_secs(10))
                .connect(),
        )
        .unwrap();
    let guard = rt
        .block_on(InterProcessMutex::new(holder.clone(), path).unwrap().lock())
        .unwrap();

    let deadline = Instant::now() + Duration::from_secs(20);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_zk-worker"));
    cmd.args([
        "queue",
        &zk.connect_string(),
        path,
        &WAITERS.to_string(),
        "15000",
    ]);
    let mut worker = WorkerProcess::spawn("queue", cmd).unwrap();
    let queued = Queued::parse(&worker.expect("QUEUED ", deadline).unwrap()).unwrap();
    assert_eq!((queued.waiters, queued.nodes), (WAITERS, WAITERS));
    assert!(
        queued.rss_before_kib > 0 && queued.rss_kib > 0,
        "{queued:?}"
    );
    // Nothing held while we hold: every waiter's node, and ours, are there.
    let children = rt.block_on(holder.get_children(path)).unwrap();
    assert_eq!(children.len() as u64, WAITERS + 1);

    let released_ns = now_ns();
    rt.block_on(guard.release()).unwrap();
    worker.send(&format!("GO {released_ns}")).unwrap();
    let mut holds: Vec<Hold> = Vec::new();
    let line = worker
        .expect_with("RESULT ", deadline, |line| match parse_holds(line) {
            Ok(h) => {
                holds.extend(h);
                true
            }
            Err(_) => false,
        })
        .unwrap();
    worker.finish(deadline).unwrap();
    let result = QueueResult::parse(&line).unwrap();

    assert_eq!(result.drained, WAITERS);
    assert_eq!(holds.len() as u64, WAITERS, "one hold listed per waiter");
    let drain = Drain::of(released_ns, holds.clone());
    assert_eq!(drain.overlaps, 0, "a hold began before the one ahead ended");
    assert_eq!(drain.handoffs.len() as u64, WAITERS);
    assert!(
        holds.iter().all(|h| h.acquired_ns > released_ns),
        "every hold after the release"
    );
    // The worker's own figures are the merged ones (one process).
    let h = drain.histogram();
    assert_eq!(
        (result.p50_ns, result.p99_ns, result.drain_ns),
        (h.percentile(50), h.percentile(99), drain.drain_ns)
    );
    assert!(result.p50_ns > 0 && result.drain_ns >= result.p99_ns);
    assert_eq!(
        (result.rss_before_kib, result.rss_queued_kib),
        (queued.rss_before_kib, queued.rss_kib)
    );
    // Nothing left behind but the (container) lock path.
    assert_eq!(rt.block_on(holder.get_children(path)).unwrap().len(), 0);
    rt.block_on(holder.close()).unwrap();
}
