//! What the stress tasks contend for, recipe by recipe ([`Target`]), and what they hold when
//! they get it ([`Held`]).

use std::sync::Arc;

use recipe_multilock::{InterProcessMultiLock, MultiGuard};
use recipe_mutex::{Guard, InterProcessMutex, Lock, LockKind};
use recipe_rwlock::InterProcessReadWriteLock;
use recipe_semaphore::{InterProcessSemaphoreMutex, InterProcessSemaphoreV2, Lease};
use zk_client::Client;

use crate::interop::holds::Mode;
use crate::recipe::{LEASES, Recipe, member_paths};

/// One session's lock of a recipe, shared by its tasks (each task its own owner).
#[derive(Debug, Clone)]
pub enum Target {
    /// The mutex, the semaphore mutex, or the read/write lock's two sides (a task picks one
    /// at random each time).
    Locks(Vec<Arc<dyn Lock>>),
    /// A new multi-lock over a random non-empty subset of the
    /// [`MEMBERS`](crate::recipe::MEMBERS) paths each time (Curator's convenience
    /// constructor: new member mutexes each time, so only the process's turns, not a
    /// handle's, keep an owner's cancelled attempts from piling up).
    Multi(Client, String),
    /// A semaphore of [`LEASES`](crate::recipe::LEASES): one or two leases each time.
    Semaphore(InterProcessSemaphoreV2),
}

/// What a task holds, and what that is for the interop checker: `(on, mode)` per thing held
/// (see [`crate::interop::holds`]).
#[derive(Debug)]
pub struct Taken {
    /// The guard or the leases.
    pub held: Held,
    /// What is held, as the checker names it.
    pub things: Vec<(String, Mode)>,
}

/// A guard or leases.
#[derive(Debug)]
pub enum Held {
    /// A lock's guard.
    Guard(Box<dyn Guard>),
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
    pub async fn take(&self, roll: u64) -> Result<Taken, String> {
        match self {
            Target::Locks(locks) => {
                let pick = usize::try_from(roll).unwrap_or(0) % locks.len().max(1);
                let lock = locks.get(pick).ok_or("no lock")?;
                let mode = match lock.kind() {
                    LockKind::Read => Mode::Read,
                    LockKind::Write => Mode::Write,
                    LockKind::SemaphoreMutex => Mode::Lease,
                    _ => Mode::Exclusive,
                };
                let guard = lock.lock().await.map_err(|e| e.to_string())?;
                Ok(Taken {
                    held: Held::Guard(guard),
                    things: vec![("lock".to_owned(), mode)],
                })
            }
            Target::Multi(client, path) => {
                let members = member_paths(path, |k| roll >> k & 1 == 1);
                let refs: Vec<&str> = members.iter().map(|(_, p)| p.as_str()).collect();
                let multi =
                    InterProcessMultiLock::new(client.clone(), &refs).map_err(|e| e.to_string())?;
                let guard = multi.lock().await.map_err(|e| e.to_string())?;
                Ok(Taken {
                    held: Held::Multi(guard),
                    things: members
                        .iter()
                        .map(|(k, _)| (format!("member-{k}"), Mode::Exclusive))
                        .collect(),
                })
            }
            Target::Semaphore(semaphore) => {
                let qty = 1 + u32::from(roll % 4 == 0);
                let leases = semaphore
                    .acquire_many(qty)
                    .await
                    .map_err(|e| e.to_string())?;
                let things = leases
                    .iter()
                    .map(|_| ("leases".to_owned(), Mode::Lease))
                    .collect();
                Ok(Taken {
                    held: Held::Leases(leases),
                    things,
                })
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
            Held::Leases(l) => recipe_semaphore::return_all(l)
                .await
                .map_err(|e| e.to_string()),
        };
    }
}
