//! zk-proto's transaction-log reader against a real ZooKeeper 3.8: a known sequence of
//! requests made with zk-client, then every `version-2/log.*` file of the server's data dir
//! read back with zk-proto and checked entry by entry.
//!
//! `TXNLOG_SEED_DIR=<dir>` also writes the log (cut at its end, padding dropped) there, for
//! the fuzz target's seeds (`zk-proto/fuzz/seeds/txn_log/`).

#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use zk_client::{Client, CreateMode, CreateOptions, Op};
use zk_proto::OpCode;
use zk_proto::records::{Acl, Id, Perms};
use zk_proto::txnlog::{TxnBody, TxnEntry, TxnLogReader, adler32};
use zk_testkit::{ZkOptions, ZkServer};

/// The `log.<hex zxid>` files of `data_dir/version-2`, in zxid order.
fn log_files(data_dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<(u64, PathBuf)> = std::fs::read_dir(data_dir.join("version-2"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter_map(|p| {
            let name = p.file_name()?.to_str()?.to_owned();
            let zxid = u64::from_str_radix(name.strip_prefix("log.")?, 16).ok()?;
            Some((zxid, p))
        })
        .collect();
    files.sort();
    files.into_iter().map(|(_, p)| p).collect()
}

/// Every entry of every log file, each record's checksum verified by the reader (and once
/// more here, independently, from the raw bytes).
fn read_logs(data_dir: &Path) -> Vec<TxnEntry> {
    let files = log_files(data_dir);
    assert!(!files.is_empty(), "no log files in {}", data_dir.display());
    let mut entries = Vec::new();
    for file in files {
        let bytes = std::fs::read(&file).unwrap();
        let mut log = TxnLogReader::new(&bytes).unwrap();
        assert_eq!(log.header().dbid, 0);
        let mut offset = log.offset();
        for item in log.by_ref() {
            let entry = item.unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            // Checksum, length, bytes, 'B': recompute the Adler-32 from the file's bytes.
            let stored = i64::from_be_bytes(bytes[offset..offset + 8].try_into().unwrap());
            let len = i32::from_be_bytes(bytes[offset + 8..offset + 12].try_into().unwrap());
            let record = &bytes[offset + 12..offset + 12 + len as usize];
            assert_eq!(stored, i64::from(adler32(record)));
            assert_eq!(TxnEntry::decode(record).unwrap(), entry);
            offset += 12 + len as usize + 1;
            entries.push(entry);
        }
        assert_eq!(log.offset(), offset);
        assert!(bytes[offset..].iter().all(|&b| b == 0), "padding is zeros");
        if let Ok(dir) = std::env::var("TXNLOG_SEED_DIR") {
            let name = file.file_name().unwrap().to_str().unwrap();
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(
                Path::new(&dir).join(format!("server-{name}")),
                &bytes[..offset + 64],
            )
            .unwrap();
        }
    }
    entries
}

/// The one entry of type `op` whose path is `path`.
fn find<'e>(entries: &'e [TxnEntry], op: OpCode, path: &str) -> &'e TxnEntry {
    let found: Vec<_> = entries
        .iter()
        .filter(|e| e.header.op == op && e.body.path() == Some(path))
        .collect();
    assert_eq!(found.len(), 1, "{op:?} {path}: {found:#?}");
    found[0]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_known_session_reads_back_from_the_servers_log() {
    let zk = tokio::task::spawn_blocking(|| {
        ZkServer::start_with(
            ZkOptions::default().system_property("zookeeper.extendedTypesEnabled", "true"),
        )
    })
    .await
    .unwrap()
    .unwrap();
    let client = Client::builder()
        .hosts(zk.connect_string())
        .session_timeout(Duration::from_secs(10))
        .connect()
        .await
        .unwrap();
    let session = client.session_id();
    let persistent = CreateOptions::new(CreateMode::Persistent);

    client.create("/tl", b"root", &persistent).await.unwrap();
    let container = CreateOptions::new(CreateMode::Container);
    client.create("/tl/c", b"", &container).await.unwrap();
    let ephemeral = CreateOptions::new(CreateMode::EphemeralSequential);
    let eph = client.create("/tl/c/e-", b"eph", &ephemeral).await.unwrap();
    assert_eq!(eph, "/tl/c/e-0000000000");
    let (p2, _) = client
        .create_with_stat("/tl/p2", b"two", &persistent)
        .await
        .unwrap();
    client.create("/tl/p3", b"", &persistent).await.unwrap();
    let ttl = CreateOptions::new(CreateMode::PersistentWithTtl).ttl(Duration::from_secs(3600));
    client.create("/tl/ttl", b"t", &ttl).await.unwrap();
    client.set_data("/tl", b"v1", Some(0)).await.unwrap();
    let digest_acl = vec![
        Acl {
            perms: Perms::ALL,
            id: Id::new("world", "anyone"),
        },
        Acl {
            perms: Perms::READ,
            id: Id::new("ip", "127.0.0.1"),
        },
    ];
    client
        .set_acl("/tl/p3", digest_acl.clone(), None)
        .await
        .unwrap();
    client.delete(&p2, None).await.unwrap();
    // A request that fails after it got a zxid: the node exists.
    assert!(client.create("/tl", b"", &persistent).await.is_err());
    client
        .multi(&[
            Op::check("/tl", Some(1)),
            Op::create("/tl/m", &b"m"[..], persistent.clone()),
            Op::delete("/tl/p3", None),
        ])
        .await
        .unwrap();
    // Fails on its second op: the first is logged as it would have been, then the error.
    assert!(
        client
            .multi(&[
                Op::create("/tl/f", &b""[..], persistent.clone()),
                Op::delete("/tl/missing", None),
                Op::set_data("/tl", &b"never"[..], None),
            ])
            .await
            .is_err()
    );
    client.close().await.unwrap();

    let entries = read_logs(&zk.data_dir());

    // zxids strictly increase, across files too.
    for pair in entries.windows(2) {
        assert!(pair[0].zxid() < pair[1].zxid(), "{pair:#?}");
    }
    // The server's own sessions and ours: everything after createSession is ours.
    let start = entries
        .iter()
        .position(|e| e.header.op == OpCode::CreateSession && e.session_id() == session)
        .unwrap_or_else(|| panic!("no createSession for {session:#x}: {entries:#?}"));
    let ours = &entries[start..];
    assert!(ours.iter().all(|e| e.session_id() == session), "{ours:#?}");
    let TxnBody::CreateSession(created) = &ours[0].body else {
        unreachable!()
    };
    assert!(created.timeout > 0);
    // 3.8 logs a digest after every txn (zookeeper.digest.enabled defaults to true) but a
    // failed request's error txn; a failed multi has one, and the tree is unchanged by it.
    assert!(
        ours.iter()
            .all(|e| e.digest.is_some() == (e.header.op != OpCode::Error)),
        "{ours:#?}"
    );
    let failed_multi = ours
        .iter()
        .rposition(|e| e.header.op == OpCode::Multi)
        .unwrap();
    assert_eq!(
        ours[failed_multi].digest,
        ours[failed_multi - 1].digest,
        "a failed multi leaves the tree's digest as it was"
    );

    let root = find(ours, OpCode::Create, "/tl");
    let TxnBody::Create(t) = &root.body else {
        panic!("{root:?}")
    };
    assert_eq!(t.data.as_deref(), Some(&b"root"[..]));
    assert!(!t.ephemeral);
    assert_eq!(root.ephemeral_owner(), None);
    assert_eq!(t.acl, Acl::OPEN_UNSAFE);

    let c = find(ours, OpCode::CreateContainer, "/tl/c");
    assert!(matches!(&c.body, TxnBody::CreateContainer(t) if t.parent_cversion > 0));

    let e = find(ours, OpCode::Create, "/tl/c/e-0000000000");
    assert_eq!(e.ephemeral_owner(), Some(session));
    assert!(
        matches!(&e.body, TxnBody::Create(t) if t.ephemeral && t.data.as_deref() == Some(&b"eph"[..]))
    );

    let p2 = find(ours, OpCode::Create2, "/tl/p2");
    assert!(matches!(&p2.body, TxnBody::Create2(t) if !t.ephemeral));

    let ttl = find(ours, OpCode::CreateTtl, "/tl/ttl");
    assert!(matches!(&ttl.body, TxnBody::CreateTtl(t) if t.ttl == 3_600_000));

    let set = find(ours, OpCode::SetData, "/tl");
    assert!(
        matches!(&set.body, TxnBody::SetData(t) if t.version == 1 && t.data.as_deref() == Some(&b"v1"[..]))
    );

    let acl = find(ours, OpCode::SetAcl, "/tl/p3");
    assert!(matches!(&acl.body, TxnBody::SetAcl(t) if t.acl == digest_acl && t.version == 1));

    let del = find(ours, OpCode::Delete, "/tl/p2");
    assert!(del.zxid() > p2.zxid());

    let errors: Vec<_> = ours
        .iter()
        .filter(|e| e.header.op == OpCode::Error)
        .collect();
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert!(
        matches!(&errors[0].body, TxnBody::Error(t) if t.err == -110),
        "NodeExists"
    );
    assert!(errors[0].body.changed_nothing());

    let multis: Vec<_> = ours
        .iter()
        .filter(|e| e.header.op == OpCode::Multi)
        .collect();
    assert_eq!(multis.len(), 2, "{multis:#?}");
    let TxnBody::Multi(ok) = &multis[0].body else {
        unreachable!()
    };
    assert!(!multis[0].body.changed_nothing());
    assert!(
        matches!(&ok[..], [
        TxnBody::Check(check),
        TxnBody::Create(create),
        TxnBody::Delete(delete),
    // The check logs the version a write would give (checked 1, logged 2), as setData does.
    ] if check.path == "/tl" && check.version == 2
        && create.path == "/tl/m" && !create.ephemeral
        && delete.path == "/tl/p3"),
        "{ok:#?}"
    );
    let TxnBody::Multi(failed) = &multis[1].body else {
        unreachable!()
    };
    assert!(multis[1].body.changed_nothing());
    assert!(
        matches!(&failed[..], [
        TxnBody::Create(create),
        TxnBody::Error(no_node),
        TxnBody::Error(after),
    ] if create.path == "/tl/f" && no_node.err == -101 && after.err == -2),
        "{failed:#?}"
    );

    let close = ours.last().unwrap();
    assert_eq!(close.header.op, OpCode::CloseSession, "{ours:#?}");
    let TxnBody::CloseSession(Some(closed)) = &close.body else {
        panic!("{close:?}")
    };
    assert_eq!(closed.paths_to_delete, ["/tl/c/e-0000000000"]);

    let kinds: Vec<OpCode> = ours.iter().map(|e| e.header.op).collect();
    assert_eq!(
        kinds,
        [
            OpCode::CreateSession,
            OpCode::Create,
            OpCode::CreateContainer,
            OpCode::Create,
            OpCode::Create2,
            OpCode::Create,
            OpCode::CreateTtl,
            OpCode::SetData,
            OpCode::SetAcl,
            OpCode::Delete,
            OpCode::Error,
            OpCode::Multi,
            OpCode::Multi,
            OpCode::CloseSession,
        ]
    );
}
