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
//! With `--log`, the client's and the recipes' own events (their feature `tracing`) go to
//! stderr as they happen.

use std::time::Duration;

use zk_proto::records::*;
use zk_proto::{
    CreateMode, ErrorCode, EventType, MultiOp, MultiRequest, MultiResult, Request, Response,
};

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
        acl: Acl::open_unsafe().into(),
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

/// A lock node's name as the demo shows it: its last path component, with Curator's
/// `_c_<UUID>` protection prefix cut to `…`, so `/demo/lock/_c_7f74c237-…-lock-0000000012`
/// reads `…-lock-0000000012`.
fn short(node: &str) -> String {
    let name = node.rsplit('/').next().unwrap_or(node);
    match name.strip_prefix("_c_").and_then(|rest| rest.get(36..)) {
        Some(tail) if tail.starts_with('-') => format!("…{tail}"),
        _ => name.to_owned(),
    }
}

/// `alice's`, `bob's`.
fn possessive(name: &str) -> String {
    format!("{name}'s")
}

/// Runs the demo.
pub fn run(log: Option<crate::cli::LogLevel>) -> Result<(), Box<dyn std::error::Error>> {
    deps::ensure(&[Need::Java, Need::ZooKeeper])?;
    if let Some(level) = log {
        start_log(level)?;
    }
    step("starting a local ZooKeeper 3.8 (standalone, 127.0.0.1, free port)");
    let server = ZkServer::start_with(ZkOptions::default())?;
    println!(
        "ZooKeeper serves at {}, with its data in {}",
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
    println!("ZooKeeper stopped; the demo is done");
    Ok(())
}

/// `--log`: the client's and the recipes' `tracing` events, to stderr, at `level` and above.
#[cfg(feature = "log")]
fn start_log(level: crate::cli::LogLevel) -> Result<(), Box<dyn std::error::Error>> {
    use crate::cli::LogLevel;
    let max = match level {
        LogLevel::Warn => tracing_subscriber::filter::LevelFilter::WARN,
        LogLevel::Info => tracing_subscriber::filter::LevelFilter::INFO,
        LogLevel::Debug => tracing_subscriber::filter::LevelFilter::DEBUG,
    };
    tracing_subscriber::fmt()
        .with_max_level(max)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init()
        .map_err(|e| format!("starting the log: {e}").into())
}

/// Without the feature `log` there is nothing to print with.
#[cfg(not(feature = "log"))]
fn start_log(_level: crate::cli::LogLevel) -> Result<(), Box<dyn std::error::Error>> {
    Err("this xtask was built without its feature `log`; build it with the default features".into())
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
        let access = match h.read_only {
            Some(true) => "a read-only connection (the server is cut off from its quorum)",
            Some(false) => "a read-write connection",
            None => "a connection (the server did not say whether it is read-only)",
        };
        println!(
            "{name:<6} connected: session 0x{:016x}, with a {} ms session timeout and {access}",
            h.session_id, h.time_out
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
    println!(
        "Each session creates an ephemeral sequential node {lock}/_c_<UUID>-lock-; the server appends a number."
    );
    println!("Below, a node is shown by its end only, as in …-lock-0000000000.");
    for c in &mut all {
        let prefix = format!("{lock}/_c_{}-lock-", recipe_mutex::layer::random_uuid());
        let reply = c
            .session
            .call_ok(&create(&prefix, CreateMode::EphemeralSequential))?;
        let Some(Response::Create(created)) = reply else {
            return Err("create returned no path".into());
        };
        println!("{:<6} created {}", c.name, short(&created.path));
        c.node = created
            .path
            .rsplit('/')
            .next()
            .unwrap_or_default()
            .to_owned();
    }
    let first = all.first_mut().ok_or("no session")?;
    let order = sorted_by_sequence(children(&mut first.session, lock)?, "lock-");
    let mut ahead: Option<(&str, &String)> = None;
    for node in &order {
        let owner = find(&mut all, node)?.name;
        match ahead {
            None => println!(
                "{owner:<6} holds the lock: {} has the lowest number",
                short(node)
            ),
            Some((pred_owner, pred)) => println!(
                "{owner:<6} waits: {} comes right after {} node {}",
                short(node),
                possessive(pred_owner),
                short(pred)
            ),
        }
        ahead = Some((owner, node));
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
        let name = c.name;
        let pred_owner = find(&mut all, pred)?.name;
        println!(
            "{name:<6} watches {} node {}",
            possessive(pred_owner),
            short(pred)
        );
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
    println!(
        "{:<6} releases the lock by deleting {}",
        holder.name,
        short(&path)
    );
    let next = find(&mut all, next_node)?;
    let event = next.session.next_event()?;
    if event.event_type != EventType::NodeDeleted {
        return Err(format!("expected NodeDeleted, got {event:?}").into());
    }
    println!(
        "{:<6} is told that {} was deleted (a NodeDeleted watch event)",
        next.name,
        short(&event.path)
    );
    let now = sorted_by_sequence(children(&mut next.session, lock)?, "lock-");
    let next_name = next.name;
    let first_now = now.first().ok_or("no lock node left")?;
    let first_owner = find(&mut all, first_now)?.name;
    let whose = if first_owner == next_name {
        "its own".to_owned()
    } else {
        possessive(first_owner)
    };
    println!(
        "{next_name:<6} lists the lock's nodes again: {whose} node {} is now first, so {first_owner} holds the lock",
        short(first_now)
    );
    let next = find(&mut all, next_node)?;

    step("a multi transaction: all or nothing, with one result per op");
    let ok = [
        (
            format!("check that {lock} exists"),
            MultiOp::Check(CheckVersionRequest {
                path: lock.into(),
                version: -1,
            }),
        ),
        (
            "create /demo/config holding \"v1\"".into(),
            MultiOp::Create(CreateRequest {
                path: "/demo/config".into(),
                data: Some("v1".into()),
                acl: Acl::open_unsafe().into(),
                mode: CreateMode::Persistent,
            }),
        ),
        (
            "set /demo/config to \"v2\" if its version is 0".into(),
            MultiOp::SetData(SetDataRequest {
                path: "/demo/config".into(),
                data: Some("v2".into()),
                version: 0,
            }),
        ),
    ];
    multi(&mut next.session, next.name, ok)?;
    let failing = [
        (
            "set /demo/config to \"v3\"".into(),
            MultiOp::SetData(SetDataRequest {
                path: "/demo/config".into(),
                data: Some("v3".into()),
                version: -1,
            }),
        ),
        (
            "check that /demo/config is at version 7".into(),
            MultiOp::Check(CheckVersionRequest {
                path: "/demo/config".into(),
                version: 7,
            }),
        ),
    ];
    multi(&mut next.session, next.name, failing)?;

    step("closeSession: the server removes the session's ephemeral nodes at once");
    let last = all.pop().ok_or("no session")?;
    let stats = last.session.close()?;
    println!(
        "{:<6} closes its session, having sent {} frames ({} bytes) and received {} ({} bytes)",
        last.name, stats.frames_out, stats.bytes_out, stats.frames_in, stats.bytes_in
    );
    let first = all.first_mut().ok_or("no session")?;
    let left = sorted_by_sequence(children(&mut first.session, lock)?, "lock-");
    let mut owned = Vec::new();
    for node in &left {
        let owner = find(&mut all, node).map_or("nobody", |c| c.name);
        owned.push(format!("{} ({})", short(node), possessive(owner)));
    }
    let gone = if left.contains(&last.node) {
        "is still there"
    } else {
        "went with the session"
    };
    println!(
        "{} node {} {gone}: {lock} now holds {} node{}: {}",
        possessive(last.name),
        short(&last.node),
        left.len(),
        if left.len() == 1 { "" } else { "s" },
        owned.join(", ")
    );
    for c in all {
        c.session.close()?;
    }
    Ok(())
}

/// Sends `ops` as one multi transaction and says what became of each.
fn multi(
    session: &mut WireSession,
    who: &str,
    ops: impl IntoIterator<Item = (String, MultiOp)>,
) -> Result<(), WireError> {
    let (what, ops): (Vec<String>, Vec<MultiOp>) = ops.into_iter().unzip();
    let n = ops.len();
    let reply = session.call_ok(&Request::Multi(MultiRequest { ops }))?;
    let Some(Response::Multi(r)) = reply else {
        return Err("the server answered a multi with something else".into());
    };
    match r.first_error() {
        None => println!("{who} sends a transaction of {n} ops: it commits, and every op applies:"),
        Some((i, code)) => println!(
            "{who} sends a transaction of {n} ops: op {} fails with {code}, so it is rolled back, and no op applies:",
            i + 1
        ),
    }
    for (i, (result, what)) in r.results.iter().zip(&what).enumerate() {
        let text = match result {
            MultiResult::Create(c) => format!("done, {} created", c.path),
            MultiResult::Create2(c) => format!("done, {} created", c.path),
            MultiResult::SetData(s) => format!("done, the version is now {}", s.stat.version),
            MultiResult::Check => "passed".to_owned(),
            MultiResult::Delete => "done".to_owned(),
            MultiResult::GetChildren(_) | MultiResult::GetData(_) => "read".to_owned(),
            MultiResult::Error(ErrorCode::Ok) => {
                "would have succeeded, undone with the rest".to_owned()
            }
            MultiResult::Error(ErrorCode::RuntimeInconsistency) => {
                "not tried, after the failure".to_owned()
            }
            MultiResult::Error(code) => format!("failed with {code}"),
        };
        println!("  op {} ({what}): {text}", i + 1);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::short;

    #[test]
    fn short_names_keep_the_sequence_suffix() {
        assert_eq!(
            short("/demo/lock/_c_7f74c237-6418-4569-a29c-64e5e0658e26-lock-0000000012"),
            "…-lock-0000000012"
        );
        assert_eq!(
            short("_c_09223de3-75ff-442a-a3b5-11c61c57792e-__READ__0000000004"),
            "…-__READ__0000000004"
        );
        assert_eq!(
            short("/demo/pool/leases/lease-0000000003"),
            "lease-0000000003"
        );
        assert_eq!(short("/demo/config"), "config");
    }
}
