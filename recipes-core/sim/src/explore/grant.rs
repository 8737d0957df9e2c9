//! [`Grant`]: the explorer's own rules for who holds, read off the modelled tree as it was
//! when the server answered the listing the machine decided on. Written here from Curator's
//! rules (DESIGN §3), never through recipes-core's predicates.

use super::model::{Model, Node, Owner};

/// When the server grants a node of ours.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Grant {
    /// Mutex, write lock, the semaphore's inner lock: no node of the directory has a smaller
    /// sequence number.
    First,
    /// Read lock: no write node (`__WRIT__`) has a smaller sequence number.
    NoWriteBefore,
    /// Semaphore leases (one asked for): the directory has at most this many leases, other
    /// clients' and this one (a second node of ours, being deleted, does not count).
    Count(usize),
    /// Downgrade: our read node and our write node (this path) both exist.
    Beside(String),
    /// Nothing is held (a cleanup).
    Nothing,
}

impl Grant {
    /// Whether `ours` (node index) was granted in the tree as of `zxid`; why not, if not.
    pub fn check(&self, model: &Model, ours: usize, zxid: i64) -> Result<(), String> {
        let me = &model.nodes[ours];
        let at = |n: &&Node| n.dir == me.dir && n.live_at(zxid);
        let before = |n: &&Node| n.seq < me.seq && n.path != me.path;
        let ahead: Option<&Node> = match self {
            Grant::First => model.nodes.iter().filter(at).find(before),
            Grant::NoWriteBefore => model
                .nodes
                .iter()
                .filter(at)
                .filter(|n| n.name().contains("__WRIT__"))
                .find(before),
            Grant::Count(max) => {
                let others = model
                    .nodes
                    .iter()
                    .filter(at)
                    .filter(|n| n.owner != Owner::Us);
                let count = others.count() + 1;
                return (count <= *max)
                    .then_some(())
                    .ok_or(format!("{count} leases listed, at most {max} granted"));
            }
            Grant::Beside(write) => {
                let there = model.nodes.iter().filter(at).any(|n| n.path == *write);
                return there
                    .then_some(())
                    .ok_or(format!("our write node {write} was not there"));
            }
            Grant::Nothing => return Err("nothing is ever held here".to_owned()),
        };
        match ahead {
            None => Ok(()),
            Some(n) => Err(format!("{} is ahead of it", n.path)),
        }
    }
}
