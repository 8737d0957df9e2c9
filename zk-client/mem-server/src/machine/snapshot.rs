//! The machine's state as bytes and back: what a server restarted from its data directory
//! has (ZooKeeper's snapshot and log): every node with its full stat, ACL and kind, every
//! session (id, password, timeout), the last zxid and the next session id. Not kept, as in
//! ZooKeeper: connections, watches (clients set theirs again on reconnecting), identities
//! added by `addAuth` (clients add theirs again). A restored session's deadline starts over
//! at its whole timeout, as ZooKeeper's session tracker does on loading.
//!
//! The bytes are jute, zk-proto's encoding: a magic and version, then the fields in order.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use zk_proto::records::{Acl, Buffer, Stat};
use zk_proto::{Decode, Encode, Reader};

use super::{ServerConfig, ServerMachine, Session};
use crate::data_tree::{DataTree, Node};

/// `ZKMS`, and the format's version.
const MAGIC: i32 = 0x5a4b_4d53;
const VERSION: i32 = 1;

/// Why bytes are not a snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotError(pub String);

impl std::fmt::Display for SnapshotError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "not a zk-mem-server snapshot: {}", self.0)
    }
}

impl std::error::Error for SnapshotError {}

fn put(out: &mut BytesMut, value: &impl Encode) -> Result<(), SnapshotError> {
    value
        .encode(out)
        .map_err(|e| SnapshotError(format!("encoding: {e}")))
}

fn get<T: Decode>(r: &mut Reader<'_>) -> Result<T, SnapshotError> {
    T::decode(r).map_err(|e| SnapshotError(e.to_string()))
}

fn count(n: usize) -> Result<i32, SnapshotError> {
    i32::try_from(n).map_err(|_| SnapshotError(format!("{n} entries")))
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

impl ServerMachine {
    /// The state a restart keeps, as bytes ([`ServerMachine::restore`] reads them).
    ///
    /// # Errors
    /// Only a count or a string over `i32::MAX`, which jute cannot carry.
    pub fn snapshot(&self) -> Result<Bytes, SnapshotError> {
        let mut out = BytesMut::new();
        put(&mut out, &MAGIC)?;
        put(&mut out, &VERSION)?;
        put(&mut out, &self.zxid)?;
        put(&mut out, &self.next_session)?;
        put(&mut out, &count(self.sessions.len())?)?;
        for (id, s) in &self.sessions {
            put(&mut out, id)?;
            put(&mut out, &Some(s.passwd.clone()))?;
            put(&mut out, &millis(s.timeout))?;
        }
        put(&mut out, &count(self.tree.len())?)?;
        for (path, node) in self.tree.nodes() {
            put(&mut out, &path.to_owned())?;
            put(&mut out, &node.data)?;
            put(&mut out, &node.acl)?;
            put(&mut out, &node.persisted)?;
            put(&mut out, &node.container)?;
            put(&mut out, &node.ttl.unwrap_or(-1))?;
            put(&mut out, &node.had_child)?;
        }
        Ok(out.freeze())
    }

    /// A server with `config`, started at `now` from a [`ServerMachine::snapshot`]: its nodes,
    /// sessions (each with its whole timeout from `now`), last zxid and next session id.
    ///
    /// # Errors
    /// Bytes that are not a whole snapshot of this format.
    pub fn restore(
        config: ServerConfig,
        now: Instant,
        bytes: &[u8],
    ) -> Result<Self, SnapshotError> {
        let mut r = Reader::new(bytes);
        if get::<i32>(&mut r)? != MAGIC {
            return Err(SnapshotError("bad magic".to_owned()));
        }
        let version = get::<i32>(&mut r)?;
        if version != VERSION {
            return Err(SnapshotError(format!("version {version}")));
        }
        let zxid = get::<i64>(&mut r)?;
        let next_session = get::<i64>(&mut r)?;
        let mut sessions = BTreeMap::new();
        for _ in 0..get::<i32>(&mut r)? {
            let id = get::<i64>(&mut r)?;
            let passwd = get::<Buffer>(&mut r)?.unwrap_or_default();
            let timeout = Duration::from_millis(u64::try_from(get::<i64>(&mut r)?).unwrap_or(0));
            sessions.insert(
                id,
                Session {
                    passwd,
                    timeout,
                    deadline: now + timeout,
                    conn: None,
                },
            );
        }
        let mut nodes = Vec::new();
        for _ in 0..get::<i32>(&mut r)? {
            let path = get::<String>(&mut r)?;
            let node = Node {
                data: get::<Buffer>(&mut r)?,
                acl: get::<Vec<Acl>>(&mut r)?,
                persisted: get::<Stat>(&mut r)?,
                container: get::<bool>(&mut r)?,
                ttl: Some(get::<i64>(&mut r)?).filter(|ttl| *ttl >= 0),
                had_child: get::<bool>(&mut r)?,
                children: Default::default(),
            };
            nodes.push((path, node));
        }
        r.finish("snapshot")
            .map_err(|e| SnapshotError(e.to_string()))?;
        let tree = DataTree::from_nodes(config.first_cversion, nodes).map_err(SnapshotError)?;
        let mut machine = ServerMachine::new(config, now);
        machine.tree = tree;
        machine.sessions = sessions;
        machine.zxid = zxid;
        machine.next_session = next_session;
        Ok(machine)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_restored_machine_has_the_nodes_sessions_and_counters() {
        let t0 = Instant::now();
        let mut m = ServerMachine::new(ServerConfig::new(3), t0);
        m.zxid = 41;
        m.next_session = 77;
        m.sessions.insert(
            76,
            Session {
                passwd: Bytes::from_static(b"0123456789abcdef"),
                timeout: Duration::from_secs(6),
                deadline: t0,
                conn: Some(9),
            },
        );
        let mut changes = Vec::new();
        m.tree
            .create(
                "/a",
                Some(Bytes::from_static(b"x")),
                &Acl::read_unsafe(),
                zk_proto::CreateMode::Container,
                -1,
                76,
                40,
                1_000,
                &mut changes,
            )
            .unwrap();
        m.tree
            .create(
                "/a/e",
                None,
                &Acl::open_unsafe(),
                zk_proto::CreateMode::Ephemeral,
                -1,
                76,
                41,
                1_001,
                &mut changes,
            )
            .unwrap();
        let bytes = m.snapshot().unwrap();

        let t1 = t0 + Duration::from_secs(100);
        let r = ServerMachine::restore(ServerConfig::new(3), t1, &bytes).unwrap();
        assert_eq!((r.zxid, r.next_session), (41, 77));
        let s = r.sessions.get(&76).unwrap();
        assert_eq!(
            (s.timeout, s.deadline, s.conn),
            (Duration::from_secs(6), t1 + s.timeout, None)
        );
        assert_eq!(r.tree.len(), m.tree.len());
        for ((p1, n1), (p2, n2)) in m.tree.nodes().zip(r.tree.nodes()) {
            assert_eq!(p1, p2);
            assert_eq!(n1.stat(), n2.stat());
            assert_eq!(
                (&n1.data, &n1.acl, n1.container, n1.ttl),
                (&n2.data, &n2.acl, n2.container, n2.ttl)
            );
            assert_eq!(n1.children, n2.children, "{p1}");
        }
        // The same bytes again: nothing lost or added.
        assert_eq!(r.snapshot().unwrap(), bytes);

        // Not a snapshot: refused, with a reason.
        assert!(ServerMachine::restore(ServerConfig::new(3), t1, b"junk").is_err());
        let short = bytes.slice(..bytes.len() - 1);
        assert!(ServerMachine::restore(ServerConfig::new(3), t1, &short).is_err());
    }
}
