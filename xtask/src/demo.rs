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

/// The same lock through zk-client and recipe-mutex.
async fn mutex_demo(server: &ZkServer) -> Result<(), Box<dyn std::error::Error>> {
    use recipe_mutex::{InterProcessMutex, Loss};
    use zk_client::{Client, SessionState};

    let path = "/demo/mutex";
    let connect = |hosts: String, timeout: Duration| async move {
        Client::builder()
            .hosts(hosts)
            .session_timeout(timeout)
            .connect()
            .await
    };
    step(&format!(
        "recipe-mutex: three sessions take {path} in turn (InterProcessMutex)"
    ));
    // Alice reaches the server through a fault proxy, to fail her network later.
    let proxy = crate::FaultProxy::start(server.addr())?;
    let alice = connect(proxy.addr().to_string(), Duration::from_secs(2)).await?;
    let bob = connect(server.connect_string(), Duration::from_secs(10)).await?;
    let carol = connect(server.connect_string(), Duration::from_secs(10)).await?;
    let (ma, mb, mc) = (
        InterProcessMutex::new(alice.clone(), path)?,
        InterProcessMutex::new(bob.clone(), path)?,
        InterProcessMutex::new(carol.clone(), path)?,
    );
    let ga = ma.lock().await?;
    println!(
        "alice  holds, fencing token {} ({})",
        ga.fencing_token(),
        ga.node_path()
    );
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    for (name, m) in [("bob", mb.clone()), ("carol", mc.clone())] {
        let tx = tx.clone();
        tokio::spawn(async move {
            let result = m.lock().await;
            let _ = tx.send((name, result));
        });
        // Queue them in this order.
        while ma.participant_nodes().await?.len() < if name == "bob" { 2 } else { 3 } {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    println!(
        "queue  {:?}",
        ma.participant_nodes()
            .await?
            .iter()
            .map(|p| p.rsplit('/').next().unwrap_or(""))
            .collect::<Vec<_>>()
    );
    ga.release().await?;
    println!("alice  released");
    for _ in 0..2 {
        let Some((name, result)) = rx.recv().await else {
            break;
        };
        let g = result?;
        println!(
            "{name:<6} holds, fencing token {} (strictly higher than before)",
            g.fencing_token()
        );
        g.release().await?;
        println!("{name:<6} released");
    }

    step("a holder whose network fails: told it can no longer be sure, then that the lock is gone");
    let ga = ma.lock().await?;
    println!("alice  holds again, fencing token {}", ga.fencing_token());
    let waiting = tokio::spawn(async move { mb.lock().await });
    proxy.stall();
    println!("alice's network stalls (no close, no pings: as if her process hung)");
    let loss = ga.lost().await;
    println!("alice  guard.lost() -> {loss:?}: stop acting as the holder");
    let gb = waiting.await??;
    println!(
        "bob    holds after the server expired alice's session, fencing token {} > {}",
        gb.fencing_token(),
        ga.fencing_token()
    );
    let mut states = alice.state_watch();
    let _ = states.wait_for(|s| *s == SessionState::Lost).await;
    println!(
        "alice  guard.lost() -> {:?}, is_valid() = {}",
        ga.lost().await,
        ga.is_valid()
    );
    if ga.lost().await != Loss::Lost {
        return Err("alice should know the lock is lost".into());
    }
    gb.release().await?;
    drop(ga);
    proxy.pass();
    bob.close().await?;
    carol.close().await?;
    Ok(())
}

/// The read/write lock: readers share, a writer waits, a downgrade, an upgrade refused.
async fn rwlock_demo(server: &ZkServer) -> Result<(), Box<dyn std::error::Error>> {
    use recipe_rwlock::{Error, InterProcessReadWriteLock};
    use zk_client::Client;

    let path = "/demo/rwlock";
    step(&format!(
        "recipe-rwlock: readers share {path}, a writer waits for them (InterProcessReadWriteLock)"
    ));
    let connect = || Client::builder().hosts(server.connect_string()).connect();
    let (alice, bob) = (connect().await?, connect().await?);
    let la = InterProcessReadWriteLock::new(alice.clone(), path)?;
    let lb = InterProcessReadWriteLock::new(bob.clone(), path)?;
    let r1 = la.read_lock().lock().await?;
    let r2 = lb.read_lock().lock().await?;
    println!(
        "alice and bob both hold the read lock ({} readers)",
        la.read_lock().participant_nodes().await?.len()
    );
    let writer = {
        let lb = lb.clone();
        tokio::spawn(async move { lb.write_lock().lock().await })
    };
    while la.write_lock().participant_nodes().await?.is_empty() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    println!("bob asks for the write lock in another task: it queues behind the readers");
    let late_reader = tokio::spawn({
        let la = la.clone();
        async move {
            la.read_lock()
                .try_lock_for(Duration::from_millis(200))
                .await
        }
    });
    println!(
        "a reader arriving after the writer waits too (no writer starvation): got it within 200 ms? {}",
        late_reader.await??.is_some()
    );
    r1.release().await?;
    r2.release().await?;
    let w = writer.await??;
    println!(
        "readers gone: bob writes, fencing token {}",
        w.fencing_token()
    );
    w.release().await?;

    step(
        "a downgrade: alice writes, takes the read lock, releases the write lock; bob's queued writer stays out",
    );
    let wa = la.write_lock().lock().await?;
    let queued = {
        let lb = lb.clone();
        tokio::spawn(async move { lb.write_lock().lock().await })
    };
    while la.write_lock().participant_nodes().await?.len() < 2 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let ra = la.read_lock().lock().await?;
    println!(
        "alice's read node sorts level with her write node: {} / {}",
        ra.node_path().rsplit('/').next().unwrap_or(""),
        wa.node_path().rsplit('/').next().unwrap_or("")
    );
    wa.release().await?;
    println!(
        "alice released the write lock and still reads; bob's writer holds? {}",
        queued.is_finished()
    );
    match la.write_lock().try_lock_for(Duration::ZERO).await {
        Err(Error::UpgradeRefused { .. }) => {
            println!("alice (a reader) asking for the write lock: refused at once (Curator hangs)")
        }
        other => return Err(format!("upgrade should be refused, got {other:?}").into()),
    }
    ra.release().await?;
    let wb = queued.await??;
    println!(
        "alice stopped reading: bob writes, fencing token {}",
        wb.fencing_token()
    );
    wb.release().await?;
    alice.close().await?;
    bob.close().await?;
    Ok(())
}

/// The multi-lock: transfers between accounts, each under the locks of its two accounts.
async fn multilock_demo(server: &ZkServer) -> Result<(), Box<dyn std::error::Error>> {
    use recipe_multilock::InterProcessMultiLock;
    use zk_client::{Client, CreateOptions, Op};

    step(
        "recipe-multilock: transfers between accounts, each under both accounts' locks (InterProcessMultiLock)",
    );
    let client = Client::builder()
        .hosts(server.connect_string())
        .connect()
        .await?;
    recipe_mutex::driver::create_parents(&client, "/demo/bank/acct").await?;
    let open = CreateOptions::new(CreateMode::Persistent);
    for (account, balance) in [("a", 100), ("b", 100), ("c", 100)] {
        client
            .create(
                &format!("/demo/bank/acct/{account}"),
                balance.to_string().as_bytes(),
                &open,
            )
            .await?;
    }
    let balance = |data: &[u8]| -> i64 {
        std::str::from_utf8(data)
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0)
    };
    let mut tasks = Vec::new();
    for (from, to, amount) in [
        ("a", "b", 10),
        ("b", "a", 5),
        ("c", "a", 20),
        ("b", "c", 15),
    ] {
        let client = client.clone();
        tasks.push(tokio::spawn(async move {
            let locks = [format!("/demo/bank/locks/{from}"), format!("/demo/bank/locks/{to}")];
            let multi = InterProcessMultiLock::new(client.clone(), &[&locks[0], &locks[1]])?;
            let guard = multi.lock().await?;
            let (f, fs) = client.get_data(&format!("/demo/bank/acct/{from}")).await?;
            let (t, ts) = client.get_data(&format!("/demo/bank/acct/{to}")).await?;
            let mut ops = guard.check_ops();
            ops.push(Op::SetData {
                path: format!("/demo/bank/acct/{from}"),
                data: (balance(&f) - amount).to_string().into_bytes().into(),
                version: Some(fs.version),
            });
            ops.push(Op::SetData {
                path: format!("/demo/bank/acct/{to}"),
                data: (balance(&t) + amount).to_string().into_bytes().into(),
                version: Some(ts.version),
            });
            client.multi(&ops).await?;
            println!(
                "moved {amount:>2} from {from} to {to} under {:?} (taken in that order whatever the order given)",
                multi.members().iter().map(|m| m.path()).collect::<Vec<_>>()
            );
            guard.release().await?;
            Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
        }));
    }
    for t in tasks {
        t.await?.map_err(|e| e.to_string())?;
    }
    let mut total = 0;
    for account in ["a", "b", "c"] {
        let (data, _) = client
            .get_data(&format!("/demo/bank/acct/{account}"))
            .await?;
        println!("account {account}: {}", balance(&data));
        total += balance(&data);
    }
    println!("total {total} (300 before: transfers under both locks, committed with check ops)");
    client.close().await?;
    Ok(())
}

async fn semaphore_demo(server: &ZkServer) -> Result<(), Box<dyn std::error::Error>> {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use recipe_semaphore::{Error, InterProcessSemaphoreMutex, InterProcessSemaphoreV2};
    use zk_client::Client;

    step(
        "recipe-semaphore: 6 workers in 3 sessions share a pool of 2 connections (InterProcessSemaphoreV2)",
    );
    let path = "/demo/pool";
    let in_use = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let mut clients = Vec::new();
    let mut tasks = Vec::new();
    for session in 0..3 {
        let client = Client::builder()
            .hosts(server.connect_string())
            .connect()
            .await?;
        let pool = InterProcessSemaphoreV2::new(client.clone(), path, 2)?;
        clients.push(client);
        for worker in 0..2 {
            let (pool, in_use, peak) = (pool.clone(), in_use.clone(), peak.clone());
            let name = format!("s{session}/w{worker}");
            tasks.push(tokio::spawn(async move {
                let lease = pool.acquire().await?;
                let now = in_use.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(now, Ordering::SeqCst);
                println!(
                    "{name} has a connection ({now} in use), lease {}",
                    lease.node_path().rsplit('/').next().unwrap_or_default()
                );
                tokio::time::sleep(std::time::Duration::from_millis(40)).await;
                in_use.fetch_sub(1, Ordering::SeqCst);
                lease.release().await?;
                Ok::<(), Error>(())
            }));
        }
    }
    for t in tasks {
        t.await??;
    }
    println!(
        "at most {} connections were in use at once (the pool has 2)",
        peak.load(Ordering::SeqCst)
    );

    step("recipe-semaphore: a non-reentrant mutex refuses a second acquire by its holder at once");
    let client = clients.first().cloned().ok_or("no client")?;
    let mutex = InterProcessSemaphoreMutex::new(client, "/demo/job")?;
    let guard = mutex.lock().await?;
    match mutex.lock().await {
        Err(e @ Error::AlreadyHeld { .. }) => {
            println!("asked again: {e} (Curator's would wait for ever, holding everyone out)");
        }
        other => println!("unexpected: {other:?}"),
    }
    println!("fencing token {}", guard.fencing_token());
    guard.release().await?;
    for client in clients {
        client.close().await?;
    }
    Ok(())
}
