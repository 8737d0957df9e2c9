//! The auditor against a real ZooKeeper's data directory: scripted lock histories in
//! Curator's layout, made with plain client operations (so every step's zxid is known: a
//! create's `czxid`, a child's deletion the directory's `pzxid` right after), then audited
//! from the server's snapshot and logs, with the answers compared exactly.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::sync::OnceLock;
use std::time::Duration;

use zk_client::{Client, CreateMode, CreateOptions};
use zk_lock_audit::datadir::{Start, read_into};
use zk_lock_audit::replay::{Audit, EndCause, Event, EventKind, History, LockHistory};
use zk_lock_audit::report::{Range, summarize};
use zk_testkit::{FaultProxy, ZkServer};

const BOUND: Duration = Duration::from_secs(60);

fn server() -> &'static ZkServer {
    static SERVER: OnceLock<ZkServer> = OnceLock::new();
    SERVER.get_or_init(|| ZkServer::start().expect("start ZooKeeper"))
}

async fn client_at(hosts: &str, timeout: Duration) -> Client {
    Client::builder()
        .hosts(hosts)
        .session_timeout(timeout)
        .connect()
        .await
        .unwrap()
}

async fn client() -> Client {
    client_at(&server().connect_string(), Duration::from_secs(20)).await
}

/// A lock node as Curator names it: `<dir>/_c_<uuid>-<lock_name><seq>`, the directory made
/// as a container first. Its name and its czxid.
async fn lock_node(c: &Client, dir: &str, lock_name: &str, n: u32) -> (String, i64) {
    let container = CreateOptions::new(CreateMode::Container);
    let mut at = String::new();
    for part in dir.trim_start_matches('/').split('/') {
        at.push('/');
        at.push_str(part);
        match c.create(at.clone(), b"", &container).await {
            Ok(_) | Err(zk_client::Error::NodeExists) => {}
            Err(e) => panic!("{at}: {e:?}"),
        }
    }
    let path = format!("{dir}/_c_{n:08x}-0000-4000-8000-{n:012x}-{lock_name}");
    let options = CreateOptions::new(CreateMode::EphemeralSequential);
    let (path, stat) = c
        .create_with_stat(path, b"10.0.0.1", &options)
        .await
        .unwrap();
    let name = path.rsplit('/').next().unwrap().to_owned();
    (name, stat.czxid)
}

/// The zxid of the last change to `dir`'s children.
async fn pzxid(c: &Client, dir: &str) -> i64 {
    c.exists(dir).await.unwrap().unwrap().pzxid
}

async fn wait_gone(c: &Client, path: &str) {
    tokio::time::timeout(BOUND, async {
        while c.exists(path).await.unwrap().is_some() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("node still there");
}

/// The history of the locks under `lock` in the server's data directory.
fn audit(lock: &str, leases: Option<u32>, start: Start) -> History {
    let mut audit = Audit::new(vec![lock.to_owned()]);
    if let Some(n) = leases {
        audit = audit.with_leases(lock, n);
    }
    let stats = read_into(&server().data_dir(), start, &mut audit).unwrap();
    assert!(
        stats.snapshot.is_some(),
        "the server's first snapshot is read"
    );
    let h = audit.finish();
    for l in &h.locks {
        assert_eq!(l.summary, summarize(l, Range::default()), "{}", l.path);
    }
    h
}

fn lock<'h>(h: &'h History, path: &str) -> &'h LockHistory {
    h.locks.iter().find(|l| l.path == path).unwrap()
}

/// The events of `node`, as (zxid, kind).
fn of<'l>(l: &'l LockHistory, node: &str) -> Vec<(i64, &'l EventKind)> {
    l.events
        .iter()
        .filter(|e| e.node == node)
        .map(|e| (e.at.zxid, &e.kind))
        .collect()
}

fn granted_at(l: &LockHistory, node: &str) -> Option<i64> {
    l.events
        .iter()
        .find(|e| e.node == node && matches!(e.kind, EventKind::Granted { .. }))
        .map(|e| e.at.zxid)
}

fn ended(l: &LockHistory, node: &str) -> Option<(i64, EndCause, bool)> {
    l.events.iter().find_map(|e: &Event| match e.kind {
        EventKind::Ended { cause, held, .. } if e.node == node => Some((e.at.zxid, cause, held)),
        _ => None,
    })
}

/// A mutex whose holder's session expires with a waiter queued (granted at the expiry's
/// zxid), a hold deleted by an operator's session (named), a gap before the next holder came,
/// a release, and a holder whose client closes its session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutex_expiry_deletion_by_another_session_release_and_close() {
    let dir = "/audit/mutex";
    let proxy = FaultProxy::start(server().addr()).unwrap();
    let a = client_at(&proxy.addr().to_string(), Duration::from_secs(2)).await;
    let (b, op, c, d) = (
        client().await,
        client().await,
        client().await,
        client().await,
    );

    let (na, za) = lock_node(&a, dir, "lock-", 0xa).await;
    let (nb, zb) = lock_node(&b, dir, "lock-", 0xb).await;
    proxy.stall(); // A's process hangs: its session expires.
    wait_gone(&b, &format!("{dir}/{na}")).await;
    let expired = pzxid(&b, dir).await;
    op.delete(format!("{dir}/{nb}"), None).await.unwrap();
    let deleted = pzxid(&b, dir).await;
    tokio::time::sleep(Duration::from_millis(300)).await; // nobody waits meanwhile
    let (nc, zc) = lock_node(&c, dir, "lock-", 0xc).await;
    c.delete(format!("{dir}/{nc}"), None).await.unwrap();
    let released = pzxid(&c, dir).await;
    let (nd, zd) = lock_node(&d, dir, "lock-", 0xd).await;
    d.close().await.unwrap();
    wait_gone(&c, &format!("{dir}/{nd}")).await;
    let closed = pzxid(&c, dir).await;

    let h = audit(dir, None, Start::Oldest);
    let l = lock(&h, dir);
    assert_eq!(l.kind.name(), "mutex");
    assert_eq!(granted_at(l, &na), Some(za));
    assert_eq!(ended(l, &na), Some((expired, EndCause::Expired, true)));
    assert_eq!(
        granted_at(l, &nb),
        Some(expired),
        "the waiter is first at the expiry"
    );
    let deleted_by = EndCause::DeletedBy(op.session_id());
    assert_eq!(ended(l, &nb), Some((deleted, deleted_by, true)));
    assert_eq!(granted_at(l, &nc), Some(zc));
    assert_eq!(ended(l, &nc), Some((released, EndCause::OwnDelete, true)));
    assert_eq!(granted_at(l, &nd), Some(zd));
    assert_eq!(ended(l, &nd), Some((closed, EndCause::Closed, true)));
    assert!(zb < expired);

    // The times: B waited from its creation to A's expiry, at least the stall's length
    // short of A's 2 s timeout; the expiry's next grant came at once; B's end waited for C.
    let b_events = of(l, &nb);
    let EventKind::Granted { wait_ms } = b_events[1].1 else {
        panic!("{b_events:?}")
    };
    assert!(*wait_ms >= 1000, "B waited {wait_ms} ms");
    let a_end = of(l, &na)[2].1;
    assert!(
        matches!(
            a_end,
            EventKind::Ended {
                next_grant_ms: Some(0),
                ..
            }
        ),
        "{a_end:?}"
    );
    let b_end = of(l, &nb)[2].1;
    let EventKind::Ended {
        next_grant_ms: Some(gap),
        ..
    } = b_end
    else {
        panic!("{b_end:?}")
    };
    assert!(*gap >= 300, "{gap} ms from the deletion to C's grant");
    let s = summarize(l, Range::default());
    assert_eq!(
        (
            s.queued,
            s.grants,
            s.expired,
            s.deleted_by_other,
            s.released,
            s.closed
        ),
        (4, 4, 1, 1, 1, 1)
    );
    assert_eq!(s.expiry_to_next_grant_ms, [Some(0)]);
    assert!(l.live.is_empty());
    // A's negotiated timeout, from its createSession.
    assert_eq!(h.session_timeouts.get(&a.session_id()), Some(&2000));

    // The binary says the same.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_zk-lock-audit"))
        .args(["--lock", dir, "--json"])
        .arg(server().data_dir())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json = String::from_utf8(out.stdout).unwrap();
    let by = format!("\"deleted_by\":\"0x{:x}\"", op.session_id());
    assert!(json.contains(&by), "{json}");
    assert!(json.contains("\"expiry_to_next_grant_ms\":[0]"), "{json}");
    assert!(json.contains(&format!("\"zxid\":{expired},")), "{json}");
    let text = std::process::Command::new(env!("CARGO_BIN_EXE_zk-lock-audit"))
        .args(["--lock", dir])
        .arg(server().data_dir())
        .output()
        .unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(
        text.contains(&format!("DELETED BY SESSION 0x{:x}", op.session_id())),
        "{text}"
    );
    assert!(text.contains("SESSION EXPIRED (timeout 2000 ms)"), "{text}");
    drop(a);
}

/// Two readers hold together, a writer waits for both, a reader behind the writer waits for
/// it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_write_mix() {
    let dir = "/audit/rw";
    let (a, b, c, d) = (
        client().await,
        client().await,
        client().await,
        client().await,
    );
    let (r0, z0) = lock_node(&a, dir, "__READ__", 0).await;
    let (r1, z1) = lock_node(&b, dir, "__READ__", 1).await;
    let (w2, _) = lock_node(&c, dir, "__WRIT__", 2).await;
    let (r3, _) = lock_node(&d, dir, "__READ__", 3).await;
    a.delete(format!("{dir}/{r0}"), None).await.unwrap();
    let first_reader_gone = pzxid(&a, dir).await;
    b.delete(format!("{dir}/{r1}"), None).await.unwrap();
    let readers_gone = pzxid(&a, dir).await;
    c.delete(format!("{dir}/{w2}"), None).await.unwrap();
    let writer_gone = pzxid(&a, dir).await;
    d.delete(format!("{dir}/{r3}"), None).await.unwrap();

    let h = audit(dir, None, Start::Oldest);
    let l = lock(&h, dir);
    assert_eq!(l.kind.name(), "read-write");
    assert_eq!(granted_at(l, &r0), Some(z0));
    assert_eq!(granted_at(l, &r1), Some(z1), "readers share");
    assert!(first_reader_gone < readers_gone);
    assert_eq!(
        granted_at(l, &w2),
        Some(readers_gone),
        "the writer waits for both"
    );
    assert_eq!(
        granted_at(l, &r3),
        Some(writer_gone),
        "a reader waits behind a writer"
    );
    let s = summarize(l, Range::default());
    assert_eq!((s.grants, s.released, s.max_queue), (4, 4, 4));
}

/// Curator's SemaphoreV2 with 2 leases, step by step: each client takes the inner lock,
/// makes a lease, counts, lets the inner lock go; the third waits for the count holding the
/// inner lock until a lease is returned.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn semaphore_of_two_leases() {
    let base = "/audit/sem";
    let (locks, leases) = (format!("{base}/locks"), format!("{base}/leases"));
    let (a, b, c) = (client().await, client().await, client().await);
    let mut lets_go = Vec::new();
    let mut lease = Vec::new();
    for (i, who) in [&a, &b].into_iter().enumerate() {
        let (inner, _) = lock_node(who, &locks, "lock-", i as u32).await;
        let (l, _) = lock_node(who, &leases, "lease-", i as u32).await;
        who.delete(format!("{locks}/{inner}"), None).await.unwrap();
        lets_go.push(pzxid(who, &locks).await);
        lease.push(l);
    }
    let (inner_c, _) = lock_node(&c, &locks, "lock-", 2).await;
    let (lease_c, _) = lock_node(&c, &leases, "lease-", 2).await;
    a.delete(format!("{leases}/{}", lease[0]), None)
        .await
        .unwrap();
    let a_returned = pzxid(&a, &leases).await;
    c.delete(format!("{locks}/{inner_c}"), None).await.unwrap();
    let c_lets_go = pzxid(&c, &locks).await;

    // Without the size: a lease holds when its session lets go of the inner lock.
    let h = audit(base, None, Start::Oldest);
    let l = lock(&h, &leases);
    assert_eq!(l.kind.name(), "semaphore-leases");
    assert_eq!(granted_at(l, &lease[0]), Some(lets_go[0]));
    assert_eq!(granted_at(l, &lease[1]), Some(lets_go[1]));
    assert_eq!(granted_at(l, &lease_c), Some(c_lets_go));
    assert_eq!(
        ended(l, &lease[0]),
        Some((a_returned, EndCause::OwnDelete, true))
    );
    assert_eq!(lock(&h, &locks).kind.name(), "semaphore-inner-lock");
    assert_eq!(summarize(lock(&h, &locks), Range::default()).grants, 3);
    assert_eq!(l.live.len(), 2);

    // Given the size: the count rule grants the third lease when A's is returned.
    let h = audit(base, Some(2), Start::Oldest);
    let l = lock(&h, &leases);
    assert_eq!(granted_at(l, &lease_c), Some(a_returned));
    assert!(a_returned < c_lets_go);
}

/// A server restarted while a lock is held and another waits: its new snapshot holds both
/// nodes, and an audit from that snapshot finds the holder holding and the waiter's grant
/// when the holder lets go, as the audit from the oldest snapshot does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn from_a_snapshot_taken_while_a_lock_is_held() {
    let opts = zk_testkit::ZkOptions::default().session_timeouts_ms(1_000, 60_000);
    let mut zk = tokio::task::block_in_place(|| ZkServer::start_with(opts)).unwrap();
    let dir = "/audit/restart";
    let long = Duration::from_secs(30);
    let (a, b) = (
        client_at(&zk.connect_string(), long).await,
        client_at(&zk.connect_string(), long).await,
    );
    let (na, za) = lock_node(&a, dir, "lock-", 1).await;
    let (nb, _) = lock_node(&b, dir, "lock-", 2).await;
    tokio::task::block_in_place(|| zk.restart()).unwrap();
    // Both sessions survive the restart (ZooKeeper restores them from the snapshot); the
    // delete is retried until the client has reconnected.
    tokio::time::timeout(BOUND, async {
        loop {
            match a.delete(format!("{dir}/{na}"), None).await {
                // NoNode: an earlier try's delete went through, its reply lost.
                Ok(()) | Err(zk_client::Error::NoNode) => break,
                Err(zk_client::Error::NotConnected | zk_client::Error::ConnectionLoss) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Err(e) => panic!("{e:?}"),
            }
        }
    })
    .await
    .expect("reconnected");
    // B may still be reconnecting.
    let released = retried(|| b.exists(dir)).await.unwrap().pzxid;

    let run = |start| {
        let mut audit = Audit::new(vec![dir.to_owned()]);
        let stats = read_into(&zk.data_dir(), start, &mut audit).unwrap();
        (stats, audit.finish())
    };
    let (stats, newest) = run(Start::Newest);
    let snapshot = stats.snapshot.unwrap();
    assert_ne!(
        snapshot.file_name().unwrap().to_str().unwrap(),
        "snapshot.0",
        "the restart wrote a snapshot"
    );
    let l = lock(&newest, dir);
    assert!(
        matches!(of(l, &na)[0], (z, EventKind::Present { holding: true, .. }) if z == za),
        "{:?}",
        l.events
    );
    assert!(matches!(
        of(l, &nb)[0].1,
        EventKind::Present { holding: false, .. }
    ));
    assert_eq!(granted_at(l, &nb), Some(released));
    assert_eq!(ended(l, &na), Some((released, EndCause::OwnDelete, true)));

    let (_, oldest) = run(Start::Oldest);
    let l = lock(&oldest, dir);
    assert_eq!(granted_at(l, &na), Some(za));
    assert_eq!(granted_at(l, &nb), Some(released));
    assert!(oldest.txns > newest.txns);
    drop((a, b));
}

/// Retries `op` while the client reconnects (a member killed under it).
async fn retried<T, F, Fut>(mut op: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, zk_client::Error>>,
{
    tokio::time::timeout(BOUND, async {
        loop {
            match op().await {
                Ok(v) => return v,
                Err(zk_client::Error::NotConnected | zk_client::Error::ConnectionLoss) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Err(e) => panic!("{e:?}"),
            }
        }
    })
    .await
    .expect("reconnected")
}

/// Deletes `path`, retried while the client reconnects; NoNode after a lost reply is done.
async fn delete_retried(c: &Client, path: &str) {
    retried(|| async {
        match c.delete(path, None).await {
            Err(zk_client::Error::NoNode) => Ok(()),
            other => other,
        }
    })
    .await;
}

/// A 3-member ensemble whose leader is killed while a lock is held and another waits: the
/// hand-off happens in the next epoch. Every member's data directory merged, and each
/// surviving member's alone, give the same grants; the epoch's change is not a gap, and the
/// members' logs agree.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_members_merged_across_a_leader_kill() {
    let opts = zk_testkit::ZkOptions::default().session_timeouts_ms(1_000, 60_000);
    let mut zk = tokio::task::block_in_place(|| zk_testkit::Ensemble::start(3, opts)).unwrap();
    let dir = "/audit/ensemble";
    let long = Duration::from_secs(30);
    let (a, b) = (
        client_at(&zk.connect_string(), long).await,
        client_at(&zk.connect_string(), long).await,
    );
    let (na, za) = lock_node(&a, dir, "lock-", 1).await;
    let (nb, zb) = lock_node(&b, dir, "lock-", 2).await;
    let leader = zk.wait_leader(BOUND).unwrap();
    tokio::task::block_in_place(|| zk.kill(leader)).unwrap();
    delete_retried(&a, &format!("{dir}/{na}")).await;
    let released = retried(|| b.exists(dir)).await.unwrap().pzxid;
    assert!(released >> 32 > zb >> 32, "the release is in a later epoch");
    delete_retried(&b, &format!("{dir}/{nb}")).await;
    let done = retried(|| b.exists(dir)).await.unwrap().pzxid;

    let check = |dirs: Vec<std::path::PathBuf>| {
        let mut audit = Audit::new(vec![dir.to_owned()]);
        zk_lock_audit::datadir::read_members(&dirs, Start::Oldest, &mut audit).unwrap();
        let h = audit.finish();
        assert_eq!(h.anomalies, [], "{dirs:?}");
        let l = lock(&h, dir);
        assert_eq!(granted_at(l, &na), Some(za), "{dirs:?}");
        assert_eq!(granted_at(l, &nb), Some(released), "{dirs:?}");
        assert_eq!(
            ended(l, &nb),
            Some((done, EndCause::OwnDelete, true)),
            "{dirs:?}"
        );
    };
    check((0..3).map(|i| zk.data_dir(i)).collect());
    for i in (0..3).filter(|&i| i != leader) {
        check(vec![zk.data_dir(i)]);
    }
    drop((a, b));
}
