//! The differential run's script: seeded random steps over a few sessions and a small tree of
//! paths, so that steps collide (a node that exists, a version that moved, a parent that is
//! ephemeral, a container emptied) as often as they succeed. Pure: no IO.

use zk_proto::CreateMode;

/// Sessions each side keeps open (an [`Op::Reopen`] replaces one).
pub const SESSIONS: usize = 3;

/// One op inside a `multi`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MultiStep {
    /// Create `path` with `mode`.
    Create(String, Vec<u8>, CreateMode),
    /// Delete `path`, at a version if given.
    Delete(String, Option<i32>),
    /// Set `path`'s data, at a version if given.
    SetData(String, Vec<u8>, Option<i32>),
    /// Require `path` (at a version if given).
    Check(String, Option<i32>),
}

/// What a step does; every step names the session (index) that does it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// `create` in every mode (containers and TTL nodes included).
    Create(String, Vec<u8>, CreateMode),
    /// `delete`, at a version if given.
    Delete(String, Option<i32>),
    /// `exists`, leaving a watch when `true`.
    Exists(String, bool),
    /// `getData`, leaving a watch when `true`.
    GetData(String, bool),
    /// `setData`, at a version if given.
    SetData(String, Vec<u8>, Option<i32>),
    /// `getChildren` (leaving a watch when `true`), and `getChildren2` when `with_stat`.
    GetChildren {
        /// The parent.
        path: String,
        /// Leave a child watch.
        watch: bool,
        /// `getChildren2`.
        with_stat: bool,
    },
    /// `getACL`.
    GetAcl(String),
    /// `setACL` to one of [`AclChoice`]'s, at a version if given: later steps of the
    /// sessions without the right identity meet `NoAuth`.
    SetAcl(String, AclChoice, Option<i32>),
    /// `addAuth` with the digest scheme, as user `0` or `1` (`user<n>:pw`).
    AddAuth(u8),
    /// `sync`.
    Sync(String),
    /// `multi` of these.
    Multi(Vec<MultiStep>),
    /// `getEphemerals` under a prefix.
    GetEphemerals(String),
    /// `getAllChildrenNumber`.
    AllChildrenNumber(String),
    /// Close the session and open a new one in its place (its ephemerals go).
    Reopen,
}

/// The ACL a `setACL` step asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AclChoice {
    /// `world:anyone`, every permission.
    Open,
    /// `world:anyone` may read.
    ReadOnly,
    /// `auth`: every permission for the session's own authenticated identities
    /// (`InvalidACL` for a session that has none).
    CreatorAll,
    /// Every permission for digest user `0` or `1`.
    Digest(u8),
    /// Every permission for `ip:127.0.0.1`.
    Ip,
    /// `world:someone`: no provider reads it (`InvalidACL`).
    Invalid,
}

/// One step: a session and what it does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// The session's index, below [`SESSIONS`].
    pub session: usize,
    /// What it does.
    pub op: Op,
}

/// Draws steps from a seed; learns the names sequential creates were given, so later steps
/// can name those nodes too.
#[derive(Debug, Clone)]
pub struct Script {
    state: u64,
    root: String,
    learned: Vec<String>,
}

impl Script {
    /// The script of `seed`, every path under `root`.
    pub fn new(seed: u64, root: &str) -> Self {
        Self {
            state: seed ^ 0x5eed_d1ff,
            root: root.to_owned(),
            learned: Vec::new(),
        }
    }

    /// The root every path is under.
    pub fn root(&self) -> &str {
        &self.root
    }

    fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next_u64() % n }
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> Option<T> {
        let i = usize::try_from(self.below(items.len() as u64)).ok()?;
        items.get(i).copied()
    }

    /// A node name seen from a sequential create, to be named by later steps.
    pub fn learn(&mut self, path: &str) {
        if !self.learned.iter().any(|p| p == path) && self.learned.len() < 64 {
            self.learned.push(path.to_owned());
        }
    }

    /// A path: the root, one of the small tree's (`a`, `b`, `c` to depth 3), or a learned
    /// sequential node (or one under it).
    fn path(&mut self) -> String {
        if !self.learned.is_empty() && self.below(5) == 0 {
            let i = usize::try_from(self.below(self.learned.len() as u64)).unwrap_or(0);
            let base = self.learned.get(i).cloned().unwrap_or_default();
            return match self.below(3) {
                0 => format!("{base}/a"),
                _ => base,
            };
        }
        let depth = self.below(4);
        let mut path = self.root.clone();
        for _ in 0..depth {
            let name = self.pick(&["a", "b", "c"]).unwrap_or("a");
            path.push('/');
            path.push_str(name);
        }
        path
    }

    fn version(&mut self) -> Option<i32> {
        match self.below(5) {
            0..=2 => None,
            n => i32::try_from(n - 3).ok(),
        }
    }

    fn data(&mut self) -> Vec<u8> {
        let len = self.below(6);
        (0..len).map(|_| self.below(256) as u8).collect()
    }

    fn mode(&mut self) -> CreateMode {
        match self.below(40) {
            0..=13 => CreateMode::Persistent,
            14..=21 => CreateMode::Ephemeral,
            22..=27 => CreateMode::PersistentSequential,
            28..=31 => CreateMode::EphemeralSequential,
            32..=37 => CreateMode::Container,
            38 => CreateMode::PersistentWithTtl,
            _ => CreateMode::PersistentSequentialWithTtl,
        }
    }

    fn create_path(&mut self, mode: CreateMode) -> String {
        let path = self.path();
        if mode.is_sequential() {
            // Sequential names are made from this prefix.
            format!("{path}/s-")
        } else {
            path
        }
    }

    fn multi_step(&mut self) -> MultiStep {
        match self.below(4) {
            0 => {
                let mode = self.pick(&[
                    CreateMode::Persistent,
                    CreateMode::Ephemeral,
                    CreateMode::PersistentSequential,
                    CreateMode::Container,
                ]);
                let mode = mode.unwrap_or(CreateMode::Persistent);
                MultiStep::Create(self.create_path(mode), self.data(), mode)
            }
            1 => MultiStep::Delete(self.path(), self.version()),
            2 => MultiStep::SetData(self.path(), self.data(), self.version()),
            _ => MultiStep::Check(self.path(), self.version()),
        }
    }

    /// The next step.
    pub fn next_step(&mut self) -> Step {
        let session = usize::try_from(self.below(SESSIONS as u64)).unwrap_or(0);
        let op = match self.below(100) {
            0..=27 => {
                let mode = self.mode();
                Op::Create(self.create_path(mode), self.data(), mode)
            }
            28..=39 => Op::Delete(self.path(), self.version()),
            40..=47 => Op::Exists(self.path(), self.below(2) == 0),
            48..=55 => Op::GetData(self.path(), self.below(2) == 0),
            56..=63 => Op::SetData(self.path(), self.data(), self.version()),
            64..=71 => Op::GetChildren {
                path: self.path(),
                watch: self.below(2) == 0,
                with_stat: self.below(2) == 0,
            },
            72..=74 => Op::GetAcl(self.path()),
            75..=76 => {
                let acl = match self.below(10) {
                    0..=3 => AclChoice::Open,
                    4 => AclChoice::ReadOnly,
                    5 => AclChoice::CreatorAll,
                    6 => AclChoice::Digest(0),
                    7 => AclChoice::Digest(1),
                    8 => AclChoice::Ip,
                    _ => AclChoice::Invalid,
                };
                Op::SetAcl(self.path(), acl, self.version())
            }
            // Rarely: an identity stays with its connection for the rest of the seed.
            97 if self.below(4) == 0 => Op::AddAuth(u8::from(self.below(2) == 1)),
            77..=78 => Op::Sync(self.path()),
            79..=90 => {
                let n = 1 + self.below(3);
                Op::Multi((0..n).map(|_| self.multi_step()).collect())
            }
            91..=93 => Op::GetEphemerals(self.path()),
            94..=96 => Op::AllChildrenNumber(self.path()),
            _ => Op::Reopen,
        };
        Step { session, op }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_gives_one_script_and_every_kind_of_step_comes_up() {
        let steps = |seed| {
            let mut s = Script::new(seed, "/r");
            (0..2000).map(|_| s.next_step()).collect::<Vec<_>>()
        };
        let a = steps(1);
        assert_eq!(a, steps(1));
        assert_ne!(a, steps(2));
        let kind = |op: &Op| std::mem::discriminant(op);
        let kinds: std::collections::BTreeSet<String> =
            a.iter().map(|s| format!("{:?}", kind(&s.op))).collect();
        assert_eq!(kinds.len(), 14, "every op kind drawn");
        assert!(a.iter().all(|s| s.session < SESSIONS));
        let paths = a.iter().filter_map(|s| match &s.op {
            Op::Create(p, ..) | Op::Delete(p, _) | Op::Exists(p, _) => Some(p.clone()),
            _ => None,
        });
        assert!(paths.into_iter().all(|p| p.starts_with("/r")));
    }

    #[test]
    fn learned_names_are_named_again() {
        let mut s = Script::new(3, "/r");
        s.learn("/r/a/s-0000000007");
        let named = (0..500)
            .map(|_| s.next_step())
            .filter(|st| format!("{:?}", st.op).contains("s-0000000007"))
            .count();
        assert!(named > 10, "{named}");
    }
}
