//! Surviving faults against real servers started by the tests: members killed, the leader
//! killed mid-stream, every member paused past the session timeout, a server restarted, and
//! network stalls and cuts through xtask's fault proxy. Each test waits for events with a
//! bound and prints the figures it measures (`FIGURE ...`).

#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use zk_client::*;
use zk_testkit::{Ensemble, FaultProxy, ZkOptions, ZkServer};

const BOUND: Duration = Duration::from_secs(60);

async fn connect(hosts: &str, timeout: Duration) -> Client {
    Client::builder()
        .hosts(hosts)
        .session_timeout(timeout)
        .connect_timeout(Duration::from_secs(2))
        .connect()
        .await
        .expect("connect")
}

/// Waits until the stream reports `want`, returning every state seen on the way.
async fn wait_state(states: &mut StateStream, want: SessionState) -> Vec<SessionState> {
    let mut seen = Vec::new();
    let reached = tokio::time::timeout(BOUND, async {
        while let Some(s) = states.next().await {
            seen.push(s);
            if s == want {
                return true;
            }
        }
        false
    })
    .await;
    match reached {
        Ok(true) => seen,
        Ok(false) => panic!("state stream ended before {want:?}; saw {seen:?}"),
        Err(_) => panic!("no {want:?} within {BOUND:?}; saw {seen:?}"),
    }
}

/// Waits until `c` is connected again.
async fn wait_connected(c: &Client) {
    let mut states = c.state_watch();
    tokio::time::timeout(BOUND, states.wait_for(|s| s.is_connected()))
        .await
        .unwrap()
        .unwrap();
}

fn opts(mode: CreateMode) -> CreateOptions {
    CreateOptions::new(mode)
}

fn hosts_of(addrs: impl IntoIterator<Item = std::net::SocketAddr>) -> String {
    addrs
        .into_iter()
        .map(|a| a.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_the_connected_member_moves_the_session_and_restores_its_watches() {
    let mut ens = Ensemble::start(3, ZkOptions::default()).unwrap();
    let proxies: Vec<FaultProxy> = (0..3)
        .map(|i| FaultProxy::start(ens.client_addr(i)).unwrap())
        .collect();
    let c = connect(
        &hosts_of(proxies.iter().map(FaultProxy::addr)),
        Duration::from_secs(8),
    )
    .await;
    c.create("/k", b"0", &opts(CreateMode::Persistent))
        .await
        .unwrap();
    c.create("/k/eph", b"", &opts(CreateMode::Ephemeral))
        .await
        .unwrap();
    let (_, _, data_changed) = c.get_data_and_watch("/k").await.unwrap();
    let (_, created) = c.exists_and_watch("/k/late").await.unwrap();

    let via = c.server_addr().unwrap();
    let i = proxies.iter().position(|p| p.addr() == via).unwrap();
    let others = (0..3).filter(|&j| j != i).map(|j| ens.client_addr(j));
    let direct = connect(&hosts_of(others), Duration::from_secs(8)).await;
    // Keep the client away while the change is made, so that the change happens during its
    // outage; then let it reconnect.
    for p in &proxies {
        p.refuse(true);
    }
    let mut states = c.state_stream();
    let killed_at = Instant::now();
    ens.kill(i).unwrap();
    wait_state(&mut states, SessionState::Disconnected).await;
    // If the killed member led, the survivors elect a new leader and drop their clients
    // meanwhile: retry those writes (a create that was applied shows as NodeExists).
    loop {
        match direct
            .create("/k/late", b"", &opts(CreateMode::Persistent))
            .await
        {
            Ok(_) | Err(Error::NodeExists) => break,
            Err(Error::ConnectionLoss | Error::NotConnected) => {
                wait_connected(&direct).await;
            }
            Err(e) => panic!("{e}"),
        }
    }
    loop {
        match direct.set_data("/k", b"1", None).await {
            Ok(_) => break,
            Err(Error::ConnectionLoss | Error::NotConnected) => {
                wait_connected(&direct).await;
            }
            Err(e) => panic!("{e}"),
        }
    }
    let changed_at = killed_at.elapsed();
    for p in &proxies {
        p.refuse(false);
    }
    wait_state(&mut states, SessionState::Connected).await;
    c.exists("/").await.unwrap();
    let usable = killed_at.elapsed();
    assert_ne!(c.server_addr(), Some(via));

    // The watches set before the kill fire for the changes made during the outage.
    let ev = tokio::time::timeout(BOUND, created).await.unwrap();
    assert_eq!(
        (ev.event_type, ev.path.as_str()),
        (EventType::NodeCreated, "/k/late")
    );
    let ev = tokio::time::timeout(BOUND, data_changed).await.unwrap();
    assert_eq!(
        (ev.event_type, ev.path.as_str()),
        (EventType::NodeDataChanged, "/k")
    );
    // The session and its ephemeral survived.
    let stat = direct
        .exists("/k/eph")
        .await
        .unwrap()
        .expect("ephemeral survives");
    assert_eq!(stat.ephemeral_owner, c.session_id());
    eprintln!(
        "FIGURE kill-to-usable {usable:?}, of which {changed_at:?} held back on purpose \
         (session timeout {:?}, connect timeout 2 s)",
        c.session_timeout()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_the_connected_member_time_to_usable() {
    let mut ens = Ensemble::start(3, ZkOptions::default()).unwrap();
    let c = connect(&ens.connect_string(), Duration::from_secs(8)).await;
    let via = c.server_addr().unwrap();
    let i = (0..3).find(|&j| ens.client_addr(j) == via).unwrap();
    let mut states = c.state_stream();
    let killed_at = Instant::now();
    ens.kill(i).unwrap();
    wait_state(&mut states, SessionState::Connected).await;
    c.exists("/").await.unwrap();
    eprintln!(
        "FIGURE kill-to-usable (nothing held back) {:?} (session timeout {:?})",
        killed_at.elapsed(),
        c.session_timeout()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_across_a_leader_kill_succeed_once_or_fail_with_connection_loss() {
    let ens = Arc::new(Mutex::new(
        Ensemble::start(3, ZkOptions::default()).unwrap(),
    ));
    let hosts = ens.lock().unwrap().connect_string();
    let c = connect(&hosts, Duration::from_secs(15)).await;
    c.create("/lw", b"", &opts(CreateMode::Persistent))
        .await
        .unwrap();

    let acked = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let writer = {
        let c = c.clone();
        let acked = acked.clone();
        tokio::spawn(async move {
            let mut outcomes = Vec::new();
            let deadline = Instant::now() + BOUND;
            let mut i = 0;
            while acked.load(std::sync::atomic::Ordering::Relaxed) < 400
                && Instant::now() < deadline
            {
                let path = format!("/lw/{i:06}");
                let result = c.create(&path, b"", &opts(CreateMode::Persistent)).await;
                match &result {
                    Ok(_) => {
                        acked.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                    Err(Error::ConnectionLoss | Error::NotConnected) => {
                        // Wait for the session to come back before the next write.
                        wait_connected(&c).await;
                    }
                    Err(e) => panic!("write {i}: unexpected {e:?}"),
                }
                outcomes.push((path, result.is_ok()));
                i += 1;
            }
            outcomes
        })
    };
    tokio::time::timeout(BOUND, async {
        while acked.load(std::sync::atomic::Ordering::Relaxed) < 100 {
            tokio::task::yield_now().await;
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .unwrap();
    let killer = ens.clone();
    tokio::task::spawn_blocking(move || {
        let mut ens = killer.lock().unwrap();
        let leader = ens.wait_leader(Duration::from_secs(30)).unwrap();
        ens.kill(leader).unwrap();
    })
    .await
    .unwrap();
    let outcomes = writer.await.unwrap();

    let reader = connect(&hosts, Duration::from_secs(15)).await;
    reader.sync("/lw").await.unwrap();
    let present: std::collections::HashSet<String> = reader
        .get_children("/lw")
        .await
        .unwrap()
        .into_iter()
        .map(|k| format!("/lw/{k}"))
        .collect();
    let (mut ok, mut failed, mut failed_found) = (0, 0, 0);
    for (path, acked) in &outcomes {
        if *acked {
            ok += 1;
            assert!(present.contains(path), "acked write {path} is missing");
        } else {
            failed += 1;
            failed_found += usize::from(present.contains(path));
        }
    }
    // Nothing exists that we did not attempt.
    assert!(present.len() <= outcomes.len());
    assert_eq!(present.len(), ok + failed_found);
    assert!(ok >= 400, "the writer made progress after the kill: {ok}");
    eprintln!(
        "FIGURE leader kill: attempted {} acked {ok} failed {failed} (of which applied {failed_found})",
        outcomes.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pausing_every_member_past_the_timeout_loses_then_expires_the_session() {
    let mut ens = Ensemble::start(3, ZkOptions::default()).unwrap();
    let proxies: Vec<FaultProxy> = (0..3)
        .map(|i| FaultProxy::start(ens.client_addr(i)).unwrap())
        .collect();
    let c = connect(
        &hosts_of(proxies.iter().map(FaultProxy::addr)),
        Duration::from_secs(3),
    )
    .await;
    c.create("/pz", b"", &opts(CreateMode::Persistent))
        .await
        .unwrap();
    c.create("/pz/e", b"", &opts(CreateMode::Ephemeral))
        .await
        .unwrap();
    let mut states = c.state_stream();
    for i in 0..3 {
        ens.pause(i).unwrap();
    }
    let paused_at = Instant::now();
    wait_state(&mut states, SessionState::Disconnected).await;
    let disconnected = paused_at.elapsed();
    wait_state(&mut states, SessionState::Lost).await;
    let lost = paused_at.elapsed();
    assert!(
        lost >= Duration::from_secs(2),
        "lost only after the session timeout: {lost:?}"
    );
    // Not sent: no server.
    assert_eq!(c.get_data("/pz").await, Err(Error::NotConnected));
    // The ensemble comes back; keep our client away until the ensemble has expired its
    // session (a frozen ensemble expires nothing: a quick reconnect could revive it).
    for p in &proxies {
        // Also cut the connections made to the paused members: their handshakes wait in
        // the kernel and would be answered at resume.
        p.refuse(true);
        p.cut();
    }
    for i in 0..3 {
        ens.resume(i).unwrap();
    }
    let observer = connect(&ens.connect_string(), Duration::from_secs(10)).await;
    if let (Some(_), gone) = observer.exists_and_watch("/pz/e").await.unwrap() {
        let ev = tokio::time::timeout(BOUND, gone).await.unwrap();
        assert_eq!(ev.event_type, EventType::NodeDeleted);
    }
    for p in &proxies {
        p.refuse(false);
    }
    wait_state(&mut states, SessionState::Expired).await;
    assert_eq!(c.get_data("/pz").await, Err(Error::SessionExpired));
    assert_eq!(observer.exists("/pz/e").await, Ok(None));
    eprintln!(
        "FIGURE pause all (negotiated {:?}): Disconnected after {disconnected:?}, Lost after {lost:?}",
        c.session_timeout()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_server_resumes_the_session() {
    let mut zk = ZkServer::start().unwrap();
    let c = connect(&zk.connect_string(), Duration::from_secs(10)).await;
    c.create("/r", b"", &opts(CreateMode::Ephemeral))
        .await
        .unwrap();
    let (_, gone) = c.exists_and_watch("/r/none").await.unwrap();
    let mut states = c.state_stream();
    tokio::task::block_in_place(|| zk.restart()).unwrap();
    let seen = wait_state(&mut states, SessionState::Connected).await;
    assert_eq!(seen.first(), Some(&SessionState::Disconnected), "{seen:?}");
    let stat = c.exists("/r").await.unwrap().expect("ephemeral kept");
    assert_eq!(stat.ephemeral_owner, c.session_id());
    // The restored watch still works.
    c.create("/r2", b"", &opts(CreateMode::Persistent))
        .await
        .unwrap();
    c.create("/r2/x", b"", &opts(CreateMode::Persistent))
        .await
        .unwrap();
    drop(gone);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_connection_is_declared_dead_and_the_session_resumes() {
    let zk = ZkServer::start().unwrap();
    let proxy = FaultProxy::start(zk.addr()).unwrap();
    let c = connect(&proxy.addr().to_string(), Duration::from_secs(6)).await;
    let sid = c.session_id();
    let mut states = c.state_stream();
    proxy.stall();
    let stalled_at = Instant::now();
    let in_flight = c.get_data("/");
    assert_eq!(
        tokio::time::timeout(BOUND, in_flight).await.unwrap(),
        Err(Error::ConnectionLoss)
    );
    let detected = stalled_at.elapsed();
    // Two thirds of the negotiated 6 s with nothing read.
    assert!(detected >= Duration::from_secs(3), "{detected:?}");
    wait_state(&mut states, SessionState::Disconnected).await;
    proxy.pass();
    wait_state(&mut states, SessionState::Connected).await;
    assert_eq!(c.session_id(), sid);
    c.exists("/").await.unwrap();

    // A cut connection: the client reconnects at once.
    proxy.cut();
    wait_state(&mut states, SessionState::Disconnected).await;
    wait_state(&mut states, SessionState::Connected).await;
    c.exists("/").await.unwrap();
    eprintln!(
        "FIGURE stall detected after {detected:?} (negotiated {:?})",
        c.session_timeout()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connects_while_one_member_is_down() {
    let mut ens = Ensemble::start(3, ZkOptions::default()).unwrap();
    ens.kill(0).unwrap();
    // If member 0 led, let the others elect a leader: a member without one serves nobody.
    tokio::task::block_in_place(|| ens.wait_leader(BOUND)).unwrap();
    for _ in 0..5 {
        let c = connect(&ens.connect_string(), Duration::from_secs(10)).await;
        assert!(c.exists("/").await.unwrap().is_some());
        assert_ne!(c.server_addr(), Some(ens.client_addr(0)));
        c.close().await.unwrap();
    }
    // The ensemble's configuration names its three members.
    let c = connect(&ens.connect_string(), Duration::from_secs(10)).await;
    let (config, _) = c.get_config().await.unwrap();
    let config = String::from_utf8_lossy(&config);
    assert_eq!(
        config.lines().filter(|l| l.starts_with("server.")).count(),
        3,
        "{config}"
    );
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_mode() {
    // Read-only servers create sessions only when sessions start local; they refuse to
    // resume global sessions.
    let opts_ro = ZkOptions::default()
        .system_property("readonlymode.enabled", "true")
        .config("localSessionsEnabled", "true")
        .config("localSessionsUpgradingEnabled", "true");
    let mut ens = Ensemble::start(3, opts_ro).unwrap();
    let setup = connect(&ens.connect_string(), Duration::from_secs(10)).await;
    setup
        .create("/ro", b"data", &opts(CreateMode::Persistent))
        .await
        .unwrap();
    setup.close().await.unwrap();
    ens.kill(1).unwrap();
    ens.kill(2).unwrap();
    // The survivor has no quorum: it turns read-only.
    tokio::task::block_in_place(|| ens.wait_mode(0, zk_testkit::Mode::ReadOnly, BOUND)).unwrap();
    // A client that accepts read-only servers gets a read-only session on the survivor.
    let ro = Client::builder()
        .hosts(ens.connect_string())
        .can_be_read_only(true)
        .connect_timeout(Duration::from_secs(1))
        .session_timeout(Duration::from_secs(10))
        .connect()
        .await
        .unwrap();
    assert_eq!(ro.state(), SessionState::ConnectedReadOnly);
    assert_eq!(&ro.get_data("/ro").await.unwrap().0[..], b"data");
    assert_eq!(
        ro.create("/ro/x", b"", &opts(CreateMode::Persistent)).await,
        Err(Error::NotReadOnly)
    );
    let ro_session = ro.session_id();
    // A client that needs writes is refused.
    let rw = Client::builder()
        .hosts(ens.client_addr(0).to_string())
        .connect_timeout(Duration::from_millis(500))
        .connect()
        .await;
    assert!(rw.is_err(), "{rw:?}");

    // The quorum comes back: the client moves to a read-write server, with a new session
    // (a read-only server's session is unknown to the others), and can write.
    let mut states = ro.state_stream();
    tokio::task::block_in_place(|| {
        ens.start_member(1).unwrap();
        ens.start_member(2).unwrap();
    });
    wait_state(&mut states, SessionState::Connected).await;
    assert_ne!(ro.session_id(), ro_session);
    ro.create("/ro/x", b"", &opts(CreateMode::Ephemeral))
        .await
        .unwrap();
}

/// `reconfig`: a member leaves the ensemble; the new configuration comes back, and a config
/// watch fires.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconfig_removes_a_member_and_the_config_watch_fires() {
    let opts = ZkOptions::default()
        .config("reconfigEnabled", "true")
        .system_property("zookeeper.skipACL", "yes");
    let ens = Ensemble::start(3, opts).unwrap();
    let leader = tokio::task::block_in_place(|| ens.wait_leader(BOUND)).unwrap();
    // A follower leaves (a leader leaving would mean an election, dropping every client).
    let leaving = (0..3).find(|i| *i != leader).unwrap();
    let staying: Vec<usize> = (0..3).filter(|i| *i != leaving).collect();
    let hosts = hosts_of(staying.iter().map(|i| ens.client_addr(*i)));
    let c = connect(&hosts, Duration::from_secs(10)).await;
    let (before, _, watcher) = c.get_config_and_watch().await.unwrap();
    let servers = |config: &[u8]| {
        String::from_utf8_lossy(config)
            .lines()
            .filter(|l| l.starts_with("server."))
            .count()
    };
    assert_eq!(servers(&before), 3);
    assert!(matches!(
        c.reconfig(None, None, None, None).await,
        Err(Error::InvalidArgument(_))
    ));
    let id = (leaving + 1).to_string();
    let (after, _) = c.reconfig(None, Some(&id), None, None).await.unwrap();
    assert_eq!(servers(&after), 2, "{}", String::from_utf8_lossy(&after));
    let event = tokio::time::timeout(BOUND, watcher).await.unwrap();
    assert_eq!(event.event_type, EventType::NodeDataChanged);
    let (now, _) = c.get_config().await.unwrap();
    assert_eq!(servers(&now), 2);
    c.close().await.unwrap();
}
