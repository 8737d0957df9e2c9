//! The test servers, against real ZooKeeper JVMs: standalone and three-member ensembles,
//! kill, restart, pause and resume, and cleanup when dropped or when the starter dies.
//!
//! Every wait is bounded: by the library's start timeout or by an explicit deadline here.
#![allow(clippy::unwrap_used)]

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use xtask::zk::{DetachedEnsemble, Ensemble, Mode, Stopped, ZkOptions, ZkServer, four_letter};

const LEADER_TIMEOUT: Duration = Duration::from_secs(60);

/// Whether process `pid` exists and is not a zombie.
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        let state = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.trim_start().chars().next());
        !matches!(state, None | Some('Z' | 'X'))
    })
}

/// Each member's `srvr` mode, for assertion messages.
fn describe_modes(zk: &Ensemble) -> String {
    (0..zk.len())
        .map(|i| {
            let mode = four_letter(zk.client_addr(i), "srvr", Duration::from_secs(3))
                .map(|text| xtask::zk::parse_mode(&text));
            format!("member {i}: {mode:?}")
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Waits up to `timeout` for `pid` to be gone.
fn gone_within(pid: u32, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    while alive(pid) {
        if Instant::now() >= deadline {
            return false;
        }
        thread::sleep(Duration::from_millis(20));
    }
    true
}

/// The `Zxid:` of a `srvr` answer.
fn zxid(srvr: &str) -> u64 {
    let hex = srvr
        .lines()
        .find_map(|line| line.strip_prefix("Zxid: 0x"))
        .unwrap_or_else(|| panic!("no Zxid in {srvr:?}"));
    u64::from_str_radix(hex.trim(), 16).unwrap()
}

/// Opens a ZooKeeper session with a hand-encoded `ConnectRequest` and waits for the reply, so
/// the server logs a `createSession` transaction (the zxid moves on). The session is left to
/// expire.
fn open_session(addr: SocketAddr) -> io::Result<()> {
    let mut body = Vec::new();
    body.extend_from_slice(&0i32.to_be_bytes()); // protocolVersion
    body.extend_from_slice(&0i64.to_be_bytes()); // lastZxidSeen
    body.extend_from_slice(&4000i32.to_be_bytes()); // timeOut
    body.extend_from_slice(&0i64.to_be_bytes()); // sessionId
    body.extend_from_slice(&16i32.to_be_bytes()); // passwd length
    body.extend_from_slice(&[0u8; 16]); // passwd
    body.push(0); // readOnly
    let mut frame = i32::try_from(body.len()).unwrap().to_be_bytes().to_vec();
    frame.extend_from_slice(&body);

    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    stream.write_all(&frame)?;
    let mut len = [0u8; 4];
    stream.read_exact(&mut len)?;
    let mut reply = vec![0u8; usize::try_from(i32::from_be_bytes(len)).unwrap()];
    stream.read_exact(&mut reply)?;
    Ok(())
}

#[test]
fn standalone_serves_and_restarts_with_its_data() {
    let mut zk = ZkServer::start().unwrap();
    let port = zk.port();
    assert_eq!(zk.four_letter("ruok").unwrap(), "imok");
    assert_eq!(zk.mode().unwrap(), Some(Mode::Standalone));
    assert_eq!(zk.connect_string(), format!("127.0.0.1:{port}"));
    let mntr = zk.mntr().unwrap();
    assert_eq!(
        mntr.get("zk_server_state").map(String::as_str),
        Some("standalone")
    );

    open_session(zk.addr()).unwrap();
    let before = zxid(&zk.four_letter("srvr").unwrap());
    assert!(before >= 1, "a session was created: zxid {before:#x}");

    let pid = zk.pid().unwrap();
    zk.kill().unwrap();
    assert!(!alive(pid));
    assert_eq!(zk.pid(), None);
    assert!(four_letter(zk.addr(), "ruok", Duration::from_secs(1)).is_err());

    zk.restart().unwrap();
    assert_eq!(zk.port(), port);
    assert_ne!(zk.pid(), Some(pid));
    assert_eq!(zk.four_letter("ruok").unwrap(), "imok");
    let after = zxid(&zk.four_letter("srvr").unwrap());
    assert!(
        after >= before,
        "zxid went back from {before:#x} to {after:#x}: data lost"
    );
    assert!(zk.data_dir().join("version-2").is_dir());
}

#[test]
fn ensemble_elects_one_leader_and_fails_over() {
    let opts = ZkOptions::default().force_sync(false);
    let mut zk = Ensemble::start(3, opts).unwrap();
    assert_eq!(zk.len(), 3);
    assert_eq!(zk.connect_string().split(',').count(), 3);
    let modes: Vec<Mode> = (0..3).map(|i| zk.mode(i).unwrap().unwrap()).collect();
    let leaders: Vec<usize> = (0..3)
        .filter(|&i| modes.get(i) == Some(&Mode::Leader))
        .collect();
    assert_eq!(leaders.len(), 1, "modes: {modes:?}");
    assert_eq!(modes.iter().filter(|m| **m == Mode::Follower).count(), 2);
    let old = zk.leader().unwrap();
    assert_eq!(leaders, [old]);

    zk.kill(old).unwrap();
    let new = zk.wait_leader(LEADER_TIMEOUT).unwrap();
    assert_ne!(new, old);

    zk.restart(old).unwrap();
    assert_eq!(zk.mode(old).unwrap(), Some(Mode::Follower));
    assert_eq!(zk.leader(), Some(new), "{}", describe_modes(&zk));
}

/// A fixed port someone listens on is refused before any JVM starts, and the error says
/// which port and why (issue 26: another ZooKeeper on it used to answer for ours).
#[test]
fn occupied_port_fails_fast_and_says_so() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let started = Instant::now();
    let err = ZkServer::start_with(ZkOptions::default().port(port)).unwrap_err();
    let message = err.to_string();
    assert!(
        message.contains(&format!("port {port} is taken")),
        "{message}"
    );
    assert!(message.contains("Address already in use"), "{message}");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "took {:?}",
        started.elapsed()
    );
}

#[test]
fn paused_member_answers_nothing_until_resumed_and_drop_leaves_no_process() {
    let opts = ZkOptions::default().force_sync(false);
    let mut zk = Ensemble::start(3, opts).unwrap();
    let leader = zk.wait_leader(LEADER_TIMEOUT).unwrap();
    let follower = (leader + 1) % 3;
    let addr = zk.client_addr(follower);

    zk.pause(follower).unwrap();
    assert!(zk.is_paused(follower));
    assert!(four_letter(addr, "ruok", Duration::from_millis(500)).is_err());
    assert_eq!(
        zk.leader(),
        Some(leader),
        "a paused member is skipped; {}",
        describe_modes(&zk)
    );

    zk.resume(follower).unwrap();
    assert!(!zk.is_paused(follower));
    assert_eq!(
        four_letter(addr, "ruok", Duration::from_secs(5)).unwrap(),
        "imok"
    );
    zk.wait_serving(follower, LEADER_TIMEOUT).unwrap();

    // Dropped while paused: the drop must still end it.
    zk.pause(follower).unwrap();
    let pids: Vec<u32> = (0..3).map(|i| zk.pid(i).unwrap()).collect();
    let root = zk.root_dir().to_path_buf();
    drop(zk);
    for pid in pids {
        assert!(!alive(pid), "pid {pid} outlived the drop");
    }
    if std::env::var_os("XTASK_KEEP_ZK").is_none_or(|v| v != "1") {
        assert!(!root.exists(), "{} was not removed", root.display());
    }
}

#[test]
fn detached_server_outlives_its_handle_until_stopped() {
    let detached = Ensemble::start_detached(1, ZkOptions::default()).unwrap();
    let member = detached.members.first().unwrap().clone();
    assert!(member.is_alive());
    assert_eq!(member.mode().unwrap(), Some(Mode::Standalone));
    assert_eq!(
        xtask::zk::DetachedEnsemble::from_state(&detached.to_state()).unwrap(),
        detached
    );

    let outcome = detached.stop(Duration::from_secs(10)).unwrap();
    assert!(
        outcome == [Stopped::Terminated] || outcome == [Stopped::Killed],
        "{outcome:?}"
    );
    assert!(gone_within(member.pid, Duration::from_secs(5)));
    assert!(!detached.root.exists());
    // A second stop finds nothing to do.
    assert_eq!(
        detached.stop(Duration::from_secs(1)).unwrap(),
        [Stopped::AlreadyGone]
    );
}

/// Stops a detached ensemble when dropped, so that a failed assertion leaves no server.
struct StopOnDrop(DetachedEnsemble);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        let _ = self.0.stop(Duration::from_secs(10));
    }
}

/// Issue 26: `cargo xtask zk start`, then `cargo xtask demo` and `cargo xtask test`, and the
/// first server was gone: every process that starts a test server first sweeps the
/// directories of dead processes, and took the detached server's for one. Here, as with the
/// commands, one process starts the detached server and exits, and another starts and drops
/// an ordinary server (its first start runs the sweep); the detached server must still serve
/// a session from its directory.
#[test]
fn detached_server_survives_a_later_process_sweeping_stale_directories() {
    let state = std::env::temp_dir().join(format!(
        "xtask-servers-test-{}-detached-state",
        std::process::id()
    ));
    run_helper(HelperStep::StartDetached, &state);
    let detached = DetachedEnsemble::load(&state)
        .unwrap()
        .expect("the helper wrote no state");
    let _ = std::fs::remove_file(&state);
    let guard = StopOnDrop(detached.clone());
    let member = detached.members.first().unwrap();
    assert!(
        member.is_alive(),
        "the detached server died with its starter"
    );

    run_helper(HelperStep::StartAndDrop, &state);
    assert!(
        member.dir.join("zoo.cfg").exists(),
        "the sweep of a later process removed the detached server's directory {}",
        member.dir.display()
    );
    assert!(member.is_alive(), "the detached server is gone");
    assert_eq!(member.mode().unwrap(), Some(Mode::Standalone));
    open_session(member.client_addr()).unwrap();

    drop(guard);
    assert!(gone_within(member.pid, Duration::from_secs(5)));
    assert!(!detached.root.exists());
}

/// What [`helper_process`] does, passed in [`HELPER_ENV`].
#[derive(Clone, Copy)]
enum HelperStep {
    /// Start a server, print its pid and directory, and wait to be killed.
    Hold,
    /// Start a detached server, write its state to [`HELPER_STATE_ENV`]'s path, and exit,
    /// as `cargo xtask zk start` does.
    StartDetached,
    /// Start an ordinary server (the process's first, so the sweep runs) and drop it.
    StartAndDrop,
}

impl HelperStep {
    fn name(self) -> &'static str {
        match self {
            HelperStep::Hold => "hold",
            HelperStep::StartDetached => "start-detached",
            HelperStep::StartAndDrop => "start-and-drop",
        }
    }
}

/// Marks the helper process and says which [`HelperStep`] it runs.
const HELPER_ENV: &str = "XTASK_ZK_TEST_HELPER";
/// Where [`HelperStep::StartDetached`] writes the state.
const HELPER_STATE_ENV: &str = "XTASK_ZK_TEST_HELPER_STATE";

/// The command running [`helper_process`] in a child process for `step`.
fn helper_command(step: HelperStep) -> Command {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "helper_process",
        "--exact",
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(HELPER_ENV, step.name())
    .stdin(Stdio::null());
    cmd
}

/// Runs `step` in a child process to its end, and fails if it failed.
fn run_helper(step: HelperStep, state: &Path) {
    let output = helper_command(step)
        .env(HELPER_STATE_ENV, state)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "helper {} failed ({}):\n{}\n{}",
        step.name(),
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Not a test of its own: the second process of the tests that need one
/// ([`server_dies_with_a_killed_test_process`],
/// [`detached_server_survives_a_later_process_sweeping_stale_directories`]); does nothing
/// unless [`HELPER_ENV`] names a [`HelperStep`].
#[test]
#[ignore = "helper process, run by the tests that need a second process"]
fn helper_process() {
    match std::env::var(HELPER_ENV).as_deref() {
        Ok("hold") => hold_a_server_until_killed(),
        Ok("start-detached") => {
            let detached = Ensemble::start_detached(1, ZkOptions::default()).unwrap();
            let state = std::env::var_os(HELPER_STATE_ENV).unwrap();
            detached.save(Path::new(&state)).unwrap();
        }
        Ok("start-and-drop") => drop(Ensemble::start(1, ZkOptions::default()).unwrap()),
        _ => {}
    }
}

/// [`HelperStep::Hold`].
fn hold_a_server_until_killed() {
    let zk = ZkServer::start().unwrap();
    println!(
        "\nXTASK_ZK_HELPER pid={} root={}",
        zk.pid().unwrap(),
        zk.ensemble().root_dir().display()
    );
    io::stdout().flush().unwrap();
    // Bounded: the parent kills us long before this.
    thread::sleep(Duration::from_secs(60));
}

#[test]
fn server_dies_with_a_killed_test_process() {
    let mut child = helper_command(HelperStep::Hold)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut found: Option<(u32, PathBuf)> = None;
    for line in BufReader::new(stdout).lines() {
        let line = line.unwrap();
        // libtest may print "test <name> ... " on the same line first.
        if let Some((_, rest)) = line.split_once("XTASK_ZK_HELPER pid=") {
            let (pid, root) = rest.split_once(" root=").unwrap();
            found = Some((pid.parse().unwrap(), PathBuf::from(root)));
            break;
        }
    }
    let Some((pid, root)) = found else {
        let _ = child.kill();
        let _ = child.wait();
        panic!("the helper did not report its server");
    };
    assert!(alive(pid));

    child.kill().unwrap(); // SIGKILL: no Drop runs in the helper
    child.wait().unwrap();
    let gone = gone_within(pid, Duration::from_secs(10));
    if !gone {
        let _ = Command::new("kill")
            .arg("-KILL")
            .arg(pid.to_string())
            .status();
    }
    cleanup(&root);
    assert!(gone, "ZooKeeper pid {pid} outlived its killed starter");
}

/// Removes what the killed helper could not.
fn cleanup(root: &Path) {
    if root.starts_with(std::env::temp_dir()) {
        let _ = std::fs::remove_dir_all(root);
    }
}

/// How long a partition or a heal may take to show in the members' modes.
const PARTITION_TIMEOUT: Duration = Duration::from_secs(30);

/// Each member's mode from `srvr`: `None` when it does not serve or does not answer.
fn modes(zk: &Ensemble) -> Vec<Option<Mode>> {
    (0..zk.len())
        .map(|i| {
            four_letter(zk.client_addr(i), "srvr", Duration::from_secs(2))
                .ok()
                .and_then(|text| xtask::zk::parse_mode(&text))
        })
        .collect()
}

/// Polls the members' modes until `done` holds for them, for at most `timeout`, and returns
/// them; panics naming `what` and the last modes seen.
fn wait_modes(
    zk: &Ensemble,
    timeout: Duration,
    what: &str,
    done: impl Fn(&[Option<Mode>]) -> bool,
) -> Vec<Option<Mode>> {
    let deadline = Instant::now() + timeout;
    loop {
        let now = modes(zk);
        if done(&now) {
            return now;
        }
        assert!(
            Instant::now() < deadline,
            "not {what} within {timeout:?}: modes {now:?}"
        );
        thread::sleep(Duration::from_millis(100));
    }
}

/// A partitionable ensemble: the leader cut off from the other two steps down and serves no
/// client, the two elect a leader and serve sessions, and after the heal the old leader
/// rejoins as a follower, its view of the ensemble unchanged (its peers through proxies).
/// An ensemble started without the option refuses `isolate`.
#[test]
fn isolated_leader_steps_down_and_rejoins_as_follower_after_heal() {
    let opts = ZkOptions::default().force_sync(false).partitionable(true);
    let mut zk = Ensemble::start(3, opts).unwrap();
    assert!(zk.is_partitionable());
    let old = zk.wait_leader(LEADER_TIMEOUT).unwrap();
    let others: Vec<usize> = (0..3).filter(|&i| i != old).collect();

    let isolated_at = Instant::now();
    zk.isolate(old).unwrap();
    assert_eq!(zk.isolated(), [old]);
    let during = wait_modes(&zk, PARTITION_TIMEOUT, "a leader among the two", |m| {
        let leaders = others
            .iter()
            .filter(|&&i| m.get(i) == Some(&Some(Mode::Leader)))
            .count();
        let followers = others
            .iter()
            .filter(|&&i| m.get(i) == Some(&Some(Mode::Follower)))
            .count();
        m.get(old) == Some(&None) && leaders == 1 && followers == 1
    });
    eprintln!("partitioned in {:?}: {during:?}", isolated_at.elapsed());
    let new = *others
        .iter()
        .find(|&&i| during.get(i) == Some(&Some(Mode::Leader)))
        .unwrap();
    let follower = *others.iter().find(|&&i| i != new).unwrap();

    // The majority commits a session (a `createSession` transaction); the isolated member
    // closes a client's connection instead of answering.
    let before = zxid(&zk.four_letter(follower, "srvr").unwrap());
    open_session(zk.client_addr(follower)).unwrap();
    let after = zxid(&zk.four_letter(follower, "srvr").unwrap());
    assert!(
        after > before,
        "no transaction: zxid {before:#x} -> {after:#x}"
    );
    open_session(zk.client_addr(old)).unwrap_err();
    assert_eq!(zk.mode(old).unwrap(), None, "{}", describe_modes(&zk));

    let healed_at = Instant::now();
    zk.heal().unwrap();
    assert!(zk.isolated().is_empty());
    wait_modes(&zk, PARTITION_TIMEOUT, "rejoined", |m| {
        m.get(old) == Some(&Some(Mode::Follower))
    });
    eprintln!("rejoined in {:?}", healed_at.elapsed());
    assert_eq!(zk.leader(), Some(new), "{}", describe_modes(&zk));
    open_session(zk.client_addr(old)).unwrap();

    // Nothing rewrote a member's view: itself on the wildcard, the others not at their real
    // ports (it dials them through its proxies).
    for i in 0..3 {
        let conf = zk.four_letter(i, "conf").unwrap();
        let own = zk.ports(i);
        assert!(
            conf.contains(&format!(
                "server.{}=0.0.0.0:{}:{}",
                i + 1,
                own.peer,
                own.election
            )),
            "member {i}: {conf}"
        );
        for j in (0..3).filter(|&j| j != i) {
            let real = zk.ports(j);
            assert!(
                !conf.contains(&format!(":{}:{}", real.peer, real.election)),
                "member {i} dials member {j} directly: {conf}"
            );
        }
    }
    drop(zk);

    let err = Ensemble::start(1, ZkOptions::default().partitionable(true)).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{err}");
    let mut plain = Ensemble::start(1, ZkOptions::default()).unwrap();
    assert!(!plain.is_partitionable());
    let err = plain.isolate(0).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::Unsupported, "{err}");
    assert!(err.to_string().contains("partitionable"), "{err}");
    assert_eq!(plain.heal().unwrap_err().kind(), io::ErrorKind::Unsupported);
    assert!(plain.isolated().is_empty());
}

/// A partition that is not transitive: the leader and one follower cut off from each other
/// only. The leader keeps its quorum through the other follower; the cut follower, hearing
/// of a leader it cannot reach, serves no client until the heal, then follows again. A split
/// cuts a side from the rest: one follower split off from the two serves nothing either.
#[test]
fn a_cut_link_and_a_split_leave_the_majority_serving() {
    let opts = ZkOptions::default().force_sync(false).partitionable(true);
    let mut zk = Ensemble::start(3, opts).unwrap();
    let leader = zk.wait_leader(LEADER_TIMEOUT).unwrap();
    let mut followers = (0..3).filter(|&i| i != leader);
    let (cut, other) = (followers.next().unwrap(), followers.next().unwrap());
    assert_eq!(
        zk.cut_link(cut, cut).unwrap_err().kind(),
        io::ErrorKind::InvalidInput
    );
    zk.cut_link(leader, cut).unwrap();
    wait_modes(&zk, PARTITION_TIMEOUT, "the cut follower looking", |m| {
        m.get(cut) == Some(&None)
            && m.get(leader) == Some(&Some(Mode::Leader))
            && m.get(other) == Some(&Some(Mode::Follower))
    });
    open_session(zk.client_addr(other)).unwrap();
    zk.heal().unwrap();
    wait_modes(&zk, PARTITION_TIMEOUT, "rejoined", |m| {
        m.get(cut) == Some(&Some(Mode::Follower))
    });

    zk.split(&[cut]).unwrap();
    wait_modes(
        &zk,
        PARTITION_TIMEOUT,
        "the split-off follower looking",
        |m| m.get(cut) == Some(&None) && m.get(leader) == Some(&Some(Mode::Leader)),
    );
    zk.heal().unwrap();
    wait_modes(&zk, PARTITION_TIMEOUT, "rejoined after the split", |m| {
        m.get(cut) == Some(&Some(Mode::Follower))
    });
}
