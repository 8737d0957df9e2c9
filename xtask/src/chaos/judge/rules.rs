//! The recipes' grant rules, written again here from Curator 5.4's source (`LockInternals`,
//! `StandardLockInternalsDriver`, `InterProcessReadWriteLock`, `InterProcessSemaphoreV2`),
//! small and independent of recipes-core: a bug in our predicates cannot hide in the judge.

use super::marks::Mode;

/// What kind of lock directory a node sits in, and so the rule that grants it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `lock-` nodes, the first holds: a mutex, a multi-lock's member, a semaphore's inner
    /// lock (`<path>/locks`).
    Exclusive,
    /// `__READ__` and `__WRIT__` nodes in one directory: a writer holds when first, a reader
    /// when no write node sorts before it.
    ReadWrite,
    /// A semaphore's `lease-` nodes (`<path>/leases`): a lease holds while fewer than `n`
    /// live children sort before it.
    Leases {
        /// The leases (1 for a semaphore mutex).
        n: u32,
    },
}

/// Curator's sort key (`StandardLockInternalsDriver.fixForSorting`): the text after the
/// last occurrence of `lock_name`, or the whole name if it has none.
pub fn key<'a>(name: &'a str, lock_name: &str) -> &'a str {
    match name.rfind(lock_name) {
        Some(i) => name.get(i + lock_name.len()..).unwrap_or(""),
        None => name,
    }
}

/// The read/write lock's key: strip up to the last `__READ__`, then up to the last
/// `__WRIT__` (so readers and writers interleave by sequence).
fn rw_key(name: &str) -> &str {
    key(key(name, "__READ__"), "__WRIT__")
}

/// `children` sorted as Curator sorts them (Java compares the keys as strings; ties, which
/// only foreign names make, by name here rather than by the server's listing order).
pub fn sorted<'a>(
    children: impl Iterator<Item = &'a str>,
    key: impl Fn(&'a str) -> &'a str,
) -> Vec<&'a str> {
    let mut v: Vec<&str> = children.collect();
    v.sort_by(|a, b| key(a).cmp(key(b)).then(a.cmp(b)));
    v
}

/// Whether `node` (a child's name) is granted among the live `children` (which hold it, or
/// it is not granted) of a directory of `kind`.
pub fn granted<'a>(kind: Kind, children: impl Iterator<Item = &'a str>, node: &str) -> bool {
    match kind {
        Kind::Exclusive => sorted(children, |c| key(c, "lock-")).first() == Some(&node),
        Kind::ReadWrite => {
            let order = sorted(children, rw_key);
            let Some(at) = order.iter().position(|&c| c == node) else {
                return false;
            };
            if node.contains("__WRIT__") {
                at == 0
            } else {
                !order.iter().take(at).any(|c| c.contains("__WRIT__"))
            }
        }
        Kind::Leases { n } => {
            // Curator's check is a count when the lease is made (`children.size() <=
            // maxLeases`, the inner lock held, so every other lease then was made before):
            // from then on, the leases before it can only go and the new ones sort after it.
            // The invariant at any later zxid: fewer than n live leases sort before it.
            let order = sorted(children, |c| key(c, "lease-"));
            order
                .iter()
                .position(|&c| c == node)
                .is_some_and(|at| at < usize::try_from(n).unwrap_or(usize::MAX))
        }
    }
}

/// Whether the holders in one directory of `kind`, given as whether each is a writer (only
/// read/write directories have writers), satisfy its exclusion.
pub fn excludes(kind: Kind, writers: usize, readers: usize) -> bool {
    match kind {
        Kind::Exclusive => writers + readers <= 1,
        Kind::ReadWrite => writers == 0 || (writers == 1 && readers == 0),
        Kind::Leases { n } => writers + readers <= usize::try_from(n).unwrap_or(usize::MAX),
    }
}

/// Whether a node of a read/write directory is a write node (elsewhere every hold counts as
/// a writer for [`excludes`]).
pub fn is_writer(kind: Kind, name: &str) -> bool {
    kind != Kind::ReadWrite || name.contains("__WRIT__")
}

/// Whether a node named `name` in a directory of `kind` holds in `mode`: a lock node
/// exclusively, a read/write lock's node in the mode its name says (`__WRIT__` write, else
/// read), a lease as a lease.
pub fn fits(kind: Kind, mode: Mode, name: &str) -> bool {
    match kind {
        Kind::Exclusive => mode == Mode::Exclusive,
        Kind::ReadWrite if is_writer(kind, name) => mode == Mode::Write,
        Kind::ReadWrite => mode == Mode::Read,
        Kind::Leases { .. } => mode == Mode::Lease,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(kind: Kind, children: &[&str], node: &str) -> bool {
        granted(kind, children.iter().copied(), node)
    }

    #[test]
    fn the_first_by_sequence_holds_whatever_the_prefix() {
        let c = [
            "_c_b-lock-0000000002",
            "_c_a-lock-0000000003",
            "_c_z-lock-0000000001",
        ];
        assert!(g(Kind::Exclusive, &c, "_c_z-lock-0000000001"));
        assert!(!g(Kind::Exclusive, &c, "_c_b-lock-0000000002"));
        assert!(!g(Kind::Exclusive, &c, "gone-lock-0000000000"));
        // A foreign name sorts after the digits; one starting below '0' before them.
        assert!(g(
            Kind::Exclusive,
            &["foo", "x-lock-0000000009"],
            "x-lock-0000000009"
        ));
        assert!(!g(
            Kind::Exclusive,
            &["-", "x-lock-0000000009"],
            "x-lock-0000000009"
        ));
    }

    #[test]
    fn readers_hold_until_a_write_node_sorts_before_them() {
        let c = [
            "r-__READ__0000000001",
            "r-__READ__0000000002",
            "w-__WRIT__0000000003",
            "r-__READ__0000000004",
        ];
        assert!(g(Kind::ReadWrite, &c, "r-__READ__0000000001"));
        assert!(g(Kind::ReadWrite, &c, "r-__READ__0000000002"));
        assert!(!g(Kind::ReadWrite, &c, "w-__WRIT__0000000003"));
        assert!(!g(Kind::ReadWrite, &c, "r-__READ__0000000004"));
        let c = ["w-__WRIT__0000000003", "r-__READ__0000000004"];
        assert!(g(Kind::ReadWrite, &c, "w-__WRIT__0000000003"));
        assert!(!g(Kind::ReadWrite, &c, "r-__READ__0000000004"));
    }

    #[test]
    fn leases_hold_among_the_first_n() {
        let c = [
            "a-lease-0000000005",
            "b-lease-0000000003",
            "c-lease-0000000009",
        ];
        let two = Kind::Leases { n: 2 };
        assert!(g(two, &c, "a-lease-0000000005"));
        assert!(g(two, &c, "b-lease-0000000003"));
        assert!(!g(two, &c, "c-lease-0000000009"));
        assert!(excludes(two, 2, 0) && !excludes(two, 3, 0));
        assert!(excludes(Kind::ReadWrite, 0, 5) && !excludes(Kind::ReadWrite, 1, 1));
        assert!(!excludes(Kind::ReadWrite, 2, 0) && !excludes(Kind::Exclusive, 2, 0));
    }

    #[test]
    fn a_nodes_kind_and_name_say_the_mode_it_holds() {
        let (rw, r, w) = (
            Kind::ReadWrite,
            "x-__READ__0000000001",
            "x-__WRIT__0000000002",
        );
        assert!(fits(rw, Mode::Read, r) && !fits(rw, Mode::Write, r));
        assert!(fits(rw, Mode::Write, w) && !fits(rw, Mode::Read, w));
        assert!(!fits(rw, Mode::Exclusive, w));
        assert!(fits(Kind::Exclusive, Mode::Exclusive, "x-lock-0000000001"));
        assert!(!fits(Kind::Exclusive, Mode::Write, "x-lock-0000000001"));
        let leases = Kind::Leases { n: 1 };
        assert!(fits(leases, Mode::Lease, "x-lease-0000000001"));
        assert!(!fits(leases, Mode::Exclusive, "x-lease-0000000001"));
    }
}
