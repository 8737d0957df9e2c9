//! [`Recipe`]: the lock recipes as xtask's commands name them: one type for `interop`,
//! `stress` and `sim` (and the names `bench` uses for its lock benchmarks).

use clap::ValueEnum;

/// A lock recipe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Recipe {
    /// `InterProcessMutex`.
    Mutex,
    /// `InterProcessReadWriteLock` (readers, writers, downgrades).
    Rwlock,
    /// `InterProcessMultiLock` (over several paths).
    Multilock,
    /// `InterProcessSemaphoreV2` (N leases).
    Semaphore,
    /// `InterProcessSemaphoreMutex`.
    SemaphoreMutex,
}

impl Recipe {
    /// Every recipe, in the order the commands run them.
    pub const ALL: [Recipe; 5] = [
        Recipe::Mutex,
        Recipe::Rwlock,
        Recipe::Multilock,
        Recipe::Semaphore,
        Recipe::SemaphoreMutex,
    ];

    /// The name on the command line (and the simulator's).
    pub fn name(self) -> &'static str {
        match self {
            Recipe::Mutex => "mutex",
            Recipe::Rwlock => "rwlock",
            Recipe::Multilock => "multilock",
            Recipe::Semaphore => "semaphore",
            Recipe::SemaphoreMutex => "semaphore-mutex",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names are clap's, so `--recipe semaphore-mutex` and `interop semaphore-mutex` agree.
    #[test]
    fn names_are_the_command_line_names() {
        for r in Recipe::ALL {
            let parsed = Recipe::from_str(r.name(), false);
            assert_eq!(parsed, Ok(r));
        }
    }
}
