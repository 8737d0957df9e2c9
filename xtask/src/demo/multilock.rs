//! The demo's multi-lock part: transfers between accounts under both accounts' locks.

use super::*;

/// The multi-lock: transfers between accounts, each under the locks of its two accounts.
pub(super) async fn multilock_demo(server: &ZkServer) -> Result<(), Box<dyn std::error::Error>> {
    use recipe_multilock::InterProcessMultiLock;
    use zk_client::{Client, CreateOptions, Op};

    step(
        "recipe-multilock: transfers between accounts, each under both accounts' locks (InterProcessMultiLock)",
    );
    let client = Client::builder()
        .hosts(server.connect_string())
        .connect()
        .await?;
    recipe_mutex::layer::driver::create_parents(&client, "/demo/bank/acct").await?;
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
    println!(
        "Each transfer takes the locks of its two accounts, always in name order, so no two transfers deadlock."
    );
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
            let taken: Vec<&str> = multi
                .members()
                .iter()
                .map(|m| m.path().rsplit('/').next().unwrap_or_default())
                .collect();
            println!(
                "moved {amount:>2} from {from} to {to} under the locks of {} (given as {from}, {to})",
                taken.join(" then ")
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
        println!("account {account} holds {}", balance(&data));
        total += balance(&data);
    }
    if total != 300 {
        return Err(format!("the accounts hold {total} in all, not 300: money was lost").into());
    }
    println!(
        "the accounts hold {total} in all, as before: each transfer was one transaction that checked both locks"
    );
    client.close().await?;
    Ok(())
}
