//! The auditor against a real ZooKeeper 3.8 that compresses its snapshots
//! (`zookeeper.snapshot.compression.method` `gz`, then `snappy`): a lock history made before
//! and after a restart (which makes the server write a snapshot holding the queue), then the
//! data directory audited from that compressed snapshot and, beside it, from the same
//! snapshot decompressed by ZooKeeper's own `SnapStream` (a small Java program): the two
//! answers are the same.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use zk_client::{Client, CreateMode, CreateOptions};
use zk_lock_audit::datadir::{Start, read_into};
use zk_lock_audit::replay::{Audit, EventKind, History};
use zk_testkit::java::jar;
use zk_testkit::{ZkOptions, ZkServer};

const BOUND: Duration = Duration::from_secs(120);
const METHOD: &str = "zookeeper.snapshot.compression.method";

async fn client(server: &ZkServer) -> Client {
    Client::builder()
        .hosts(server.connect_string())
        .session_timeout(Duration::from_secs(30))
        .connect()
        .await
        .unwrap()
}

/// A lock node in Curator's layout under `dir` (made as a container first); its name.
async fn lock_node(c: &Client, dir: &str, n: u32) -> String {
    let container = CreateOptions::new(CreateMode::Container);
    for at in ["/audit", dir] {
        match c.create(at, b"", &container).await {
            Ok(_) | Err(zk_client::Error::NodeExists) => {}
            Err(e) => panic!("{at}: {e:?}"),
        }
    }
    let path = format!("{dir}/_c_{n:08x}-0000-4000-8000-{n:012x}-lock-");
    let options = CreateOptions::new(CreateMode::EphemeralSequential);
    let path = c.create(path, b"10.0.0.1", &options).await.unwrap();
    path.rsplit('/').next().unwrap().to_owned()
}

/// Waits until `c` has reconnected to the restarted server (its session kept).
async fn reconnected(c: &Client) {
    while let Err(e) = c.exists("/").await {
        assert!(
            matches!(
                e,
                zk_client::Error::NotConnected | zk_client::Error::ConnectionLoss
            ),
            "{e:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `version-2`'s snapshots, as (zxid, file name).
fn snapshots(v2: &Path) -> Vec<(i64, String)> {
    let mut out: Vec<(i64, String)> = std::fs::read_dir(v2)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            let rest = name.strip_prefix("snapshot.")?;
            let zxid = rest.split('.').next()?;
            Some((i64::from_str_radix(zxid, 16).ok()?, name))
        })
        .collect();
    out.sort();
    out
}

/// A copy of `v2` under `to/version-2` with one snapshot, `keep` (written there as
/// `keep_as`), and every log.
fn copy_with(v2: &Path, to: &Path, keep: &Path, keep_as: &str) {
    let _ = std::fs::remove_dir_all(to);
    let dst = to.join("version-2");
    std::fs::create_dir_all(&dst).unwrap();
    for e in std::fs::read_dir(v2).unwrap() {
        let e = e.unwrap();
        let name = e.file_name().into_string().unwrap();
        if name.starts_with("log.") {
            std::fs::copy(e.path(), dst.join(&name)).unwrap();
        }
    }
    std::fs::copy(keep, dst.join(keep_as)).unwrap();
}

/// `file` decompressed by ZooKeeper's `SnapStream` into `out`, in a JVM given 60 s.
fn zookeeper_decompress(file: &Path, out: &Path) {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/java/SnapDecompress.java");
    let classpath = format!(
        "{}:{}",
        jar("zookeeper").display(),
        jar("slf4j-api").display()
    );
    let mut child = Command::new("java")
        .arg("-cp")
        .arg(classpath)
        .arg(source)
        .arg(file)
        .arg(out)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let began = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if began.elapsed() > Duration::from_secs(60) {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("SnapDecompress did not end in 60 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert!(status.success(), "SnapDecompress {}: {err}", file.display());
}

fn audit(dir: &Path) -> (Option<PathBuf>, History) {
    let mut audit = Audit::new(vec!["/audit".to_owned()]);
    let stats = read_into(dir, Start::Newest, &mut audit).unwrap();
    (stats.snapshot, audit.finish())
}

/// One method: the history, the snapshot, both audits.
async fn compressed_snapshot_audits_as_zookeeper_reads_it(method: &str, magic: &[u8]) {
    let mut server =
        ZkServer::start_with(ZkOptions::default().system_property(METHOD, method)).unwrap();
    let dir = "/audit/lock";
    let (a, b, c) = (
        client(&server).await,
        client(&server).await,
        client(&server).await,
    );
    // A holds, B and C queue; A releases: B holds.
    let na = lock_node(&a, dir, 0xa).await;
    let nb = lock_node(&b, dir, 0xb).await;
    let nc = lock_node(&c, dir, 0xc).await;
    a.delete(format!("{dir}/{na}"), None).await.unwrap();

    // A restart makes the server write a snapshot of the tree it loaded: B holding, C queued.
    server.restart().unwrap();
    let v2 = server.data_dir().join("version-2");
    let (zxid, name) = snapshots(&v2).pop().unwrap();
    assert!(
        zxid > 0 && name.ends_with(&format!(".{method}")),
        "{:?}",
        snapshots(&v2)
    );
    let compressed = std::fs::read(v2.join(&name)).unwrap();
    assert!(compressed.starts_with(magic), "{name} is not {method}");

    // After the snapshot: B releases (C holds), C's session closes.
    for c in [&a, &b, &c] {
        reconnected(c).await;
    }
    b.delete(format!("{dir}/{nb}"), None).await.unwrap();
    c.close().await.unwrap();
    // A write every session sees in order: the close above is in the log before it.
    a.create(
        "/audit/done",
        b"",
        &CreateOptions::new(CreateMode::Persistent),
    )
    .await
    .unwrap();

    let scratch = std::env::temp_dir().join(format!(
        "zk-lock-audit-compressed-{}-{method}",
        std::process::id()
    ));
    let (ours, theirs) = (scratch.join("ours"), scratch.join("zookeeper"));
    copy_with(&v2, &ours, &v2.join(&name), &name);
    std::fs::create_dir_all(&scratch).unwrap();
    let plain = scratch.join("plain");
    zookeeper_decompress(&v2.join(&name), &plain);
    let plain_name = format!("snapshot.{zxid:x}");
    copy_with(&v2, &theirs, &plain, &plain_name);

    let (snap, got) = audit(&ours);
    assert_eq!(snap, Some(ours.join("version-2").join(&name)));
    let (snap, want) = audit(&theirs);
    assert_eq!(snap, Some(theirs.join("version-2").join(&plain_name)));
    assert_eq!(format!("{:?}", got.locks), format!("{:?}", want.locks));

    // The snapshot's queue, then the log's changes after it.
    let lock = got.locks.iter().find(|l| l.path == dir).unwrap();
    let kinds: Vec<(&str, &EventKind)> = lock
        .events
        .iter()
        .map(|e| (e.node.as_str(), &e.kind))
        .collect();
    let has = |node: &str, f: fn(&EventKind) -> bool| kinds.iter().any(|(n, k)| *n == node && f(k));
    assert!(
        has(&nb, |k| matches!(
            k,
            EventKind::Present { holding: true, .. }
        )),
        "{kinds:?}"
    );
    assert!(
        has(&nc, |k| matches!(
            k,
            EventKind::Present { holding: false, .. }
        )),
        "{kinds:?}"
    );
    assert!(
        has(&nc, |k| matches!(k, EventKind::Granted { .. })),
        "{kinds:?}"
    );
    assert!(
        has(&nc, |k| matches!(k, EventKind::Ended { .. })),
        "{kinds:?}"
    );
    assert!(
        !kinds.iter().any(|(n, _)| *n == na),
        "A ended before the snapshot"
    );

    a.close().await.unwrap();
    b.close().await.unwrap();
    drop(server);
    std::fs::remove_dir_all(&scratch).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gzip_snapshot() {
    tokio::time::timeout(
        BOUND,
        compressed_snapshot_audits_as_zookeeper_reads_it("gz", &[0x1f, 0x8b]),
    )
    .await
    .unwrap();
}

/// Debian's ZooKeeper names `/usr/share/java/snappy-java.jar` in its manifest, and
/// `libsnappyjava.so` comes with it (`libsnappy-jni`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snappy_snapshot() {
    tokio::time::timeout(
        BOUND,
        compressed_snapshot_audits_as_zookeeper_reads_it("snappy", b"\x82SNAPPY\0"),
    )
    .await
    .unwrap();
}
