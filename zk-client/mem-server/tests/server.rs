//! The real `zk_client::Client` against the in-memory wire server, on tokio's paused clock:
//! operations and their errors, watches, sequence names, and the faults (cut, down past the
//! session timeout, stall past the read deadline), and the inspection calls (`data`, `node`).
//! Every wait is bounded on virtual time.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::time::Duration;

use zk_client::{Client, CreateMode, CreateOptions, Error, EventType, Op, OpResult, SessionState};
use zk_mem_server::{MemServer, ServerConfig};

/// The bound on every wait: far beyond any deadline here, and free on the paused clock.
const BOUND: Duration = Duration::from_secs(120);

fn opts(mode: CreateMode) -> CreateOptions {
    CreateOptions::new(mode)
}

async fn client(server: &MemServer, seed: u64) -> Client {
    let builder = Client::builder().session_timeout(Duration::from_secs(6));
    tokio::time::timeout(BOUND, server.client(builder, seed))
        .await
        .expect("connects in time")
        .expect("connects")
}

async fn wait_state(c: &Client, want: SessionState) {
    let mut states = c.state_watch();
    tokio::time::timeout(BOUND, states.wait_for(|s| *s == want))
        .await
        .unwrap_or_else(|_| panic!("no {want:?} in time (now {:?})", c.state()))
        .unwrap();
}

#[tokio::test(start_paused = true)]
async fn operations_answer_with_zookeepers_results_and_errors() {
    let server = MemServer::new(ServerConfig::new(1));
    let c = client(&server, 1).await;
    assert_eq!(c.session_timeout(), Duration::from_secs(6));
    let p = opts(CreateMode::Persistent);

    assert_eq!(c.create("/a", b"1", &p).await.unwrap(), "/a");
    assert_eq!(c.create("/a", b"", &p).await, Err(Error::NodeExists));
    assert_eq!(c.create("/x/y", b"", &p).await, Err(Error::NoNode));
    let (data, stat) = c.get_data("/a").await.unwrap();
    assert_eq!(&data[..], b"1");
    assert_eq!(
        (stat.version, stat.data_length, stat.num_children),
        (0, 1, 0)
    );
    assert_eq!(stat.czxid, stat.mzxid);
    assert_eq!(stat.ephemeral_owner, 0);

    let set = c.set_data("/a", b"22", Some(0)).await.unwrap();
    assert_eq!((set.version, set.czxid), (1, stat.czxid));
    assert!(set.mzxid > stat.mzxid);
    assert_eq!(
        c.set_data("/a", b"3", Some(0)).await,
        Err(Error::BadVersion)
    );
    assert_eq!(c.set_data("/nope", b"3", None).await, Err(Error::NoNode));

    let (_, child) = c.create_with_stat("/a/b", b"", &p).await.unwrap();
    assert_eq!(c.delete("/a", None).await, Err(Error::NotEmpty));
    assert_eq!(c.delete("/a/b", Some(5)).await, Err(Error::BadVersion));
    let (children, parent) = c.get_children_with_stat("/a").await.unwrap();
    assert_eq!(children, ["b"]);
    assert_eq!((parent.num_children, parent.cversion), (1, 1));
    assert_eq!(parent.pzxid, child.czxid);
    assert_eq!(
        parent.mzxid, set.mzxid,
        "a child does not touch the parent's data"
    );
    c.delete("/a/b", Some(0)).await.unwrap();
    assert_eq!(c.exists("/a/b").await, Ok(None));
    let parent = c.exists("/a").await.unwrap().unwrap();
    assert_eq!((parent.num_children, parent.cversion), (0, 2));
    assert_eq!(c.delete("/a/b", None).await, Err(Error::NoNode));
    c.sync("/a").await.unwrap();

    let mut root = c.get_children("/").await.unwrap();
    root.sort();
    assert_eq!(root, ["a", "zookeeper"]);

    let e = c
        .create("/e", b"", &opts(CreateMode::Ephemeral))
        .await
        .unwrap();
    assert_eq!(
        c.create("/e/c", b"", &p).await,
        Err(Error::NoChildrenForEphemerals)
    );
    let owner = c.exists(&e).await.unwrap().unwrap().ephemeral_owner;
    assert_eq!(owner, c.session_id());
    assert_eq!(server.ephemerals(), [("/e".to_owned(), c.session_id())]);
    assert_eq!(c.get_ephemerals("/").await.unwrap(), ["/e"]);

    // A transaction commits whole, under one zxid.
    let results = c
        .multi(&[
            Op::create("/m", "", p.clone()),
            Op::create("/m/1", "", p.clone()),
            Op::set_data("/a", "4", Some(1)),
            Op::check("/a", Some(2)),
        ])
        .await
        .unwrap();
    let [
        OpResult::Created(m, _),
        OpResult::Created(_, _),
        OpResult::DataSet(a_stat),
        OpResult::Checked,
    ] = &results[..]
    else {
        panic!("{results:?}");
    };
    assert_eq!(m, "/m");
    let (m_stat, m1_stat) = (server.exists("/m").unwrap(), server.exists("/m/1").unwrap());
    assert_eq!(m_stat.czxid, m1_stat.czxid);
    assert_eq!(a_stat.mzxid, m_stat.czxid);
    assert_eq!(a_stat.version, 2);

    // ... or not at all, naming the op that failed.
    let zxid = server.zxid();
    let failed = c
        .multi(&[
            Op::create("/n", "", p.clone()),
            Op::check("/a", Some(99)),
            Op::delete("/m/1", None),
        ])
        .await;
    assert!(
        matches!(&failed, Err(Error::MultiFailed { index: 1, source }) if **source == Error::BadVersion),
        "{failed:?}"
    );
    assert_eq!(c.exists("/n").await, Ok(None));
    assert!(server.exists("/m/1").is_some());
    assert_eq!(server.zxid(), zxid + 1, "a failed transaction takes a zxid");

    c.close().await.unwrap();
    assert!(server.ephemerals().is_empty(), "closing ends the session");
    assert!(server.sessions().is_empty());
}

#[tokio::test(start_paused = true)]
async fn one_shot_watches_fire_once_for_the_other_clients_changes() {
    let server = MemServer::new(ServerConfig::new(2));
    let a = client(&server, 1).await;
    let b = client(&server, 2).await;
    let p = opts(CreateMode::Persistent);
    b.create("/w", b"", &p).await.unwrap();

    let (_, _, data) = a.get_data_and_watch("/w").await.unwrap();
    let (_, children) = a.get_children_and_watch("/w").await.unwrap();
    let (none, created) = a.exists_and_watch("/q").await.unwrap();
    assert!(none.is_none());

    b.set_data("/w", b"x", None).await.unwrap();
    let event = tokio::time::timeout(BOUND, data).await.unwrap();
    assert_eq!(
        (event.event_type, event.path.as_str()),
        (EventType::NodeDataChanged, "/w")
    );

    b.create("/w/c", b"", &p).await.unwrap();
    let event = tokio::time::timeout(BOUND, children).await.unwrap();
    assert_eq!(event.event_type, EventType::NodeChildrenChanged);

    b.create("/q", b"", &p).await.unwrap();
    let event = tokio::time::timeout(BOUND, created).await.unwrap();
    assert_eq!(
        (event.event_type, event.path.as_str()),
        (EventType::NodeCreated, "/q")
    );

    // Fired once: nothing is left on the server.
    assert_eq!(server.watch_count(), 0);
    let (_, _, deleted) = a.get_data_and_watch("/q").await.unwrap();
    b.delete("/q", None).await.unwrap();
    let event = tokio::time::timeout(BOUND, deleted).await.unwrap();
    assert_eq!(event.event_type, EventType::NodeDeleted);
}

#[tokio::test(start_paused = true)]
async fn sequential_names_count_the_parents_creates() {
    let server = MemServer::new(ServerConfig::new(3));
    let c = client(&server, 1).await;
    c.create("/l", b"", &opts(CreateMode::Persistent))
        .await
        .unwrap();
    let es = opts(CreateMode::EphemeralSequential);
    let mut names = Vec::new();
    for _ in 0..3 {
        names.push(c.create("/l/lock-", b"", &es).await.unwrap());
    }
    assert_eq!(
        names,
        [
            "/l/lock-0000000000",
            "/l/lock-0000000001",
            "/l/lock-0000000002"
        ]
    );
    c.delete("/l/lock-0000000001", None).await.unwrap();
    // A delete does not move the sequence (ZooKeeper numbers from the count of creates),
    // though the parent's cversion, as a client sees it, counts it.
    assert_eq!(
        c.create("/l/lock-", b"", &es).await.unwrap(),
        "/l/lock-0000000003"
    );
    let ps = opts(CreateMode::PersistentSequential);
    assert_eq!(c.create("/l/", b"", &ps).await.unwrap(), "/l/0000000004");
    let stat = c.exists("/l").await.unwrap().unwrap();
    assert_eq!((stat.cversion, stat.num_children), (6, 4));

    // Near i32::MAX they wrap, as Java's %010d prints them.
    let mut config = ServerConfig::new(3);
    config.first_cversion = i32::MAX;
    let wrapping = MemServer::new(config);
    let c = client(&wrapping, 1).await;
    c.create("/l", b"", &opts(CreateMode::Persistent))
        .await
        .unwrap();
    assert_eq!(
        c.create("/l/x-", b"", &es).await.unwrap(),
        "/l/x-2147483647"
    );
    assert_eq!(
        c.create("/l/x-", b"", &es).await.unwrap(),
        "/l/x--2147483648"
    );
}

#[tokio::test(start_paused = true)]
async fn containers_go_with_their_last_child() {
    let server = MemServer::new(ServerConfig::new(4));
    let c = client(&server, 1).await;
    c.create("/c", b"", &opts(CreateMode::Container))
        .await
        .unwrap();
    let child = c
        .create("/c/x-", b"", &opts(CreateMode::EphemeralSequential))
        .await
        .unwrap();
    let (_, _, gone) = c.get_data_and_watch("/c").await.unwrap();
    c.delete(&child, None).await.unwrap();
    let event = tokio::time::timeout(BOUND, gone).await.unwrap();
    assert_eq!(
        (event.event_type, event.path.as_str()),
        (EventType::NodeDeleted, "/c")
    );
    assert_eq!(c.exists("/c").await, Ok(None));
}

#[tokio::test(start_paused = true)]
async fn a_cut_connection_comes_back_to_the_same_session_and_its_watch_fires() {
    let server = MemServer::new(ServerConfig::new(5));
    let a = client(&server, 1).await;
    let b = client(&server, 2).await;
    let session = a.session_id();
    a.create("/eph", b"", &opts(CreateMode::Ephemeral))
        .await
        .unwrap();
    b.create("/d", b"0", &opts(CreateMode::Persistent))
        .await
        .unwrap();
    let (_, _, watcher) = a.get_data_and_watch("/d").await.unwrap();
    let mut states = a.state_stream();

    // Cut, and keep `a` out while `b` changes the node.
    server.refuse(true);
    assert!(server.cut(session));
    wait_state(&a, SessionState::Disconnected).await;
    b.set_data("/d", b"1", None).await.unwrap();
    server.refuse(false);
    wait_state(&a, SessionState::Connected).await;

    let seen = [states.next().await, states.next().await];
    assert_eq!(
        seen,
        [
            Some(SessionState::Disconnected),
            Some(SessionState::Connected)
        ]
    );
    assert_eq!(a.session_id(), session, "the same session");
    assert_eq!(server.ephemerals(), [("/eph".to_owned(), session)]);
    // The watch set before the cut fires for the change made while disconnected
    // (SetWatches: changed since the client's last zxid).
    let event = tokio::time::timeout(BOUND, watcher).await.unwrap();
    assert_eq!(
        (event.event_type, event.path.as_str()),
        (EventType::NodeDataChanged, "/d")
    );
    assert_eq!(&a.get_data("/d").await.unwrap().0[..], b"1");
}

#[tokio::test(start_paused = true)]
async fn a_server_down_past_the_session_timeout_expires_the_session() {
    let server = MemServer::new(ServerConfig::new(6));
    let a = client(&server, 1).await;
    let b = client(&server, 2).await;
    a.create("/gone", b"", &opts(CreateMode::Ephemeral))
        .await
        .unwrap();
    let t0 = tokio::time::Instant::now();

    server.down();
    wait_state(&a, SessionState::Disconnected).await;
    wait_state(&a, SessionState::Lost).await;
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert!(server.sessions().is_empty(), "both sessions expired");
    assert!(server.exists("/gone").is_none());
    assert!(server.ephemerals().is_empty());

    server.up();
    wait_state(&a, SessionState::Expired).await;
    wait_state(&b, SessionState::Expired).await;
    assert_eq!(a.exists("/gone").await, Err(Error::SessionExpired));
    assert!(t0.elapsed() < BOUND);

    // A new client sees the ephemeral gone.
    let c = client(&server, 3).await;
    assert_eq!(c.exists("/gone").await, Ok(None));
}

#[tokio::test(start_paused = true)]
async fn a_stalled_connection_is_left_at_the_read_deadline_and_the_session_resumes() {
    let server = MemServer::new(ServerConfig::new(7));
    let a = client(&server, 1).await;
    let session = a.session_id();
    a.create("/eph", b"", &opts(CreateMode::Ephemeral))
        .await
        .unwrap();
    let mut states = a.state_stream();
    let t0 = tokio::time::Instant::now();

    assert!(server.stall(session, true));
    // Every state in order (the client reconnects at once, so a watch of the latest state
    // could miss the disconnect).
    let mut next = async || tokio::time::timeout(BOUND, states.next()).await.unwrap();
    assert_eq!(next().await, Some(SessionState::Disconnected));
    let left = t0.elapsed();
    // Nothing heard for two thirds of the 6 s timeout (the last reply came just before).
    assert!(left <= Duration::from_secs(4), "{left:?}");
    assert!(left >= Duration::from_secs(2), "{left:?}");
    assert_eq!(next().await, Some(SessionState::Connected));
    assert!(
        t0.elapsed() < Duration::from_secs(6),
        "back within the timeout"
    );
    assert_eq!(a.session_id(), session);
    assert_eq!(server.ephemerals(), [("/eph".to_owned(), session)]);
    assert_eq!(a.get_children("/").await.unwrap().len(), 2);
    // The stalled connection was dropped when the session moved to the new one.
    assert_eq!(server.sessions().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_refused_first_connect_fails_and_an_expired_resume_is_told_so() {
    let server = MemServer::new(ServerConfig::new(8));
    server.refuse(true);
    let err = server
        .client(Client::builder(), 1)
        .await
        .expect_err("refused");
    assert!(matches!(err, Error::Unreachable { .. }), "{err:?}");
    server.refuse(false);

    let a = client(&server, 1).await;
    let (id, passwd) = (a.session_id(), a.session_password());
    assert!(server.expire(id));
    wait_state(&a, SessionState::Expired).await;
    let resumed = server
        .client(Client::builder().resume_session(id, passwd), 2)
        .await;
    assert_eq!(resumed.err(), Some(Error::SessionExpired));
}

/// A client writing while seeded chaos strikes (cuts, stalls, expiry): everything the client
/// saw, every fault and the server's last zxid.
async fn chaos_run(seed: u64) -> (Vec<zk_mem_server::Fault>, Vec<String>, i64) {
    let server = MemServer::new(ServerConfig::new(seed));
    let c = client(&server, seed).await;
    c.create("/n", b"", &opts(CreateMode::Persistent))
        .await
        .unwrap();
    let writer = {
        let c = c.clone();
        tokio::spawn(async move {
            let mut seen = Vec::new();
            for i in 0..40u32 {
                let result = c.set_data("/n", &i.to_be_bytes(), None).await;
                seen.push(format!("{:?}", result.map(|stat| stat.version)));
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            seen
        })
    };
    let mut faults = Vec::new();
    for i in 0..6u64 {
        // Pauses of their own, fixed by the seed (the faults come from the server's).
        let pause = seed
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            .rotate_left(7 * i as u32)
            % 400;
        tokio::time::sleep(Duration::from_millis(pause)).await;
        faults.extend(server.chaos());
    }
    for session in server.sessions() {
        server.stall(session.id, false);
    }
    let seen = tokio::time::timeout(BOUND, writer).await.unwrap().unwrap();
    (faults, seen, server.zxid())
}

#[tokio::test(start_paused = true)]
async fn a_seeded_run_with_chaos_replays_exactly() {
    let first = chaos_run(9).await;
    assert!(!first.0.is_empty());
    assert_eq!(first, chaos_run(9).await);
}

#[tokio::test(start_paused = true)]
async fn data_is_the_nodes_bytes_or_none_without_a_node_and_node_tells_all() {
    let server = MemServer::new(ServerConfig::new(9));
    let client = client(&server, 9).await;
    let p = CreateOptions::new(CreateMode::Persistent);
    client.create("/d", b"v", &p).await.unwrap();
    client.create("/e", b"", &p).await.unwrap();
    assert_eq!(server.data("/d").as_deref(), Some(&b"v"[..]));
    assert_eq!(server.data("/e").as_deref(), Some(&b""[..]));
    assert_eq!(server.data("/nothing"), None);
    let node = server.node("/d").unwrap();
    assert_eq!(node.data.as_deref(), Some(&b"v"[..]));
    assert_eq!(node.stat().data_length, 1);
    assert!(server.node("/nothing").is_none());
}
