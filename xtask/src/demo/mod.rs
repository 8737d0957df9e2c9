//! `cargo xtask demo`: starts a local ZooKeeper and shows the project at work.
//!
//! First zk-proto on its own over plain TCP: the handshake, Curator's lock-node layout built by
//! hand (three sessions queue on one lock with `_c_<uuid>-lock-` ephemeral sequential nodes,
//! each watching its predecessor; the holder leaves and the next one is told), a multi
//! transaction with its per-op results, and `closeSession` removing ephemerals at once. Then
//! the same lock through `recipe-mutex`: a FIFO hand-off with fencing tokens, and a holder
//! whose network fails, told first that it can no longer be sure and then that the lock is
//! gone, while a waiter takes over with a higher token. Then the read/write lock (readers
//! sharing, a writer waiting, a downgrade that keeps a queued writer out, an upgrade refused)
//! and the multi-lock (transfers between accounts under two locks, in one canonical order).

use std::time::Duration;

use zk_proto::records::*;
use zk_proto::{CreateMode, EventType, MultiOp, MultiRequest, MultiResult, Request, Response};

use crate::deps::{self, Need};
use crate::wire::{WireError, WireSession};
use crate::zk::{ZkOptions, ZkServer};

mod multilock;
mod mutex;
mod rwlock;
mod semaphore;

use multilock::multilock_demo;
use mutex::mutex_demo;
use rwlock::rwlock_demo;
use semaphore::semaphore_demo;

fn create(path: &str, mode: CreateMode) -> Request {
    Request::Create(CreateRequest {
        path: path.into(),
        data: None,
        acl: Acl::open_unsafe(),
        mode,
    })
}

fn children(s: &mut WireSession, path: &str) -> Result<Vec<String>, WireError> {
    let req = Request::GetChildren(GetChildrenRequest {
        path: path.into(),
        watch: false,
    });
    match s.call_ok(&req)? {
        Some(Response::GetChildren(r)) => Ok(r.children),
        other => Err(format!("unexpected reply {other:?}").into()),
    }
}

/// Curator's order: by what follows the last occurrence of the lock name.
fn sorted_by_sequence(mut names: Vec<String>, lock_name: &str) -> Vec<String> {
    fn suffix<'a>(name: &'a str, lock_name: &str) -> &'a str {
        name.rfind(lock_name)
            .and_then(|i| name.get(i + lock_name.len()..))
            .unwrap_or(name)
    }
    names.sort_by(|a, b| suffix(a, lock_name).cmp(suffix(b, lock_name)));
    names
}

fn step(title: &str) {
    println!("\n== {title}");
}

/// Runs the demo.
pub fn run() -> Result<(), Box<dyn std::error::Error>> {
    deps::ensure(&[Need::Java, Need::ZooKeeper])?;
    step("starting a local ZooKeeper 3.8 (standalone, 127.0.0.1, free port)");
    let server = ZkServer::start_with(ZkOptions::default())?;
    println!(
        "serving at {} (data in {})",
        server.connect_string(),
        server.data_dir().display()
    );
    demo(&server).map_err(|e| -> Box<dyn std::error::Error> { e.to_string().into() })?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(mutex_demo(&server))?;
    runtime.block_on(rwlock_demo(&server))?;
    runtime.block_on(multilock_demo(&server))?;
    runtime.block_on(semaphore_demo(&server))?;
    drop(runtime);
    step("stopping ZooKeeper");
    drop(server);
    println!("done");
    Ok(())
}

/// One session taking part in the demo lock.
struct Contender {
    name: &'static str,
    session: WireSession,
    /// Its lock node's name (not path).
    node: String,
}

fn find<'a>(all: &'a mut [Contender], node: &str) -> Result<&'a mut Contender, WireError> {
    all.iter_mut()
        .find(|c| c.node == node)
        .ok_or_else(|| format!("no owner for {node}").into())
}

fn demo(server: &ZkServer) -> Result<(), WireError> {
    let timeout = Duration::from_secs(10);
    let lock = "/demo/lock";
    step("handshake: three sessions, zk-proto frames over plain TCP");
    let mut all = Vec::new();
    for name in ["alice", "bob", "carol"] {
        let session = WireSession::connect(server.addr(), timeout)?;
        let h = &session.handshake;
        println!(
            "{name:<6} session 0x{:016x}, timeout {} ms negotiated, read-only {:?}",
            h.session_id, h.time_out, h.read_only
        );
        all.push(Contender {
            name,
            session,
            node: String::new(),
        });
    }

    step(&format!(
        "three sessions queue on {lock} the way Curator's InterProcessMutex does"
    ));
    let first = all.first_mut().ok_or("no session")?;
    first
        .session
        .call_ok(&create("/demo", CreateMode::Container))?;
    first
        .session
        .call_ok(&create(lock, CreateMode::Container))?;
    for c in &mut all {
        let prefix = format!("{lock}/_c_{}-lock-", recipe_mutex::random_uuid());
        let reply = c
            .session
            .call_ok(&create(&prefix, CreateMode::EphemeralSequential))?;
        let Some(Response::Create(created)) = reply else {
            return Err("create returned no path".into());
        };
        println!("{:<6} created {}", c.name, created.path);
        c.node = created
            .path
            .rsplit('/')
            .next()
            .unwrap_or_default()
            .to_owned();
    }
    let first = all.first_mut().ok_or("no session")?;
    let order = sorted_by_sequence(children(&mut first.session, lock)?, "lock-");
    let mut ahead: Option<&String> = None;
    for node in &order {
        let owner = find(&mut all, node)?.name;
        match ahead {
            None => println!("{owner:<6} {node} holds the lock"),
            Some(pred) => println!("{owner:<6} {node} waits, watching {pred}"),
        }
        ahead = Some(node);
    }

    step("each waiter sets a data watch on its predecessor (getData, not exists)");
    for pair in order.windows(2) {
        let [pred, node] = pair else { continue };
        let c = find(&mut all, node)?;
        let watch = GetDataRequest {
            path: format!("{lock}/{pred}"),
            watch: true,
        };
        c.session.call_ok(&Request::GetData(watch))?;
        println!("{:<6} watches {pred}", c.name);
    }

    step("the holder releases: deletes its node; only the next in line is notified");
    let (Some(holder_node), Some(next_node)) = (order.first(), order.get(1)) else {
        return Err("expected three lock nodes".into());
    };
    let holder = find(&mut all, holder_node)?;
    let path = format!("{lock}/{holder_node}");
    holder.session.call_ok(&Request::Delete(DeleteRequest {
        path: path.clone(),
        version: -1,
    }))?;
    println!("{:<6} deleted {path}", holder.name);
    let next = find(&mut all, next_node)?;
    let event = next.session.next_event()?;
    println!(
        "{:<6} got {:?} for {}",
        next.name, event.event_type, event.path
    );
    if event.event_type != EventType::NodeDeleted {
        return Err(format!("expected NodeDeleted, got {event:?}").into());
    }
    let now = sorted_by_sequence(children(&mut next.session, lock)?, "lock-");
    let first_now = now.first().ok_or("no lock node left")?;
    println!(
        "{:<6} lists again: {first_now} is first, so it holds the lock now",
        next.name
    );

    step("a multi transaction: all or nothing, with one result per op");
    let ok = MultiRequest {
        ops: vec![
            MultiOp::Check(CheckVersionRequest {
                path: lock.into(),
                version: -1,
            }),
            MultiOp::Create(CreateRequest {
                path: "/demo/config".into(),
                data: Some("v1".into()),
                acl: Acl::open_unsafe(),
                mode: CreateMode::Persistent,
            }),
            MultiOp::SetData(SetDataRequest {
                path: "/demo/config".into(),
                data: Some("v2".into()),
                version: 0,
            }),
        ],
    };
    print_multi(next.session.call_ok(&Request::Multi(ok))?);
    let failing = MultiRequest {
        ops: vec![
            MultiOp::SetData(SetDataRequest {
                path: "/demo/config".into(),
                data: Some("v3".into()),
                version: -1,
            }),
            MultiOp::Check(CheckVersionRequest {
                path: "/demo/config".into(),
                version: 7,
            }),
        ],
    };
    print_multi(next.session.call_ok(&Request::Multi(failing))?);

    step("closeSession: the server removes the session's ephemeral nodes at once");
    let last = all.pop().ok_or("no session")?;
    let stats = last.session.close()?;
    println!(
        "{} closed ({} frames / {} bytes out, {} frames / {} bytes in)",
        last.name, stats.frames_out, stats.bytes_out, stats.frames_in, stats.bytes_in
    );
    let first = all.first_mut().ok_or("no session")?;
    let left = sorted_by_sequence(children(&mut first.session, lock)?, "lock-");
    println!("{lock} now holds {left:?}");
    for c in all {
        c.session.close()?;
    }
    Ok(())
}

fn print_multi(reply: Option<Response>) {
    let Some(Response::Multi(r)) = reply else {
        println!("unexpected reply {reply:?}");
        return;
    };
    match r.first_error() {
        None => println!("committed:"),
        Some((i, code)) => println!("rolled back, op {i} failed with {code}:"),
    }
    for (i, result) in r.results.iter().enumerate() {
        let text = match result {
            MultiResult::Create(c) => format!("created {}", c.path),
            MultiResult::SetData(s) => format!("set data, version now {}", s.stat.version),
            MultiResult::Error(code) => format!("error {code}"),
            other => format!("{other:?}"),
        };
        println!("  op {i}: {text}");
    }
}
