//! Random version-4 UUIDs for the protection prefix, without a UUID crate.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

/// A fresh random UUID in Curator's form (lowercase 8-4-4-4-12 hex, version 4).
///
/// Randomness comes from std's per-process random hasher keys, mixed with a counter, so two
/// calls never repeat within a process.
pub fn random_uuid() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let word = |salt: u64| {
        let mut h = RandomState::new().build_hasher();
        h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed) ^ salt);
        h.finish()
    };
    let (a, b) = (word(0x9e37_79b9_7f4a_7c15), word(0xc2b2_ae3d_27d4_eb4f));
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
    for i in (0..digits).rev() {
        let nibble = (word >> (i * 4)) & 0xf;
        out.extend(char::from_digit(nibble as u32, 16));
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
