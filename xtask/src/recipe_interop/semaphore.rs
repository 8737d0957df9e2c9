//! The semaphore's check: each lease held takes one of N slot files `S-<k>`; none free
//! means more holders than leases.

use super::*;

/// Takes the first free slot of `leases` (`S-<k>`); none free is a violation.
pub(super) fn enter_slot(
    counts: &mut Counts,
    name: &str,
    dir: &Path,
    leases: u32,
) -> Option<PathBuf> {
    for k in 0..leases {
        let slot = dir.join(format!("S-{k}"));
        match create_new(&slot) {
            Ok(true) => return Some(slot),
            Ok(false) => {}
            Err(e) => {
                error(counts, name, "marker", &e);
                return None;
            }
        }
    }
    violation(
        counts,
        format!("{name} holds a lease but all {leases} slots are taken"),
    );
    None
}

pub(super) async fn semaphore_loop(
    name: String,
    client: Client,
    path: String,
    leases: u32,
    end: tokio::time::Instant,
    dir: PathBuf,
    mut rng: u64,
) -> (Counts, u64) {
    let mut counts = Counts::default();
    let semaphore = match InterProcessSemaphoreV2::new(client, &path, leases) {
        Ok(s) => s,
        Err(e) => {
            error(&mut counts, &name, "creating the semaphore", &e);
            return (counts, 0);
        }
    };
    loop {
        let left = end.saturating_duration_since(tokio::time::Instant::now());
        if left.is_zero() {
            return (counts, 0);
        }
        let qty = if leases > 1 && next(&mut rng) % 10 < 2 {
            2
        } else {
            1
        };
        let held = match semaphore.acquire_many_timeout(qty, left).await {
            Ok(Some(held)) => held,
            Ok(None) => return (counts, 0),
            Err(e) => {
                error(&mut counts, &name, "acquire", &e);
                continue;
            }
        };
        counts.acquisitions += 1;
        let slots: Vec<PathBuf> = (0..held.len())
            .filter_map(|_| enter_slot(&mut counts, &name, &dir, leases))
            .collect();
        hold(&mut rng).await;
        for slot in slots {
            let _ = fs::remove_file(slot);
        }
        if let Err(e) = InterProcessSemaphoreV2::return_all(held).await {
            error(&mut counts, &name, "release", &e);
        }
    }
}

pub(super) async fn semaphore_mutex_loop(
    name: String,
    client: Client,
    path: String,
    end: tokio::time::Instant,
    dir: PathBuf,
    mut rng: u64,
) -> (Counts, u64) {
    let mut counts = Counts::default();
    let lock = match InterProcessSemaphoreMutex::new(client, &path) {
        Ok(l) => l,
        Err(e) => {
            error(&mut counts, &name, "creating the lock", &e);
            return (counts, 0);
        }
    };
    loop {
        let left = end.saturating_duration_since(tokio::time::Instant::now());
        if left.is_zero() {
            return (counts, 0);
        }
        let guard = match lock.try_lock_for(left).await {
            Ok(Some(g)) => g,
            Ok(None) => return (counts, 0),
            Err(e) => {
                error(&mut counts, &name, "acquire", &e);
                continue;
            }
        };
        counts.acquisitions += 1;
        let slot = enter_slot(&mut counts, &name, &dir, 1);
        hold(&mut rng).await;
        if let Some(slot) = slot {
            let _ = fs::remove_file(slot);
        }
        if let Err(e) = guard.release().await {
            error(&mut counts, &name, "release", &e);
        }
    }
}
