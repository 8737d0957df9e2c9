//! Every operation and watch type of `zk-client` against a real ZooKeeper 3.8 server started
//! by the test (one standalone server shared by the tests of this file; each test works under
//! its own root path).

#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::sync::OnceLock;
use std::time::Duration;

use bytes::Bytes;
use zk_client::*;

/// The shared server. It dies with the test process (the launcher watches its stdin).
fn server() -> &'static zk_testkit::ZkServer {
    static SERVER: OnceLock<zk_testkit::ZkServer> = OnceLock::new();
    SERVER.get_or_init(|| zk_testkit::ZkServer::start().expect("start ZooKeeper"))
}

async fn client() -> Client {
    connect(&server().connect_string()).await
}

async fn connect(hosts: &str) -> Client {
    Client::builder()
        .hosts(hosts)
        .session_timeout(Duration::from_secs(10))
        .connect()
        .await
        .expect("connect")
}

fn opts(mode: CreateMode) -> CreateOptions {
    CreateOptions::new(mode)
}

/// A fresh persistent root for one test.
async fn root(c: &Client, name: &str) -> String {
    let path = format!("/{name}");
    c.create(&path, b"", &opts(CreateMode::Persistent))
        .await
        .unwrap();
    path
}

/// Waits for a watcher, failing the test instead of hanging.
async fn within<F: std::future::Future>(f: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(10), f)
        .await
        .expect("timed out waiting")
}

#[tokio::test]
async fn create_in_every_mode() {
    let c = client().await;
    let r = root(&c, "modes").await;
    assert_eq!(
        c.create(&format!("{r}/p"), b"d", &opts(CreateMode::Persistent))
            .await
            .unwrap(),
        format!("{r}/p")
    );
    let (path, stat) = c
        .create_with_stat(&format!("{r}/e"), b"xy", &opts(CreateMode::Ephemeral))
        .await
        .unwrap();
    assert_eq!(path, format!("{r}/e"));
    assert_eq!(
        (stat.ephemeral_owner, stat.data_length),
        (c.session_id(), 2)
    );
    let s1 = c
        .create(
            &format!("{r}/s-"),
            b"",
            &opts(CreateMode::PersistentSequential),
        )
        .await
        .unwrap();
    let s2 = c
        .create(
            &format!("{r}/s-"),
            b"",
            &opts(CreateMode::EphemeralSequential),
        )
        .await
        .unwrap();
    assert_eq!(s1, format!("{r}/s-0000000002"));
    assert_eq!(s2, format!("{r}/s-0000000003"));
    // Container: created with its own opcode (the server refuses a sequential one).
    let (cont, _) = c
        .create_with_stat(&format!("{r}/c"), b"", &opts(CreateMode::Container))
        .await
        .unwrap();
    assert_eq!(cont, format!("{r}/c"));
    // TTL (the test server enables extended types), with the createTTL opcode.
    let ttl = opts(CreateMode::PersistentWithTtl).ttl(Duration::from_secs(60));
    let (path, _) = c
        .create_with_stat(&format!("{r}/ttl"), b"", &ttl)
        .await
        .unwrap();
    assert_eq!(path, format!("{r}/ttl"));
    let ttl_seq = opts(CreateMode::PersistentSequentialWithTtl).ttl(Duration::from_secs(60));
    assert!(
        c.create(&format!("{r}/ttl-"), b"", &ttl_seq)
            .await
            .unwrap()
            .starts_with(&format!("{r}/ttl-00"))
    );

    // The server's refusals, typed.
    let again = c
        .create(&format!("{r}/p"), b"", &opts(CreateMode::Persistent))
        .await;
    assert_eq!(again, Err(Error::NodeExists));
    let orphan = c
        .create(&format!("{r}/none/x"), b"", &opts(CreateMode::Persistent))
        .await;
    assert_eq!(orphan, Err(Error::NoNode));
    let under_eph = c
        .create(&format!("{r}/e/x"), b"", &opts(CreateMode::Persistent))
        .await;
    assert_eq!(under_eph, Err(Error::NoChildrenForEphemerals));
    // Refused here, before the wire.
    let no_ttl = c
        .create(
            &format!("{r}/t2"),
            b"",
            &opts(CreateMode::PersistentWithTtl),
        )
        .await;
    assert!(matches!(no_ttl, Err(Error::InvalidArgument(_))));
    let no_acl = c
        .create(
            &format!("{r}/t3"),
            b"",
            &opts(CreateMode::Persistent).acl(vec![]),
        )
        .await;
    assert!(matches!(no_acl, Err(Error::InvalidArgument(_))));
}

#[tokio::test]
async fn data_delete_and_versions() {
    let c = client().await;
    let r = root(&c, "data").await;
    let p = format!("{r}/n");
    c.create(&p, b"v0", &opts(CreateMode::Persistent))
        .await
        .unwrap();
    let (data, stat) = c.get_data(&p).await.unwrap();
    assert_eq!((&data[..], stat.version), (&b"v0"[..], 0));
    assert_eq!(c.set_data(&p, b"v1", Some(5)).await, Err(Error::BadVersion));
    let stat = c.set_data(&p, b"v1", Some(0)).await.unwrap();
    assert_eq!(stat.version, 1);
    let stat = c.set_data(&p, &[], None).await.unwrap();
    assert_eq!((stat.version, stat.data_length), (2, 0));
    assert_eq!(c.exists(&p).await.unwrap().map(|s| s.version), Some(2));
    assert_eq!(c.exists(&format!("{r}/missing")).await, Ok(None));
    assert_eq!(
        c.get_data(&format!("{r}/missing")).await,
        Err(Error::NoNode)
    );

    c.create(&format!("{p}/kid"), b"", &opts(CreateMode::Persistent))
        .await
        .unwrap();
    assert_eq!(c.delete(&p, None).await, Err(Error::NotEmpty));
    c.delete(&format!("{p}/kid"), None).await.unwrap();
    assert_eq!(c.delete(&p, Some(1)).await, Err(Error::BadVersion));
    c.delete(&p, Some(2)).await.unwrap();
    assert_eq!(c.delete(&p, None).await, Err(Error::NoNode));
}

#[tokio::test]
async fn children_acl_sync_and_counts() {
    let c = client().await;
    let r = root(&c, "kids").await;
    for k in ["b", "a", "c"] {
        c.create(&format!("{r}/{k}"), b"", &opts(CreateMode::Persistent))
            .await
            .unwrap();
    }
    c.create(&format!("{r}/a/deep"), b"", &opts(CreateMode::Ephemeral))
        .await
        .unwrap();
    let mut kids = c.get_children(&r).await.unwrap();
    kids.sort();
    assert_eq!(kids, ["a", "b", "c"]);
    let (kids, stat) = c.get_children_with_stat(&r).await.unwrap();
    assert_eq!((kids.len(), stat.num_children), (3, 3));
    assert_eq!(c.get_all_children_number(&r).await, Ok(4));
    assert_eq!(c.get_ephemerals(&r).await, Ok(vec![format!("{r}/a/deep")]));
    c.sync(&r).await.unwrap();

    let (acl, stat) = c.get_acl(&r).await.unwrap();
    assert_eq!(acl, Acl::open_unsafe());
    assert_eq!(stat.aversion, 0);
    let read_only = Acl::read_unsafe();
    assert_eq!(
        c.set_acl(&r, read_only.clone(), Some(3)).await,
        Err(Error::BadVersion)
    );
    assert_eq!(
        c.set_acl(&r, read_only.clone(), Some(0))
            .await
            .unwrap()
            .aversion,
        1
    );
    assert_eq!(c.get_acl(&r).await.unwrap().0, read_only);
    assert_eq!(
        c.create(&format!("{r}/d"), b"", &opts(CreateMode::Persistent))
            .await,
        Err(Error::NoAuth)
    );
}

#[tokio::test]
async fn multi_commits_all_or_reports_the_failing_op() {
    let c = client().await;
    let r = root(&c, "multi").await;
    let results = c
        .multi(&[
            Op::Create {
                path: format!("{r}/a"),
                data: Bytes::from_static(b"1"),
                options: opts(CreateMode::Persistent),
            },
            Op::Create {
                path: format!("{r}/s-"),
                data: Bytes::new(),
                options: opts(CreateMode::PersistentSequential),
            },
            Op::SetData {
                path: format!("{r}/a"),
                data: Bytes::from_static(b"2"),
                version: Some(0),
            },
            Op::Check {
                path: format!("{r}/a"),
                version: Some(1),
            },
        ])
        .await
        .unwrap();
    assert_eq!(
        results[0],
        OpResult::Created(format!("{r}/a"), None),
        "{results:?}"
    );
    assert!(matches!(&results[1], OpResult::Created(p, _) if *p == format!("{r}/s-0000000001")));
    assert!(matches!(&results[2], OpResult::DataSet(s) if s.version == 1));
    assert_eq!(results[3], OpResult::Checked);

    let failed = c
        .multi(&[
            Op::Delete {
                path: format!("{r}/a"),
                version: None,
            },
            Op::Create {
                path: format!("{r}/s-0000000001"),
                data: Bytes::new(),
                options: opts(CreateMode::Persistent),
            },
        ])
        .await;
    assert_eq!(
        failed,
        Err(Error::MultiFailed {
            index: 1,
            source: Box::new(Error::NodeExists)
        })
    );
    assert!(
        c.exists(&format!("{r}/a")).await.unwrap().is_some(),
        "rolled back"
    );

    let reads = c
        .multi_read(&[
            ReadOp::GetData(format!("{r}/a")),
            ReadOp::GetChildren(r.clone()),
            ReadOp::GetData(format!("{r}/x")),
        ])
        .await
        .unwrap();
    assert!(matches!(&reads[0], Ok(ReadResult::Data(d, s)) if &d[..] == b"2" && s.version == 1));
    assert!(matches!(&reads[1], Ok(ReadResult::Children(k)) if k.len() == 2));
    assert_eq!(reads[2], Err(Error::NoNode));
}

#[tokio::test]
async fn digest_auth_and_acls_deny_other_sessions() {
    let owner = Client::builder()
        .hosts(server().connect_string())
        .digest_auth("alice", "secret")
        .connect()
        .await
        .unwrap();
    let r = root(&owner, "auth").await;
    let p = format!("{r}/private");
    owner
        .create(
            &p,
            b"mine",
            &opts(CreateMode::Persistent).acl(Acl::creator_all()),
        )
        .await
        .unwrap();
    let (acl, _) = owner.get_acl(&p).await.unwrap();
    assert_eq!(acl.len(), 1);
    assert_eq!(acl[0].id.scheme, "digest");
    assert!(acl[0].id.id.starts_with("alice:"), "{:?}", acl[0].id);

    let stranger = client().await;
    assert_eq!(stranger.get_data(&p).await, Err(Error::NoAuth));
    assert_eq!(stranger.set_data(&p, b"x", None).await, Err(Error::NoAuth));
    stranger
        .add_auth("digest", &b"alice:wrong"[..])
        .await
        .unwrap();
    assert_eq!(stranger.get_data(&p).await, Err(Error::NoAuth));
    stranger
        .add_auth("digest", &b"alice:secret"[..])
        .await
        .unwrap();
    assert_eq!(&stranger.get_data(&p).await.unwrap().0[..], b"mine");

    // An unknown scheme fails authentication, which ends the session.
    let doomed = client().await;
    assert_eq!(
        doomed.add_auth("no-such-scheme", &b"x"[..]).await,
        Err(Error::AuthFailed)
    );
    assert_eq!(doomed.state(), SessionState::AuthFailed);
    assert_eq!(doomed.get_data("/").await, Err(Error::AuthFailed));
}

#[tokio::test]
async fn who_am_i_lists_the_session_identities() {
    // Debian's 3.8.0 already implements whoAmI (upstream lists it as 3.9): the session is
    // known by its IP, and by its digest identity after add_auth.
    let c = client().await;
    let ids = c.who_am_i().await.unwrap();
    assert_eq!(
        ids,
        [ClientInfo {
            auth_scheme: "ip".into(),
            user: "127.0.0.1".into()
        }]
    );
    c.add_auth("digest", &b"bob:pw"[..]).await.unwrap();
    let ids = c.who_am_i().await.unwrap();
    assert!(
        ids.iter()
            .any(|i| i.auth_scheme == "digest" && i.user == "bob"),
        "{ids:?}"
    );
}

#[tokio::test]
async fn chroot_is_applied_and_stripped() {
    let plain = client().await;
    root(&plain, "jail").await;
    let jailed = connect(&format!("{}/jail", server().connect_string())).await;
    assert_eq!(
        jailed
            .create("/a", b"", &opts(CreateMode::Persistent))
            .await
            .unwrap(),
        "/a"
    );
    assert!(plain.exists("/jail/a").await.unwrap().is_some());
    let seq = jailed
        .create("/a/s-", b"", &opts(CreateMode::EphemeralSequential))
        .await
        .unwrap();
    assert_eq!(seq, "/a/s-0000000000");
    assert_eq!(jailed.get_ephemerals("/").await, Ok(vec![seq.clone()]));
    let (kids, watcher) = jailed.get_children_and_watch("/a").await.unwrap();
    assert_eq!(kids, ["s-0000000000"]);
    plain
        .create("/jail/a/other", b"", &opts(CreateMode::Persistent))
        .await
        .unwrap();
    let event = within(watcher).await;
    assert_eq!(
        (event.event_type, event.path.as_str()),
        (EventType::NodeChildrenChanged, "/a")
    );
    assert_eq!(jailed.get_children("/").await.unwrap(), ["a"]);
}

#[tokio::test]
async fn one_shot_watches_fire_per_zookeeper_rules() {
    let c = client().await;
    let other = client().await;
    let r = root(&c, "watch").await;
    let p = format!("{r}/n");

    // exists on a missing node: fires on create.
    let (stat, created) = c.exists_and_watch(&p).await.unwrap();
    assert!(stat.is_none());
    other
        .create(&p, b"", &opts(CreateMode::Persistent))
        .await
        .unwrap();
    let ev = within(created).await;
    assert_eq!(
        (ev.event_type, ev.state, ev.path.as_str()),
        (
            EventType::NodeCreated,
            KeeperState::SyncConnected,
            p.as_str()
        )
    );

    // Several callers watching the same path each get the event.
    let (_, _, w1) = c.get_data_and_watch(&p).await.unwrap();
    let (_, _, w2) = c.get_data_and_watch(&p).await.unwrap();
    let (_, w3) = c.exists_and_watch(&p).await.unwrap();
    other.set_data(&p, b"x", None).await.unwrap();
    // The event is seen before the data that changed it: by the time our read returns the
    // new data, the watchers are ready.
    assert_eq!(&c.get_data(&p).await.unwrap().0[..], b"x");
    for w in [w1, w2, w3] {
        let ev = tokio::time::timeout(Duration::ZERO, w)
            .await
            .expect("event before data");
        assert_eq!(ev.event_type, EventType::NodeDataChanged);
    }

    // Child watches fire on a child change, and data + child watches on delete.
    let (_, kids) = c.get_children_and_watch(&p).await.unwrap();
    other
        .create(&format!("{p}/k"), b"", &opts(CreateMode::Ephemeral))
        .await
        .unwrap();
    assert_eq!(
        within(kids).await.event_type,
        EventType::NodeChildrenChanged
    );
    other.delete(&format!("{p}/k"), None).await.unwrap();
    let (_, _, data) = c.get_data_and_watch(&p).await.unwrap();
    let (_, kids) = c.get_children_and_watch(&p).await.unwrap();
    other.delete(&p, None).await.unwrap();
    assert_eq!(within(data).await.event_type, EventType::NodeDeleted);
    assert_eq!(within(kids).await.event_type, EventType::NodeDeleted);

    // A failed read leaves no watch: getData on a missing node is NoNode, nothing registered.
    assert!(matches!(c.get_data_and_watch(&p).await, Err(Error::NoNode)));
}

/// What a [`WatchHandler`] was told, in order, sent on to the test.
struct Told(tokio::sync::mpsc::UnboundedSender<String>);

impl WatchHandler for Told {
    fn reply(&self, result: Result<(Bytes, Stat), Error>) {
        let _ = self.0.send(match result {
            Ok((data, _)) => format!("reply {}", String::from_utf8_lossy(&data)),
            Err(e) => format!("reply {e:?}"),
        });
    }
    fn event(&self, event: WatchedEvent) {
        let _ = self
            .0
            .send(format!("event {:?} {}", event.event_type, event.path));
    }
}

/// A data watch with a handler: its reply, then its one event, in the session's task; a
/// missing node is `NoNode` and no watch; a forgotten watch tells nothing more; the end of
/// the session reaches a watch still waiting.
#[tokio::test]
async fn a_watch_handler_gets_the_reply_then_the_event() {
    let c = client().await;
    let r = root(&c, "handler").await;
    let p = format!("{r}/n");
    c.create(&p, b"one", &opts(CreateMode::Persistent))
        .await
        .unwrap();
    let (tx, mut told) = tokio::sync::mpsc::unbounded_channel();
    let handler = std::sync::Arc::new(Told(tx));
    c.get_data_and_watch_with(&p, handler.clone()).unwrap();
    assert_eq!(within(told.recv()).await.unwrap(), "reply one");
    c.set_data(&p, b"two", None).await.unwrap();
    assert_eq!(
        within(told.recv()).await.unwrap(),
        format!("event NodeDataChanged {p}")
    );
    // One event per registration: set again, then delete.
    c.get_data_and_watch_with(&p, handler.clone()).unwrap();
    assert_eq!(within(told.recv()).await.unwrap(), "reply two");
    c.delete(&p, None).await.unwrap();
    assert_eq!(
        within(told.recv()).await.unwrap(),
        format!("event NodeDeleted {p}")
    );
    c.get_data_and_watch_with(&p, handler.clone()).unwrap();
    assert_eq!(within(told.recv()).await.unwrap(), "reply NoNode");
    // Forgotten: a change reaches nobody (the sync's reply comes after the event would).
    c.create(&p, b"three", &opts(CreateMode::Persistent))
        .await
        .unwrap();
    let id = c.get_data_and_watch_with(&p, handler.clone()).unwrap();
    assert_eq!(within(told.recv()).await.unwrap(), "reply three");
    c.forget_watch(&p, id);
    c.set_data(&p, b"four", None).await.unwrap();
    c.sync(&p).await.unwrap();
    assert!(told.try_recv().is_err(), "nothing after the forget");
    // The session's end reaches a watch still waiting.
    c.get_data_and_watch_with(&p, handler.clone()).unwrap();
    assert_eq!(within(told.recv()).await.unwrap(), "reply four");
    c.close().await.unwrap();
    assert_eq!(within(told.recv()).await.unwrap(), "event None ");
    // After the session: not sent, and the handler is not called.
    assert!(c.get_data_and_watch_with(&p, handler).is_err());
}

#[tokio::test]
async fn persistent_and_recursive_watches_until_removed() {
    let c = client().await;
    let other = client().await;
    let r = root(&c, "pwatch").await;
    let mut node = c
        .add_watch(&format!("{r}/p"), AddWatchMode::Persistent)
        .await
        .unwrap();
    let mut tree = c
        .add_watch(&r, AddWatchMode::PersistentRecursive)
        .await
        .unwrap();
    other
        .create(&format!("{r}/p"), b"", &opts(CreateMode::Persistent))
        .await
        .unwrap();
    other.set_data(&format!("{r}/p"), b"1", None).await.unwrap();
    other
        .create(&format!("{r}/p/q"), b"", &opts(CreateMode::Persistent))
        .await
        .unwrap();
    other.delete(&format!("{r}/p/q"), None).await.unwrap();
    let mut seen = Vec::new();
    for _ in 0..4 {
        let ev = within(node.next()).await.unwrap();
        seen.push(format!("{:?} {}", ev.event_type, ev.path));
    }
    assert_eq!(
        seen,
        [
            format!("NodeCreated {r}/p"),
            format!("NodeDataChanged {r}/p"),
            format!("NodeChildrenChanged {r}/p"),
            format!("NodeChildrenChanged {r}/p"),
        ]
    );
    let mut seen = Vec::new();
    for _ in 0..4 {
        let ev = within(tree.next()).await.unwrap();
        seen.push(format!("{:?} {}", ev.event_type, ev.path));
    }
    assert_eq!(
        seen,
        [
            format!("NodeCreated {r}/p"),
            format!("NodeDataChanged {r}/p"),
            format!("NodeCreated {r}/p/q"),
            format!("NodeDeleted {r}/p/q"),
        ]
    );
    // ZooKeeper 3.8 removes persistent watches with `Any` (the Persistent and
    // PersistentRecursive types are 3.9's; 3.8 cannot read them).
    assert_eq!(
        c.remove_watches(&format!("{r}/p"), WatcherType::Persistent)
            .await,
        Err(Error::Server(zk_proto::ErrorCode::MarshallingError))
    );
    c.remove_watches(&format!("{r}/p"), WatcherType::Any)
        .await
        .unwrap();
    let last = within(node.next()).await.unwrap();
    assert_eq!(last.event_type, EventType::PersistentWatchRemoved);
    assert_eq!(within(node.next()).await, None);
    assert_eq!(
        c.remove_watches(&format!("{r}/p"), WatcherType::Any).await,
        Err(Error::NoWatcher)
    );
    // The recursive watch on the parent is untouched.
    other.delete(&format!("{r}/p"), None).await.unwrap();
    let ev = within(tree.next()).await.unwrap();
    assert_eq!(
        (ev.event_type, ev.path),
        (EventType::NodeDeleted, format!("{r}/p"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_tasks_pipeline_thousands_of_requests() {
    let c = client().await;
    let r = root(&c, "pipe").await;
    const TASKS: usize = 16;
    const EACH: usize = 250;
    for t in 0..TASKS {
        c.create(
            &format!("{r}/{t}"),
            format!("task-{t}").as_bytes(),
            &opts(CreateMode::Persistent),
        )
        .await
        .unwrap();
    }
    let mut handles = Vec::new();
    for t in 0..TASKS {
        let c = c.clone();
        let r = r.clone();
        handles.push(tokio::spawn(async move {
            let path = format!("{r}/{t}");
            for i in 0..EACH {
                if i % 10 == 0 {
                    c.set_data(&path, format!("task-{t}").as_bytes(), None)
                        .await
                        .unwrap();
                } else {
                    let (data, _) = c.get_data(&path).await.unwrap();
                    assert_eq!(data, format!("task-{t}").as_bytes());
                }
            }
        }));
    }
    for h in handles {
        h.await.unwrap();
    }
    let (_, stat) = c.get_data(&format!("{r}/0")).await.unwrap();
    assert_eq!(stat.version, (EACH / 10) as i32);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_callers_do_not_desynchronize_the_session() {
    let c = client().await;
    let r = root(&c, "cancel").await;
    let mut handles = Vec::new();
    for i in 0..200u32 {
        let c = c.clone();
        let path = format!("{r}/n{i}");
        handles.push(tokio::spawn(async move {
            c.create(&path, path.as_bytes(), &opts(CreateMode::Persistent))
                .await
                .unwrap();
            let (data, _) = c.get_data(&path).await.unwrap();
            assert_eq!(data, path.as_bytes());
        }));
    }
    // Abort every other task wherever it is: before sending, in flight, or done.
    for (i, h) in handles.iter().enumerate() {
        if i % 2 == 0 {
            h.abort();
        }
    }
    for (i, h) in handles.into_iter().enumerate() {
        match h.await {
            Ok(()) => {}
            Err(e) => assert!(e.is_cancelled() && i % 2 == 0, "{e}"),
        }
    }
    // Whatever was cancelled, every later reply still reaches its own caller.
    for i in 0..50u32 {
        let path = format!("{r}/after{i}");
        c.create(&path, path.as_bytes(), &opts(CreateMode::Persistent))
            .await
            .unwrap();
        assert_eq!(c.get_data(&path).await.unwrap().0, path.as_bytes());
    }
}

#[tokio::test]
async fn close_removes_ephemerals_at_once_and_ends_the_client() {
    let observer = client().await;
    let r = root(&observer, "close").await;
    let c = client().await;
    let p = format!("{r}/e");
    c.create(&p, b"", &opts(CreateMode::Ephemeral))
        .await
        .unwrap();
    c.close().await.unwrap();
    assert_eq!(
        observer.exists(&p).await,
        Ok(None),
        "gone at once, not after the timeout"
    );
    assert_eq!(c.state(), SessionState::Closed);
    assert_eq!(c.get_data("/").await, Err(Error::Closed));
    assert_eq!(c.clone().exists("/").await, Err(Error::Closed));
    c.close().await.unwrap(); // closing twice is fine
}

#[tokio::test]
async fn dropping_the_last_handle_closes_the_session() {
    let observer = client().await;
    let r = root(&observer, "drop").await;
    let c = client().await;
    let p = format!("{r}/e");
    c.create(&p, b"", &opts(CreateMode::Ephemeral))
        .await
        .unwrap();
    let (_, gone) = observer.exists_and_watch(&p).await.unwrap();
    let clone = c.clone();
    drop(c);
    assert!(
        clone.exists(&p).await.unwrap().is_some(),
        "a clone keeps the session"
    );
    drop(clone);
    // The session timeout is 10 s: the ephemeral goes well before, by closeSession.
    let ev = tokio::time::timeout(Duration::from_secs(5), gone)
        .await
        .expect("closed promptly");
    assert_eq!(ev.event_type, EventType::NodeDeleted);
}

#[tokio::test]
async fn bad_input_is_refused_before_the_wire() {
    let c = Client::builder()
        .hosts(server().connect_string())
        .max_data_len(1024)
        .connect()
        .await
        .unwrap();
    for bad in ["", "a", "/a/", "/a//b", "/a/./b", "/a\u{0}"] {
        assert!(
            matches!(c.get_data(bad).await, Err(Error::InvalidPath(_))),
            "{bad:?}"
        );
    }
    let big = vec![7u8; 2048];
    assert!(matches!(
        c.create("/big", &big, &opts(CreateMode::Persistent)).await,
        Err(Error::TooLarge {
            len: 2048,
            max: 1024
        })
    ));
    assert!(matches!(
        c.set_data("/", &big, None).await,
        Err(Error::TooLarge { .. })
    ));
    // Nothing of that touched the session.
    assert_eq!(c.state(), SessionState::Connected);
    assert!(c.exists("/big").await.unwrap().is_none());
}

#[tokio::test]
async fn connecting_to_nothing_fails_promptly() {
    // A port we bound and closed: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let result = Client::builder()
        .hosts(format!("127.0.0.1:{port}"))
        .connect_timeout(Duration::from_millis(500))
        .connect()
        .await;
    // Refused, said as such (not a timeout), with the address.
    assert!(
        matches!(&result, Err(Error::Unreachable { server, .. }) if *server == format!("127.0.0.1:{port}")),
        "{result:?}"
    );
    assert!(matches!(
        Client::builder().hosts("").connect().await,
        Err(Error::InvalidHosts { .. })
    ));
}

#[tokio::test]
async fn ipv6_loopback() {
    // The test server listens on 127.0.0.1 only; this checks [::1] parsing and a refused
    // IPv6 connection fails cleanly (the machine may lack IPv6 entirely).
    let port = server().port();
    let result = Client::builder()
        .hosts(format!("[::1]:{port}"))
        .connect_timeout(Duration::from_millis(500))
        .connect()
        .await;
    assert!(result.is_err());
}

/// `getConfig` reads `/zookeeper/config`, never under the chroot; `checkWatches` asks the
/// server; local watch removal leaves the server alone.
#[tokio::test]
async fn config_check_watches_and_local_removal() {
    let c = client().await;
    let r = root(&c, "cfg").await;
    let (config, stat) = c.get_config().await.unwrap();
    assert!(stat.czxid >= 0);
    eprintln!(
        "FIGURE standalone config: {:?}",
        String::from_utf8_lossy(&config)
    );
    // With a chroot, the config node is still the server's.
    let chrooted = connect(&format!("{}{r}", server().connect_string())).await;
    chrooted.get_config().await.unwrap();
    assert_eq!(
        chrooted.get_data(CONFIG_NODE).await.err(),
        Some(Error::NoNode)
    );

    let path = format!("{r}/w");
    c.create(&path, b"", &opts(CreateMode::Persistent))
        .await
        .unwrap();
    let (_, _, watcher) = c.get_data_and_watch(&path).await.unwrap();
    c.check_watches(&path, WatcherType::Data).await.unwrap();
    assert_eq!(
        c.check_watches(&path, WatcherType::Children).await,
        Err(Error::NoWatcher)
    );
    // Removed here only: the watcher hears so at once; the server still has the watch.
    c.remove_watches_locally(&path, WatcherType::Data)
        .await
        .unwrap();
    assert_eq!(
        within(watcher).await.event_type,
        EventType::DataWatchRemoved
    );
    c.check_watches(&path, WatcherType::Data).await.unwrap();
    assert_eq!(
        c.remove_watches_locally(&path, WatcherType::Data).await,
        Err(Error::NoWatcher)
    );
    c.close().await.unwrap();
    chrooted.close().await.unwrap();
}

/// Dropping the last persistent watcher of a path ends the watch on the server too (it stayed
/// there, sending events to nobody, until the session ended).
#[tokio::test]
async fn dropping_the_last_persistent_watcher_removes_the_servers_watch() {
    let c = client().await;
    let r = root(&c, "pdrop").await;
    let first = c.add_watch(&r, AddWatchMode::Persistent).await.unwrap();
    let second = c.add_watch(&r, AddWatchMode::Persistent).await.unwrap();
    drop(first);
    c.check_watches(&r, WatcherType::Any).await.unwrap();
    drop(second);
    // The removal is sent when the handle drops, so a request made after it is answered
    // after it.
    assert_eq!(
        c.check_watches(&r, WatcherType::Any).await,
        Err(Error::NoWatcher)
    );
    c.close().await.unwrap();
}

/// Issue 24 (also): data is limited by the request's encoded size, as the server limits it
/// (`jute.maxbuffer`, 1,048,575 bytes of request): a `set_data` whose request is exactly at
/// the limit is written and read back (1,048,541 bytes on this path, more than the old fixed
/// 1,047,551); one byte more is refused here, and the server does refuse it (a client allowed
/// one byte more loses its connection).
#[tokio::test]
async fn data_up_to_the_servers_request_limit_is_written_and_one_byte_more_is_refused() {
    let c = client().await;
    let path = root(&c, "request-limit").await;
    // Header 8, path 4 + len, data 4 + len, version 4.
    let fits = DEFAULT_MAX_REQUEST_LEN - 20 - path.len();
    assert!(fits > 1_047_552, "{fits}");
    within(c.set_data(&path, &vec![1; fits], None))
        .await
        .expect("a request at the limit is written");
    let (back, _) = within(c.get_data(&path)).await.unwrap();
    assert_eq!(back.len(), fits);
    let over = within(c.set_data(&path, &vec![2; fits + 1], None)).await;
    assert_eq!(
        over,
        Err(Error::TooLarge {
            len: DEFAULT_MAX_REQUEST_LEN + 1,
            max: DEFAULT_MAX_REQUEST_LEN
        })
    );
    let loose = Client::builder()
        .hosts(server().connect_string())
        .session_timeout(Duration::from_secs(10))
        .max_request_len(DEFAULT_MAX_REQUEST_LEN + 1)
        .connect()
        .await
        .unwrap();
    let refused = within(loose.set_data(&path, &vec![2; fits + 1], None)).await;
    assert_eq!(
        refused,
        Err(Error::ConnectionLoss),
        "the server's own limit"
    );
    let (back, _) = within(c.get_data(&path)).await.unwrap();
    assert!(back.iter().all(|b| *b == 1));
    loose.close().await.unwrap();
    c.close().await.unwrap();
}

/// `Client::id`: the same for every clone of a client, different for another client of the
/// same server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_id_is_shared_by_clones_and_by_no_other_client() {
    let a = client().await;
    let b = client().await;
    assert_eq!(a.id(), a.clone().id());
    assert_ne!(a.id(), b.id());
    let ids: std::collections::HashSet<_> = [a.id(), b.id(), a.clone().id()].into();
    assert_eq!(ids.len(), 2);
}

/// Replies larger than the connection's read buffer (16 KiB), alone and pipelined back to
/// back, arrive whole and in order: a frame makes room for its own length.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replies_larger_than_the_read_buffer_arrive_whole() {
    let c = client().await;
    let path = root(&c, "large-replies").await;
    let data: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    c.set_data(&path, &data, None).await.unwrap();
    let reads: Vec<_> = (0..20)
        .map(|_| {
            let (c, path) = (c.clone(), path.clone());
            tokio::spawn(async move { c.get_data(&path).await })
        })
        .collect();
    for read in reads {
        let (got, stat) = read.await.unwrap().unwrap();
        assert_eq!(got.len(), data.len());
        assert!(got[..] == data[..], "a reply's bytes changed");
        assert_eq!(stat.data_length, 200_000);
    }
}
