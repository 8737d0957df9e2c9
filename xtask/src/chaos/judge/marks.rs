//! What a hold leaves on the server: its **mark**, and the **register** values it writes.
//!
//! - A mark is an EPHEMERAL node `<MARKS>/<name>` (any unique name: ours and Curator's
//!   workers use `<lib>-<recipe>-<process>-<client>-<n>`), created by the holder's own
//!   session (the lock's, not the store's) when the critical section begins (ours in one
//!   `multi` with the guard's `check_ops`; Curator's plainly) and deleted when it ends,
//!   before the release. It sits outside the lock directories, so no recipe's listing sees
//!   it. Its data, ASCII: `<lib> <lock> <mode> <node>@<token>[ <node>@<token>...]`: the
//!   library (`rust`, `java`), the lock held (its path: `/chaos/<recipe>`, a multi-lock's
//!   the parent of its members, a semaphore's the parent of its `locks` and `leases`), the
//!   [`Mode`] held (`exclusive`, `read`, `write`, `lease`), then each lock node held (a
//!   multi-lock's members, each) by its full path with its fencing token (the node's czxid,
//!   in decimal). Each node must lie below the lock and fit the mode (a `read` hold on a
//!   `__READ__` node, a `write` hold on a `__WRIT__` one, `exclusive` on a `lock-` node,
//!   `lease` on a lease); a `write` claimed on a read node counts as a writer in the lock's
//!   exclusion.
//! - A session's **registration** is an EPHEMERAL node `<MARKS>/session-<lib>-<name>` whose
//!   data is `session <lib>`, created by the session itself before it touches any lock. Ours
//!   register every session (a replacement after an expiry too); Curator's workers do not
//!   (Curator replaces an expired session on its own), so a session that never registered
//!   is Curator's, and the judge checks that no registered session of ours made a lock node
//!   before its registration.
//! - A hold of ours whose mark could not be made (its `multi` failed, or its outcome stayed
//!   unknown for a session timeout) leaves an **unmarked record** instead: an EPHEMERAL node
//!   `<MARKS>/unmarked-<name>` (`<name>` the mark's own) made by the worker's store session
//!   (which outlives the lock's), data `unmarked <mark's data>`; once the guard has told the
//!   holder it lost the hold, the worker sets it to the same followed by ` lost <ms>`: how
//!   long after the failure the holder was told. The judge accounts for every hold of ours
//!   by its mark or by such a record ([`super::Verdict::account`]).
//! - A register write is a `setData` of `<REGISTERS>/<register>` whose data is `<value>
//!   <lib> <lock> <mode> <node>@<token>`: the value (what the old checker reads), the
//!   library, the register's lock (each register is tied to one: `/chaos/<recipe>`, a
//!   multi-lock's register k to member k, `/chaos/multilock/<k>`), the mode of the hold it
//!   was written under, and that hold's node below the lock with its token. A register is
//!   written only under its own lock's node, in a mode that excludes every other holder
//!   (not `read`), and a live mark of that node in that mode stands for it.
//!
//! Data that does not parse (a field missing or extra, a lock that is not a path, a mode
//! not one of the four) is not a mark or a value the judge can read: a judge error.

/// Where the marks live (outside the lock paths, like the registers).
pub const MARKS: &str = "/chaos-marks";

/// A session's registration data.
pub fn session_data(lib: &str) -> String {
    format!("session {lib}")
}

/// The library a registration names, if `data` is one.
pub fn parse_session(data: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(data).ok()?;
    let lib = text.strip_prefix("session ")?;
    (!lib.is_empty() && !lib.contains(' ')).then(|| lib.to_owned())
}

/// One lock node a mark or write names, with its token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    /// The lock node's full path.
    pub node: String,
    /// Its fencing token as the holder believes it (the node's czxid).
    pub token: i64,
}

/// A mark's data, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mark {
    /// `rust` or `java`.
    pub lib: String,
    /// The lock held: its path (a multi-lock's, the parent of its members; a semaphore's,
    /// the parent of its `locks` and `leases`).
    pub lock: String,
    /// The mode held.
    pub mode: Mode,
    /// The nodes held.
    pub holds: Vec<Held>,
}

/// The name prefix of an unmarked record (under [`MARKS`], before the mark's own name).
pub const UNMARKED: &str = "unmarked-";

/// An unmarked record's data: the holds that could not be marked and, once the holder was
/// told it lost them, how long after the failure that was (ms).
pub fn unmarked_data(
    lib: &str,
    lock: &str,
    mode: Mode,
    holds: &[(&str, i64)],
    lost_after_ms: Option<u64>,
) -> String {
    let mut s = format!("unmarked {}", mark_data(lib, lock, mode, holds));
    if let Some(ms) = lost_after_ms {
        s.push_str(&format!(" lost {ms}"));
    }
    s
}

/// An unmarked record's data, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unmarked {
    /// `rust` (Curator's worker leaves none).
    pub lib: String,
    /// The nodes the hold could not mark.
    pub holds: Vec<Held>,
    /// How long after the failure its holder was told it lost them, if it was (ms).
    pub lost_after_ms: Option<u64>,
}

/// Parses an unmarked record's data.
pub fn parse_unmarked(data: &[u8]) -> Option<Unmarked> {
    let text = std::str::from_utf8(data).ok()?;
    let rest = text.strip_prefix("unmarked ")?;
    let (rest, lost_after_ms) = match rest.rsplit_once(" lost ") {
        Some((rest, ms)) => (rest, Some(ms.parse().ok()?)),
        None => (rest, None),
    };
    let mark = parse_mark(rest.as_bytes())?;
    Some(Unmarked {
        lib: mark.lib,
        holds: mark.holds,
        lost_after_ms,
    })
}

/// The mode a hold holds its nodes in, as a mark or a register write names it: what the
/// holder believes it has, which the judge holds against the node's own kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `exclusive`: alone (a mutex's node, a multi-lock's members).
    Exclusive,
    /// `read`: a read/write lock's read hold (a `__READ__` node).
    Read,
    /// `write`: a read/write lock's write hold (a `__WRIT__` node).
    Write,
    /// `lease`: a semaphore's lease (a semaphore mutex's one).
    Lease,
}

impl Mode {
    /// Its text in a mark or a register value.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Exclusive => "exclusive",
            Mode::Read => "read",
            Mode::Write => "write",
            Mode::Lease => "lease",
        }
    }

    /// The mode `text` names, if it names one.
    pub fn parse(text: &str) -> Option<Mode> {
        [Mode::Exclusive, Mode::Read, Mode::Write, Mode::Lease]
            .into_iter()
            .find(|m| m.as_str() == text)
    }
}

/// Whether `node` (a full path) is a node of the lock at `lock`: it lies below it (a
/// mutex's and a read/write lock's nodes are its children; a multi-lock's and a semaphore's
/// lie in directories below it).
pub fn is_of(node: &str, lock: &str) -> bool {
    node.strip_prefix(lock)
        .and_then(|rest| rest.strip_prefix('/'))
        .is_some_and(|rest| !rest.is_empty())
}

/// Who wrote a register value: the library, and the hold it was written under (its lock,
/// its mode, and the node with its token).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Writer {
    /// `rust` or `java`.
    pub lib: String,
    /// The lock the register belongs to, as the writer says (a path).
    pub lock: String,
    /// The mode of the hold written under.
    pub mode: Mode,
    /// The node written under, with its token.
    pub held: Held,
}

/// A register value, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Value {
    /// The counter.
    pub value: u64,
    /// Who wrote it and under which hold (none for the initial value).
    pub by: Option<Writer>,
}

fn held(field: &str) -> Option<Held> {
    let (node, token) = field.rsplit_once('@')?;
    Some(Held {
        node: node.to_owned(),
        token: token.parse().ok()?,
    })
}

/// A lock's path field: a path (so that no other field is read as one).
fn lock(field: &str) -> Option<String> {
    (field.len() > 1 && field.starts_with('/')).then(|| field.to_owned())
}

/// A mark's data: the library, the lock held (its path), the mode, then each node held
/// with its token.
pub fn mark_data(lib: &str, lock: &str, mode: Mode, holds: &[(&str, i64)]) -> String {
    let mut s = format!("{lib} {lock} {}", mode.as_str());
    for (node, token) in holds {
        s.push_str(&format!(" {node}@{token}"));
    }
    s
}

/// Parses a mark's data.
pub fn parse_mark(data: &[u8]) -> Option<Mark> {
    let text = std::str::from_utf8(data).ok()?;
    let mut fields = text.split_whitespace();
    let lib = fields.next()?.to_owned();
    let lock = lock(fields.next()?)?;
    let mode = Mode::parse(fields.next()?)?;
    let holds = fields.map(held).collect::<Option<Vec<_>>>()?;
    (!holds.is_empty()).then_some(Mark {
        lib,
        lock,
        mode,
        holds,
    })
}

/// A register value's data: the value, then who wrote it under which hold.
pub fn register_data(
    value: u64,
    lib: &str,
    lock: &str,
    mode: Mode,
    node: &str,
    token: i64,
) -> String {
    format!("{value} {lib} {lock} {} {node}@{token}", mode.as_str())
}

/// The counter in a register's data (its first field), 0 if none: what a worker reads.
pub fn register_value(data: &[u8]) -> u64 {
    std::str::from_utf8(data)
        .ok()
        .and_then(|s| s.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Parses a register's data: the counter alone (an initial value) or with its writer, each
/// of the writer's four fields present and well formed.
pub fn parse_register(data: &[u8]) -> Option<Value> {
    let text = std::str::from_utf8(data).ok()?;
    let mut fields = text.split_whitespace();
    let value = fields.next()?.parse().ok()?;
    let by = match fields.next() {
        None => None,
        Some(lib) => Some(Writer {
            lib: lib.to_owned(),
            lock: lock(fields.next()?)?,
            mode: Mode::parse(fields.next()?)?,
            held: held(fields.next()?)?,
        }),
    };
    fields.next().is_none().then_some(Value { value, by })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn marks_and_values_read_back() {
        let d = mark_data(
            "rust",
            "/chaos/multilock",
            Mode::Exclusive,
            &[("/chaos/multilock/0/_c_a-lock-0000000001", 42), ("/x", 7)],
        );
        let m = parse_mark(d.as_bytes()).unwrap();
        assert_eq!(m.lib, "rust");
        assert_eq!(
            (m.lock.as_str(), m.mode),
            ("/chaos/multilock", Mode::Exclusive)
        );
        assert_eq!(m.holds.len(), 2);
        assert_eq!(
            m.holds[1],
            Held {
                node: "/x".into(),
                token: 7
            }
        );
        // Strict: the lock and the mode are there and well formed.
        assert_eq!(parse_mark(b"rust"), None);
        assert_eq!(parse_mark(b"rust /x@7"), None, "the old format");
        assert_eq!(parse_mark(b"rust /chaos/mutex /x@7"), None, "no mode");
        assert_eq!(parse_mark(b"rust /chaos/mutex writer /x@7"), None);
        assert_eq!(parse_mark(b"rust chaos exclusive /x@7"), None);
        assert_eq!(parse_mark(b"rust /chaos/mutex exclusive"), None);
        let v = register_data(
            9,
            "java",
            "/chaos/rwlock",
            Mode::Write,
            "/chaos/rwlock/_c_a-__WRIT__0000000003",
            4_294_967_301,
        );
        assert_eq!(register_value(v.as_bytes()), 9);
        let p = parse_register(v.as_bytes()).unwrap();
        let by = p.by.unwrap();
        assert_eq!((by.lock.as_str(), by.mode), ("/chaos/rwlock", Mode::Write));
        assert_eq!(by.held.token, 4_294_967_301);
        assert_eq!(parse_register(b"0").unwrap(), Value { value: 0, by: None });
        assert_eq!(parse_register(b"0 rust"), None);
        assert_eq!(parse_register(b"1 rust /m@3"), None, "the old format");
        assert_eq!(parse_register(b"1 rust /m exclusive"), None);
        assert_eq!(parse_register(b"1 rust /m exclusive /m/n@3 more"), None);
        assert_eq!(register_value(b""), 0);
        let u = unmarked_data("rust", "/x", Mode::Read, &[("/x/r", 7)], None);
        assert_eq!(parse_mark(u.as_bytes()), None, "not read as a mark");
        let p = parse_unmarked(u.as_bytes()).unwrap();
        assert_eq!(
            (p.lib.as_str(), p.holds.len(), p.lost_after_ms),
            ("rust", 1, None)
        );
        let told = unmarked_data(
            "rust",
            "/x",
            Mode::Exclusive,
            &[("/x/a", 7), ("/x/b", 8)],
            Some(1234),
        );
        let p = parse_unmarked(told.as_bytes()).unwrap();
        assert_eq!((p.holds.len(), p.lost_after_ms), (2, Some(1234)));
        assert_eq!(
            parse_unmarked(b"unmarked rust /x exclusive /x/a@7 lost soon"),
            None
        );
        assert_eq!(parse_unmarked(b"unmarked rust /x@7"), None);
        assert_eq!(parse_unmarked(b"unmarked rust"), None);
    }

    #[test]
    fn a_node_is_of_the_lock_it_lies_below() {
        assert!(is_of("/chaos/mutex/_c_a-lock-0000000001", "/chaos/mutex"));
        assert!(is_of(
            "/chaos/multilock/1/_c_a-lock-0000000001",
            "/chaos/multilock"
        ));
        assert!(!is_of(
            "/chaos/multilock/1/_c_a-lock-0000000001",
            "/chaos/multilock/0"
        ));
        assert!(!is_of(
            "/chaos/semaphore-mutex/leases/x",
            "/chaos/semaphore"
        ));
        assert!(!is_of("/chaos/mutex", "/chaos/mutex") && !is_of("/chaos/mutex/", "/chaos/mutex"));
    }
}
