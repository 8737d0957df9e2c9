//! The demo's mutex part: a hand-off, and a holder whose network fails.

use super::*;

/// The same lock through zk-client and recipe-mutex.
pub(super) async fn mutex_demo(server: &ZkServer) -> Result<(), Box<dyn std::error::Error>> {
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
        "alice  holds the lock with node {}; her fencing token is {}",
        short(ga.node_path()),
        ga.fencing_token()
    );
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut queued = 1;
    for (name, m) in [("bob", mb.clone()), ("carol", mc.clone())] {
        let tx = tx.clone();
        tokio::spawn(async move {
            let result = m.lock().await;
            let _ = tx.send((name, result));
        });
        // Queue them in this order: the node that appears is the newcomer's.
        let mut nodes = ma.participant_nodes().await?;
        while nodes.len() <= queued {
            tokio::time::sleep(Duration::from_millis(10)).await;
            nodes = ma.participant_nodes().await?;
        }
        queued = nodes.len();
        let node = nodes.last().map(|n| short(n)).unwrap_or_default();
        println!("{name:<6} asks for the lock and waits in line with node {node}");
    }
    // What an operator sees: the queue as the server has it (who holds, who waits behind
    // whom, each session and the host address its node carries).
    println!("the queue as the server has it (InterProcessMutex::queue; the who_holds example):");
    let names = [
        (alice.session_id(), "alice"),
        (bob.session_id(), "bob"),
        (carol.session_id(), "carol"),
    ];
    for p in ma.queue().await? {
        let who = names
            .iter()
            .find(|(id, _)| *id == p.session_id)
            .map_or("?", |(_, name)| *name);
        let standing = match p.watches() {
            None => "holds".to_owned(),
            Some(w) => format!("waits behind {}", short(w)),
        };
        println!(
            "  {who:<6} {:<18} {standing:<35} session {:#x}, data {:?}",
            short(&p.node),
            p.session_id,
            String::from_utf8_lossy(&p.data)
        );
    }
    let mut last_token = (ga.fencing_token(), "alice");
    ga.release().await?;
    println!("alice  releases the lock");
    for _ in 0..2 {
        let Some((name, result)) = rx.recv().await else {
            break;
        };
        let g = result?;
        println!(
            "{name:<6} holds the lock next, with fencing token {}, higher than {} {}",
            g.fencing_token(),
            possessive(last_token.1),
            last_token.0
        );
        last_token = (g.fencing_token(), name);
        g.release().await?;
        println!("{name:<6} releases the lock");
    }

    step("a holder whose network fails: told it can no longer be sure, then that the lock is gone");
    let ga = ma.lock().await?;
    println!(
        "alice  holds the lock again, with fencing token {}; bob asks for it and waits",
        ga.fencing_token()
    );
    let waiting = tokio::spawn(async move { mb.lock().await });
    proxy.stall();
    println!(
        "alice's network stalls: no close and no pings reach the server, as if her process hung"
    );
    let loss = ga.lost().await;
    match loss {
        Loss::Unsure => println!(
            "alice  hears nothing from the server: her guard says she may no longer hold the lock, so she stops acting on it"
        ),
        Loss::Lost | Loss::Deleted => println!("alice  is told at once that her lock is gone"),
    }
    let gb = waiting.await??;
    println!("bob    holds the lock: the server expired alice's session and deleted her node");
    println!(
        "bob's fencing token {} is higher than alice's {}, so a store that checks tokens refuses her late writes",
        gb.fencing_token(),
        ga.fencing_token()
    );
    let mut states = alice.state_watch();
    let _ = states.wait_for(|s| *s == SessionState::Lost).await;
    if ga.lost().await != Loss::Lost || ga.is_valid() {
        return Err("alice should know the lock is lost".into());
    }
    println!(
        "alice  learns that her session expired: her guard now says the lock is lost, and it is no longer valid"
    );
    gb.release().await?;
    drop(ga);
    proxy.pass();
    bob.close().await?;
    carol.close().await?;
    Ok(())
}
