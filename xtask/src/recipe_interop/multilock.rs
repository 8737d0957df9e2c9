//! The multi-lock's check: each member held creates `M-<k>` exclusively.

use super::*;

pub(super) async fn multi_loop(
    name: String,
    client: Client,
    path: String,
    end: tokio::time::Instant,
    dir: PathBuf,
    mut rng: u64,
) -> (Counts, u64) {
    let mut counts = Counts::default();
    loop {
        let left = end.saturating_duration_since(tokio::time::Instant::now());
        if left.is_zero() {
            return (counts, 0);
        }
        let mut members: Vec<usize> = (0..MEMBERS).filter(|_| next(&mut rng) % 10 < 6).collect();
        if members.is_empty() {
            members.push(0);
        }
        let paths: Vec<String> = members.iter().map(|k| format!("{path}/{k}")).collect();
        let refs: Vec<&str> = paths.iter().map(String::as_str).collect();
        let multi = match InterProcessMultiLock::new(client.clone(), &refs) {
            Ok(m) => m,
            Err(e) => {
                error(&mut counts, &name, "creating the multi-lock", &e);
                return (counts, 0);
            }
        };
        let guard = match multi.try_lock_for(left).await {
            Ok(Some(g)) => g,
            Ok(None) => return (counts, 0),
            Err(e) => {
                error(&mut counts, &name, "acquire", &e);
                continue;
            }
        };
        counts.acquisitions += 1;
        let mut mine = Vec::new();
        for k in &members {
            let marker = dir.join(format!("M-{k}"));
            match create_new(&marker) {
                Ok(true) => mine.push(marker),
                Ok(false) => violation(
                    &mut counts,
                    format!("{name} holds member {k} but its marker exists"),
                ),
                Err(e) => error(&mut counts, &name, "marker", &e),
            }
        }
        hold(&mut rng).await;
        for marker in mine {
            let _ = fs::remove_file(marker);
        }
        if let Err(e) = guard.release().await {
            error(&mut counts, &name, "release", &e);
        }
    }
}
