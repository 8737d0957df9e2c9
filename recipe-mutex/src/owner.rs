//! [`Owner`]: who re-enters a lock. Curator counts per thread; we count per tokio task.

/// The owner of a reentrant hold: the current tokio task, or the current thread outside
/// any task. Futures joined inside one task (`join!`, `select!`) are one owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Owner {
    /// A tokio task.
    Task(tokio::task::Id),
    /// A thread outside any task.
    Thread(std::thread::ThreadId),
}

impl Owner {
    /// The caller.
    pub fn current() -> Owner {
        match tokio::task::try_id() {
            Some(id) => Owner::Task(id),
            None => Owner::Thread(std::thread::current().id()),
        }
    }
}

/// A hasher for the ids that key the hold tables (task ids, thread ids, hold counters). They
/// are not chosen by an attacker, so SipHash's protection buys nothing, and a lock cycle does
/// half a dozen lookups: a multiply-rotate mix (FxHash's) instead.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct IdHasher(u64);

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(SEED);
    }

    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
}

/// A `HashMap` keyed by ids, with [`IdHasher`].
pub(crate) type IdMap<K, V> =
    std::collections::HashMap<K, V, std::hash::BuildHasherDefault<IdHasher>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_hash_apart() {
        use std::hash::BuildHasher;
        let build = std::hash::BuildHasherDefault::<IdHasher>::default();
        let here = Owner::Thread(std::thread::current().id());
        let there = std::thread::spawn(|| Owner::Thread(std::thread::current().id()))
            .join()
            .unwrap_or(here);
        assert_ne!(build.hash_one(here), build.hash_one(there));
        let mut map: IdMap<u64, u64> = IdMap::default();
        for i in 0..1000 {
            map.insert(i, i * 2);
        }
        assert!((0..1000).all(|i| map.get(&i) == Some(&(i * 2))));
    }
}
