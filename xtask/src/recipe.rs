//! [`Recipe`]: the lock recipes as xtask's commands name them: one type for `interop`,
//! `stress` and `sim` (and the names `bench` uses for its lock benchmarks).

use clap::ValueEnum;

/// A lock recipe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, ValueEnum)]
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

impl Recipe {
    /// The recipe named `name` on a command line (a worker's argument).
    ///
    /// # Errors
    /// An unknown name.
    pub fn parse(name: &str) -> Result<Recipe, String> {
        <Recipe as ValueEnum>::from_str(name, false)
    }
}

/// The members of the multi-lock the harnesses (interop, stress) take: `<path>/0` ..
/// `<path>/2`. Curator's interop worker has the same.
pub const MEMBERS: usize = 3;

/// The leases of the semaphore the harnesses use by default.
pub const LEASES: u32 = 3;

/// The members of a multi-lock over `path` that `chosen` picks, by number (member 0 when it
/// picks none: a multi-lock needs one): `(k, "<path>/<k>")`, in the canonical order.
pub fn member_paths(path: &str, mut chosen: impl FnMut(usize) -> bool) -> Vec<(usize, String)> {
    let mut members: Vec<usize> = (0..MEMBERS).filter(|&k| chosen(k)).collect();
    if members.is_empty() {
        members.push(0);
    }
    members
        .into_iter()
        .map(|k| (k, format!("{path}/{k}")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn member_paths_are_never_empty_and_in_order() {
        assert_eq!(member_paths("/m", |_| false), [(0, "/m/0".to_owned())]);
        let odd = member_paths("/m", |k| k != 1);
        assert_eq!(odd, [(0, "/m/0".to_owned()), (2, "/m/2".to_owned())]);
    }

    /// The names are clap's, so `--recipe semaphore-mutex` and `interop semaphore-mutex` agree.
    #[test]
    fn names_are_the_command_line_names() {
        for r in Recipe::ALL {
            assert_eq!(Recipe::parse(r.name()), Ok(r));
        }
    }
}

/// A lock workload: a recipe with its parameters, as the benchmarks' cases name it and every
/// worker (ours, Curator's, kazoo's) reads it from its command line: `mutex`, `read`, `write`,
/// `rwmix:P` (the read lock with probability P per cent), `multi:K` (a multi-lock over K
/// paths), `semmutex`, `sem:N` (one lease of N).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    /// `InterProcessMutex`.
    Mutex,
    /// The read lock of `InterProcessReadWriteLock`.
    Read,
    /// The write lock.
    Write,
    /// The read lock with this probability (per cent), else the write lock.
    ReadWriteMix(u8),
    /// `InterProcessMultiLock` over this many paths.
    MultiLock(u8),
    /// `InterProcessSemaphoreMutex`.
    SemaphoreMutex,
    /// `InterProcessSemaphoreV2` of this many leases, one taken per cycle.
    Semaphore(u32),
}

impl Workload {
    /// The recipe it exercises.
    pub fn recipe(self) -> Recipe {
        match self {
            Workload::Mutex => Recipe::Mutex,
            Workload::Read | Workload::Write | Workload::ReadWriteMix(_) => Recipe::Rwlock,
            Workload::MultiLock(_) => Recipe::Multilock,
            Workload::SemaphoreMutex => Recipe::SemaphoreMutex,
            Workload::Semaphore(_) => Recipe::Semaphore,
        }
    }
}

impl std::fmt::Display for Workload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Workload::Mutex => f.write_str("mutex"),
            Workload::Read => f.write_str("read"),
            Workload::Write => f.write_str("write"),
            Workload::ReadWriteMix(p) => write!(f, "rwmix:{p}"),
            Workload::MultiLock(k) => write!(f, "multi:{k}"),
            Workload::SemaphoreMutex => f.write_str("semmutex"),
            Workload::Semaphore(n) => write!(f, "sem:{n}"),
        }
    }
}

impl std::str::FromStr for Workload {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("unknown workload `{s}`");
        Ok(match s.split_once(':') {
            None => match s {
                "mutex" => Workload::Mutex,
                "read" => Workload::Read,
                "write" => Workload::Write,
                "semmutex" => Workload::SemaphoreMutex,
                _ => return Err(bad()),
            },
            Some(("rwmix", p)) => {
                Workload::ReadWriteMix(p.parse().ok().filter(|p| *p <= 100).ok_or_else(bad)?)
            }
            Some(("multi", k)) => Workload::MultiLock(p_in(k, 1..=16).ok_or_else(bad)?),
            Some(("sem", n)) => {
                Workload::Semaphore(n.parse().ok().filter(|n| *n >= 1).ok_or_else(bad)?)
            }
            Some(_) => return Err(bad()),
        })
    }
}

fn p_in(s: &str, range: std::ops::RangeInclusive<u8>) -> Option<u8> {
    s.parse().ok().filter(|v| range.contains(v))
}

#[cfg(test)]
mod workload_tests {
    use super::*;

    #[test]
    fn workloads_round_trip_and_bad_ones_are_refused() {
        for w in [
            Workload::Mutex,
            Workload::Read,
            Workload::Write,
            Workload::ReadWriteMix(90),
            Workload::MultiLock(4),
            Workload::SemaphoreMutex,
            Workload::Semaphore(3),
        ] {
            assert_eq!(w.to_string().parse::<Workload>(), Ok(w));
        }
        for bad in [
            "",
            "lock",
            "rwmix:101",
            "multi:0",
            "sem:0",
            "sem:x",
            "mutex:1",
        ] {
            assert!(bad.parse::<Workload>().is_err(), "{bad}");
        }
        assert_eq!(Workload::ReadWriteMix(10).recipe(), Recipe::Rwlock);
    }
}
