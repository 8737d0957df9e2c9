//! Random version-4 UUIDs for the protection prefix, without a UUID crate.

use std::cell::Cell;
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};

thread_local! {
    /// Each thread's generator state, seeded once from std's randomly keyed hasher (OS
    /// randomness).
    static STATE: Cell<u64> = Cell::new(RandomState::new().build_hasher().finish());
}

/// Restarts this thread's generator from `seed`, so that the UUIDs it gives from now on are
/// a function of the seed: the simulator's schedules replay bit for bit (its runtime is
/// single-threaded, so every attempt of a schedule draws from this thread). Never for users.
#[cfg(feature = "plant")]
pub(crate) fn seed_thread(seed: u64) {
    STATE.with(|state| state.set(seed));
}

/// The next 64 random bits of this thread (wyrand: a full-period 64-bit sequence, so a
/// thread's outputs never repeat within 2^64 calls; threads start at random points).
fn next_u64() -> u64 {
    STATE.with(|state| {
        let s = state.get().wrapping_add(0xa076_1d64_78bd_642f);
        state.set(s);
        let t = u128::from(s) * u128::from(s ^ 0xe703_7ed1_a0b4_28db);
        (t >> 64) as u64 ^ t as u64
    })
}

/// A random UUID in Curator's form (lowercase 8-4-4-4-12 hex, version 4), held inline: it
/// derefs to `&str`.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Uuid([u8; 36]);

impl Uuid {
    /// The 36 characters.
    pub fn as_str(&self) -> &str {
        // Only ASCII hex digits and dashes are ever written.
        std::str::from_utf8(&self.0).unwrap_or_default()
    }
}

impl std::ops::Deref for Uuid {
    type Target = str;

    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl std::fmt::Display for Uuid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::fmt::Debug for Uuid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.as_str(), f)
    }
}

/// A fresh random UUID in Curator's form (lowercase 8-4-4-4-12 hex, version 4).
///
/// Randomness: a per-thread wyrand sequence seeded from std's OS-seeded hasher keys (a UUID
/// per lock attempt costs a few instructions and no allocation).
pub fn random_uuid() -> Uuid {
    let (a, b) = (next_u64(), next_u64());
    // Version 4 (the 13th hex digit), variant 10xx (the 17th).
    let a = (a & !0xf000) | 0x4000;
    let b = (b & !(0xc000 << 48)) | (0x8000 << 48);
    // 8-4-4-4-12 hex digits; the dashes are already in place.
    let mut out = *b"00000000-0000-0000-0000-000000000000";
    let groups = [
        (a >> 32, 0, 8),
        (a >> 16, 9, 4),
        (a, 14, 4),
        (b >> 48, 19, 4),
        (b, 24, 12),
    ];
    for (word, at, digits) in groups {
        put_hex(&mut out, word, at, digits);
    }
    Uuid(out)
}

/// Writes the low `digits` hex digits of `word`, lowercase, from `out[at]`.
fn put_hex(out: &mut [u8; 36], word: u64, at: usize, digits: usize) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for i in 0..digits {
        let nibble = ((word >> ((digits - 1 - i) * 4)) & 0xf) as usize;
        if let (Some(slot), Some(&hex)) = (out.get_mut(at + i), HEX.get(nibble)) {
            *slot = hex;
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn uuids_are_curator_protected_and_distinct() {
        let mut seen = std::collections::HashSet::new();
        for _ in 0..1000 {
            let u = random_uuid();
            assert!(
                recipes_core::name::is_protected(&format!("_c_{u}-lock-0000000001")),
                "{u}"
            );
            assert_eq!(&u[14..15], "4");
            assert_eq!(u.len(), 36);
            assert!(seen.insert(u));
        }
    }
}
