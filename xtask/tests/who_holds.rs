//! "Who holds this lock?" (issue 37): a mutex held by one of our sessions, with a Curator
//! waiter (its own JVM) and one of ours queued behind it. The `who_holds` example
//! (recipe-multilock) prints the queue as the server has it: the holder, then each waiter
//! behind the node before it, each with its own session, ours carrying this host's address.
//! The library's `queue()` says the same.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use recipe_mutex::{InterProcessMutex, Standing};
use zk_client::Client;
use zk_testkit::ZkServer;

const PATH: &str = "/who/holds";

async fn client(hosts: &str) -> Client {
    Client::builder()
        .hosts(hosts)
        .session_timeout(Duration::from_secs(10))
        .connect()
        .await
        .unwrap()
}

/// Waits until `PATH` has `n` children.
async fn wait_children(c: &Client, n: usize) {
    tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            let (kids, changed) = match c.get_children_and_watch(PATH).await {
                Ok(r) => r,
                Err(zk_client::Error::NoNode) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
                Err(e) => panic!("{e}"),
            };
            if kids.len() == n {
                return;
            }
            changed.await;
        }
    })
    .await
    .expect("the queue never reached its length");
}

/// Builds the examples as the suite does (a no-op after `cargo test --workspace
/// --all-features`) and returns `who_holds`' path.
fn who_holds_binary() -> std::path::PathBuf {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new(cargo)
        .current_dir(zk_testkit::paths::workspace_root())
        .args(["build", "-q", "--workspace", "--all-features", "--examples"])
        .status()
        .unwrap();
    assert!(status.success(), "building the examples failed");
    zk_testkit::paths::target_dir().join("debug/examples/who_holds")
}

#[test]
fn who_holds_prints_a_queue_of_ours_and_curators_in_order() {
    let binary = who_holds_binary();
    let classpath = xtask::curator::classpath().unwrap();
    let server = ZkServer::start().unwrap();
    let hosts = server.connect_string();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let a = client(&hosts).await;
        let held = InterProcessMutex::new(a.clone(), PATH)
            .unwrap()
            .lock()
            .await
            .unwrap();

        // Curator's waiter: the worker's queue mode, one thread on one session.
        let mut java = Command::new("java")
            .arg("-cp")
            .arg(&classpath)
            .arg(xtask::curator::MAIN)
            .args(["queue", &hosts, PATH, "1", "60000"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(java.stdout.take().unwrap()).lines();
        let queued = lines
            .by_ref()
            .map(Result::unwrap)
            .find(|l| l.starts_with("QUEUED") || l.starts_with("ERROR"));
        assert!(
            queued.as_deref().is_some_and(|l| l.starts_with("QUEUED")),
            "Curator's waiter did not queue: {queued:?}"
        );

        // Ours, behind Curator's.
        let b = client(&hosts).await;
        let mb = InterProcessMutex::new(b.clone(), PATH).unwrap();
        let waiting = tokio::spawn(async move { mb.lock().await });
        wait_children(&a, 3).await;

        let queue = InterProcessMutex::new(a.clone(), PATH)
            .unwrap()
            .queue()
            .await
            .unwrap();
        assert_eq!(queue.len(), 3, "{queue:#?}");
        assert_eq!(queue[0].standing, Standing::Holds);
        assert_eq!(queue[0].node, held.node_path());
        assert_eq!(queue[0].session_id, a.session_id());
        assert_eq!(
            &queue[0].data[..],
            b"127.0.0.1",
            "ours carry the host's address"
        );
        let curator = queue[1].session_id;
        assert!(curator != a.session_id() && curator != b.session_id());
        assert_eq!(queue[1].watches(), Some(queue[0].name()));
        assert!(!queue[1].data.is_empty(), "Curator writes its address too");
        assert_eq!(queue[2].session_id, b.session_id());
        assert_eq!(queue[2].watches(), Some(queue[1].name()));

        let out = Command::new(&binary)
            .args([hosts.as_str(), PATH])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        println!("{text}");
        assert!(
            out.status.success(),
            "{text}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let printed: Vec<&str> = text.lines().collect();
        assert_eq!(printed.len(), 4, "{text}");
        assert_eq!(printed[0], format!("{PATH}: a mutex, 3 participant(s)"));
        for (line, p) in printed[1..].iter().zip(&queue) {
            assert_eq!(line.trim(), p.to_string(), "{text}");
            assert!(
                line.contains(&format!("session {:#x}", p.session_id)),
                "{text}"
            );
        }
        assert!(printed[1].trim_start().starts_with("holds"), "{text}");
        assert!(
            printed[2].contains(&format!("behind {}", queue[0].name())),
            "{text}"
        );
        assert!(
            printed[3].contains(&format!("behind {}", queue[1].name())),
            "{text}"
        );

        // The hold passes down the queue: Curator's thread takes it on "GO" and releases.
        held.release().await.unwrap();
        let mut stdin = java.stdin.take().unwrap();
        std::io::Write::write_all(&mut stdin, b"GO 0\n").unwrap();
        let guard = tokio::time::timeout(Duration::from_secs(60), waiting)
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        guard.release().await.unwrap();
        drop(stdin);
        java.kill().unwrap();
        java.wait().unwrap();
    });
}

/// A path with no node is no lock (not "a mutex, 0 participant(s)"), and a lock's node with
/// nobody in it says nobody holds or waits: against zk-mem-server on a loopback port.
#[test]
fn who_holds_says_so_when_there_is_no_such_lock_or_nobody_in_it() {
    let binary = who_holds_binary();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let (server, addr) = rt.block_on(async {
        let server = zk_mem_server::MemServer::new(zk_mem_server::ServerConfig::new(1));
        let addr = server.listen().unwrap();
        let c = client(&addr.to_string()).await;
        let persistent = zk_client::CreateOptions::new(zk_client::CreateMode::Persistent);
        c.create("/idle", b"", &persistent).await.unwrap();
        c.close().await.unwrap();
        (server, addr)
    });
    let run = |path: &str| {
        let out = Command::new(&binary)
            .args([addr.to_string().as_str(), path])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{text}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        text
    };
    let never = run("/never/was");
    assert!(
        never.starts_with("/never/was: no such lock: no node at this path"),
        "{never}"
    );
    assert!(!never.contains("a mutex"), "{never}");
    assert_eq!(run("/idle"), "/idle: a mutex, nobody holds or waits\n");
    drop(server);
}
