//! "Who holds this lock, and who waits?": a lock's queue as the server has it, in the recipe's
//! order, each participant with its node, session, data and standing (the recipe's own rule,
//! `recipes_core::participants`). Every lock kind of the workspace lists its queue through
//! [`queue`].

use std::fmt;

use bytes::Bytes;
use recipes_core::participants::{Place, Rule, places};
use zk_client::{Client, ReadOp, ReadResult};

use crate::Error;

pub use recipes_core::participants::Standing;

/// Reads per `multi_read` (a listing of many waiters stays under the server's 1 MB limit).
const READS_PER_REQUEST: usize = 256;

/// How many times a listing whose nodes went before their data was read is taken again.
const RETRIES: usize = 3;

/// One participant of a lock's queue (or a foreign child of its directory), as the server
/// has it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Participant {
    /// Its node's full path.
    pub node: String,
    /// Whether the recipe's rule grants it, or which node it waits behind.
    pub standing: Standing,
    /// The session that owns the node (its ephemeral owner; 0 for a node that is not
    /// ephemeral).
    pub session_id: i64,
    /// The node's data: by default the host's address, for ours and Curator's alike.
    pub data: Bytes,
}

impl Participant {
    /// Whether it holds the lock (or a lease).
    pub fn holds(&self) -> bool {
        self.standing == Standing::Holds
    }

    /// The node it watches while it waits (a name in the same directory), if it waits.
    pub fn watches(&self) -> Option<&str> {
        match &self.standing {
            Standing::Waits { watches } => Some(watches),
            _ => None,
        }
    }

    /// The node's name (the last part of its path).
    pub fn name(&self) -> &str {
        self.node.rsplit('/').next().unwrap_or(&self.node)
    }
}

impl fmt::Display for Participant {
    /// One line: `holds  <name>  session 0x…  data "…"`, or `waits  <name>  behind <name>  …`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.standing {
            Standing::Holds => write!(f, "holds    {}", self.name())?,
            Standing::Waits { watches } => {
                write!(f, "waits    {}  behind {watches}", self.name())?;
            }
            Standing::Foreign => write!(f, "foreign  {}", self.name())?,
        }
        write!(
            f,
            "  session {:#x}  data {:?}",
            self.session_id,
            String::from_utf8_lossy(&self.data)
        )
    }
}

/// The queue under `dir`: its children sorted by `sort`, each judged by `rule_for` (`None`:
/// foreign), with each node's session and data (read in few round trips). A snapshot: a node
/// that goes between the listing and the reads makes the listing start again (three times at
/// most; then the nodes that went are left out). An absent directory is an empty queue.
pub async fn queue(
    client: &Client,
    dir: &str,
    sort: impl Fn(&mut [String]),
    rule_for: impl Fn(&str) -> Option<Rule>,
) -> Result<Vec<Participant>, Error> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        let children = match client.get_children(dir).await {
            Ok(children) => children,
            Err(zk_client::Error::NoNode) => return Ok(Vec::new()),
            Err(e) => return Err(e.into()),
        };
        let queue = places(children, &sort, &rule_for);
        let (participants, went) = read_all(client, dir, queue).await?;
        if !went || attempt > RETRIES {
            return Ok(participants);
        }
    }
}

/// Each place's session and data; whether any node went meanwhile (left out).
async fn read_all(
    client: &Client,
    dir: &str,
    queue: Vec<Place>,
) -> Result<(Vec<Participant>, bool), Error> {
    let mut participants = Vec::with_capacity(queue.len());
    let mut went = false;
    let mut queue = queue.into_iter().peekable();
    while queue.peek().is_some() {
        let chunk: Vec<Place> = queue.by_ref().take(READS_PER_REQUEST).collect();
        let reads: Vec<ReadOp> = chunk
            .iter()
            .map(|p| ReadOp::GetData(recipes_core::child_path(dir, &p.name)))
            .collect();
        let results = client.multi_read(&reads).await?;
        for (place, result) in chunk.into_iter().zip(results) {
            match result {
                Ok(ReadResult::Data(data, stat)) => participants.push(Participant {
                    node: recipes_core::child_path(dir, &place.name),
                    standing: place.standing,
                    session_id: stat.ephemeral_owner,
                    data,
                }),
                Ok(_) | Err(zk_client::Error::NoNode) => went = true,
                Err(e) => return Err(e.into()),
            }
        }
    }
    Ok((participants, went))
}

/// The full paths of the children of `base`, sorted by `predicate`'s order; only those whose
/// name contains its lock name if `only_its_own` (Curator's read/write lock filters; its mutex
/// does not).
pub async fn participant_nodes(
    client: &Client,
    base: &str,
    predicate: &dyn recipes_core::Predicate,
    only_its_own: bool,
) -> Result<Vec<String>, Error> {
    let mut children = match client.get_children(base).await {
        Ok(children) => children,
        Err(zk_client::Error::NoNode) => return Ok(Vec::new()),
        Err(e) => return Err(e.into()),
    };
    if only_its_own {
        children.retain(|c| c.contains(predicate.lock_name()));
    }
    predicate.sort(&mut children);
    Ok(children
        .into_iter()
        .map(|c| recipes_core::child_path(base, &c))
        .collect())
}
