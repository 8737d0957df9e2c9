//! The read/write lock's check: a writer creates `W` exclusively and then finds no `R-*`; a
//! reader creates `R-<name>` and then finds no `W`. Ours also downgrades.

use super::*;

pub(super) fn readers(dir: &Path) -> Vec<String> {
    fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("R-"))
                .collect()
        })
        .unwrap_or_default()
}

pub(super) async fn rw_loop(
    name: String,
    client: Client,
    path: String,
    end: tokio::time::Instant,
    dir: PathBuf,
    mut rng: u64,
) -> (Counts, u64) {
    let mut counts = Counts::default();
    let mut downgrades = 0;
    let lock = match InterProcessReadWriteLock::new(client, &path) {
        Ok(lock) => lock,
        Err(e) => {
            error(&mut counts, &name, "creating the lock", &e);
            return (counts, 0);
        }
    };
    let (w_file, r_file) = (dir.join("W"), dir.join(format!("R-{name}")));
    loop {
        let left = end.saturating_duration_since(tokio::time::Instant::now());
        if left.is_zero() {
            return (counts, downgrades);
        }
        let roll = next(&mut rng) % 10;
        if roll < 3 {
            let w = match lock.write_lock().try_lock_for(left).await {
                Ok(Some(g)) => g,
                Ok(None) => return (counts, downgrades),
                Err(e) => {
                    error(&mut counts, &name, "write acquire", &e);
                    continue;
                }
            };
            counts.acquisitions += 1;
            match create_new(&w_file) {
                Ok(true) => {}
                Ok(false) => violation(
                    &mut counts,
                    format!("{name} writes but another writer's marker exists"),
                ),
                Err(e) => error(&mut counts, &name, "marker", &e),
            }
            let inside = readers(&dir);
            if !inside.is_empty() {
                violation(
                    &mut counts,
                    format!("{name} writes while readers are inside: {inside:?}"),
                );
            }
            hold(&mut rng).await;
            if roll == 0 {
                // A downgrade: read, then let the write lock go while still reading.
                match lock.read_lock().lock().await {
                    Ok(r) => {
                        downgrades += 1;
                        let _ = create_new(&r_file);
                        let _ = fs::remove_file(&w_file);
                        if let Err(e) = w.release().await {
                            error(&mut counts, &name, "write release", &e);
                        }
                        hold(&mut rng).await;
                        let _ = fs::remove_file(&r_file);
                        if let Err(e) = r.release().await {
                            error(&mut counts, &name, "read release", &e);
                        }
                    }
                    Err(e) => {
                        error(&mut counts, &name, "downgrade", &e);
                        let _ = fs::remove_file(&w_file);
                        let _ = w.release().await;
                    }
                }
            } else {
                let _ = fs::remove_file(&w_file);
                if let Err(e) = w.release().await {
                    error(&mut counts, &name, "write release", &e);
                }
            }
        } else {
            let r = match lock.read_lock().try_lock_for(left).await {
                Ok(Some(g)) => g,
                Ok(None) => return (counts, downgrades),
                Err(e) => {
                    error(&mut counts, &name, "read acquire", &e);
                    continue;
                }
            };
            counts.acquisitions += 1;
            let _ = create_new(&r_file);
            if w_file.exists() {
                violation(
                    &mut counts,
                    format!("{name} reads while a writer is inside"),
                );
            }
            hold(&mut rng).await;
            let _ = fs::remove_file(&r_file);
            if let Err(e) = r.release().await {
                error(&mut counts, &name, "read release", &e);
            }
        }
    }
}
