//! [`SharedCount`]: Curator's `SharedCount`, an integer in a node that every client follows.

use std::sync::{Arc, Mutex, PoisonError};

use crate::Error;
use recipe_mutex::layer::driver::create_parents;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use zk_client::{Client, CreateMode, CreateOptions, SessionState};

/// An `i32` kept in a ZooKeeper node (4 bytes, big-endian, as Curator's `SharedCount`), read
/// at start and followed with a data watch; [`InterProcessSemaphoreV2::with_shared_count`]
/// takes its maximum from one.
///
/// [`InterProcessSemaphoreV2::with_shared_count`]: crate::InterProcessSemaphoreV2::with_shared_count
#[derive(Debug)]
pub struct SharedCount {
    client: Client,
    path: String,
    values: watch::Sender<i32>,
    /// The node's data version at the last read or write.
    version: Arc<Mutex<i32>>,
    follower: JoinHandle<()>,
}

impl SharedCount {
    /// Starts following the count at `path`, creating the node with `seed` if it does not
    /// exist (its parents as containers, the node itself persistent).
    pub async fn start(client: Client, path: &str, seed: i32) -> Result<Self, Error> {
        recipe_mutex::validate_lock_path(path)?;
        if let Some((parent, _)) = path.rsplit_once('/').filter(|(p, _)| !p.is_empty()) {
            create_parents(&client, parent).await?;
        }
        let opts = CreateOptions::new(CreateMode::Persistent);
        match client.create(path, &seed.to_be_bytes(), &opts).await {
            Ok(_) | Err(zk_client::Error::NodeExists) => {}
            Err(e) => return Err(e.into()),
        }
        let (data, stat, watcher) = client.get_data_and_watch(path).await?;
        let (values, _) = watch::channel(decode(&data).unwrap_or(seed));
        let version = Arc::new(Mutex::new(stat.version));
        let follower = tokio::spawn(follow(
            client.clone(),
            path.to_owned(),
            values.clone(),
            version.clone(),
            watcher,
        ));
        Ok(Self {
            client,
            path: path.to_owned(),
            values,
            version,
            follower,
        })
    }

    /// The count as last seen.
    pub fn count(&self) -> i32 {
        *self.values.borrow()
    }

    /// The node's path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Sets the count (whatever its current value).
    pub async fn set_count(&self, count: i32) -> Result<(), Error> {
        let stat = self
            .client
            .set_data(&self.path, &count.to_be_bytes(), None)
            .await?;
        self.seen(count, stat.version);
        Ok(())
    }

    /// Sets the count only if nobody changed it since this client last saw it (Curator's
    /// `trySetCount`); `false` if someone did (the new value arrives by the watch).
    pub async fn try_set_count(&self, count: i32) -> Result<bool, Error> {
        let version = *self.version.lock().unwrap_or_else(PoisonError::into_inner);
        match self
            .client
            .set_data(&self.path, &count.to_be_bytes(), Some(version))
            .await
        {
            Ok(stat) => {
                self.seen(count, stat.version);
                Ok(true)
            }
            Err(zk_client::Error::BadVersion) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    fn seen(&self, count: i32, version: i32) {
        let mut v = self.version.lock().unwrap_or_else(PoisonError::into_inner);
        if version >= *v {
            *v = version;
            self.values.send_replace(count);
        }
    }

    /// A receiver that sees every change of the count.
    pub fn subscribe(&self) -> watch::Receiver<i32> {
        self.values.subscribe()
    }
}

impl Drop for SharedCount {
    fn drop(&mut self) {
        self.follower.abort();
    }
}

fn decode(data: &[u8]) -> Option<i32> {
    let bytes: [u8; 4] = data.get(..4)?.try_into().ok()?;
    Some(i32::from_be_bytes(bytes))
}

/// Re-reads the node each time its watch fires, until the session ends.
async fn follow(
    client: Client,
    path: String,
    values: watch::Sender<i32>,
    version: Arc<Mutex<i32>>,
    mut watcher: zk_client::OneshotWatcher,
) {
    loop {
        let _ = (&mut watcher).await;
        loop {
            let state = client.state();
            if state.is_terminal() {
                return;
            }
            if state != SessionState::Connected {
                let mut states = client.state_watch();
                let _ = states
                    .wait_for(|s| *s == SessionState::Connected || s.is_terminal())
                    .await;
                continue;
            }
            match client.get_data_and_watch(&path).await {
                Ok((data, stat, w)) => {
                    if let Some(count) = decode(&data) {
                        let mut v = version.lock().unwrap_or_else(PoisonError::into_inner);
                        *v = stat.version;
                        values.send_replace(count);
                    }
                    watcher = w;
                    break;
                }
                // Deleted: wait for it to come back.
                Err(zk_client::Error::NoNode) => match client.exists_and_watch(&path).await {
                    Ok((_, w)) => {
                        watcher = w;
                        break;
                    }
                    Err(e) if is_final(&e) => return,
                    Err(_) => pause().await,
                },
                Err(e) if is_final(&e) => return,
                Err(_) => pause().await,
            }
        }
    }
}

/// A pause before trying again after a failure the state has not reported yet.
async fn pause() {
    tokio::time::sleep(recipes_core::RETRY_DELAY).await;
}

fn is_final(e: &zk_client::Error) -> bool {
    matches!(
        e,
        zk_client::Error::SessionExpired | zk_client::Error::Closed | zk_client::Error::AuthFailed
    )
}
