//! The demo's read/write lock part: readers share, a writer waits, a downgrade, no upgrade.

use super::*;

/// The read/write lock: readers share, a writer waits, a downgrade, no upgrade.
pub(super) async fn rwlock_demo(server: &ZkServer) -> Result<(), Box<dyn std::error::Error>> {
    use recipe_rwlock::InterProcessReadWriteLock;
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
        "alice and bob both hold the read lock: {} readers at once",
        la.read_lock().participant_nodes().await?.len()
    );
    let writer = {
        let lb = lb.clone();
        tokio::spawn(async move { lb.write_lock().lock().await })
    };
    while la.write_lock().participant_nodes().await?.is_empty() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    println!("bob asks for the write lock in another task: his writer queues behind the readers");
    let late_reader = tokio::spawn({
        let la = la.clone();
        async move {
            la.read_lock()
                .try_lock_for(Duration::from_millis(200))
                .await
        }
    });
    if late_reader.await??.is_some() {
        return Err("a reader arriving after a waiting writer got the read lock".into());
    }
    println!(
        "alice asks for a second read lock after bob's writer queued: she did not get it within 200 ms."
    );
    println!(
        "That is expected: a reader arriving after a waiting writer waits behind it, so writers are not starved."
    );
    r1.release().await?;
    r2.release().await?;
    let w = writer.await??;
    println!(
        "alice and bob release their read locks: bob's writer gets the write lock, with fencing token {}",
        w.fencing_token()
    );
    w.release().await?;

    step(
        "a downgrade: alice writes, then downgrade() turns her write hold into a read hold; bob's queued writer stays out",
    );
    let wa = la.write_lock().lock().await?;
    let write_node = short(wa.node_path());
    let token = wa.fencing_token();
    println!("alice  holds the write lock with node {write_node}, fencing token {token}");
    let queued = {
        let lb = lb.clone();
        tokio::spawn(async move { lb.write_lock().lock().await })
    };
    while la.write_lock().participant_nodes().await?.len() < 2 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    println!("bob    asks for the write lock and queues behind alice");
    let ra = wa.downgrade().await?;
    println!(
        "alice  downgrades: her read node {} sorts level with her write node; her token stays {}",
        short(ra.node_path()),
        ra.fencing_token()
    );
    if queued.is_finished() {
        return Err("bob's queued writer got in during the downgrade".into());
    }
    println!(
        "bob's writer is still waiting, as expected: it queued behind alice's write node, and her read node takes its place"
    );
    match la
        .write_lock()
        .try_lock_for(Duration::from_millis(300))
        .await?
    {
        None => {
            println!(
                "alice, now a reader, asks for the write lock: she did not get it within 300 ms."
            );
            println!(
                "That is expected: a writer waits behind every reader, her own too (no upgrade; Curator would wait for ever)."
            );
        }
        Some(_) => return Err("a write lock granted beside a read".into()),
    }
    ra.release().await?;
    let wb = queued.await??;
    println!(
        "alice releases her read lock: bob's queued writer gets the write lock, with fencing token {}",
        wb.fencing_token()
    );
    wb.release().await?;
    alice.close().await?;
    bob.close().await?;
    Ok(())
}
