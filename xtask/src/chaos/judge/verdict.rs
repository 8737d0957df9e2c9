//! What the judge found: the [`Verdict`], its rows and violations, and the accounting of
//! the holds of ours.

use std::collections::BTreeMap;

use super::tree;

/// One recipe and library's counts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Row {
    /// Marks made (holds seen by the server).
    pub marks: u64,
    /// Register writes accepted.
    pub writes: u64,
    /// Marks and writes whose node was missing, not the marker's, or not granted, and writes
    /// no live mark stood for.
    pub not_granted: u64,
    /// Breaches of the lock's exclusion by the live marks blamed on this row.
    pub exclusion: u64,
    /// Tokens that did not match their node's czxid, or went down in a register.
    pub tokens: u64,
    /// Accepted writes whose value was not the previous one plus one.
    pub lost_updates: u64,
    /// Leases created without the inner lock.
    pub no_inner: u64,
    /// Nodes granted and left unmarked past the bound: a waiter that missed its turn.
    pub missed_turns: u64,
    /// Lock nodes owned by another session that a session of this library deleted (the
    /// operator's deletes aside): whatever the node was doing, only its owner may remove it.
    pub foreign_deletes: u64,
    /// Marks and register writes whose claim does not fit: a node not of the lock named, a
    /// mode its node does not hold (a `write` claimed on a read node), a register written
    /// under a node not of its own lock or under a `read` hold.
    pub claims: u64,
    /// Holds of ours (as their workers recorded them) that left neither their mark nor an
    /// unmarked record whose holder was told it lost the hold within the bound
    /// ([`Verdict::account`]).
    pub unaccounted: u64,
    /// Marks left out of their directory's exclusion because the operator deleted the node
    /// they held (from the delete on): not a violation, the operator's doing.
    pub excused: u64,
}

impl Row {
    /// Every violation counted.
    pub fn violations(&self) -> u64 {
        self.not_granted
            + self.exclusion
            + self.tokens
            + self.lost_updates
            + self.no_inner
            + self.missed_turns
            + self.foreign_deletes
            + self.claims
            + self.unaccounted
    }
}

/// The history the servers lost: from the first zxid they forgot to where their state
/// parted from the log ([`tree::Forgotten`]'s `since` and `parted`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LostStretch {
    /// The first zxid the servers forgot.
    pub from: i64,
    /// Where their state parted from the log: their own history again from here on.
    pub to: i64,
    /// The nodes (path, czxid) the log shows deleted in the stretch: deletes the servers
    /// may have lost.
    pub deleted: Vec<(String, i64)>,
}

impl LostStretch {
    /// Whether the node at `path` made at `czxid` lived its end in the lost history: made
    /// there, or deleted there by the log (so a node left by it may be the servers' loss,
    /// not a client's). A node made before and not deleted there, or made after, is not.
    pub fn covers(&self, path: &str, czxid: i64) -> bool {
        (self.from..self.to).contains(&czxid)
            || self.deleted.iter().any(|(p, c)| p == path && *c == czxid)
    }
}

/// An unmarked record ([`marks`](super::marks)): a hold that could not leave its mark.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnmarkedHold {
    /// Where the record was made or last set.
    pub zxid: i64,
    /// How long after the failure the holder was told it lost the hold, if it was (ms).
    pub lost_after_ms: Option<u64>,
}

/// A hold of ours as its worker recorded it, to be accounted for ([`Verdict::account`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OurHold {
    /// The name its mark was to have (`<who>-<n>`: the client and its acquisition's count).
    pub name: String,
    /// Its recipe's label (the report's row).
    pub label: String,
}

/// One violation found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// Where in the log.
    pub zxid: i64,
    /// The recipe.
    pub label: String,
    /// `rust`, `java`, or `?` (not known).
    pub lib: String,
    /// What.
    pub text: String,
}

/// A mark the server deleted with its session (`closeSession`, an expiry's or a close's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerEnd {
    /// The mark's name (`<who>-<n>`: the holder and its acquisition's count).
    pub name: String,
    /// The zxid of the `closeSession`.
    pub zxid: i64,
    /// Its time as the leader wrote it, ms since the Unix epoch.
    pub time_ms: i64,
}

/// A held lock node (one a live mark named) deleted by a session other than its owner: an
/// operator's delete, or another client's. One per mark that named it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeletedEnd {
    /// The mark's name (`<who>-<n>`: the holder and its acquisition's count).
    pub name: String,
    /// The lock node deleted (its full path).
    pub node: String,
    /// The zxid of the delete.
    pub zxid: i64,
    /// Its time as the leader wrote it, ms since the Unix epoch.
    pub time_ms: i64,
    /// The session that deleted it.
    pub deleter: i64,
    /// Whether that session is the operator's ([`Config::operators`](super::Config::operators)).
    pub by_operator: bool,
}

/// What the judge found.
#[derive(Debug, Clone, Default)]
pub struct Verdict {
    /// Transactions replayed (those that changed something).
    pub txns: u64,
    /// The first and last zxids read.
    pub span: Option<(i64, i64)>,
    /// Transactions left out as never committed (logged by a minority of the members).
    pub uncommitted: usize,
    /// Per recipe and library.
    pub rows: BTreeMap<(String, String), Row>,
    /// Every violation, in zxid order.
    pub violations: Vec<Violation>,
    /// Where the servers showed they lost committed transactions (their state parted from
    /// their logs): the judgement stops there, and what it found from where they parted is
    /// dropped. ZooKeeper's bug, not a lock's; the run is judged up to there, and is
    /// inconclusive (it fails) unless it accepts the loss
    /// ([`Config::accept_server_loss`](super::Config::accept_server_loss)).
    pub server_loss: Option<tree::Forgotten>,
    /// Transactions not judged after a server loss.
    pub unjudged: usize,
    /// The history the servers lost, with the nodes it made or deleted, when they lost some.
    pub lost_stretch: Option<LostStretch>,
    /// Whether the run accepts a server loss
    /// ([`Config::accept_server_loss`](super::Config::accept_server_loss)).
    pub server_loss_accepted: bool,
    /// Every mark's name (its path under the marks: `<who>-<n>`), registrations and
    /// unmarked records aside.
    pub marked: std::collections::BTreeSet<String>,
    /// The unmarked records, by the name of the mark their hold could not make.
    pub unmarked: BTreeMap<String, UnmarkedHold>,
    /// Holds of ours accounted for by [`Verdict::account`] (`None`: not accounted).
    pub accounted: Option<usize>,
    /// Which row counter each violation went to (with `violations`, in its order).
    pub(super) counted: Vec<fn(&mut Row) -> &mut u64>,
    /// Marks the server ended itself, with their session (expired, or closed with the hold
    /// still on): for the lost-signal timeliness, which the clients' side measures.
    pub ended_by_server: Vec<ServerEnd>,
    /// Held nodes deleted by a session other than their owner, in zxid order: for the lost
    /// signal's timeliness, and (the operator's) for the clients' checker to cut the old
    /// holder's hold where its node went.
    pub ended_by_delete: Vec<DeletedEnd>,
    /// What keeps the log from being judged as a whole: unreadable files, members
    /// disagreeing, zxids in no log, a replay that does not fit, data that does not parse.
    pub errors: Vec<String>,
}

impl Verdict {
    /// Why the run fails, if it does: a violation of ours, or an error of the judge's.
    pub fn failure(&self) -> Option<String> {
        let ours = self.violations.iter().filter(|v| v.lib == "rust").count();
        let mut why = Vec::new();
        if ours > 0 {
            why.push(format!("{ours} violations of ours in the servers' log"));
        }
        if !self.errors.is_empty() {
            why.push(format!("{} log judge errors", self.errors.len()));
        }
        if let Some(loss) = self
            .server_loss
            .as_ref()
            .filter(|_| !self.server_loss_accepted)
        {
            why.push(format!(
                "inconclusive: the servers lost committed transactions (from zxid {:#x}; {} \
                 txns not judged)",
                loss.since, self.unjudged
            ));
        }
        (!why.is_empty()).then(|| why.join(", "))
    }

    /// Accounts for every hold of ours in `holds` (the workers' own list, one per
    /// acquisition that held; a name listed twice counts once): each has its mark on the
    /// record, or an unmarked record whose holder was told it lost the hold at most
    /// `bound_ms` after the failure; any other is a violation of ours (`unaccounted`).
    /// After a server loss nothing is accounted (marks from the parting on were not read):
    /// [`Verdict::accounted`] stays `None`, and the report says so.
    pub fn account(&mut self, holds: &[OurHold], bound_ms: u64) {
        if self.server_loss.is_some() {
            return;
        }
        let end = self.span.map_or(0, |(_, b)| b);
        let mut seen = std::collections::HashSet::new();
        for hold in holds {
            if !seen.insert(hold.name.as_str()) || self.marked.contains(&hold.name) {
                continue;
            }
            let (zxid, text) = match self.unmarked.get(&hold.name) {
                Some(u) => match u.lost_after_ms {
                    Some(ms) if ms <= bound_ms => continue,
                    Some(ms) => (
                        u.zxid,
                        format!(
                            "hold {} left no mark; its holder was told it lost the hold {ms} ms \
                             after the failure (bound {bound_ms} ms)",
                            hold.name
                        ),
                    ),
                    None => (
                        u.zxid,
                        format!(
                            "hold {} left no mark, and its holder was never told it lost the hold",
                            hold.name
                        ),
                    ),
                },
                None => (
                    end,
                    format!(
                        "hold {} left neither its mark nor an unmarked record",
                        hold.name
                    ),
                ),
            };
            self.violate(zxid, &hold.label, "rust", |r| &mut r.unaccounted, text);
        }
        self.accounted = Some(seen.len());
        self.sort();
    }

    /// The violations back in zxid order, each with its counter.
    pub(super) fn sort(&mut self) {
        let mut both: Vec<_> = std::mem::take(&mut self.violations)
            .into_iter()
            .zip(std::mem::take(&mut self.counted))
            .collect();
        both.sort_by_key(|(v, _)| v.zxid);
        (self.violations, self.counted) = both.into_iter().unzip();
    }

    /// Marks and register writes judged, over every recipe and library.
    pub fn judged(&self) -> (u64, u64) {
        self.rows
            .values()
            .fold((0, 0), |(m, w), r| (m + r.marks, w + r.writes))
    }

    pub(super) fn row(&mut self, label: &str, lib: &str) -> &mut Row {
        self.rows
            .entry((label.to_owned(), lib.to_owned()))
            .or_default()
    }

    pub(super) fn violate(
        &mut self,
        zxid: i64,
        label: &str,
        lib: &str,
        count: fn(&mut Row) -> &mut u64,
        text: String,
    ) {
        *count(self.row(label, lib)) += 1;
        self.counted.push(count);
        self.violations.push(Violation {
            zxid,
            label: label.to_owned(),
            lib: lib.to_owned(),
            text,
        });
    }
}
