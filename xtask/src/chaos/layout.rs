//! Where a chaos run's locks and registers live, the same for ours and Curator's workers
//! (`java/CuratorChaos.java` spells them out again).

use std::time::Duration;

use crate::recipe::Recipe;

/// The session timeout of each worker's store session, through which the registers are read
/// and written: long enough to outlive any pause of the nemesis (the ensemble's
/// `maxSessionTimeout` is raised to allow it), so that a holder paused past its own session
/// still reaches the store when it resumes, as a real store would let it.
pub const STORE_SESSION_TIMEOUT: Duration = Duration::from_secs(60);

/// Every lock lives under this node.
pub const ROOT: &str = "/chaos";

/// The protected registers live under this node (outside the lock paths, so that a look
/// for nodes left sees only lock nodes).
pub const REGISTERS: &str = "/chaos-registers";

/// The multi-lock's members.
pub const MEMBERS: usize = 3;

/// The lock path of `recipe`: `/chaos/<recipe>` (the multi-lock's members are below it).
pub fn lock_path(recipe: Recipe) -> String {
    format!("{ROOT}/{}", recipe.name())
}

/// The multi-lock's member `k`: `/chaos/multilock/<k>`.
pub fn member_path(k: usize) -> String {
    format!("{}/{k}", lock_path(Recipe::Multilock))
}

/// The register of `recipe` (for the multi-lock, of member `k`); none for the semaphore,
/// whose N holders at once share nothing that one of them may write alone.
pub fn register(recipe: Recipe, k: usize) -> String {
    match recipe {
        Recipe::Multilock => format!("multilock-{k}"),
        other => other.name().to_owned(),
    }
}

/// The lock the register of `recipe` (of the multi-lock, member `k`'s) is written under:
/// the recipe's lock path, the multi-lock's member `k` for its register `k`.
pub fn register_lock(recipe: Recipe, k: usize) -> String {
    match recipe {
        Recipe::Multilock => member_path(k),
        other => lock_path(other),
    }
}

/// Every register with its lock ([`register_lock`]): the node names under [`REGISTERS`].
pub fn register_locks(recipes: &[Recipe]) -> Vec<(String, String)> {
    let mut regs = Vec::new();
    for &recipe in recipes {
        match recipe {
            Recipe::Semaphore => {}
            Recipe::Multilock => {
                regs.extend((0..MEMBERS).map(|k| (register(recipe, k), register_lock(recipe, k))))
            }
            other => regs.push((register(other, 0), register_lock(other, 0))),
        }
    }
    regs
}

/// Every register: the node names under [`REGISTERS`].
pub fn registers(recipes: &[Recipe]) -> Vec<String> {
    register_locks(recipes)
        .into_iter()
        .map(|(name, _)| name)
        .collect()
}

/// A register's path.
pub fn register_path(name: &str) -> String {
    format!("{REGISTERS}/{name}")
}

/// The nodes whose children are lock nodes, lease nodes or the semaphores' internal locks:
/// where a node left would be.
pub fn node_dirs(recipes: &[Recipe]) -> Vec<String> {
    let mut dirs = Vec::new();
    for &recipe in recipes {
        let path = lock_path(recipe);
        match recipe {
            Recipe::Mutex | Recipe::Rwlock => dirs.push(path),
            Recipe::Multilock => dirs.extend((0..MEMBERS).map(member_path)),
            Recipe::Semaphore | Recipe::SemaphoreMutex => {
                dirs.push(format!("{path}/locks"));
                dirs.push(format!("{path}/leases"));
            }
        }
    }
    dirs
}
