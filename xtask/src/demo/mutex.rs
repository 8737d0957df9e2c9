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
