//! What a hold leaves on the server: its **mark**, and the **register** values it writes.
//!
//! - A mark is an EPHEMERAL node `<MARKS>/<name>` (any unique name: ours and Curator's
//!   workers use `<lib>-<recipe>-<process>-<client>-<n>`), created by the holder's own
//!   session (the lock's, not the store's) when the critical section begins (ours in one
//!   `multi` with the guard's `check_ops`; Curator's plainly) and deleted when it ends,
//!   before the release. It sits outside the lock directories, so no recipe's listing sees
//!   it. Its data, ASCII: `<lib> <node>@<token>[ <node>@<token>...]`: the library (`rust`,
//!   `java`), then each lock node held (a multi-lock's members, each) by its full path with
//!   its fencing token (the node's czxid, in decimal).
//! - A session's **registration** is an EPHEMERAL node `<MARKS>/session-<lib>-<name>` whose
//!   data is `session <lib>`, created by the session itself before it touches any lock. Ours
//!   register every session (a replacement after an expiry too); Curator's workers do not
//!   (Curator replaces an expired session on its own), so a session that never registered
//!   is Curator's, and the judge checks that no registered session of ours made a lock node
//!   before its registration.
//! - A hold of ours whose mark could not be made (its `multi` failed, or its outcome stayed
//!   unknown for a session timeout) leaves an **unmarked record** instead: an EPHEMERAL node
//!   `<MARKS>/unmarked-<name>` (`<name>` the mark's own) made by the worker's store session
//!   (which outlives the lock's), data `unmarked <lib> <node>@<token>[ ...]`; once the guard
//!   has told the holder it lost the hold, the worker sets it to the same followed by
//!   ` lost <ms>`: how long after the failure the holder was told. The judge accounts for
//!   every hold of ours by its mark or by such a record ([`super::Verdict::account`]).
//! - A register write is a `setData` of `<REGISTERS>/<register>` whose data is `<value>
//!   <lib> <node>@<token>`: the value (what the old checker reads), the library, and the
//!   lock node under which it was written with that node's token (for a multi-lock's
//!   register k, member k's node).

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
    /// The nodes held.
    pub holds: Vec<Held>,
}

/// The name prefix of an unmarked record (under [`MARKS`], before the mark's own name).
pub const UNMARKED: &str = "unmarked-";

/// An unmarked record's data: the holds that could not be marked and, once the holder was
/// told it lost them, how long after the failure that was (ms).
pub fn unmarked_data(lib: &str, holds: &[(&str, i64)], lost_after_ms: Option<u64>) -> String {
    let mut s = format!("unmarked {}", mark_data(lib, holds));
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

/// A register value, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Value {
    /// The counter.
    pub value: u64,
    /// Who wrote it and under which node (none for the initial value).
    pub by: Option<(String, Held)>,
}

fn held(field: &str) -> Option<Held> {
    let (node, token) = field.rsplit_once('@')?;
    Some(Held {
        node: node.to_owned(),
        token: token.parse().ok()?,
    })
}

/// A mark's data.
pub fn mark_data(lib: &str, holds: &[(&str, i64)]) -> String {
    let mut s = lib.to_owned();
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
    let holds = fields.map(held).collect::<Option<Vec<_>>>()?;
    (!holds.is_empty()).then_some(Mark { lib, holds })
}

/// A register value's data.
pub fn register_data(value: u64, lib: &str, node: &str, token: i64) -> String {
    format!("{value} {lib} {node}@{token}")
}

/// The counter in a register's data (its first field), 0 if none: what a worker reads.
pub fn register_value(data: &[u8]) -> u64 {
    std::str::from_utf8(data)
        .ok()
        .and_then(|s| s.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Parses a register's data: the counter alone (an initial value) or with its writer.
pub fn parse_register(data: &[u8]) -> Option<Value> {
    let text = std::str::from_utf8(data).ok()?;
    let mut fields = text.split_whitespace();
    let value = fields.next()?.parse().ok()?;
    let by = match (fields.next(), fields.next()) {
        (None, _) => None,
        (Some(lib), Some(h)) => Some((lib.to_owned(), held(h)?)),
        (Some(_), None) => return None,
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
            &[("/chaos/multilock/0/_c_a-lock-0000000001", 42), ("/x", 7)],
        );
        let m = parse_mark(d.as_bytes()).unwrap();
        assert_eq!(m.lib, "rust");
        assert_eq!(m.holds.len(), 2);
        assert_eq!(
            m.holds[1],
            Held {
                node: "/x".into(),
                token: 7
            }
        );
        assert_eq!(parse_mark(b"rust"), None);
        let v = register_data(
            9,
            "java",
            "/chaos/mutex/_c_a-lock-0000000003",
            4_294_967_301,
        );
        assert_eq!(register_value(v.as_bytes()), 9);
        let p = parse_register(v.as_bytes()).unwrap();
        assert_eq!(p.by.unwrap().1.token, 4_294_967_301);
        assert_eq!(parse_register(b"0").unwrap(), Value { value: 0, by: None });
        assert_eq!(parse_register(b"0 rust"), None);
        assert_eq!(register_value(b""), 0);
        let u = unmarked_data("rust", &[("/x", 7)], None);
        assert_eq!(parse_mark(u.as_bytes()), None, "not read as a mark");
        let p = parse_unmarked(u.as_bytes()).unwrap();
        assert_eq!(
            (p.lib.as_str(), p.holds.len(), p.lost_after_ms),
            ("rust", 1, None)
        );
        let told = unmarked_data("rust", &[("/x", 7), ("/y", 8)], Some(1234));
        let p = parse_unmarked(told.as_bytes()).unwrap();
        assert_eq!((p.holds.len(), p.lost_after_ms), (2, Some(1234)));
        assert_eq!(parse_unmarked(b"unmarked rust /x@7 lost soon"), None);
        assert_eq!(parse_unmarked(b"unmarked rust"), None);
    }
}
