//! InterProcessReadWriteLock against real ZooKeeper servers started by the tests: Curator's
//! TestInterProcessReadWriteLock behaviours, with explicit ownership (testGetParticipantNodes,
//! testThatUpgradingIsDisallowed, testThatDowngradingRespectsThreads, testDowngrading,
//! testContendingDowngrading from 5.5, testBasic, testSetNodeData, testReentrantSingleLock,
//! testLockPath), writer fairness, faults and cancellation.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use recipe_rwlock::{Hold, InterProcessReadWriteLock};
use zk_client::{Client, SessionState};
use zk_testkit::FaultProxy;

// The mutex's real-server test helpers (one server per test binary, clients, bounded waits).
#[path = "../../recipe-mutex/tests/support/mod.rs"]
mod support;
use support::{bounded, client, client_at, server, wait_children};

fn rw(c: &Client, path: &str) -> InterProcessReadWriteLock {
    InterProcessReadWriteLock::new(c.clone(), path).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_share_and_writers_exclude() {
    let path = "/t/rw-basic";
    let c = client().await;
    let lock = rw(&c, path);
    // Readers in three tasks hold at once.
    let (tx, _) = tokio::sync::broadcast::channel::<()>(1);
    let holding = Arc::new(AtomicUsize::new(0));
    let mut readers = Vec::new();
    for _ in 0..3 {
        let (lock, holding, mut rx) = (lock.clone(), holding.clone(), tx.subscribe());
        readers.push(tokio::spawn(async move {
            let g = lock.read_lock().lock().await.unwrap();
            holding.fetch_add(1, Ordering::SeqCst);
            let _ = rx.recv().await;
            g.release().await.unwrap();
        }));
    }
    wait_children(&c, path, 3).await;
    bounded(async {
        while holding.load(Ordering::SeqCst) < 3 {
            tokio::task::yield_now().await;
        }
    })
    .await;
    // A writer from another session waits for all of them.
    let other = rw(&client().await, path);
    assert!(
        other
            .write_lock()
            .try_lock_for(Duration::from_millis(200))
            .await
            .unwrap()
            .is_none()
    );
    let writer = tokio::spawn(async move { other.write_lock().lock().await.map(|g| (g, other)) });
    wait_children(&c, path, 4).await;
    drop(tx);
    for r in readers {
        bounded(r).await.unwrap();
    }
    let (w, other) = bounded(writer).await.unwrap().unwrap();
    // While it writes, a reader waits.
    assert!(
        lock.read_lock()
            .try_lock_for(Duration::from_millis(200))
            .await
            .unwrap()
            .is_none()
    );
    w.release().await.unwrap();
    assert!(!other.write_lock().is_acquired_in_this_process());
    bounded(lock.read_lock().lock())
        .await
        .unwrap()
        .release()
        .await
        .unwrap();
    wait_children(&c, path, 0).await;
}

/// A writer is not starved by readers that arrive after it: they queue behind it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn later_readers_queue_behind_a_waiting_writer() {
    let path = "/t/rw-fair";
    let c = client().await;
    let first = rw(&c, path).read_lock().lock().await.unwrap();
    let writer_lock = rw(&client().await, path);
    let writer = tokio::spawn(async move {
        let g = writer_lock.write_lock().lock().await.unwrap();
        (g.fencing_token(), g)
    });
    wait_children(&c, path, 2).await;
    let late_lock = rw(&client().await, path);
    let late = tokio::spawn(async move {
        let g = late_lock.read_lock().lock().await.unwrap();
        g.fencing_token()
    });
    wait_children(&c, path, 3).await;
    assert!(!late.is_finished());
    first.release().await.unwrap();
    let (w_token, w) = bounded(writer).await.unwrap();
    assert!(
        !late.is_finished(),
        "a later reader held while the writer did"
    );
    w.release().await.unwrap();
    let r_token = bounded(late).await.unwrap();
    assert!(r_token > w_token);
}

/// testGetParticipantNodes: 20 readers hold, 8 writers queue.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn participant_nodes_per_lock() {
    let path = "/t/rw-participants";
    let c = client().await;
    let lock = rw(&c, path);
    let (tx, _) = tokio::sync::broadcast::channel::<()>(1);
    let mut tasks = Vec::new();
    for i in 0..28 {
        let (lock, mut rx) = (lock.clone(), tx.subscribe());
        tasks.push(tokio::spawn(async move {
            let g: Hold = if i < 20 {
                lock.read_lock().lock().await.unwrap().into_hold()
            } else {
                lock.write_lock().lock().await.unwrap().into_hold()
            };
            let _ = rx.recv().await;
            drop(g);
        }));
        if i == 19 {
            wait_children(&c, path, 20).await;
        }
    }
    wait_children(&c, path, 28).await;
    let reads = lock.read_lock().participant_nodes().await.unwrap();
    let writes = lock.write_lock().participant_nodes().await.unwrap();
    assert_eq!((reads.len(), writes.len()), (20, 8));
    assert!(reads.iter().all(|p| p.contains("__READ__")));
    drop(tx);
    for t in tasks {
        bounded(t).await.unwrap();
    }
    wait_children(&c, path, 0).await;
}

/// testThatUpgradingIsDisallowed: there is no upgrade. A write `lock()` while this program
/// holds a read queues behind that read, as with any RwLock (Curator's hangs): with a
/// deadline it times out, and the reader is left alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_while_reading_queues_behind_the_read() {
    let c = client().await;
    let path = "/t/rw-upgrade";
    let lock = rw(&c, path);
    let r = lock.read_lock().lock().await.unwrap();
    assert!(
        bounded(lock.write_lock().try_lock_for(Duration::from_millis(300)))
            .await
            .unwrap()
            .is_none()
    );
    assert!(r.is_valid());
    wait_children(&c, path, 1).await;
    // Queued without a deadline, it gets the lock once the read goes.
    let writer = tokio::spawn({
        let lock = lock.clone();
        async move { lock.write_lock().lock().await }
    });
    wait_children(&c, path, 2).await;
    r.release().await.unwrap();
    bounded(writer)
        .await
        .unwrap()
        .unwrap()
        .release()
        .await
        .unwrap();
    wait_children(&c, path, 0).await;
}

/// Issue 23, defect 1: `join!(read.lock(), write.lock())` in one task hung, and kept the
/// task's turn so its later acquires hung too. Now each is its own participant, as two
/// processes' would be: with deadlines, whichever's node comes first holds and the other times
/// out behind it (a read and a write of one program exclude each other like anyone's), the
/// joined pair ends, and the task's next acquisitions go through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_joined_read_and_write_in_one_task_end() {
    let c = client().await;
    let path = "/t/rw-joined";
    let lock = rw(&c, path);
    let short = Duration::from_millis(300);
    for _ in 0..5 {
        let (read, write) = bounded(async {
            tokio::join!(
                lock.read_lock().try_lock_for(short),
                lock.write_lock().try_lock_for(short)
            )
        })
        .await;
        let (read, write) = (read.unwrap(), write.unwrap());
        assert!(
            read.is_some() != write.is_some(),
            "a read and a write held at once, or neither: {read:?} {write:?}"
        );
        if let Some(read) = read {
            read.release().await.unwrap();
        }
        if let Some(write) = write {
            write.release().await.unwrap();
        }
    }
    let w = bounded(lock.write_lock().lock()).await.unwrap();
    w.release().await.unwrap();
    bounded(lock.read_lock().lock())
        .await
        .unwrap()
        .release()
        .await
        .unwrap();
    wait_children(&c, path, 0).await;
}

/// testThatDowngradingRespectsThreads: a read `lock()` while this program holds the write lock
/// is its own participant and queues (only `downgrade()` turns the write hold into a read).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_downgrade_turns_a_write_into_a_read() {
    let c = client().await;
    let lock = rw(&c, "/t/rw-down-tasks");
    let w = lock.write_lock().lock().await.unwrap();
    assert!(
        bounded(lock.read_lock().try_lock_for(Duration::from_millis(300)))
            .await
            .unwrap()
            .is_none()
    );
    let other = lock.clone();
    let got = tokio::spawn(async move {
        other
            .read_lock()
            .try_lock_for(Duration::from_millis(300))
            .await
            .map(|g| g.is_some())
    });
    assert_eq!(bounded(got).await.unwrap(), Ok(false));
    w.release().await.unwrap();
}

/// testDowngrading: write, then `downgrade()`. The read node carries the write node's sequence
/// (Curator 5.5) and the write hold's fencing token; the write node is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn downgrading() {
    let c = client().await;
    let path = "/t/rw-downgrade";
    let lock = rw(&c, path);
    let w = lock.write_lock().lock().await.unwrap();
    let (w_node, w_token) = (w.node_path().to_owned(), w.fencing_token());
    let r = bounded(w.downgrade()).await.unwrap();
    let seq = |p: &str| p[p.len() - 10..].to_owned();
    assert_eq!(seq(r.node_path()), seq(&w_node));
    assert!(r.node_path().contains("__READ__"));
    assert_eq!(
        r.fencing_token(),
        w_token,
        "a downgrade continues the write hold"
    );
    support::wait_gone(&c, &w_node).await;
    assert!(r.is_valid());
    assert!(lock.read_lock().is_acquired_in_this_process());
    // The write hold counts until its delete's reply is in (the observer may see the node go
    // first).
    bounded(async {
        while lock.write_lock().is_acquired_in_this_process() {
            tokio::task::yield_now().await;
        }
    })
    .await;
    // Other readers join.
    let other = rw(&client().await, path);
    bounded(other.read_lock().lock())
        .await
        .unwrap()
        .release()
        .await
        .unwrap();
    r.release().await.unwrap();
    wait_children(&c, path, 0).await;
}

/// Issue 23, defect 5: a downgrade on a stalled connection ends within its deadline and one
/// grace (it took 5.3 s for 200 ms), and gives the write hold back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_downgrade_on_a_stalled_connection_keeps_its_deadline() {
    let path = "/t/rw-down-stalled";
    let proxy = zk_testkit::FaultProxy::start(support::server().addr()).unwrap();
    let pc = support::client_at(&proxy.addr().to_string(), Duration::from_secs(20)).await;
    let lock = rw(&pc, path);
    let w = lock.write_lock().lock().await.unwrap();
    let node = w.node_path().to_owned();
    proxy.stall();
    let timeout = Duration::from_millis(200);
    let started = std::time::Instant::now();
    let back = bounded(w.try_downgrade_for(timeout)).await.unwrap();
    let took = started.elapsed();
    let bound = timeout + recipes_core::DEADLINE_GRACE + Duration::from_millis(250);
    assert!(took < bound, "took {took:?}, bound {bound:?}");
    let w = back.expect_err("downgraded through a stalled connection");
    assert_eq!(w.node_path(), node, "the write hold is given back");
    proxy.pass();
    // The read node it may have made is deleted; the write node stays until released.
    let c = client().await;
    wait_children(&c, path, 1).await;
    w.release().await.unwrap();
    wait_children(&c, path, 0).await;
}

/// testContendingDowngrading (Curator 5.5, CURATOR-621): a writer queued behind the write node
/// stays blocked after the holder downgrades and releases the write lock, until it stops
/// reading.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queued_writer_stays_blocked_after_a_downgrade() {
    let c = client().await;
    let path = "/t/rw-contending-downgrade";
    let lock = rw(&c, path);
    let w1 = lock.write_lock().lock().await.unwrap();
    let other = rw(&client().await, path);
    let w2 = tokio::spawn(async move { other.write_lock().lock().await.map(|g| (g, other)) });
    wait_children(&c, path, 2).await;
    let r1 = bounded(w1.downgrade()).await.unwrap();
    wait_children(&c, path, 2).await; // the read node and the queued writer
    // Readers of other sessions are blocked too (a writer is ahead of them).
    assert!(
        rw(&client().await, path)
            .read_lock()
            .try_lock_for(Duration::from_millis(300))
            .await
            .unwrap()
            .is_none()
    );
    assert!(!w2.is_finished(), "the queued writer holds while we read");
    r1.release().await.unwrap();
    let (g, _other) = bounded(w2).await.unwrap().unwrap();
    g.release().await.unwrap();
    wait_children(&c, path, 0).await;
}

/// testSetNodeData and testReentrantSingleLock (re-entering through the guard).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_data_and_reentrancy() {
    let c = client().await;
    let path = "/t/rw-data";
    let lock =
        InterProcessReadWriteLock::with_data(c.clone(), path, Bytes::from_static(&[1, 2, 3, 4]))
            .unwrap();
    let w = lock.write_lock().lock().await.unwrap();
    let (data, _) = c.get_data(w.node_path()).await.unwrap();
    assert_eq!(&data[..], &[1, 2, 3, 4]);
    {
        let again = w.reenter();
        assert_eq!(again.hold_count(), 2);
        wait_children(&c, path, 1).await;
    }
    w.release().await.unwrap();
    assert!(!lock.write_lock().is_acquired_in_this_process());
    let r = lock.read_lock().lock().await.unwrap();
    let (data, _) = c.get_data(r.node_path()).await.unwrap();
    assert_eq!(&data[..], &[1, 2, 3, 4]);
    r.release().await.unwrap();
    wait_children(&c, path, 0).await;
}

/// testLockPath: the writer's session ends; a reader of another client then holds, and the
/// writer's node is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writers_ended_session_lets_readers_in() {
    let path = "/t/rw-lock-path";
    let observer = client().await;
    let c1 = client().await;
    let w = rw(&c1, path).write_lock().lock().await.unwrap();
    let node = w.node_path().to_owned();
    let reader = rw(&client().await, path);
    let r = tokio::spawn(async move { reader.read_lock().lock().await.map(|g| (g, reader)) });
    wait_children(&observer, path, 2).await;
    c1.close().await.unwrap();
    let (g, _reader) = bounded(r).await.unwrap().unwrap();
    assert!(observer.exists(&node).await.unwrap().is_none());
    drop(w);
    g.release().await.unwrap();
    wait_children(&observer, path, 0).await;
}

/// A connection cut while the downgrade's create is in flight: the read lock is still taken
/// (the node found by its exact name, or created again), exactly one read node exists, and
/// nothing is left after both releases.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_during_the_downgrade_create_is_recovered() {
    let path = "/t/rw-down-cut";
    let observer = client().await;
    let proxy = FaultProxy::start(server().addr()).unwrap();
    let pc = client_at(&proxy.addr().to_string(), Duration::from_secs(20)).await;
    let lock = rw(&pc, path);
    let w = lock.write_lock().lock().await.unwrap();
    // Send the downgrade's create (the first poll sends it), then cut the connection.
    let mut downgrade = std::pin::pin!(w.downgrade());
    std::future::poll_fn(|cx| {
        let _ = downgrade.as_mut().poll(cx);
        std::task::Poll::Ready(())
    })
    .await;
    proxy.cut();
    let r = bounded(downgrade).await.unwrap();
    let mut states = pc.state_watch();
    bounded(states.wait_for(|s| *s == SessionState::Connected))
        .await
        .unwrap();
    assert_eq!(lock.read_lock().participant_nodes().await.unwrap().len(), 1);
    r.release().await.unwrap();
    wait_children(&observer, path, 0).await;
}

/// Cancellation at random points (reads, writes, downgrades) leaves no node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_acquires_leave_no_node() {
    let path = "/t/rw-cancel";
    let observer = client().await;
    let holder = rw(&observer, path).write_lock().lock().await.unwrap();
    let seq = Arc::new(AtomicI32::new(1));
    let mut tasks = Vec::new();
    for t in 0..6u64 {
        let lock = rw(&client().await, path);
        let seq = seq.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..15u64 {
                let wait = Duration::from_micros((t * 7919 + i * 104_729) % 4_000);
                let n = seq.fetch_add(1, Ordering::Relaxed);
                if n % 3 == 0 {
                    let _ = tokio::time::timeout(wait, lock.write_lock().lock()).await;
                } else if n % 3 == 1 {
                    let _ = tokio::time::timeout(wait, lock.read_lock().lock()).await;
                } else if let Ok(Ok(w)) = tokio::time::timeout(wait, lock.write_lock().lock()).await
                {
                    let _ = tokio::time::timeout(wait, w.downgrade()).await;
                }
            }
        }));
    }
    for t in tasks {
        bounded(t).await.unwrap();
    }
    holder.release().await.unwrap();
    wait_children(&observer, path, 0).await;
}

/// Both locks are revocable (Curator's are InterProcessMutexes): a revoker's `__REVOKE__`
/// reaches the holder's listener, which releases.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_locks_are_revocable() {
    let path = "/t/rw-revoke";
    let c = client().await;
    let lock = rw(&c, path);
    for write in [false, true] {
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let tx = std::sync::Mutex::new(Some(tx));
        let listener = move || {
            if let Some(tx) = tx.lock().unwrap().take() {
                let _ = tx.send(());
            }
        };
        let guard: Hold = if write {
            lock.write_lock().make_revocable(listener);
            lock.write_lock().lock().await.unwrap().into_hold()
        } else {
            lock.read_lock().make_revocable(listener);
            lock.read_lock().lock().await.unwrap().into_hold()
        };
        let (data, _) = c.get_data(guard.node_path()).await.unwrap();
        assert!(data.is_empty(), "a revocable node is created empty");
        recipe_mutex::revoke(&client().await, guard.node_path())
            .await
            .unwrap();
        bounded(rx).await.unwrap();
        guard.release().await.unwrap();
    }
    wait_children(&c, path, 0).await;
}

/// Issue 34, defect 2: `Duration::MAX` is "forever" (it panicked: "overflow when adding
/// duration to instant") for the read and write locks' `try_lock_for` and for
/// `try_downgrade_for`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timeout_of_duration_max_means_no_deadline() {
    let c = client().await;
    let path = "/t/rw-forever";
    let lock = rw(&c, path);
    let w = bounded(lock.write_lock().try_lock_for(Duration::MAX))
        .await
        .unwrap()
        .expect("free");
    let reader = rw(&client().await, path);
    let waiting = tokio::spawn(async move {
        let r = reader
            .read_lock()
            .try_lock_for(Duration::MAX)
            .await
            .unwrap();
        r.expect("no deadline: held once the writer downgrades")
            .release()
            .await
    });
    wait_children(&c, path, 2).await;
    let r = match bounded(w.try_downgrade_for(Duration::MAX)).await.unwrap() {
        Ok(r) => r,
        Err(_) => panic!("a downgrade with no deadline completes"),
    };
    bounded(waiting).await.unwrap().unwrap();
    r.release().await.unwrap();
    wait_children(&c, path, 0).await;
}

/// Issue 37: the queue as the server has it, readers and writers in one order: two readers
/// hold, a writer waits behind the last of them, a later reader waits behind the writer;
/// every node carries its session and, by default, this host's address.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_queue_shows_shared_readers_a_waiting_writer_and_a_reader_behind_it() {
    let path = "/t/rw-queue";
    let (a, b) = (client().await, client().await);
    let r1 = bounded(rw(&a, path).read_lock().lock()).await.unwrap();
    let r2 = bounded(rw(&b, path).read_lock().lock()).await.unwrap();
    let writer = tokio::spawn({
        let lock = rw(&a, path);
        async move { lock.write_lock().lock().await }
    });
    wait_children(&a, path, 3).await;
    let late_reader = tokio::spawn({
        let lock = rw(&b, path);
        async move { lock.read_lock().lock().await }
    });
    wait_children(&a, path, 4).await;

    let queue = bounded(rw(&b, path).queue()).await.unwrap();
    let names: Vec<&str> = queue.iter().map(|p| p.name()).collect();
    assert_eq!(queue.len(), 4, "{queue:#?}");
    assert_eq!(queue[0].node, r1.node_path());
    assert_eq!(queue[1].node, r2.node_path());
    assert!(queue[0].holds() && queue[1].holds(), "{queue:#?}");
    assert!(names[2].contains("__WRIT__"), "{names:?}");
    assert_eq!(queue[2].watches(), Some(names[1]));
    assert!(names[3].contains("__READ__"), "{names:?}");
    assert_eq!(queue[3].watches(), Some(names[2]));
    let sessions: Vec<i64> = queue.iter().map(|p| p.session_id).collect();
    assert_eq!(
        sessions,
        [
            a.session_id(),
            b.session_id(),
            a.session_id(),
            b.session_id()
        ]
    );
    assert!(
        queue.iter().all(|p| &p.data[..] == b"127.0.0.1"),
        "{queue:#?}"
    );

    bounded(r1.release()).await.unwrap();
    bounded(r2.release()).await.unwrap();
    let w = bounded(writer).await.unwrap().unwrap();
    bounded(w.release()).await.unwrap();
    let r3 = bounded(late_reader).await.unwrap().unwrap();
    bounded(r3.release()).await.unwrap();
}

/// A read or write holder whose node another client deletes while its session lives is told
/// (`lost()` says `Deleted`, `is_valid()` false); so is a downgraded holder, whose read node
/// is watched anew.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_and_write_holders_are_told_when_another_client_deletes_their_node() {
    let path = "/t/rw-deleted";
    let c = client().await;
    let other = client().await;
    let lock = rw(&c, path);
    let w = lock.write_lock().lock().await.unwrap();
    other.delete(w.node_path(), None).await.unwrap();
    assert_eq!(bounded(w.lost()).await, recipe_rwlock::Loss::Deleted);
    assert!(!w.is_valid());
    w.release().await.unwrap();

    let (r1, r2) = tokio::join!(lock.read_lock().lock(), lock.read_lock().lock());
    let (r1, r2) = (r1.unwrap(), r2.unwrap());
    other.delete(r1.node_path(), None).await.unwrap();
    assert_eq!(bounded(r1.lost()).await, recipe_rwlock::Loss::Deleted);
    assert!(!r1.is_valid());
    assert!(r2.is_valid(), "the other reader's node stands");
    drop((r1, r2));

    let down = lock
        .write_lock()
        .lock()
        .await
        .unwrap()
        .downgrade()
        .await
        .unwrap();
    assert!(down.is_valid());
    other.delete(down.node_path(), None).await.unwrap();
    assert_eq!(bounded(down.lost()).await, recipe_rwlock::Loss::Deleted);
    drop(down);

    // A write hold known dead is not downgraded: no read node with its sequence is made.
    let w = lock.write_lock().lock().await.unwrap();
    let dead = w.node_path().to_owned();
    other.delete(&dead, None).await.unwrap();
    assert_eq!(bounded(w.lost()).await, recipe_rwlock::Loss::Deleted);
    let refused = w.downgrade().await.unwrap_err();
    assert!(
        matches!(&refused, recipe_rwlock::Error::LockLost { node, .. } if *node == dead),
        "{refused:?}"
    );
    wait_children(&other, path, 0).await;
}
