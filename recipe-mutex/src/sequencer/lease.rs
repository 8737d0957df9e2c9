//! A semaphore lease's check ([`NodeKind::Lease`](super::NodeKind::Lease)).
//!
//! A lease is not granted by its place. Curator's `InterProcessSemaphoreV2` (and ours, on the
//! same layout) takes the semaphore's inner lock (`<semaphore>/locks`, a mutex), creates its
//! lease under `<semaphore>/leases`, and holds once that directory has at most N children; only
//! then does it let the inner lock go. So:
//!
//! - a lease waits only while its session holds the inner lock, and only if it was made
//!   during that hold: after the inner lock's holder node was created;
//! - a lease granted stays granted (even if a shared count lowers N), until its node goes.
//!
//! The tree does not say when a holder node became first, so among its session's leases
//! made after it, the check tells the one that may wait by what each library does while it
//! holds the inner lock:
//!
//! - ours takes every lease of one attempt under one hold, named with the inner node's own
//!   protection id: a lease with the holder's id may be waiting;
//! - Curator takes one lease per hold, each create with a fresh id, so the lease it may be
//!   waiting on is the newest of all: a lease of the holder's session made after the holder,
//!   with no lease after it, may be waiting.
//!
//! Anything else is granted. Neither case refuses a granted lease for long: ours lets the inner
//! lock go right after its count (one delete in flight), and a lease of an earlier attempt of
//! the same session is followed by the next attempt's leases as soon as that attempt holds the
//! inner lock. [`check`] waits for that, up to its bound. A client that breaks the protocol
//! (a lease made without the inner lock) breaks the semaphore itself; the check does not
//! pretend to see through that.

use std::time::Duration;

use recipes_core::name::{MUTEX_LOCK_NAME, PROTECTED_PREFIX_LEN, is_protected, sort_children};
use recipes_core::semaphore::{LEASE_NAME, LEASES_DIR, LOCKS_DIR};
use zk_client::{Client, ReadOp, ReadResult, Stat};

use super::{Sequencer, SequencerCheck, unexpected};
use crate::Error;
use crate::layer::clock::{deadline_in, now, sleep_until};

/// How many reads in a row a check makes to catch the inner lock's holder (it changed hands
/// between the listing and the read of its node each time) before it gives up as pending.
const MAX_CHASES: usize = 8;

/// One consistent read of a semaphore, for judging one of its leases.
#[derive(Debug, Clone, Default)]
pub(crate) struct LeaseRead {
    /// The children of `<semaphore>/locks`, as listed (none if it is gone).
    pub locks: Vec<String>,
    /// The children of `<semaphore>/leases`, as listed.
    pub leases: Vec<String>,
    /// The lease node's `Stat` (`None`: gone).
    pub stat: Option<Stat>,
    /// The inner lock node read alongside (the holder of the read before, if any), with its
    /// `Stat` (`None`: gone).
    pub holder: Option<(String, Option<Stat>)>,
}

/// What a read tells of a lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LeaseVerdict {
    /// Decided.
    Checked(SequencerCheck),
    /// The inner lock's holder is this child of `locks/`: read its `Stat` with the rest.
    ReadHolder(String),
    /// The lease's session holds the inner lock (this child) since before the lease, and the
    /// lease may be the one it counts for: wait for either to change.
    Pending(String),
}

/// The verdict on one read (pure).
pub(crate) fn judge(seq: &Sequencer, read: &LeaseRead) -> LeaseVerdict {
    use LeaseVerdict::{Checked, Pending, ReadHolder};
    let Some(stat) = read.stat.as_ref() else {
        return Checked(SequencerCheck::NodeGone);
    };
    if stat.czxid != seq.czxid {
        return Checked(SequencerCheck::OtherNode { czxid: stat.czxid });
    }
    if stat.ephemeral_owner != seq.session_id {
        return Checked(SequencerCheck::OtherOwner {
            session_id: stat.ephemeral_owner,
        });
    }
    let ours = seq.node_name();
    if !ours.contains(LEASE_NAME) {
        return Checked(SequencerCheck::NotALockNode);
    }
    let mut leases = read.leases.clone();
    sort_children(&mut leases, LEASE_NAME);
    let Some(at) = leases.iter().position(|l| l == ours) else {
        return Checked(SequencerCheck::NodeGone);
    };
    // The inner lock's holder: the first of its children by Curator's sort, if a lock node (a
    // foreign child first blocks everyone: nobody holds it).
    let mut locks = read.locks.clone();
    sort_children(&mut locks, MUTEX_LOCK_NAME);
    let Some(first) = locks.first().filter(|f| f.contains(MUTEX_LOCK_NAME)) else {
        return Checked(SequencerCheck::Valid);
    };
    let holder = match &read.holder {
        Some((name, Some(holder))) if name == first => holder,
        // Not read yet, or read as another (the holder changed) or gone: read it.
        _ => return ReadHolder(first.clone()),
    };
    if holder.ephemeral_owner != seq.session_id || holder.czxid > seq.czxid {
        // Not made during its session's hold of the inner lock: not waiting.
        return Checked(SequencerCheck::Valid);
    }
    let same_attempt = is_protected(ours)
        && is_protected(first)
        && ours.get(..PROTECTED_PREFIX_LEN) == first.get(..PROTECTED_PREFIX_LEN);
    let newest = at + 1 == leases.len();
    if same_attempt || newest {
        Pending(first.clone())
    } else {
        Checked(SequencerCheck::Valid)
    }
}

/// `sync`, then reads of the semaphore judged by [`judge`] until decided; a pending lease
/// waits for the inner lock's holder to go or the leases to change (watches: each wake is
/// one read), until `wait` has passed.
pub(crate) async fn check(
    seq: &Sequencer,
    client: &Client,
    wait: Duration,
) -> Result<SequencerCheck, Error> {
    let semaphore = seq.lock_path();
    let locks = child(semaphore, LOCKS_DIR);
    let leases = child(semaphore, LEASES_DIR);
    match client.sync(leases.as_str()).await {
        Ok(()) | Err(zk_client::Error::NoNode) => {}
        Err(e) => return Err(e.into()),
    }
    let deadline = deadline_in(wait);
    let mut holder: Option<String> = None;
    let mut chases = 0;
    loop {
        let read = read(client, &locks, &leases, seq.node(), holder.as_deref()).await?;
        match judge(seq, &read) {
            LeaseVerdict::Checked(verdict) => return Ok(verdict),
            LeaseVerdict::ReadHolder(first) => {
                chases += 1;
                if chases > MAX_CHASES {
                    // The inner lock changed hands at every read: not shown granted.
                    return Ok(SequencerCheck::Pending);
                }
                holder = Some(first);
            }
            LeaseVerdict::Pending(first) => {
                chases = 0;
                if deadline.is_some_and(|d| now() >= d.into_std()) {
                    return Ok(SequencerCheck::Pending);
                }
                let holder_path = child(&locks, &first);
                let (there, gone) = client.exists_and_watch(holder_path).await?;
                if there.is_some() {
                    let (listed, changed) = client.get_children_and_watch(leases.as_str()).await?;
                    // A change made between the read and this watch wakes nothing: read again.
                    if same_names(listed, &read.leases) {
                        tokio::select! {
                            _ = gone => {}
                            _ = changed => {}
                            () = sleep_until(deadline) => return Ok(SequencerCheck::Pending),
                        }
                    }
                }
                holder = Some(first);
            }
        }
    }
}

/// One `multi_read`: the inner lock's children, the leases, the lease node, and the holder
/// node named by the read before.
async fn read(
    client: &Client,
    locks: &str,
    leases: &str,
    node: &str,
    holder: Option<&str>,
) -> Result<LeaseRead, Error> {
    let mut reads = vec![
        ReadOp::GetChildren(locks.to_owned()),
        ReadOp::GetChildren(leases.to_owned()),
        ReadOp::GetData(node.to_owned()),
    ];
    if let Some(h) = holder {
        reads.push(ReadOp::GetData(child(locks, h)));
    }
    let mut results = client.multi_read(&reads).await?.into_iter();
    let mut children = || match results.next() {
        Some(Ok(ReadResult::Children(c))) => Ok(c),
        Some(Err(zk_client::Error::NoNode)) => Ok(Vec::new()),
        Some(Err(e)) => Err(Error::from(e)),
        Some(Ok(ReadResult::Data(..))) | None => Err(unexpected()),
    };
    let locks_read = children()?;
    let leases_read = children()?;
    let mut stat = || match results.next() {
        Some(Ok(ReadResult::Data(_, stat))) => Ok(Some(stat)),
        Some(Err(zk_client::Error::NoNode)) => Ok(None),
        Some(Err(e)) => Err(Error::from(e)),
        Some(Ok(ReadResult::Children(_))) | None => Err(unexpected()),
    };
    let node_stat = stat()?;
    let holder = match holder {
        Some(h) => Some((h.to_owned(), stat()?)),
        None => None,
    };
    Ok(LeaseRead {
        locks: locks_read,
        leases: leases_read,
        stat: node_stat,
        holder,
    })
}

/// Whether two listings name the same children (in any order).
fn same_names(mut a: Vec<String>, b: &[String]) -> bool {
    let mut b = b.to_vec();
    a.sort_unstable();
    b.sort_unstable();
    a == b
}

fn child(parent: &str, name: &str) -> String {
    format!("{parent}/{name}")
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use crate::NodeKind;

    const SESSION: i64 = 0x1234;
    const OTHER: i64 = 0x99;
    const U1: &str = "_c_11111111-1111-1111-1111-111111111111-";
    const U2: &str = "_c_22222222-2222-2222-2222-222222222222-";
    const U3: &str = "_c_33333333-3333-3333-3333-333333333333-";

    fn lease(uuid: &str, seq: u32) -> String {
        format!("{uuid}lease-{seq:010}")
    }

    fn lock(uuid: &str, seq: u32) -> String {
        format!("{uuid}lock-{seq:010}")
    }

    fn stat(czxid: i64, owner: i64) -> Stat {
        Stat {
            czxid,
            ephemeral_owner: owner,
            ..Stat::default()
        }
    }

    /// Our lease `name`, made at czxid 50 by `SESSION`.
    fn seq(name: &str) -> Sequencer {
        Sequencer::new(NodeKind::Lease, &format!("/sem/leases/{name}"), 50, SESSION).unwrap()
    }

    fn read(locks: &[String], leases: &[String], holder: Option<(&str, Stat)>) -> LeaseRead {
        LeaseRead {
            locks: locks.to_vec(),
            leases: leases.to_vec(),
            stat: Some(stat(50, SESSION)),
            holder: holder.map(|(n, s)| (n.to_owned(), Some(s))),
        }
    }

    #[test]
    fn a_lease_with_nobody_holding_the_inner_lock_is_granted() {
        let ours = lease(U1, 3);
        let s = seq(&ours);
        let leases = [lease(U2, 1), ours.clone(), lease(U3, 4)];
        assert_eq!(
            judge(&s, &read(&[], &leases, None)),
            LeaseVerdict::Checked(SequencerCheck::Valid)
        );
        // A foreign child sorting first blocks everyone: nobody holds the inner lock.
        let locks = ["-stray".to_owned(), lock(U2, 7)];
        assert_eq!(
            judge(&s, &read(&locks, &leases, None)),
            LeaseVerdict::Checked(SequencerCheck::Valid)
        );
    }

    #[test]
    fn the_holder_is_read_before_anything_is_decided_by_it() {
        let ours = lease(U1, 3);
        let locks = [lock(U2, 9), lock(U3, 8)];
        let r = read(&locks, std::slice::from_ref(&ours), None);
        assert_eq!(
            judge(&seq(&ours), &r),
            LeaseVerdict::ReadHolder(lock(U3, 8))
        );
        // Read as another node (the holder changed between reads): read again.
        let r = read(
            &locks,
            std::slice::from_ref(&ours),
            Some((&lock(U2, 9), stat(40, SESSION))),
        );
        assert_eq!(
            judge(&seq(&ours), &r),
            LeaseVerdict::ReadHolder(lock(U3, 8))
        );
        // Listed but read gone: read again, never judged without it.
        let mut r = read(&locks, std::slice::from_ref(&ours), None);
        r.holder = Some((lock(U3, 8), None));
        assert_eq!(
            judge(&seq(&ours), &r),
            LeaseVerdict::ReadHolder(lock(U3, 8))
        );
    }

    #[test]
    fn another_sessions_hold_or_a_hold_made_after_the_lease_leaves_it_granted() {
        let ours = lease(U1, 3);
        let locks = [lock(U1, 8)];
        let leases = [ours.clone()];
        // Another session holds the inner lock.
        let r = read(&locks, &leases, Some((&locks[0], stat(40, OTHER))));
        assert_eq!(
            judge(&seq(&ours), &r),
            LeaseVerdict::Checked(SequencerCheck::Valid)
        );
        // Our session holds it, with a node made after the lease (a later attempt).
        let r = read(&locks, &leases, Some((&locks[0], stat(60, SESSION))));
        assert_eq!(
            judge(&seq(&ours), &r),
            LeaseVerdict::Checked(SequencerCheck::Valid)
        );
    }

    #[test]
    fn our_lease_under_its_own_attempts_hold_is_pending() {
        // Our attempt: the inner node and its leases share the protection id, and it takes
        // all of them under the one hold: each may be waiting, the newest or not.
        let ours = lease(U1, 3);
        let locks = [lock(U1, 8)];
        let leases = [ours.clone(), lease(U1, 4), lease(U2, 1)];
        let r = read(&locks, &leases, Some((&locks[0], stat(40, SESSION))));
        assert_eq!(judge(&seq(&ours), &r), LeaseVerdict::Pending(lock(U1, 8)));
    }

    #[test]
    fn curators_newest_lease_under_its_sessions_hold_is_pending_and_older_ones_granted() {
        // Curator: one lease per hold, each create with its own id. The holder's session
        // made two leases after its holder node: the newest may be waiting, the other was
        // made under an earlier hold of the same session (two threads), so granted.
        let locks = [lock(U3, 8)];
        let older = lease(U1, 3);
        let newest = lease(U2, 4);
        let leases = [older.clone(), newest.clone()];
        let holder = Some((locks[0].as_str(), stat(40, SESSION)));
        assert_eq!(
            judge(&seq(&newest), &read(&locks, &leases, holder.clone())),
            LeaseVerdict::Pending(lock(U3, 8))
        );
        assert_eq!(
            judge(&seq(&older), &read(&locks, &leases, holder)),
            LeaseVerdict::Checked(SequencerCheck::Valid)
        );
        // Unprotected names (another client library) are judged by that rule alone.
        let plain = "lease-0000000005".to_owned();
        let r = read(
            &["lock-0000000001".to_owned()],
            std::slice::from_ref(&plain),
            Some(("lock-0000000001", stat(40, SESSION))),
        );
        assert_eq!(
            judge(&seq(&plain), &r),
            LeaseVerdict::Pending("lock-0000000001".to_owned())
        );
    }

    #[test]
    fn a_lease_gone_recreated_foreign_or_unlisted_is_refused() {
        let ours = lease(U1, 3);
        let s = seq(&ours);
        let mut r = read(&[], std::slice::from_ref(&ours), None);
        r.stat = None;
        assert_eq!(
            judge(&s, &r),
            LeaseVerdict::Checked(SequencerCheck::NodeGone)
        );
        r.stat = Some(stat(51, SESSION));
        assert_eq!(
            judge(&s, &r),
            LeaseVerdict::Checked(SequencerCheck::OtherNode { czxid: 51 })
        );
        r.stat = Some(stat(50, OTHER));
        assert_eq!(
            judge(&s, &r),
            LeaseVerdict::Checked(SequencerCheck::OtherOwner { session_id: OTHER })
        );
        // Read but not listed (cannot happen in one read): gone.
        let r = read(&[], &[], None);
        assert_eq!(
            judge(&s, &r),
            LeaseVerdict::Checked(SequencerCheck::NodeGone)
        );
        // Not a lease node.
        let other = seq(&lock(U1, 3));
        let r = read(&[], &[lock(U1, 3)], None);
        assert_eq!(
            judge(&other, &r),
            LeaseVerdict::Checked(SequencerCheck::NotALockNode)
        );
    }

    #[test]
    fn a_lease_sequencer_names_its_semaphore_and_round_trips() {
        let s = seq(&lease(U1, 3));
        assert_eq!(s.lock_path(), "/sem");
        assert_eq!(s.node_name(), lease(U1, 3));
        let text = s.to_string();
        assert!(text.starts_with("zk-seq:1:lease:0000000000001234:50:/sem/leases/"));
        assert_eq!(text.parse::<Sequencer>().unwrap(), s);
        // A lease's node must sit in a `leases` directory under a semaphore's path.
        for bad in [
            "/sem/lease-0000000001",
            "/leases/lease-0000000001",
            "/a/b/c",
        ] {
            assert_eq!(
                Sequencer::new(NodeKind::Lease, bad, 1, 1),
                Err(crate::ParseSequencerError::BadNode(bad.to_owned())),
                "{bad}"
            );
        }
        // Judged by place, a lease is no lock node: only `check` judges it.
        assert_eq!(
            s.judge(vec![lease(U1, 3)], Some(&stat(50, SESSION))),
            SequencerCheck::NotALockNode
        );
    }
}
