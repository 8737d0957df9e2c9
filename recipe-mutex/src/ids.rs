//! [`IdHasher`]: a fast hasher for the tables keyed by our own ids (hold ids, sessions).

/// A hasher for the ids that key our tables (hold counters, session ids and paths). They
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
        assert_ne!(build.hash_one(1u64), build.hash_one(2u64));
        assert_ne!(build.hash_one((7i64, "/a")), build.hash_one((7i64, "/b")));
        let mut map: IdMap<u64, u64> = IdMap::default();
        for i in 0..1000 {
            map.insert(i, i * 2);
        }
        assert!((0..1000).all(|i| map.get(&i) == Some(&(i * 2))));
    }
}
