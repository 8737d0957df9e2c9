//! The commit rule for several members' logs: which of the transactions they logged the
//! ensemble committed, and the merge that applies only those.
//!
//! - A proposal commits once a majority of the ensemble has logged it (ZAB: a member
//!   acknowledges a proposal after its log is flushed). A new leader comes from a quorum that
//!   meets every committing majority, so it holds every committed transaction, and a member's
//!   log loses only what the new leader lacked (by truncation). So a committed zxid is in a
//!   majority's logs; one logged by fewer was never committed: a dead leader's last
//!   proposals, which a member re-synced by snapshot keeps in its old log file.
//! - A member whose logs reach back to a zxid (its oldest log file starts at or before it)
//!   witnesses it: logged or not. A member that does not (its older logs purged, or its
//!   directory not given) might have logged it. A zxid logged by a majority of the ensemble
//!   is committed; one that would fall short of a majority even if every member that does not
//!   witness it had logged it is uncommitted, and left out; any other is applied and counted
//!   unconfirmed (always so where fewer than a majority witness it).
//! - Proposals commit in order within an epoch: after an uncommitted zxid, the epoch's later
//!   zxids are uncommitted too (an unconfirmed one is left out). One logged by a majority
//!   there contradicts the logs: it is applied and reported
//!   ([`Anomaly::CommittedAfterUncommitted`]).
//! - With fewer than two members' logs, or fewer than a majority of the ensemble's, the rule
//!   cannot be applied: every transaction any member logged is applied, and
//!   [`Commits::applied`] says so.
//!
//! Pure: members' logs are [`MemberStream`]s, read one record per member at a time; a
//! zxid's count is known once every member's next record is past it.
//!
//! [`Anomaly::CommittedAfterUncommitted`]: crate::replay::Anomaly::CommittedAfterUncommitted

use zk_proto::txnlog::TxnEntry;

use crate::replay::Audit;

/// How many zxids of each kind [`Commits`] lists (the counts are whole).
pub const LISTED: usize = 8;

/// How many of an ensemble of `n` make a majority.
pub fn majority(n: usize) -> usize {
    n / 2 + 1
}

/// What the rule says of one zxid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Logged by a majority of the ensemble: applied.
    Committed,
    /// Logged by a majority, after an uncommitted zxid of its epoch: applied, and an anomaly.
    CommittedAfter {
        /// The epoch's first uncommitted zxid.
        uncommitted: i64,
    },
    /// Short of a majority whatever the members not witnessing it logged, or after an
    /// uncommitted zxid of its epoch: left out.
    Uncommitted,
    /// Neither shown committed nor shown uncommitted (members that might have logged it are
    /// not witnesses): applied, and counted.
    Unconfirmed,
    /// The rule is not applied (too few members' logs given): applied.
    NotJudged,
}

impl Verdict {
    /// Whether the transaction is applied.
    pub fn applies(self) -> bool {
        self != Verdict::Uncommitted
    }
}

/// The rule for one zxid, on its own (without the epoch's order): `logged` members of an
/// ensemble of `ensemble` logged it, `witnesses` members' logs reach back to it (those that
/// logged it among them).
///
/// ```
/// use zk_lock_audit::commit::{Verdict, verdict};
/// assert_eq!(verdict(3, 2, 3), Verdict::Committed);
/// assert_eq!(verdict(3, 1, 3), Verdict::Uncommitted); // a dead leader's last proposal
/// assert_eq!(verdict(3, 1, 2), Verdict::Unconfirmed); // the third member may have it
/// ```
pub fn verdict(ensemble: usize, logged: usize, witnesses: usize) -> Verdict {
    let majority = majority(ensemble);
    let unknown = ensemble.saturating_sub(witnesses);
    if logged >= majority {
        Verdict::Committed
    } else if logged.saturating_add(unknown) < majority {
        Verdict::Uncommitted
    } else {
        Verdict::Unconfirmed
    }
}

/// One zxid the rule left out or could not confirm, with its count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Witnessed {
    /// The zxid.
    pub zxid: i64,
    /// Members that logged it.
    pub logged: usize,
    /// Members whose logs reach back to it (those that logged it among them).
    pub witnesses: usize,
}

/// What the rule decided over one merge ([`History::commits`]).
///
/// [`History::commits`]: crate::replay::History::commits
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Commits {
    /// The ensemble's size.
    pub ensemble: usize,
    /// Members whose logs were given.
    pub given: usize,
    /// Whether the rule was applied (else every transaction was).
    pub applied: bool,
    /// Zxids left out as never committed.
    pub uncommitted: u64,
    /// The first [`LISTED`] of them.
    pub first_uncommitted: Vec<Witnessed>,
    /// Zxids applied though the logs given do not show them committed.
    pub unconfirmed: u64,
    /// The first [`LISTED`] of them.
    pub first_unconfirmed: Vec<Witnessed>,
}

impl Commits {
    /// What a reader must know of the rule: that it was not applied, or what it left out and
    /// could not confirm; `None` when it left nothing out and confirmed everything.
    pub fn statement(&self) -> Option<String> {
        if !self.applied {
            return Some(format!(
                "commit rule not applied: {} of {} members' logs given (every transaction a \
                 member logged is applied; give a majority of the members' dataDirs, and \
                 --ensemble N)",
                self.given, self.ensemble
            ));
        }
        let list = |w: &[Witnessed]| {
            w.iter()
                .map(|w| format!("0x{:x} ({} of {} logged it)", w.zxid, w.logged, w.witnesses))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut parts = Vec::new();
        if self.uncommitted > 0 {
            parts.push(format!(
                "{} uncommitted transactions left out: {}{}",
                self.uncommitted,
                list(&self.first_uncommitted),
                if self.uncommitted > self.first_uncommitted.len() as u64 {
                    ", ..."
                } else {
                    ""
                }
            ));
        }
        if self.unconfirmed > 0 {
            parts.push(format!(
                "{} transactions applied unconfirmed (members that might have logged them are \
                 not witnesses: logs purged or not given): {}{}",
                self.unconfirmed,
                list(&self.first_unconfirmed),
                if self.unconfirmed > self.first_unconfirmed.len() as u64 {
                    ", ..."
                } else {
                    ""
                }
            ));
        }
        (!parts.is_empty()).then(|| {
            format!(
                "commit rule ({} of {} members' logs): {}",
                self.given,
                self.ensemble,
                parts.join("; ")
            )
        })
    }
}

/// The rule over a merge, zxid after zxid in order: [`CommitRule::judge`] each, then
/// [`CommitRule::finish`].
#[derive(Debug, Clone)]
pub struct CommitRule {
    commits: Commits,
    /// The first uncommitted zxid of the epoch being judged.
    cut: Option<i64>,
    /// The last zxid judged.
    last: Option<i64>,
}

impl CommitRule {
    /// The rule for `given` members' logs of an ensemble of `ensemble` (taken as at least
    /// `given`).
    pub fn new(ensemble: usize, given: usize) -> Self {
        let ensemble = ensemble.max(given);
        CommitRule {
            commits: Commits {
                ensemble,
                given,
                applied: given >= 2 && given >= majority(ensemble),
                ..Commits::default()
            },
            cut: None,
            last: None,
        }
    }

    /// Judges `zxid` (each zxid once, in increasing order): `logged` members logged it,
    /// `witnesses` members' logs reach back to it.
    pub fn judge(&mut self, zxid: i64, logged: usize, witnesses: usize) -> Verdict {
        if !self.commits.applied {
            return Verdict::NotJudged;
        }
        if self.last.is_some_and(|l| l >> 32 != zxid >> 32) {
            self.cut = None;
        }
        self.last = Some(zxid);
        let seen = Witnessed {
            zxid,
            logged,
            witnesses,
        };
        let list = |n: &mut u64, first: &mut Vec<Witnessed>| {
            *n += 1;
            if first.len() < LISTED {
                first.push(seen);
            }
        };
        let c = &mut self.commits;
        match (verdict(c.ensemble, logged, witnesses), self.cut) {
            (Verdict::Committed, Some(uncommitted)) => {
                // Reported once: the epoch's next uncommitted zxid starts another cut.
                self.cut = None;
                Verdict::CommittedAfter { uncommitted }
            }
            (Verdict::Committed, None) => Verdict::Committed,
            (Verdict::Unconfirmed, None) => {
                list(&mut c.unconfirmed, &mut c.first_unconfirmed);
                Verdict::Unconfirmed
            }
            _ => {
                list(&mut c.uncommitted, &mut c.first_uncommitted);
                self.cut.get_or_insert(zxid);
                Verdict::Uncommitted
            }
        }
    }

    /// What the rule decided.
    pub fn finish(self) -> Commits {
        self.commits
    }
}

/// One member's log, as the merge reads it: its transactions in zxid order, one at a time.
pub trait MemberStream {
    /// Why a record cannot be read.
    type Error;
    /// The zxid its oldest log file starts at (`None`: it has no log).
    fn oldest(&self) -> Option<i64>;
    /// Its next transaction, `None` at its end. A transaction the member logged again is
    /// returned once.
    fn next_entry(&mut self) -> Result<Option<TxnEntry>, Self::Error>;
}

/// Merges `members`' logs (members of an ensemble of `ensemble`) into `audit` by zxid: each
/// zxid judged by the [`CommitRule`] once every member's next record is past it, applied once
/// (the first member's record) if the rule applies it; members that logged different
/// records at one zxid noted ([`Audit::diverged`]); what the rule decided left in the
/// history ([`Audit::commits`]). Memory: one record per member.
///
/// # Errors
/// The first member's error.
pub fn merge<M: MemberStream>(
    members: &mut [M],
    ensemble: usize,
    audit: &mut Audit,
) -> Result<(), M::Error> {
    let mut rule = CommitRule::new(ensemble, members.len());
    let oldest: Vec<Option<i64>> = members.iter().map(M::oldest).collect();
    let mut heads = members
        .iter_mut()
        .map(M::next_entry)
        .collect::<Result<Vec<_>, _>>()?;
    while let Some(zxid) = heads.iter().flatten().map(|e| e.header.zxid).min() {
        let mut chosen: Option<TxnEntry> = None;
        let mut diverged = false;
        let (mut logged, mut witnesses) = (0, 0);
        for ((head, member), oldest) in heads.iter_mut().zip(members.iter_mut()).zip(&oldest) {
            let here = head.as_ref().is_some_and(|e| e.header.zxid == zxid);
            if here || oldest.is_some_and(|o| o <= zxid) {
                witnesses += 1;
            }
            if !here {
                continue;
            }
            logged += 1;
            let next = member.next_entry()?;
            match (&chosen, std::mem::replace(head, next)) {
                (None, e) => chosen = e,
                (Some(c), Some(e)) => diverged |= c.header != e.header || c.body != e.body,
                (Some(_), None) => {}
            }
        }
        let Some(entry) = chosen else {
            continue;
        };
        if diverged {
            audit.diverged(zxid);
        }
        let verdict = rule.judge(zxid, logged, witnesses);
        if let Verdict::CommittedAfter { uncommitted } = verdict {
            audit.committed_after(zxid, uncommitted);
        }
        if verdict.applies() {
            audit.apply(&entry);
        }
    }
    audit.commits(rule.finish());
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests;
