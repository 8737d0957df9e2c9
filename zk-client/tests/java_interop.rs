//! Interop with the plain Java ZooKeeper client (Debian's ZooKeeper 3.8 jars), on one real
//! server: what one client writes, the other reads, byte for byte and field for field.
//!
//! - Java writes, we read: `xtask/java/JavaClientInterop.java` (mode `write`) creates nodes
//!   with chosen data (empty, null, bytes 0..=255, 100 KiB), ACLs (open, digest with some
//!   permissions, the creator's, `ip:127.0.0.1`, several entries in a chosen order), versions,
//!   and modes (ephemeral-sequential, persistent-sequential, container, TTL), and prints each
//!   node's data, `Stat` and ACL. Our client reads the same nodes and must see exactly that.
//! - We write, Java reads: our client creates the same kinds of nodes; the Java program (mode
//!   `read`) prints what it sees, which must be exactly what our `get_data`/`get_acl` return.
//!
//! Two server behaviours both clients must show alike: without ADMIN on a node, `getACL`
//! returns digest ids with the hash replaced by `x`; and container and TTL nodes show an
//! `ephemeralOwner` of 0 (the server keeps its marker to itself).
//!
//! Every wait is bounded; the Java process is waited for, and killed if it overruns or the
//! test fails (it also halts by itself when its stdin closes or after 60 s).

#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use zk_client::{Acl, Client, CreateMode, CreateOptions, Id, Perms, Stat};

/// How long one Java run (JVM start, connect, its operations) may take.
const JAVA_TIMEOUT: Duration = Duration::from_secs(45);
/// How long one of our operations may take.
const OP_TIMEOUT: Duration = Duration::from_secs(10);
/// `base64(sha1("alice:secret"))`: the digest id of the user both clients authenticate as.
const ALICE_DIGEST: &str = "alice:aYXlLOpEooaV1cRAvUL1fp9Qt7E=";
/// The time to live of the TTL nodes, in ms.
const TTL_MS: u64 = 3_600_000;

/// The classpath of the Java client: ZooKeeper's client, jute, and a silent SLF4J binding.
fn java_classpath() -> String {
    zk_testkit::java::jars(&["zookeeper", "zookeeper-jute", "slf4j-api", "slf4j-nop"])
}

/// Compiles `JavaClientInterop.java` (cached) and returns the class directory.
fn java_classes() -> PathBuf {
    zk_testkit::deps::ensure(&[
        zk_testkit::deps::Need::Java,
        zk_testkit::deps::Need::ZooKeeper,
    ])
    .unwrap();
    zk_testkit::java::compile(
        "JavaClientInterop",
        &[zk_testkit::java::java_dir().join("JavaClientInterop.java")],
        &java_classpath(),
    )
    .unwrap()
}

/// One `NODE` line of the Java program.
#[derive(Debug, Clone, PartialEq, Eq)]
struct JavaNode {
    label: String,
    path: String,
    /// `None` when Java's `getData` returned `null`.
    data: Option<Vec<u8>>,
    stat: Stat,
    acl: Vec<Acl>,
}

fn parse_hex(hex: &str) -> Vec<u8> {
    assert!(hex.len() % 2 == 0, "odd hex length: {hex}");
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect()
}

fn parse_stat(text: &str) -> Stat {
    let f: Vec<i64> = text.split(',').map(|n| n.parse().unwrap()).collect();
    assert_eq!(f.len(), 11, "stat has 11 fields: {text}");
    let int = |v: i64| i32::try_from(v).unwrap();
    Stat {
        czxid: f[0],
        mzxid: f[1],
        ctime: f[2],
        mtime: f[3],
        version: int(f[4]),
        cversion: int(f[5]),
        aversion: int(f[6]),
        ephemeral_owner: f[7],
        data_length: int(f[8]),
        num_children: int(f[9]),
        pzxid: f[10],
    }
}

fn parse_acl(text: &str) -> Vec<Acl> {
    text.split(',')
        .map(|entry| {
            let mut parts = entry.splitn(3, ':');
            let perms = parts.next().unwrap().parse().unwrap();
            let scheme = parts.next().unwrap();
            let id = parts.next().unwrap();
            Acl {
                perms: Perms(perms),
                id: Id::new(scheme, id),
            }
        })
        .collect()
}

fn parse_node(line: &str) -> JavaNode {
    let cols: Vec<&str> = line.split('\t').collect();
    assert_eq!(cols.len(), 6, "a NODE line has 6 columns: {line:?}");
    assert_eq!(cols[0], "NODE");
    JavaNode {
        label: cols[1].to_owned(),
        path: cols[2].to_owned(),
        data: (cols[3] != "-").then(|| parse_hex(cols[3])),
        stat: parse_stat(cols[4]),
        acl: parse_acl(cols[5]),
    }
}

/// A running `JavaClientInterop`: its stdout arrives line by line through a channel. Dropping
/// it kills the JVM (if still running) and waits for it.
struct JavaRun {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    /// Collects the JVM's stderr until it exits.
    stderr: Option<thread::JoinHandle<String>>,
    /// Everything read from stdout so far, for failure messages.
    seen: Vec<String>,
}

impl JavaRun {
    fn start(args: &[&str]) -> JavaRun {
        let classes = java_classes();
        let classpath = format!("{}:{}", classes.display(), java_classpath());
        let mut child = Command::new("java")
            .args(["-Xmx64m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"])
            .arg("-cp")
            .arg(classpath)
            .arg("JavaClientInterop")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run java");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().unwrap();
        let mut err_pipe = child.stderr.take().unwrap();
        let lines = zk_testkit::lines::lines(stdout);
        let stderr = thread::spawn(move || {
            let mut text = String::new();
            let _ = err_pipe.read_to_string(&mut text);
            text
        });
        JavaRun {
            child,
            stdin,
            lines,
            stderr: Some(stderr),
            seen: Vec::new(),
        }
    }

    fn fail(&mut self, why: &str) -> ! {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let stderr = self
            .stderr
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default();
        let shown: Vec<String> = self
            .seen
            .iter()
            .map(|line| match line.char_indices().nth(300) {
                Some((end, _)) => format!("{}...", &line[..end]),
                None => line.clone(),
            })
            .collect();
        panic!(
            "Java client: {why}\nstdout:\n{}\nstderr:\n{stderr}",
            shown.join("\n"),
        );
    }

    /// The next stdout line, before `deadline`.
    fn line(&mut self, deadline: Instant) -> String {
        let left = deadline.saturating_duration_since(Instant::now());
        match self.lines.recv_timeout(left) {
            Ok(line) => {
                self.seen.push(line.clone());
                if line.starts_with("ERROR") {
                    self.fail("reported an error");
                }
                line
            }
            Err(mpsc::RecvTimeoutError::Timeout) => self.fail("timed out"),
            Err(mpsc::RecvTimeoutError::Disconnected) => self.fail("stdout ended early"),
        }
    }

    /// The `NODE` lines up to `READY`.
    fn nodes(&mut self, deadline: Instant) -> Vec<JavaNode> {
        let mut nodes = Vec::new();
        loop {
            let line = self.line(deadline);
            if line == "READY" {
                return nodes;
            }
            nodes.push(parse_node(&line));
        }
    }

    /// Sends one line on stdin.
    fn say(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
    }

    /// Waits for a successful exit before `deadline`, killing it otherwise.
    fn finish(mut self, deadline: Instant) {
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                if !status.success() {
                    self.fail(&format!("exited with {status}"));
                }
                return;
            }
            if Instant::now() >= deadline {
                self.fail("did not exit in time");
            }
            thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for JavaRun {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

fn runtime() -> tokio::runtime::Runtime {
    // A worker thread keeps our session alive (pings) while the test thread waits for Java.
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
}

/// Runs `f` on `rt`, failing after [`OP_TIMEOUT`].
fn bounded<T>(rt: &tokio::runtime::Runtime, f: impl Future<Output = T>) -> T {
    rt.block_on(async { tokio::time::timeout(OP_TIMEOUT, f).await })
        .expect("operation timed out")
}

async fn connect(connect_string: &str) -> Client {
    Client::builder()
        .hosts(connect_string)
        .session_timeout(Duration::from_secs(10))
        .digest_auth("alice", "secret")
        .connect()
        .await
        .unwrap()
}

fn binary_data() -> Vec<u8> {
    (0..=255u8).collect()
}

/// 100 KiB of a pattern: Java's is `(i * 31 + 7) % 251`, ours `(i * 17 + 3) % 253`.
fn large_data(java: bool) -> Vec<u8> {
    (0..100 * 1024usize)
        .map(|i| {
            let v = if java {
                (i * 31 + 7) % 251
            } else {
                (i * 17 + 3) % 253
            };
            u8::try_from(v).unwrap()
        })
        .collect()
}

fn acl(perms: Perms, scheme: &str, id: &str) -> Acl {
    Acl {
        perms,
        id: Id::new(scheme, id),
    }
}

/// Whether the first entry is a `digest` id of user `bob` (Java computes its hash).
fn bob_digest_prefix(acl: &[Acl]) -> bool {
    acl.first()
        .is_some_and(|a| a.id.scheme == "digest" && a.id.id.starts_with("bob:"))
}

/// Checks that a Java-written node is what `JavaClientInterop write` meant to create.
fn check_java_intent(node: &JavaNode, base: &str, java_session: Option<i64>) {
    let label = node.label.as_str();
    let data = node.data.as_deref();
    let stat = &node.stat;
    let open = Acl::open_unsafe();
    let alice_all = acl(Perms::ALL, "digest", ALICE_DIGEST);
    match label {
        "empty" => assert_eq!(data, Some(&[][..])),
        "null" => assert_eq!(data, None),
        "binary" => assert_eq!(data, Some(&binary_data()[..])),
        "large" => assert_eq!(data, Some(&large_data(true)[..])),
        "digest" => assert_eq!(
            node.acl,
            [acl(
                Perms::READ | Perms::CREATE | Perms::ADMIN,
                "digest",
                ALICE_DIGEST
            )]
        ),
        "creator" => assert_eq!(node.acl, std::slice::from_ref(&alice_all)),
        "ip" => assert_eq!(node.acl, [acl(Perms::ALL, "ip", "127.0.0.1")]),
        "mixed" => {
            assert!(bob_digest_prefix(&node.acl), "{:?}", node.acl);
            assert_eq!(
                node.acl[1..],
                [
                    acl(Perms::READ, "ip", "127.0.0.1"),
                    acl(Perms::READ | Perms::DELETE, "world", "anyone"),
                    alice_all.clone(),
                ]
            );
        }
        "versioned" => {
            assert_eq!(data, Some(&b"v2"[..]));
            assert_eq!((stat.version, stat.aversion), (2, 1));
            assert!(stat.mzxid > stat.czxid);
            assert_eq!(
                node.acl,
                [
                    acl(Perms::READ | Perms::WRITE, "world", "anyone"),
                    alice_all.clone()
                ]
            );
        }
        "eseq" => {
            let suffix = node.path.strip_prefix(&format!("{base}/eseq-")).unwrap();
            assert!(suffix.len() == 10 && suffix.bytes().all(|b| b.is_ascii_digit()));
            assert_ne!(stat.ephemeral_owner, 0);
            if let Some(session) = java_session {
                assert_eq!(stat.ephemeral_owner, session);
            }
        }
        "pseq" => {
            let suffix = node.path.strip_prefix(&format!("{base}/pseq-")).unwrap();
            assert!(suffix.len() == 10 && suffix.bytes().all(|b| b.is_ascii_digit()));
            assert_eq!(stat.ephemeral_owner, 0);
        }
        // The server keeps a container or TTL marker in ephemeralOwner but shows clients 0
        // (`DataTree.getClientEphemeralOwner`).
        "container" => {
            assert_eq!(stat.ephemeral_owner, 0);
            assert_eq!(stat.num_children, 1);
        }
        "ttl" => assert_eq!(stat.ephemeral_owner, 0),
        "base" => assert_eq!(stat.num_children, 13),
        _ => {}
    }
    if ["empty", "null", "binary", "large", "eseq", "pseq", "ttl"].contains(&label) {
        assert_eq!(node.acl, open, "{label}");
    }
    let len = data.map_or(0, <[u8]>::len);
    assert_eq!(usize::try_from(stat.data_length).unwrap(), len, "{label}");
}

#[test]
fn java_writes_we_read() {
    let zk = zk_testkit::ZkServer::start().unwrap();
    let rt = runtime();
    let client = bounded(&rt, connect(&zk.connect_string()));
    let base = "/interop-java";

    let deadline = Instant::now() + JAVA_TIMEOUT;
    let mut java = JavaRun::start(&["write", &zk.connect_string(), base]);
    let nodes = java.nodes(deadline);
    let labels: Vec<&str> = nodes.iter().map(|n| n.label.as_str()).collect();
    assert_eq!(
        labels,
        [
            "empty",
            "null",
            "binary",
            "large",
            "digest",
            "creator",
            "ip",
            "mixed",
            "versioned",
            "eseq",
            "pseq",
            "container",
            "container-child",
            "ttl",
            "base"
        ]
    );
    let eseq = nodes.iter().find(|n| n.label == "eseq").unwrap();
    let java_session = Some(eseq.stat.ephemeral_owner);

    for node in &nodes {
        check_java_intent(node, base, java_session);
        let (data, stat) = bounded(&rt, client.get_data(&node.path)).unwrap();
        assert_eq!(
            &data[..],
            node.data.as_deref().unwrap_or_default(),
            "data of {} ({})",
            node.path,
            node.label
        );
        assert_eq!(stat, node.stat, "Stat of {} ({})", node.path, node.label);
        let (acl, acl_stat) = bounded(&rt, client.get_acl(&node.path)).unwrap();
        assert_eq!(acl, node.acl, "ACL of {} ({})", node.path, node.label);
        assert_eq!(acl_stat, node.stat, "getACL Stat of {}", node.path);
    }

    // Java closes its session: its ephemeral node goes at once.
    java.say("close");
    assert_eq!(java.line(deadline), "CLOSED");
    java.finish(deadline);
    assert_eq!(bounded(&rt, client.exists(&eseq.path)).unwrap(), None);
    bounded(&rt, client.close()).unwrap();
}

/// One node our client writes: label, path (prefix for sequential modes), data, options.
struct Plan {
    label: &'static str,
    path: &'static str,
    data: Vec<u8>,
    options: CreateOptions,
}

#[test]
fn we_write_java_reads() {
    let zk = zk_testkit::ZkServer::start().unwrap();
    let rt = runtime();
    let client = bounded(&rt, connect(&zk.connect_string()));
    let open = || CreateOptions::new(CreateMode::Persistent);
    let alice_all = acl(Perms::ALL, "digest", ALICE_DIGEST);
    let plans = vec![
        Plan {
            label: "base",
            path: "/interop-rust",
            data: b"base".to_vec(),
            options: open(),
        },
        Plan {
            label: "empty",
            path: "/interop-rust/empty",
            data: Vec::new(),
            options: open(),
        },
        Plan {
            label: "binary",
            path: "/interop-rust/binary",
            data: binary_data(),
            options: open(),
        },
        Plan {
            label: "large",
            path: "/interop-rust/large",
            data: large_data(false),
            options: open(),
        },
        Plan {
            label: "digest",
            path: "/interop-rust/digest",
            data: b"d".to_vec(),
            options: open().acl(vec![acl(
                Perms::READ | Perms::WRITE,
                "digest",
                ALICE_DIGEST,
            )]),
        },
        Plan {
            label: "creator",
            path: "/interop-rust/creator",
            data: b"c".to_vec(),
            options: open().acl(Acl::creator_all()),
        },
        Plan {
            label: "ip",
            path: "/interop-rust/ip",
            data: b"i".to_vec(),
            options: open().acl(vec![acl(Perms::ALL, "ip", "127.0.0.1")]),
        },
        Plan {
            label: "mixed",
            path: "/interop-rust/mixed",
            data: b"m".to_vec(),
            options: open().acl(vec![
                acl(Perms::READ | Perms::ADMIN, "world", "anyone"),
                acl(Perms::READ | Perms::WRITE, "ip", "127.0.0.1"),
                alice_all.clone(),
            ]),
        },
        Plan {
            label: "versioned",
            path: "/interop-rust/versioned",
            data: b"v0".to_vec(),
            options: open(),
        },
        Plan {
            label: "eseq",
            path: "/interop-rust/eseq-",
            data: b"e".to_vec(),
            options: CreateOptions::new(CreateMode::EphemeralSequential),
        },
        Plan {
            label: "pseq",
            path: "/interop-rust/pseq-",
            data: b"p".to_vec(),
            options: CreateOptions::new(CreateMode::PersistentSequential),
        },
        Plan {
            label: "container",
            path: "/interop-rust/container",
            data: b"k".to_vec(),
            options: CreateOptions::new(CreateMode::Container),
        },
        Plan {
            label: "container-child",
            path: "/interop-rust/container/child",
            data: b"kc".to_vec(),
            options: open(),
        },
        Plan {
            label: "ttl",
            path: "/interop-rust/ttl",
            data: b"t".to_vec(),
            options: CreateOptions::new(CreateMode::PersistentWithTtl)
                .ttl(Duration::from_millis(TTL_MS)),
        },
    ];

    // (label, path as created, data, Stat from create2 if nothing changes the node later)
    let mut made: Vec<(&str, String, Vec<u8>, Option<Stat>)> = Vec::new();
    for plan in &plans {
        let (path, stat) = bounded(
            &rt,
            client.create_with_stat(plan.path, &plan.data, &plan.options),
        )
        .unwrap();
        let unchanged_later = !["base", "container", "versioned"].contains(&plan.label);
        made.push((
            plan.label,
            path,
            plan.data.clone(),
            unchanged_later.then_some(stat),
        ));
    }
    let versioned = "/interop-rust/versioned";
    bounded(&rt, client.set_data(versioned, b"v1", None)).unwrap();
    bounded(&rt, client.set_data(versioned, b"v2", Some(1))).unwrap();
    let versioned_acl = vec![
        acl(Perms::READ | Perms::WRITE, "world", "anyone"),
        alice_all.clone(),
    ];
    bounded(
        &rt,
        client.set_acl(versioned, versioned_acl.clone(), Some(0)),
    )
    .unwrap();
    for entry in &mut made {
        if entry.0 == "versioned" {
            entry.2 = b"v2".to_vec();
        }
    }

    let deadline = Instant::now() + JAVA_TIMEOUT;
    let connect_string = zk.connect_string();
    let mut args = vec!["read", connect_string.as_str()];
    args.extend(made.iter().map(|m| m.1.as_str()));
    let mut java = JavaRun::start(&args);
    let nodes = java.nodes(deadline);
    java.finish(deadline);
    assert_eq!(nodes.len(), made.len());

    for ((label, path, data, created), node) in made.iter().zip(&nodes) {
        assert_eq!(&node.path, path);
        // We never send null data: Java sees an array, empty or not.
        assert_eq!(
            node.data.as_deref(),
            Some(&data[..]),
            "Java's data of {label}"
        );
        let (our_data, our_stat) = bounded(&rt, client.get_data(path)).unwrap();
        let (our_acl, acl_stat) = bounded(&rt, client.get_acl(path)).unwrap();
        assert_eq!(&our_data[..], &data[..], "our data of {label}");
        assert_eq!(node.stat, our_stat, "Stat of {label}");
        assert_eq!(acl_stat, our_stat, "getACL Stat of {label}");
        assert_eq!(node.acl, our_acl, "ACL of {label}");
        if let Some(created) = created {
            assert_eq!(*created, our_stat, "create2's Stat of {label}");
        }
        let expected_acl = match *label {
            // Without ADMIN on a node, getACL shows digest ids with the hash replaced by `x`
            // (ZooKeeper 3.8, ZOOKEEPER-1392): both clients must see the redacted entry.
            "digest" => vec![acl(Perms::READ | Perms::WRITE, "digest", "alice:x")],
            // The server replaces `auth:` with the session's digest identity.
            "creator" => vec![alice_all.clone()],
            "versioned" => versioned_acl.clone(),
            _ => plans
                .iter()
                .find(|p| p.label == *label)
                .unwrap()
                .options
                .acl
                .to_vec(),
        };
        assert_eq!(node.acl, expected_acl, "ACL of {label}");
        match *label {
            "versioned" => assert_eq!((our_stat.version, our_stat.aversion), (2, 1)),
            "eseq" => assert_eq!(our_stat.ephemeral_owner, client.session_id()),
            "container" | "ttl" => assert_eq!(our_stat.ephemeral_owner, 0),
            "base" => assert_eq!(our_stat.num_children, 12),
            _ => {}
        }
    }
    bounded(&rt, client.close()).unwrap();
}
