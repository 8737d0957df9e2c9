//! What the stress tasks contend for, recipe by recipe ([`Target`]), and what they hold when
//! they get it ([`Held`]).

use std::sync::Arc;

use recipe_multilock::{InterProcessMultiLock, MultiGuard};
use recipe_mutex::{InterProcessMutex, Lock, LockGuard};
use recipe_rwlock::InterProcessReadWriteLock;
use recipe_semaphore::{InterProcessSemaphoreMutex, InterProcessSemaphoreV2, Lease};
use zk_client::Client;

use crate::recipe::Recipe;

/// The members of the multi-lock under the path: `<path>/0` .. `<path>/2`.
pub const MEMBERS: usize = 3;

/// The leases of the semaphore.
pub const LEASES: u32 = 3;

/// One session's lock of a recipe, shared by its tasks (each task its own owner).
#[derive(Debug, Clone)]
pub enum Target {
    /// The mutex, the semaphore mutex, or the read/write lock's two sides (a task picks one
    /// at random each time).
    Locks(Vec<Arc<dyn Lock>>),
    /// A new multi-lock over a random non-empty subset of the [`MEMBERS`] paths each time
    /// (Curator's convenience constructor: new member mutexes each time, so only the
    /// process's turns, not a handle's, keep an owner's cancelled attempts from piling up).
    Multi(Client, String),
    /// A semaphore of [`LEASES`]: one or two leases each time.
    Semaphore(InterProcessSemaphoreV2),
}

/// What a task holds.
#[derive(Debug)]
pub enum Held {
    /// A lock's guard.
    Guard(LockGuard),
    /// A multi-lock's guard.
    Multi(MultiGuard),
    /// A semaphore's leases.
    Leases(Vec<Lease>),
}

impl Target {
    /// `recipe`'s lock on `path` for `client`.
    ///
    /// # Errors
    /// An invalid path.
    pub fn new(recipe: Recipe, client: Client, path: &str) -> Result<Target, String> {
        let e = |e: &dyn std::fmt::Display| format!("{path}: {e}");
        Ok(match recipe {
            Recipe::Mutex => Target::Locks(vec![Arc::new(
                InterProcessMutex::new(client, path).map_err(|x| e(&x))?,
            )]),
            Recipe::Rwlock => {
                let rw = InterProcessReadWriteLock::new(client, path).map_err(|x| e(&x))?;
                Target::Locks(vec![
                    Arc::new(rw.read_lock().clone()),
                    Arc::new(rw.write_lock().clone()),
                ])
            }
            Recipe::SemaphoreMutex => Target::Locks(vec![Arc::new(
                InterProcessSemaphoreMutex::new(client, path).map_err(|x| e(&x))?,
            )]),
            Recipe::Multilock => Target::Multi(client, path.to_owned()),
            Recipe::Semaphore => Target::Semaphore(
                InterProcessSemaphoreV2::new(client, path, LEASES).map_err(|x| e(&x))?,
            ),
        })
    }

    /// Takes it, `roll` choosing among the shapes of the recipe (which side, which members,
    /// how many leases). Cancel-safe: the stress tasks drop it at any point.
    ///
    /// # Errors
    /// The recipe's error, as text.
    pub async fn take(&self, roll: u64) -> Result<Held, String> {
        match self {
            Target::Locks(locks) => {
                let pick = usize::try_from(roll).unwrap_or(0) % locks.len().max(1);
                let lock = locks.get(pick).ok_or("no lock")?;
                lock.lock()
                    .await
                    .map(Held::Guard)
                    .map_err(|e| e.to_string())
            }
            Target::Multi(client, path) => {
                let mut paths: Vec<String> = (0..MEMBERS)
                    .filter(|k| roll >> k & 1 == 1)
                    .map(|k| format!("{path}/{k}"))
                    .collect();
                if paths.is_empty() {
                    paths.push(format!("{path}/0"));
                }
                let refs: Vec<&str> = paths.iter().map(String::as_str).collect();
                let multi =
                    InterProcessMultiLock::new(client.clone(), &refs).map_err(|e| e.to_string())?;
                multi
                    .lock()
                    .await
                    .map(Held::Multi)
                    .map_err(|e| e.to_string())
            }
            Target::Semaphore(semaphore) => {
                let qty = 1 + u32::from(roll % 4 == 0);
                semaphore
                    .acquire_many(qty)
                    .await
                    .map(Held::Leases)
                    .map_err(|e| e.to_string())
            }
        }
    }
}

impl Held {
    /// Releases it, awaiting the deletes (dropping it instead releases in the background).
    pub async fn release(self) {
        let _ = match self {
            Held::Guard(g) => g.release().await.map_err(|e| e.to_string()),
            Held::Multi(g) => g.release().await.map_err(|e| e.to_string()),
            Held::Leases(l) => InterProcessSemaphoreV2::return_all(l)
                .await
                .map_err(|e| e.to_string()),
        };
    }
}
