//! Network partitions between an [`Ensemble`]'s members (with [`ZkOptions::partitionable`]):
//! the fault proxies each member dials its peers through, and isolating and healing members.

use std::collections::{BTreeMap, BTreeSet};

use super::config::PeerRoute;
use super::*;
use crate::proxy::FaultProxy;

/// The JVM system property capping how long a member looking for a leader waits between two
/// rounds of notifications (ZooKeeper's default is 60 s), and the value partitionable
/// ensembles get, so that a healed member reaches its peers again within seconds.
pub(super) const MAX_NOTIFICATION_INTERVAL: (&str, &str) =
    ("zookeeper.fastleader.maxNotificationInterval", "2000");

/// How long a quorum link's proxy keeps trying the other member's quorum port when it is not
/// listening. A member listens there only while it leads, and a follower may dial it a moment
/// before it does: dialed directly, the follower's connect is refused and retried (ZooKeeper
/// 3.8 `Learner.connectToLeader`, for up to `initLimit` ticks), but a connection the proxy
/// accepted and then closed makes it give the leader up and look again, while the leader waits
/// `initLimit` ticks for followers that do not come back.
const QUORUM_CONNECT_RETRY: Duration = Duration::from_secs(3);

/// How many times a proxy is started again when the kernel gave it a port that a member is
/// about to bind.
const PROXY_ATTEMPTS: usize = 10;

/// The links of a partitionable ensemble: one [`Link`] per ordered pair of members, the
/// members cut off by [`Ensemble::isolate`], and the pairs cut by [`Ensemble::cut_link`] and
/// [`Ensemble::split`].
#[derive(Debug)]
pub(super) struct Links {
    /// `links[&(from, to)]` is what member `from` dials member `to` through.
    links: BTreeMap<(usize, usize), Link>,
    /// The isolated members; a link is blocked when either of its ends is here.
    isolated: BTreeSet<usize>,
    /// Pairs of members (lower index first) that cannot reach each other.
    cut: BTreeSet<(usize, usize)>,
}

/// The two proxies one member dials another through.
#[derive(Debug)]
struct Link {
    /// In front of the other member's quorum (peer) port.
    quorum: FaultProxy,
    /// In front of the other member's election port.
    election: FaultProxy,
}

impl Links {
    /// Starts a link for every ordered pair of the members listening on `all`, every proxy
    /// passing. No proxy listens on one of `all`'s ports or of `avoid` (ports picked free for
    /// the members but not bound yet).
    ///
    /// # Errors
    /// A proxy does not start.
    pub(super) fn start(all: &[MemberPorts], avoid: &[u16]) -> io::Result<Links> {
        let taken: BTreeSet<u16> = all
            .iter()
            .flat_map(|p| [p.client, p.peer, p.election])
            .chain(avoid.iter().copied())
            .collect();
        let proxy_to = |port: u16| -> io::Result<FaultProxy> {
            let target = SocketAddr::from(([127, 0, 0, 1], port));
            for _ in 0..PROXY_ATTEMPTS {
                let proxy = FaultProxy::start(target)?;
                if !taken.contains(&proxy.addr().port()) {
                    return Ok(proxy);
                }
            }
            Err(io::Error::new(
                io::ErrorKind::AddrInUse,
                "a link proxy kept getting ports picked for the members",
            ))
        };
        let mut links = BTreeMap::new();
        for from in 0..all.len() {
            for (to, ports) in all.iter().enumerate() {
                if from != to {
                    let link = Link {
                        quorum: proxy_to(ports.peer)?,
                        election: proxy_to(ports.election)?,
                    };
                    link.quorum.retry_connect(QUORUM_CONNECT_RETRY);
                    links.insert((from, to), link);
                }
            }
        }
        Ok(Links {
            links,
            isolated: BTreeSet::new(),
            cut: BTreeSet::new(),
        })
    }

    /// Where member `from` dials each of the `n` members (`None` for itself), for its
    /// `zoo.cfg`.
    pub(super) fn routes_from(&self, from: usize, n: usize) -> Vec<Option<PeerRoute>> {
        (0..n)
            .map(|to| {
                self.links.get(&(from, to)).map(|link| PeerRoute {
                    quorum: link.quorum.addr().port(),
                    election: link.election.addr().port(),
                })
            })
            .collect()
    }

    /// Makes every link's proxies refuse and cut when either end is isolated or the pair is
    /// cut, and pass otherwise.
    fn apply(&self) {
        for (&(from, to), link) in &self.links {
            let blocked = self.isolated.contains(&from)
                || self.isolated.contains(&to)
                || self.cut.contains(&(from.min(to), from.max(to)));
            for proxy in [&link.quorum, &link.election] {
                // Refuse first, so that nothing reconnects between the cut and the refusal.
                proxy.refuse(blocked);
                if blocked {
                    proxy.cut();
                }
            }
        }
    }
}

impl Ensemble {
    /// Cuts member `i` off from the other members: every link between it and each of them,
    /// quorum and election, in both directions, refuses new connections, and the open ones
    /// are cut. Nothing else changes: no process is signalled, and clients still reach every
    /// member's client port. Returns at once.
    ///
    /// What a caller then sees (ZooKeeper 3.8, within a few ticks): an isolated leader loses
    /// its followers and steps down, an isolated follower loses its leader; either way the
    /// isolated member goes LOOKING and stops serving clients: `srvr` says it is not serving
    /// ([`mode`](Self::mode) gives `Ok(None)`) and it closes client connections, so sessions
    /// move to other members or expire. The others, if a majority, keep their leader or elect
    /// one among them and serve on. Wait for this with [`wait_leader`](Self::wait_leader),
    /// [`wait_mode`](Self::wait_mode) or [`mode`](Self::mode).
    ///
    /// Several members can be isolated at once; each loses every link, also to the other
    /// isolated ones. With no connected majority left, no member serves. Isolating a member
    /// again, or a killed one, is allowed. While a member is isolated,
    /// [`restart`](Self::restart) of it times out (it waits until the member serves, which
    /// needs a quorum): use [`start_member`](Self::start_member).
    ///
    /// # Errors
    /// `Unsupported` when the ensemble was not started with [`ZkOptions::partitionable`];
    /// `InvalidInput` for a bad index.
    pub fn isolate(&mut self, i: usize) -> io::Result<()> {
        self.checked(i)?;
        let links = self.links_mut()?;
        links.isolated.insert(i);
        links.apply();
        Ok(())
    }

    /// Reconnects every isolated member: all links pass again. Returns at once.
    ///
    /// A healed member is still looking for a leader; it reaches its peers again at its next
    /// round of notifications (within about 2 s, see [`ZkOptions::partitionable`]) and joins
    /// the majority's leader as a follower, or, when no majority was connected, the members
    /// elect a leader. Wait with [`wait_mode`](Self::wait_mode) (`Mode::Follower`) or
    /// [`wait_serving`](Self::wait_serving). Nothing happens when no member is isolated.
    ///
    /// # Errors
    /// `Unsupported` when the ensemble was not started with [`ZkOptions::partitionable`].
    pub fn heal(&mut self) -> io::Result<()> {
        let links = self.links_mut()?;
        links.isolated.clear();
        links.cut.clear();
        links.apply();
        Ok(())
    }

    /// Cuts members `a` and `b` off from each other only, both ways (quorum and election
    /// links refuse, open ones are cut); every other link passes as before. Each may still
    /// reach the rest, which reach both: a partition that is not transitive (a leader cut
    /// from one follower keeps its quorum through the other; the follower, looking for a
    /// leader, hears of the one it cannot reach). Healed by [`heal`](Self::heal). Returns at
    /// once.
    ///
    /// # Errors
    /// As for [`isolate`](Self::isolate); `InvalidInput` when `a == b`.
    pub fn cut_link(&mut self, a: usize, b: usize) -> io::Result<()> {
        self.checked(a)?;
        self.checked(b)?;
        if a == b {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("member {a} cannot be cut off from itself"),
            ));
        }
        let links = self.links_mut()?;
        links.cut.insert((a.min(b), a.max(b)));
        links.apply();
        Ok(())
    }

    /// Splits the ensemble in two: every link between a member of `side` and a member not in
    /// it is cut, both ways; links within each side pass (a 2|3 split of five members keeps
    /// the three serving, the two looking for a leader). Healed by [`heal`](Self::heal).
    /// Returns at once.
    ///
    /// # Errors
    /// As for [`isolate`](Self::isolate), for any member of `side`.
    pub fn split(&mut self, side: &[usize]) -> io::Result<()> {
        for &a in side {
            self.checked(a)?;
        }
        let n = self.len();
        let links = self.links_mut()?;
        for &a in side {
            for b in (0..n).filter(|b| !side.contains(b)) {
                links.cut.insert((a.min(b), a.max(b)));
            }
        }
        links.apply();
        Ok(())
    }

    /// The members cut off by [`isolate`](Self::isolate) and not healed since, in order
    /// (empty when the ensemble is not partitionable).
    pub fn isolated(&self) -> Vec<usize> {
        self.links
            .as_ref()
            .map(|links| links.isolated.iter().copied().collect())
            .unwrap_or_default()
    }

    /// Whether the members reach each other through proxies, so that
    /// [`isolate`](Self::isolate) works ([`ZkOptions::partitionable`]).
    pub fn is_partitionable(&self) -> bool {
        self.links.is_some()
    }

    fn links_mut(&mut self) -> io::Result<&mut Links> {
        self.links.as_mut().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::Unsupported,
                "this ensemble's members are linked directly, so they cannot be partitioned: \
                 start it with ZkOptions::partitionable(true)",
            )
        })
    }
}
