//! [`Sequencer`]: a held lock's proof, in a stable text form, that any ZooKeeper client can
//! check (Chubby's `CheckSequencer`), so that a service outside ZooKeeper fences without
//! trusting the caller.
//!
//! - The text names the lock node, its creation zxid and its owning session; nothing in it is
//!   believed: [`Sequencer::check`] asks the server.
//! - The check is `sync` on the lock path, then one `multi_read` (the lock's children and the
//!   node's `Stat`), judged by [`Sequencer::judge`], a pure function using the recipe's own
//!   grant rule (`recipes_core::participants`).
//! - A semaphore's lease ([`NodeKind::Lease`]) is granted by a count taken under the
//!   semaphore's inner lock, not by its place: its check reads the inner lock's holder too
//!   (the `lease` module says why that decides it).

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use recipes_core::participants::{Rule, Standing, places};
use recipes_core::rwlock::{READ_LOCK_NAME, WRITE_LOCK_NAME, rw_sort};
use recipes_core::{Exclusive, Predicate};
use zk_client::{Client, ReadOp, ReadResult, Stat};

use crate::Error;

mod lease;

/// The text form's prefix and version: `zk-seq:1:`.
pub const SEQUENCER_PREFIX: &str = "zk-seq:1:";

/// The lock kind a sequencer was given by: which grant rule judges it. A sequencer of one
/// kind whose node is another kind's is refused (`NotALockNode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum NodeKind {
    /// An [`InterProcessMutex`](crate::InterProcessMutex): granted when first by sequence
    /// among the lock's children.
    Mutex,
    /// A read lock (`recipe-rwlock`, Curator's `__READ__` nodes): granted when no write node
    /// sorts before it.
    Read,
    /// A write lock (`__WRIT__` nodes): granted when first of the lock's children.
    Write,
    /// A semaphore's lease (`recipe-semaphore`, Curator's `InterProcessSemaphoreV2` and
    /// `InterProcessSemaphoreMutex`: `<semaphore>/leases/_c_…-lease-<seq>` nodes): granted
    /// unless its session holds the semaphore's inner lock (`<semaphore>/locks`) since before
    /// the lease was made and it may still be counting (see [`SequencerCheck::Pending`]).
    Lease,
}

impl NodeKind {
    fn as_str(self) -> &'static str {
        match self {
            NodeKind::Mutex => "mutex",
            NodeKind::Read => "read",
            NodeKind::Write => "write",
            NodeKind::Lease => "lease",
        }
    }

    /// The kind whose node `name` is (a read or write node by its lock name, a lease by its
    /// sequence after `lease-`; else a mutex's).
    pub(crate) fn of_node(name: &str) -> Self {
        if name.contains(READ_LOCK_NAME) {
            NodeKind::Read
        } else if name.contains(WRITE_LOCK_NAME) {
            NodeKind::Write
        } else if recipes_core::name::sequence(name, recipes_core::semaphore::LEASE_NAME).is_some()
        {
            NodeKind::Lease
        } else {
            NodeKind::Mutex
        }
    }

    /// The kind's grant rule for the child `name` (`None`: not one of the kind's family; a
    /// lease has no rule by place).
    fn rule_for(self, name: &str) -> Option<Rule> {
        match self {
            NodeKind::Lease => None,
            NodeKind::Mutex => name
                .contains(recipes_core::name::MUTEX_LOCK_NAME)
                .then_some(Rule::Exclusive { max: 1 }),
            NodeKind::Read | NodeKind::Write => match NodeKind::of_node(name) {
                NodeKind::Read => Some(Rule::Read),
                NodeKind::Write => Some(Rule::Write),
                NodeKind::Mutex | NodeKind::Lease => None,
            },
        }
    }

    /// The rule the kind's own nodes are judged by by place (a lease has none: `rule_for`
    /// gives it `None`, so [`Sequencer::judge`] finds it no lock node; `lease::judge` judges
    /// it).
    fn own_rule(self) -> Rule {
        match self {
            NodeKind::Mutex | NodeKind::Lease => Rule::Exclusive { max: 1 },
            NodeKind::Read => Rule::Read,
            NodeKind::Write => Rule::Write,
        }
    }
}

/// A held lock's proof for a service outside ZooKeeper: the lock's path, the lock node, its
/// creation zxid (the fencing token) and the session that owns it. The holder hands it over
/// as text (`to_string()`); the service parses it (`parse()`) and asks ZooKeeper through its
/// own client with [`Sequencer::check`]: the node must still exist, be owned by that session,
/// have that czxid, and be granted by the lock's rule. A holder whose node was deleted, whose
/// session ended, or who is still waiting is refused, whatever it claims.
///
/// The text form is stable and versioned:
/// `zk-seq:1:<kind>:<session id, 16 hex digits>:<czxid, decimal>:<node path>` (kind `mutex`,
/// `read`, `write` or `lease`), e.g.
/// `zk-seq:1:mutex:0000018c2f3a0001:4294967302:/app/locks/orders/_c_…-lock-0000000007`.
/// The lock path is the node's parent; a lease's node is `<semaphore>/leases/<name>`, and its
/// lock path is the semaphore's. Malformed text is a [`ParseSequencerError`].
///
/// # Examples
///
/// The holder's side, then a storage service that fences with it:
///
/// ```no_run
/// use recipe_mutex::{InterProcessMutex, Sequencer, SequencerCheck};
///
/// # async fn f(holder: zk_client::Client, service: zk_client::Client) -> Result<(), Box<dyn std::error::Error>> {
/// let guard = InterProcessMutex::new(holder, "/app/locks/orders")?.lock().await?;
/// let text = guard.sequencer().to_string(); // sent along with the write request
///
/// // In the service, which trusts nothing the caller says:
/// let sequencer: Sequencer = text.parse()?;
/// match sequencer.check(&service).await? {
///     SequencerCheck::Valid => { /* apply the write; remember sequencer.czxid() as the last token */ }
///     refused => eprintln!("write refused: {refused}"),
/// }
/// # Ok(()) }
/// ```
///
/// A check is a snapshot: the lock can be lost just after it. A service that must never apply
/// a stale write also refuses tokens (`czxid()`) lower than the highest it has applied.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Sequencer {
    kind: NodeKind,
    session_id: i64,
    czxid: i64,
    node: String,
    /// Where the node's name starts in `node` (after the last `/`).
    name_at: usize,
    /// Where the lock's path ends in `node`: the node's parent, or a lease's grandparent.
    lock_end: usize,
}

/// What a check of a [`Sequencer`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SequencerCheck {
    /// The node exists, is that session's and that creation's, and the lock's rule grants it.
    Valid,
    /// The node is gone (released, deleted by another client, or its session ended).
    NodeGone,
    /// Not held yet, as far as the tree can tell: a lease whose session holds the
    /// semaphore's inner lock since before the lease was made, so it may still be waiting for
    /// its count (a granted lease's inner lock is released right after; the check waited for
    /// that, up to its bound). A lease given by a guard is granted, and checks `Valid` once
    /// its session's inner lock has changed hands.
    Pending,
    /// A node of that path exists but was created later (another creation).
    OtherNode {
        /// The existing node's creation zxid.
        czxid: i64,
    },
    /// The node belongs to another session (0: not an ephemeral node).
    OtherOwner {
        /// The node's owning session.
        session_id: i64,
    },
    /// The node waits: other participants sort before it.
    NotGranted {
        /// How many children of the lock sort before it.
        ahead: usize,
    },
    /// The node's name is not one of the lock kind's nodes.
    NotALockNode,
}

impl SequencerCheck {
    /// Whether the sequencer holds the lock.
    pub fn is_valid(&self) -> bool {
        *self == SequencerCheck::Valid
    }
}

impl fmt::Display for SequencerCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SequencerCheck::Valid => f.write_str("valid: the lock is held"),
            SequencerCheck::NodeGone => f.write_str("not held: the lock node is gone"),
            SequencerCheck::Pending => f.write_str(
                "not held yet: the lease may still be waiting (its session holds the \
                 semaphore's inner lock)",
            ),
            SequencerCheck::OtherNode { czxid } => {
                write!(f, "not held: the node was created again (czxid {czxid})")
            }
            SequencerCheck::OtherOwner { session_id } => {
                write!(f, "not held: the node is session {session_id:#x}'s")
            }
            SequencerCheck::NotGranted { ahead } => {
                write!(f, "not held: {ahead} participants are ahead")
            }
            SequencerCheck::NotALockNode => f.write_str("not held: not a lock node"),
        }
    }
}

/// Why a sequencer's text could not be read. Ask the holder for a fresh one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParseSequencerError {
    /// It does not start with `zk-seq:1:` (another version, or not a sequencer).
    #[error("not a version 1 sequencer (expected the prefix {SEQUENCER_PREFIX})")]
    BadPrefix,
    /// A field is missing.
    #[error("the sequencer's {0} is missing")]
    Missing(&'static str),
    /// The lock kind is not one this version knows.
    #[error("unknown lock kind {0:?}")]
    UnknownKind(String),
    /// The session id is not 16 hex digits.
    #[error("bad session id {0:?} (16 hex digits expected)")]
    BadSession(String),
    /// The czxid is not a decimal number (a zxid: not negative).
    #[error("bad czxid {0:?}")]
    BadCzxid(String),
    /// The node path is not a valid ZooKeeper path with a parent (the lock's path; for a
    /// lease, a parent named `leases` under the semaphore's path).
    #[error("bad node path {0:?}")]
    BadNode(String),
}

impl Sequencer {
    /// A sequencer naming `node` (a lock node's full path; its parent is the lock's path),
    /// created at `czxid` (a zxid: not negative) by session `session_id`: what a service
    /// builds from what it learnt otherwise. A guard gives its own with
    /// [`Hold::sequencer`](crate::Hold::sequencer).
    pub fn new(
        kind: NodeKind,
        node: &str,
        czxid: i64,
        session_id: i64,
    ) -> Result<Self, ParseSequencerError> {
        if czxid < 0 {
            return Err(ParseSequencerError::BadCzxid(czxid.to_string()));
        }
        let bad = || ParseSequencerError::BadNode(node.to_owned());
        zk_proto::validate_path(node, false).map_err(|_| bad())?;
        let bounds = bounds(kind, node).ok_or_else(bad)?;
        Ok(Sequencer::with_bounds(
            kind, node, czxid, session_id, bounds,
        ))
    }

    /// A held node's sequencer (its path comes from the server: not checked again).
    pub(crate) fn held(kind: NodeKind, node: &str, czxid: i64, session_id: i64) -> Self {
        let bounds = bounds(kind, node).unwrap_or_else(|| {
            let name_at = node.rfind('/').map_or(0, |slash| slash + 1);
            (name_at, name_at.saturating_sub(1))
        });
        Sequencer::with_bounds(kind, node, czxid, session_id, bounds)
    }

    /// The sequencer, its name's start and its lock path's end in `node` given.
    fn with_bounds(
        kind: NodeKind,
        node: &str,
        czxid: i64,
        session_id: i64,
        (name_at, lock_end): (usize, usize),
    ) -> Self {
        Sequencer {
            kind,
            session_id,
            czxid,
            node: node.to_owned(),
            name_at,
            lock_end,
        }
    }

    /// The lock kind.
    pub fn kind(&self) -> NodeKind {
        self.kind
    }

    /// The lock's path: the node's parent (a lease's: the semaphore's path, its
    /// grandparent).
    pub fn lock_path(&self) -> &str {
        self.node.get(..self.lock_end).unwrap_or_default()
    }

    /// The lock node's full path.
    pub fn node(&self) -> &str {
        &self.node
    }

    /// The lock node's name (the last part of its path).
    pub fn node_name(&self) -> &str {
        self.node.get(self.name_at..).unwrap_or_default()
    }

    /// The lock node's creation zxid: the fencing token.
    pub fn czxid(&self) -> i64 {
        self.czxid
    }

    /// The session that owns the lock node.
    pub fn session_id(&self) -> i64 {
        self.session_id
    }

    /// Asks ZooKeeper, through `client` (any session), whether this sequencer holds its lock:
    /// `sync` on the lock path (so the server answering has everything committed before),
    /// then one `multi_read` of the lock's children and the node's data, judged by
    /// [`Sequencer::judge`]. An error is the client's (connection, session): no verdict.
    ///
    /// A lease's check also reads the semaphore's inner lock and its holder's node, and when
    /// the lease may still be waiting it waits up to [`LEASE_PENDING_WAIT`] for that to
    /// settle ([`Sequencer::check_within`]).
    pub async fn check(&self, client: &Client) -> Result<SequencerCheck, Error> {
        self.check_within(client, LEASE_PENDING_WAIT).await
    }

    /// [`Sequencer::check`], waiting at most `wait` for a lease that may still be waiting
    /// (its session holding the semaphore's inner lock since before it) to settle: the
    /// inner lock's holder leaving, or the leases changing, is read again; after `wait`,
    /// [`SequencerCheck::Pending`]. `Duration::ZERO` answers from the first read;
    /// `Duration::MAX` waits as long as it takes. Other kinds never wait.
    pub async fn check_within(
        &self,
        client: &Client,
        wait: Duration,
    ) -> Result<SequencerCheck, Error> {
        if self.kind == NodeKind::Lease {
            return lease::check(self, client, wait).await;
        }
        let lock_path = self.lock_path();
        match client.sync(lock_path).await {
            Ok(()) | Err(zk_client::Error::NoNode) => {}
            Err(e) => return Err(e.into()),
        }
        let reads = [
            ReadOp::GetChildren(lock_path.to_owned()),
            ReadOp::GetData(self.node.clone()),
        ];
        let mut results = client.multi_read(&reads).await?.into_iter();
        let children = match results.next() {
            Some(Ok(ReadResult::Children(children))) => children,
            Some(Err(zk_client::Error::NoNode)) => Vec::new(),
            Some(Err(e)) => return Err(e.into()),
            Some(Ok(ReadResult::Data(..))) | None => return Err(unexpected()),
        };
        let stat = match results.next() {
            Some(Ok(ReadResult::Data(_, stat))) => Some(stat),
            Some(Err(zk_client::Error::NoNode)) => None,
            Some(Err(e)) => return Err(e.into()),
            Some(Ok(ReadResult::Children(_))) | None => return Err(unexpected()),
        };
        Ok(self.judge(children, stat.as_ref()))
    }

    /// The verdict on one read: the lock's `children` (names, as listed) and the node's `Stat`
    /// (`None`: no such node). Pure; [`Sequencer::check`] does the reads. A lease is not
    /// judged by place: its sequencer is [`SequencerCheck::NotALockNode`] here, and
    /// [`Sequencer::check`] judges it from its semaphore's inner lock as well.
    pub fn judge(&self, children: Vec<String>, stat: Option<&Stat>) -> SequencerCheck {
        let Some(stat) = stat else {
            return SequencerCheck::NodeGone;
        };
        if stat.czxid != self.czxid {
            return SequencerCheck::OtherNode { czxid: stat.czxid };
        }
        if stat.ephemeral_owner != self.session_id {
            return SequencerCheck::OtherOwner {
                session_id: stat.ephemeral_owner,
            };
        }
        let ours = self.node_name();
        if self.kind.rule_for(ours) != Some(self.kind.own_rule()) {
            return SequencerCheck::NotALockNode;
        }
        let kind = self.kind;
        let queue = match kind {
            // A lease never gets here: no rule by place (see `own_rule`).
            NodeKind::Mutex | NodeKind::Lease => {
                let mutex = Exclusive::mutex();
                places(children, |c| mutex.sort(c), |name| kind.rule_for(name))
            }
            NodeKind::Read | NodeKind::Write => {
                places(children, rw_sort, |name| kind.rule_for(name))
            }
        };
        match queue.iter().position(|p| p.name == ours) {
            None => SequencerCheck::NodeGone,
            Some(at) => match queue.get(at).map(|p| &p.standing) {
                Some(Standing::Holds) => SequencerCheck::Valid,
                Some(Standing::Waits { .. }) => SequencerCheck::NotGranted { ahead: at },
                Some(Standing::Foreign) | None => SequencerCheck::NotALockNode,
            },
        }
    }
}

/// How long [`Sequencer::check`] waits for a lease that may still be waiting to settle: a
/// granted lease's session lets the semaphore's inner lock go right after its count (one
/// delete in flight), so this covers that delete's commit with room to spare.
pub const LEASE_PENDING_WAIT: Duration = Duration::from_secs(1);

/// Where `node`'s name starts and where its lock's path ends, for a sequencer of `kind`:
/// `None` if the node has no parent (a lease: no `leases` parent under a semaphore's path).
fn bounds(kind: NodeKind, node: &str) -> Option<(usize, usize)> {
    let slash = node.rfind('/')?;
    if slash == 0 || slash + 1 >= node.len() {
        return None;
    }
    if kind != NodeKind::Lease {
        return Some((slash + 1, slash));
    }
    let parent = node.get(..slash)?;
    let up = parent.rfind('/')?;
    (up > 0 && parent.get(up + 1..) == Some(recipes_core::semaphore::LEASES_DIR))
        .then_some((slash + 1, up))
}

pub(crate) fn unexpected() -> Error {
    Error::Zk(zk_client::Error::Protocol(
        zk_client::ProtocolError::Unexpected("a multi_read answered out of kind"),
    ))
}

impl fmt::Display for Sequencer {
    /// `zk-seq:1:<kind>:<session, 16 hex digits>:<czxid>:<node path>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{SEQUENCER_PREFIX}{}:{:016x}:{}:{}",
            self.kind.as_str(),
            self.session_id,
            self.czxid,
            self.node
        )
    }
}

impl FromStr for Sequencer {
    type Err = ParseSequencerError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let rest = s
            .strip_prefix(SEQUENCER_PREFIX)
            .ok_or(ParseSequencerError::BadPrefix)?;
        // The node path goes last: a path may hold ':'.
        let mut fields = rest.splitn(4, ':');
        let kind = match fields.next() {
            Some("mutex") => NodeKind::Mutex,
            Some("read") => NodeKind::Read,
            Some("write") => NodeKind::Write,
            Some("lease") => NodeKind::Lease,
            Some("") | None => return Err(ParseSequencerError::Missing("lock kind")),
            Some(other) => return Err(ParseSequencerError::UnknownKind(other.to_owned())),
        };
        let session = fields
            .next()
            .ok_or(ParseSequencerError::Missing("session id"))?;
        let bad_session = || ParseSequencerError::BadSession(session.to_owned());
        if session.len() != 16 || !session.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(bad_session());
        }
        // As the id's bits: a session id may be negative as an i64.
        let session_id = u64::from_str_radix(session, 16).map_err(|_| bad_session())? as i64;
        let czxid = fields.next().ok_or(ParseSequencerError::Missing("czxid"))?;
        if czxid.is_empty() || !czxid.bytes().all(|b| b.is_ascii_digit()) {
            return Err(ParseSequencerError::BadCzxid(czxid.to_owned()));
        }
        let czxid: i64 = czxid
            .parse()
            .map_err(|_| ParseSequencerError::BadCzxid(czxid.to_owned()))?;
        let node = fields
            .next()
            .ok_or(ParseSequencerError::Missing("node path"))?;
        Sequencer::new(kind, node, czxid, session_id)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    const NODE: &str = "/app/locks/x/_c_u1-lock-0000000002";

    fn seq() -> Sequencer {
        Sequencer::new(NodeKind::Mutex, NODE, 42, 0x1234).unwrap()
    }

    fn stat(czxid: i64, owner: i64) -> Stat {
        Stat {
            czxid,
            ephemeral_owner: owner,
            ..Stat::default()
        }
    }

    fn kids(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn the_text_form_round_trips_and_is_stable() {
        let s = seq();
        let text = s.to_string();
        assert_eq!(
            text,
            "zk-seq:1:mutex:0000000000001234:42:/app/locks/x/_c_u1-lock-0000000002"
        );
        assert_eq!(text.parse::<Sequencer>().unwrap(), s);
        assert_eq!(s.lock_path(), "/app/locks/x");
        assert_eq!(s.node_name(), "_c_u1-lock-0000000002");
        // A negative session id (its top bit set) and a path holding ':' round-trip too.
        let odd = Sequencer::new(NodeKind::Mutex, "/a:b/lock-0000000001", 7, -2).unwrap();
        assert_eq!(odd.to_string().parse::<Sequencer>().unwrap(), odd);
        // A negative czxid is no zxid: refused when built, so every sequencer round-trips.
        assert_eq!(
            Sequencer::new(NodeKind::Mutex, NODE, -1, 1),
            Err(ParseSequencerError::BadCzxid("-1".into()))
        );
    }

    #[test]
    fn malformed_text_is_refused_with_its_reason() {
        use ParseSequencerError::*;
        let cases: &[(&str, ParseSequencerError)] = &[
            ("", BadPrefix),
            ("zk-seq:2:mutex:0000000000001234:42:/a/b", BadPrefix),
            ("zk-seq:1:", Missing("lock kind")),
            ("zk-seq:1:mutex", Missing("session id")),
            (
                "zk-seq:1:rw:0000000000001234:42:/a/b",
                UnknownKind("rw".into()),
            ),
            (
                "zk-seq:1:Mutex:0000000000001234:42:/a/b",
                UnknownKind("Mutex".into()),
            ),
            ("zk-seq:1:mutex:1234:42:/a/b", BadSession("1234".into())),
            (
                "zk-seq:1:mutex:+00000000000123g:42:/a/b",
                BadSession("+00000000000123g".into()),
            ),
            ("zk-seq:1:mutex:0000000000001234", Missing("czxid")),
            (
                "zk-seq:1:mutex:0000000000001234:-4:/a/b",
                BadCzxid("-4".into()),
            ),
            (
                "zk-seq:1:mutex:0000000000001234:99999999999999999999:/a/b",
                BadCzxid("99999999999999999999".into()),
            ),
            ("zk-seq:1:mutex:0000000000001234:42", Missing("node path")),
            (
                "zk-seq:1:mutex:0000000000001234:42:/b",
                BadNode("/b".into()),
            ),
            (
                "zk-seq:1:mutex:0000000000001234:42:/a/",
                BadNode("/a/".into()),
            ),
            (
                "zk-seq:1:mutex:0000000000001234:42:a/b",
                BadNode("a/b".into()),
            ),
            (
                "zk-seq:1:mutex:0000000000001234:42:/a//b",
                BadNode("/a//b".into()),
            ),
            (
                "zk-seq:1:mutex:0000000000001234:42:/é/\u{0}",
                BadNode("/é/\u{0}".into()),
            ),
        ];
        for (text, want) in cases {
            assert_eq!(text.parse::<Sequencer>().as_ref(), Err(want), "{text:?}");
        }
    }

    #[test]
    fn the_first_node_by_sequence_of_its_session_and_creation_is_valid() {
        let children = kids(&["_c_u3-lock-0000000003", "_c_u1-lock-0000000002"]);
        assert_eq!(
            seq().judge(children, Some(&stat(42, 0x1234))),
            SequencerCheck::Valid
        );
    }

    #[test]
    fn a_node_gone_another_creation_or_another_owner_is_not_valid() {
        let s = seq();
        let children = kids(&["_c_u1-lock-0000000002"]);
        assert_eq!(s.judge(children.clone(), None), SequencerCheck::NodeGone);
        assert_eq!(
            s.judge(children.clone(), Some(&stat(43, 0x1234))),
            SequencerCheck::OtherNode { czxid: 43 }
        );
        assert_eq!(
            s.judge(children, Some(&stat(42, 0x99))),
            SequencerCheck::OtherOwner { session_id: 0x99 }
        );
        // The node read but not listed (cannot happen in one read; judged as gone).
        assert_eq!(
            s.judge(Vec::new(), Some(&stat(42, 0x1234))),
            SequencerCheck::NodeGone
        );
    }

    #[test]
    fn a_waiter_or_a_node_behind_a_foreign_child_is_not_granted() {
        let s = seq();
        let children = kids(&["_c_u0-lock-0000000001", "_c_u1-lock-0000000002"]);
        assert_eq!(
            s.judge(children, Some(&stat(42, 0x1234))),
            SequencerCheck::NotGranted { ahead: 1 }
        );
        // Curator's mutex counts a foreign child that sorts first.
        let children = kids(&["_c_u1-lock-0000000002", "-stray", "_c_u2-lock-0000000005"]);
        assert_eq!(
            s.judge(children, Some(&stat(42, 0x1234))),
            SequencerCheck::NotGranted { ahead: 1 }
        );
        let foreign = Sequencer::new(NodeKind::Mutex, "/app/locks/x/other", 42, 0x1234).unwrap();
        // A mutex sequencer naming a read node: another kind's node.
        let read = Sequencer::new(NodeKind::Mutex, "/a/_c_u-__READ__0000000001", 42, 0x1234);
        assert_eq!(
            read.unwrap()
                .judge(kids(&["_c_u-__READ__0000000001"]), Some(&stat(42, 0x1234))),
            SequencerCheck::NotALockNode
        );
        assert_eq!(
            foreign.judge(kids(&["other"]), Some(&stat(42, 0x1234))),
            SequencerCheck::NotALockNode
        );
    }

    #[test]
    fn readers_ahead_of_any_writer_are_valid_and_a_writer_is_granted_only_first() {
        let children = kids(&[
            "_c_r1-__READ__0000000001",
            "_c_w-__WRIT__0000000002",
            "_c_r2-__READ__0000000003",
            "_c_r3-__READ__0000000000",
        ]);
        let at = |kind, name: &str| {
            let node = format!("/rw/{name}");
            Sequencer::new(kind, &node, 42, 0x1234)
                .unwrap()
                .judge(children.clone(), Some(&stat(42, 0x1234)))
        };
        assert_eq!(
            at(NodeKind::Read, "_c_r1-__READ__0000000001"),
            SequencerCheck::Valid
        );
        assert_eq!(
            at(NodeKind::Read, "_c_r3-__READ__0000000000"),
            SequencerCheck::Valid
        );
        assert_eq!(
            at(NodeKind::Write, "_c_w-__WRIT__0000000002"),
            SequencerCheck::NotGranted { ahead: 2 }
        );
        assert_eq!(
            at(NodeKind::Read, "_c_r2-__READ__0000000003"),
            SequencerCheck::NotGranted { ahead: 3 }
        );
        // The kind must be the node's: a write claim on a read node is refused.
        assert_eq!(
            at(NodeKind::Write, "_c_r1-__READ__0000000001"),
            SequencerCheck::NotALockNode
        );
        let read = Sequencer::new(NodeKind::Read, "/rw/_c_r1-__READ__0000000001", 1, 2).unwrap();
        assert_eq!(read.to_string().parse::<Sequencer>().unwrap(), read);
        assert!(read.to_string().starts_with("zk-seq:1:read:"));
    }
}
