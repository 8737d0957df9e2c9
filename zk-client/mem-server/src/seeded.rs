//! [`Seeded`]: the server's random choices (session ids, passwords, the order of listed
//! children when shuffled, request latencies, chaos), all from its configured seed, so that a
//! seed replays a run exactly.

/// SplitMix64: small, fast, and the same stream for the same seed.
#[derive(Debug, Clone)]
pub(crate) struct Seeded(u64);

impl Seeded {
    /// A generator for `seed`.
    pub(crate) fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 random bits.
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next_u64() % n }
    }

    /// An index into a collection of `len` items (0 when empty).
    pub(crate) fn index(&mut self, len: usize) -> usize {
        usize::try_from(self.below(len as u64)).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_seed_one_stream_and_draws_stay_in_range() {
        let (mut a, mut b) = (Seeded::new(5), Seeded::new(5));
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
            assert!(a.below(7) < 7);
            assert_eq!(a.index(0), 0);
            b.below(7);
            b.index(0);
        }
        assert_ne!(Seeded::new(5).next_u64(), Seeded::new(6).next_u64());
    }
}
