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
        "a downgrade: alice writes, then downgrade() turns her write hold into a read hold; bob's queued writer stays out",
    );
    let wa = la.write_lock().lock().await?;
    let write_node = wa.node_path().rsplit('/').next().unwrap_or("").to_owned();
    let token = wa.fencing_token();
    let queued = {
        let lb = lb.clone();
        tokio::spawn(async move { lb.write_lock().lock().await })
    };
    while la.write_lock().participant_nodes().await?.len() < 2 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let ra = wa.downgrade().await?;
    println!(
        "alice's read node sorts level with her write node ({} / {}), keeps its fencing token ({} = {token}); bob's writer holds? {}",
        ra.node_path().rsplit('/').next().unwrap_or(""),
        write_node,
        ra.fencing_token(),
        queued.is_finished()
    );
    match la
        .write_lock()
        .try_lock_for(Duration::from_millis(300))
        .await?
    {
        None => println!(
            "alice (a reader) asking for the write lock queues behind her own read, as with any RwLock: none within 300 ms (Curator hangs for ever)"
        ),
        Some(_) => return Err("a write lock granted beside a read".into()),
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
