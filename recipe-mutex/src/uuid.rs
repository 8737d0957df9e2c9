//! Random version-4 UUIDs for the protection prefix, without a UUID crate.

use std::cell::Cell;
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};

thread_local! {
    /// Each thread's generator state, seeded once from std's randomly keyed hasher (OS
    /// randomness).
    static STATE: Cell<u64> = Cell::new(RandomState::new().build_hasher().finish());
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

/// A fresh random UUID in Curator's form (lowercase 8-4-4-4-12 hex, version 4).
///
/// Randomness: a per-thread wyrand sequence seeded from std's OS-seeded hasher keys (a UUID
/// per lock attempt costs a few instructions, not two SipHash rounds).
pub fn random_uuid() -> String {
    let (a, b) = (next_u64(), next_u64());
    // Version 4 (the 13th hex digit), variant 10xx (the 17th).
    let a = (a & !0xf000) | 0x4000;
    let b = (b & !(0xc000 << 48)) | (0x8000 << 48);
    // 8-4-4-4-12 hex digits, written without `format!` (this runs once per attempt).
    let mut out = String::with_capacity(36);
    push_hex(&mut out, a >> 32, 8);
    out.push('-');
    push_hex(&mut out, a >> 16, 4);
    out.push('-');
    push_hex(&mut out, a, 4);
    out.push('-');
    push_hex(&mut out, b >> 48, 4);
    out.push('-');
    push_hex(&mut out, b, 12);
    out
}

/// Appends the low `digits` hex digits of `word`, lowercase.
fn push_hex(out: &mut String, word: u64, digits: u32) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for i in (0..digits).rev() {
        let nibble = ((word >> (i * 4)) & 0xf) as usize;
        out.push(char::from(HEX.get(nibble).copied().unwrap_or(b'0')));
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
            assert!(seen.insert(u));
        }
    }
}
