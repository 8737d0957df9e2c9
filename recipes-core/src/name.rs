//! Lock-node names: Curator's protection prefix, the lock name, the 10-digit sequence.
//!
//! A lock node is `<base>/_c_<uuid>-<lockName><seq>`: `_c_` + a lowercase 8-4-4-4-12 UUID + `-`
//! (Curator's protection mode, 40 characters) before the lock name, and the 10-digit sequence
//! the server appends.

/// Curator's protection prefix.
pub const PROTECTED_PREFIX: &str = "_c_";

/// Length of `_c_<uuid>-`.
pub const PROTECTED_PREFIX_LEN: usize = 40;

/// The lock name of `InterProcessMutex` (and of the semaphore's inner lock).
pub const MUTEX_LOCK_NAME: &str = "lock-";

/// The name (not the path) of the node to create for lock `lock_name` with protection id
/// `uuid`: the server appends the sequence.
///
/// # Examples
///
/// ```
/// let name = recipes_core::name::node_prefix("3f0c6a52-8f7e-4b1e-9a53-2d6f0e1c9b7a", "lock-");
/// assert_eq!(name, "_c_3f0c6a52-8f7e-4b1e-9a53-2d6f0e1c9b7a-lock-");
/// ```
pub fn node_prefix(uuid: &str, lock_name: &str) -> String {
    let mut name = protection_prefix_with(uuid, lock_name.len());
    name.push_str(lock_name);
    name
}

/// The protection prefix `_c_<uuid>-` that finds our node after a lost create reply.
pub fn protection_prefix(uuid: &str) -> String {
    protection_prefix_with(uuid, 0)
}

/// `_c_<uuid>-` with room for `extra` more bytes (no `format!`: this runs once per attempt).
fn protection_prefix_with(uuid: &str, extra: usize) -> String {
    let mut name = String::with_capacity(PROTECTED_PREFIX.len() + uuid.len() + 1 + extra);
    push_protection_prefix(&mut name, uuid);
    name
}

fn push_protection_prefix(out: &mut String, uuid: &str) {
    out.push_str(PROTECTED_PREFIX);
    out.push_str(uuid);
    out.push('-');
}

/// The path to create for lock `lock_name` under `base` with protection id `uuid`,
/// `<base>/_c_<uuid>-<lock_name>` in one allocation (no double slash under the root), and
/// where its protection prefix `_c_<uuid>-` is in it.
///
/// # Examples
///
/// ```
/// let uuid = "3f0c6a52-8f7e-4b1e-9a53-2d6f0e1c9b7a";
/// let (path, prefix) = recipes_core::name::node_path("/locks/a", uuid, "lock-");
/// assert_eq!(path, format!("/locks/a/_c_{uuid}-lock-"));
/// assert_eq!(&path[prefix], format!("_c_{uuid}-"));
/// assert_eq!(recipes_core::name::node_path("/", uuid, "lock-").0, format!("/_c_{uuid}-lock-"));
/// ```
pub fn node_path(base: &str, uuid: &str, lock_name: &str) -> (String, std::ops::Range<usize>) {
    let under = if base == "/" { "" } else { base };
    let mut path = String::with_capacity(
        under.len() + 1 + PROTECTED_PREFIX.len() + uuid.len() + 1 + lock_name.len(),
    );
    path.push_str(under);
    path.push('/');
    let start = path.len();
    push_protection_prefix(&mut path, uuid);
    let prefix = start..path.len();
    path.push_str(lock_name);
    (path, prefix)
}

/// Whether `name` carries a protection prefix as Curator checks it (`_c_`, a UUID, `-` at
/// index 39).
pub fn is_protected(name: &str) -> bool {
    name.len() > PROTECTED_PREFIX_LEN
        && name.starts_with(PROTECTED_PREFIX)
        && name.as_bytes().get(PROTECTED_PREFIX_LEN - 1) == Some(&b'-')
        && name.get(3..PROTECTED_PREFIX_LEN - 1).is_some_and(is_uuid)
}

fn is_uuid(s: &str) -> bool {
    let groups: Vec<&str> = s.split('-').collect();
    groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(g, n)| g.len() == n && g.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Curator's sort key: what follows the **last** occurrence of `lock_name`, or the whole name
/// if it has none (`StandardLockInternalsDriver.fixForSorting`).
///
/// # Examples
///
/// ```
/// use recipes_core::name::sort_key;
///
/// assert_eq!(sort_key("_c_3f0c6a52-8f7e-4b1e-9a53-2d6f0e1c9b7a-lock-0000000007", "lock-"), "0000000007");
/// assert_eq!(sort_key("foreign", "lock-"), "foreign");
/// ```
pub fn sort_key<'a>(name: &'a str, lock_name: &str) -> &'a str {
    // A byte search from the end (`str::rfind` sets up a two-way searcher, which costs more
    // than these short names): a match of a UTF-8 pattern starts on a character boundary.
    let last = match lock_name.len() {
        0 => Some(name.len()),
        n => name
            .as_bytes()
            .windows(n)
            .rposition(|w| w == lock_name.as_bytes()),
    };
    match last {
        Some(i) => name.get(i + lock_name.len()..).unwrap_or(""),
        None => name,
    }
}

/// Sorts child names as Curator does: a stable sort by [`sort_key`], comparing keys as Java
/// strings (by UTF-16 code units). Each name's key is found once, not once per comparison.
pub fn sort_children(children: &mut [String], lock_name: &str) {
    let in_order =
        |a: &String, b: &String| java_cmp(sort_key(a, lock_name), sort_key(b, lock_name)).is_le();
    // The usual listing of a lock is one child, or a few the server returned in order:
    // nothing to move, nothing to allocate.
    if children.is_sorted_by(in_order) {
        return;
    }
    if children.len() <= SMALL_SORT {
        // std's stable sort needs no heap for a slice this short; finding a key again per
        // comparison costs less than a table of keys.
        children.sort_by(|a, b| java_cmp(sort_key(a, lock_name), sort_key(b, lock_name)));
        return;
    }
    // Where each key starts in its name, with the name's position.
    let mut order: Vec<(usize, usize)> = children
        .iter()
        .enumerate()
        .map(|(i, name)| (name.len() - sort_key(name, lock_name).len(), i))
        .collect();
    order.sort_by(|&(ka, a), &(kb, b)| {
        let key = |start: usize, i: usize| {
            children
                .get(i)
                .and_then(|n| n.get(start..))
                .unwrap_or_default()
        };
        java_cmp(key(ka, a), key(kb, b))
    });
    // `order[p].1` is the position whose name goes to `p`: apply that permutation in place,
    // one cycle at a time (a position done points to itself).
    let mut from: Vec<usize> = order.into_iter().map(|(_, i)| i).collect();
    for start in 0..from.len() {
        let mut at = start;
        while let Some(next) = from.get_mut(at).map(|f| std::mem::replace(f, at)) {
            if next == start || next == at {
                break;
            }
            children.swap(at, next);
            at = next;
        }
    }
}

/// Up to this many children are sorted without a table of keys.
const SMALL_SORT: usize = 16;

/// Java's `String.compareTo`: lexicographic over UTF-16 code units (which differs from
/// Rust's byte order only for characters outside the Basic Multilingual Plane).
pub fn java_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    if a.is_ascii() && b.is_ascii() {
        // The usual case (sequence numbers): byte order is UTF-16 order.
        return a.cmp(b);
    }
    a.encode_utf16().cmp(b.encode_utf16())
}

/// The 10-digit sequence of a lock node, if its name ends with one after `lock_name`.
pub fn sequence(name: &str, lock_name: &str) -> Option<i64> {
    let key = sort_key(name, lock_name);
    (key.len() == 10 && name.len() > key.len())
        .then(|| key.parse().ok())
        .flatten()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    /// The byte search finds what `str::rfind` finds, non-ASCII names and patterns included.
    #[test]
    fn sort_key_is_the_text_after_the_last_lock_name() {
        let parts = ["lock-", "-", "l", "ock", "0001", "é", "lo", "", "_c_"];
        let mut rng = 0x9e37_79b9_7f4a_7c15_u64;
        for _ in 0..20_000 {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let mut r = rng;
            let mut name = String::new();
            for _ in 0..(r % 7) {
                r /= 7;
                name.push_str(parts[(r % parts.len() as u64) as usize]);
            }
            for lock_name in ["lock-", "é", "read-", ""] {
                let expected = match name.rfind(lock_name) {
                    Some(i) => &name[i + lock_name.len()..],
                    None => name.as_str(),
                };
                assert_eq!(
                    sort_key(&name, lock_name),
                    expected,
                    "{name:?} {lock_name:?}"
                );
            }
        }
    }

    const U1: &str = "3f0c6a52-8f7e-4b1e-9a53-2d6f0e1c9b7a";

    #[test]
    fn protected_names() {
        let n = format!("{}0000000042", node_prefix(U1, MUTEX_LOCK_NAME));
        assert!(is_protected(&n));
        assert_eq!(n.len(), PROTECTED_PREFIX_LEN + "lock-".len() + 10);
        assert!(n.starts_with(&protection_prefix(U1)));
        assert!(!is_protected("lock-0000000001"));
        assert!(!is_protected(
            "_c_not-a-uuid-at-all-but-long-enough-xx-lock-"
        ));
        assert_eq!(sequence(&n, "lock-"), Some(42));
        assert_eq!(sequence("foo", "lock-"), None);
    }

    #[test]
    fn curator_sort_rule() {
        // By the key after the LAST lock name; stable; foreign names keep their whole name,
        // and sort after digits ('f' and '_' > '9') or before them ('-' < '0').
        let mut kids: Vec<String> = [
            format!("_c_{U1}-lock-0000000010"),
            "foreign".to_owned(),
            format!("_c_{U1}-lock-0000000002"),
            "-early".to_owned(),
            "x-lock-lock-0000000005".to_owned(),
            format!("_c_{U1}-lock-"),
        ]
        .into();
        sort_children(&mut kids, "lock-");
        let keys: Vec<&str> = kids.iter().map(|k| sort_key(k, "lock-")).collect();
        assert_eq!(
            keys,
            [
                "",
                "-early",
                "0000000002",
                "0000000005",
                "0000000010",
                "foreign"
            ]
        );
    }

    #[test]
    fn sorting_with_keys_found_once_matches_the_plain_rule() {
        // Curator's rule written plainly: a stable sort comparing UTF-16 keys.
        let reference = |kids: &mut Vec<String>| {
            kids.sort_by(|a, b| {
                sort_key(a, "lock-")
                    .encode_utf16()
                    .cmp(sort_key(b, "lock-").encode_utf16())
            });
        };
        let pieces = [
            "lock-0000000003",
            "lock-0000000001",
            "lock-",
            "x-lock-lock-0000000002",
            "foreign",
            "-x",
            "zzz",
            "lock-\u{ff61}",
            "lock-\u{1f600}",
            "lock-0000000001",
        ];
        let mut seed = 7u64;
        // Up to 40 names: both the short sort and the table of keys.
        for round in 0..400 {
            let n = 1 + round % 40;
            let mut kids: Vec<String> = (0..n)
                .map(|i| {
                    seed = seed
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    let piece = pieces[(seed >> 33) as usize % pieces.len()];
                    format!("{i}-{piece}")
                })
                .collect();
            let mut expected = kids.clone();
            reference(&mut expected);
            sort_children(&mut kids, "lock-");
            assert_eq!(kids, expected);
        }
    }

    #[test]
    fn java_order_is_utf16_order() {
        use std::cmp::Ordering::*;
        assert_eq!(java_cmp("a", "b"), Less);
        // U+FF61 > U+1F600 in UTF-16 (0xFF61 > 0xD83D), unlike in UTF-8 bytes.
        assert_eq!(java_cmp("\u{ff61}", "\u{1f600}"), Greater);
        assert_eq!("\u{ff61}".cmp("\u{1f600}"), Less);
    }
}
