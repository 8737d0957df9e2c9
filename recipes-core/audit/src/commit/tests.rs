//! The commit rule on synthetic members' logs (no files, no server): which zxids a merge
//! leaves out, applies unconfirmed, or reports.

use std::collections::BTreeMap;
use std::convert::Infallible;

use zk_proto::txnlog::{CloseSessionTxn, CreateTxn, DeleteTxn, TxnBody, TxnEntry, TxnHeader};

use super::{CommitRule, Commits, MemberStream, Verdict, Witnessed, merge, verdict};
use crate::replay::{Anomaly, Audit, EventKind, History};

/// One member's log in memory: its oldest log file's zxid and its records.
struct Member {
    oldest: Option<i64>,
    entries: std::vec::IntoIter<TxnEntry>,
}

impl MemberStream for Member {
    type Error = Infallible;

    fn oldest(&self) -> Option<i64> {
        self.oldest
    }

    fn next_entry(&mut self) -> Result<Option<TxnEntry>, Infallible> {
        Ok(self.entries.next())
    }
}

/// Epoch 1's and epoch 2's zxids.
const fn e1(n: i64) -> i64 {
    (1 << 32) | n
}
const fn e2(n: i64) -> i64 {
    (2 << 32) | n
}

const A: i64 = 0xa;
const B: i64 = 0xb;
const L: &str = "/l";
const NA: &str = "_c_a-lock-0000000000";
const NB: &str = "_c_b-lock-0000000001";

fn txn(zxid: i64, session: i64, cxid: i32, body: TxnBody) -> TxnEntry {
    TxnEntry {
        header: TxnHeader {
            client_id: session,
            cxid,
            zxid,
            time: 1000 + (zxid & 0xffff) * 10 + (zxid >> 32) * 1000,
            op: body.op_code(),
        },
        body,
        digest: None,
    }
}

fn create(path: &str, ephemeral: bool, parent_cversion: i32) -> TxnBody {
    TxnBody::Create(CreateTxn {
        path: path.into(),
        ephemeral,
        parent_cversion,
        ..CreateTxn::default()
    })
}

/// The ensemble's proposals: A takes the lock, B queues, A releases (the leader's last
/// proposal, `e1(4)`), then in epoch 2 A's session expires and B creates a persistent node.
fn proposals() -> BTreeMap<i64, TxnEntry> {
    let node = |n: &str| format!("{L}/{n}");
    [
        txn(e1(1), A, 1, create(L, false, 1)),
        txn(e1(2), A, 2, create(&node(NA), true, 1)),
        txn(e1(3), B, 1, create(&node(NB), true, 2)),
        txn(e1(4), A, 3, TxnBody::Delete(DeleteTxn { path: node(NA) })),
        txn(
            e2(1),
            A,
            0,
            TxnBody::CloseSession(Some(CloseSessionTxn {
                paths_to_delete: vec![node(NA)],
            })),
        ),
        txn(e2(2), B, 2, create("/other", false, 2)),
    ]
    .into_iter()
    .map(|e| (e.header.zxid, e))
    .collect()
}

/// A member that logged `zxids` of [`proposals`], its oldest log file starting at the first.
fn member(zxids: &[i64]) -> Member {
    purged(zxids.first().copied(), zxids)
}

/// A member that logged `zxids`, its oldest log file (what autopurge left) starting at
/// `oldest`.
fn purged(oldest: Option<i64>, zxids: &[i64]) -> Member {
    let all = proposals();
    Member {
        oldest,
        entries: zxids
            .iter()
            .map(|z| all.get(z).unwrap().clone())
            .collect::<Vec<_>>()
            .into_iter(),
    }
}

/// Merges `members` of an ensemble of `ensemble`.
fn merged(mut members: Vec<Member>, ensemble: usize) -> History {
    let mut audit = Audit::new(Vec::new());
    audit.start(None);
    merge(&mut members, ensemble, &mut audit).unwrap();
    audit.finish()
}

fn applied(h: &History) -> u64 {
    h.txns
}

fn commits(h: &History) -> &Commits {
    h.commits.as_ref().unwrap()
}

fn uncommitted(h: &History) -> Vec<(i64, usize, usize)> {
    commits(h)
        .first_uncommitted
        .iter()
        .map(|w| (w.zxid, w.logged, w.witnesses))
        .collect()
}

fn unconfirmed(h: &History) -> Vec<(i64, usize, usize)> {
    commits(h)
        .first_unconfirmed
        .iter()
        .map(|w| (w.zxid, w.logged, w.witnesses))
        .collect()
}

/// `(zxid, node)` of every grant.
fn grants(h: &History) -> Vec<(i64, String)> {
    h.locks
        .iter()
        .flat_map(|l| &l.events)
        .filter(|e| matches!(e.kind, EventKind::Granted { .. }))
        .map(|e| (e.at.zxid, e.node.clone()))
        .collect()
}

const EVERYTHING: [i64; 6] = [e1(1), e1(2), e1(3), e1(4), e2(1), e2(2)];
/// What the followers logged: all but the dead leader's last proposal.
const FOLLOWER: [i64; 5] = [e1(1), e1(2), e1(3), e2(1), e2(2)];

#[test]
fn the_rule_alone() {
    // A majority of the ensemble: committed, whoever else is missing.
    assert_eq!(verdict(3, 2, 3), Verdict::Committed);
    assert_eq!(verdict(3, 2, 2), Verdict::Committed);
    assert_eq!(verdict(5, 3, 3), Verdict::Committed);
    // Short of a majority even counting every member that is no witness: uncommitted.
    assert_eq!(verdict(3, 1, 3), Verdict::Uncommitted);
    assert_eq!(verdict(5, 2, 5), Verdict::Uncommitted);
    assert_eq!(verdict(5, 1, 4), Verdict::Uncommitted);
    // A majority within reach through members that are no witnesses: unconfirmed.
    assert_eq!(verdict(3, 1, 2), Verdict::Unconfirmed);
    assert_eq!(verdict(5, 2, 4), Verdict::Unconfirmed);
    assert_eq!(verdict(5, 1, 2), Verdict::Unconfirmed);
    assert!(!Verdict::Uncommitted.applies());
    assert!(Verdict::Unconfirmed.applies() && Verdict::NotJudged.applies());
}

#[test]
fn a_dead_leaders_tail_logged_by_one_of_three_is_left_out() {
    let h = merged(
        vec![member(&EVERYTHING), member(&FOLLOWER), member(&FOLLOWER)],
        3,
    );
    assert_eq!(applied(&h), 5);
    assert_eq!(uncommitted(&h), [(e1(4), 1, 3)]);
    assert_eq!((commits(&h).uncommitted, commits(&h).unconfirmed), (1, 0));
    assert_eq!(h.anomalies, []);
    let text = crate::report::table(&h, crate::report::Range::default());
    assert!(
        text.contains("1 uncommitted transactions left out: 0x100000004 (1 of 3 logged it)"),
        "{text}"
    );
    let json = crate::json::to_json(&h, crate::report::Range::default());
    assert!(
        json.contains(
            r#""commits":{"ensemble":3,"given":3,"applied":true,"uncommitted":1,"first_uncommitted":[{"zxid":4294967300,"logged":1,"witnesses":3}],"unconfirmed":0,"first_unconfirmed":[],"statement":"commit rule (3 of 3"#
        ),
        "{json}"
    );
}

#[test]
fn a_tail_logged_by_two_of_three_is_kept() {
    let h = merged(
        vec![member(&EVERYTHING), member(&EVERYTHING), member(&FOLLOWER)],
        3,
    );
    assert_eq!(applied(&h), 6);
    assert_eq!(commits(&h).uncommitted, 0);
    assert_eq!(commits(&h).statement(), None);
    let text = crate::report::table(&h, crate::report::Range::default());
    assert!(!text.contains("commit rule"), "{text}");
}

#[test]
fn five_members_need_three() {
    let five = |with_tail: usize| {
        (0..5)
            .map(|i| {
                member(if i < with_tail {
                    &EVERYTHING[..]
                } else {
                    &FOLLOWER[..]
                })
            })
            .collect::<Vec<_>>()
    };
    let h = merged(five(2), 5);
    assert_eq!((applied(&h), uncommitted(&h)), (5, vec![(e1(4), 2, 5)]));
    let h = merged(five(3), 5);
    assert_eq!((applied(&h), commits(&h).uncommitted), (6, 0));
    // Four of five given: two logging the tail, and the fifth might have: unconfirmed.
    let mut four = five(2);
    four.pop();
    let h = merged(four, 5);
    assert_eq!(applied(&h), 6);
    assert_eq!(unconfirmed(&h), [(e1(4), 2, 4)]);
    // One logging it of four: short even if the fifth had.
    let mut four = five(1);
    four.pop();
    let h = merged(four, 5);
    assert_eq!((applied(&h), uncommitted(&h)), (5, vec![(e1(4), 1, 4)]));
}

#[test]
fn a_purged_member_is_not_counted() {
    // The third member's logs before epoch 2 were purged: it is no witness of the tail,
    // which one of the two others logged. It may have been committed (the purged member
    // with the leader): applied, unconfirmed.
    let h = merged(
        vec![
            member(&EVERYTHING),
            member(&FOLLOWER),
            purged(Some(e2(1)), &[e2(1), e2(2)]),
        ],
        3,
    );
    assert_eq!(applied(&h), 6);
    assert_eq!(commits(&h).uncommitted, 0);
    // Epoch 1's other zxids: two of three logged them, committed whatever the third did.
    assert_eq!(unconfirmed(&h), [(e1(4), 1, 2)]);
    let statement = commits(&h).statement().unwrap();
    assert!(
        statement.contains("1 transactions applied unconfirmed")
            && statement.contains("0x100000004 (1 of 2 logged it)"),
        "{statement}"
    );
    // The same logs, the third member's reaching back (it logged none of epoch 1, as a
    // member down then): the tail is left out.
    let h = merged(
        vec![
            member(&EVERYTHING),
            member(&FOLLOWER),
            purged(Some(e1(1)), &[e2(1), e2(2)]),
        ],
        3,
    );
    assert_eq!((applied(&h), uncommitted(&h)), (5, vec![(e1(4), 1, 3)]));
    // Two members purged of five: a zxid logged by every witness, two of three, is not
    // shown committed; three of three is.
    let h = merged(
        vec![
            member(&EVERYTHING),
            member(&EVERYTHING),
            member(&FOLLOWER),
            purged(Some(e2(1)), &[e2(1), e2(2)]),
            purged(Some(e2(1)), &[e2(1), e2(2)]),
        ],
        5,
    );
    assert_eq!(applied(&h), 6);
    assert_eq!(unconfirmed(&h), [(e1(4), 2, 3)]);
    // Fewer than a majority of five reach back: epoch 1 is applied, unconfirmed.
    let h = merged(
        vec![
            member(&EVERYTHING),
            member(&FOLLOWER),
            purged(Some(e2(1)), &[e2(1), e2(2)]),
            purged(Some(e2(1)), &[e2(1), e2(2)]),
            purged(Some(e2(1)), &[e2(1), e2(2)]),
        ],
        5,
    );
    assert_eq!(applied(&h), 6);
    assert_eq!(commits(&h).unconfirmed, 4);
    assert_eq!(commits(&h).uncommitted, 0);
}

#[test]
fn one_members_logs_are_applied_whole_and_the_report_says_so() {
    let h = merged(vec![member(&EVERYTHING)], 1);
    assert_eq!(applied(&h), 6);
    assert!(!commits(&h).applied);
    let text = crate::report::table(&h, crate::report::Range::default());
    assert!(
        text.contains("commit rule not applied: 1 of 1 members' logs given"),
        "{text}"
    );
    let json = crate::json::to_json(&h, crate::report::Range::default());
    assert!(json.contains(r#""applied":false"#), "{json}");
    assert!(
        json.contains(r#""statement":"commit rule not applied: 1 of 1 members' logs given"#),
        "{json}"
    );
    // One of three (`--ensemble 3`) or two of five: fewer than a majority, not applied.
    let h = merged(vec![member(&EVERYTHING)], 3);
    assert_eq!(applied(&h), 6);
    assert_eq!(
        commits(&h).statement().unwrap().get(..56),
        Some("commit rule not applied: 1 of 3 members' logs given (eve")
    );
    let h = merged(vec![member(&EVERYTHING), member(&FOLLOWER)], 5);
    assert_eq!((applied(&h), commits(&h).applied), (6, false));
    // An ensemble given smaller than the logs: as many members as logs.
    let h = merged(
        vec![member(&EVERYTHING), member(&FOLLOWER), member(&FOLLOWER)],
        1,
    );
    assert_eq!((commits(&h).ensemble, applied(&h)), (3, 5));
}

#[test]
fn a_committed_zxid_after_an_uncommitted_one_of_its_epoch_is_reported() {
    // A member's log lost e1(3), committed before e1(4) was: the logs contradict the order.
    let lost = [e1(1), e1(2), e1(4), e2(1), e2(2)];
    let h = merged(vec![member(&EVERYTHING), member(&lost), member(&lost)], 3);
    assert_eq!(uncommitted(&h), [(e1(3), 1, 3)]);
    assert_eq!(
        h.anomalies,
        [
            Anomaly::CommittedAfterUncommitted {
                zxid: e1(4),
                uncommitted: e1(3)
            },
            Anomaly::Gap {
                after: e1(2),
                before: e1(4)
            },
            // A's node, released at e1(4), is gone when its session expires.
            Anomaly::UnknownNode {
                zxid: e2(1),
                path: format!("{L}/{NA}")
            }
        ]
    );
    let text = crate::report::table(&h, crate::report::Range::default());
    assert!(
        text.contains("HISTORY LOST: zxid 0x100000004 logged by a majority after 0x100000003"),
        "{text}"
    );
    let json = crate::json::to_json(&h, crate::report::Range::default());
    assert!(
        json.contains(
            r#"{"committed_after_uncommitted":{"zxid":4294967300,"uncommitted":4294967299}}"#
        ),
        "{json}"
    );
    // Not carried into the next epoch.
    assert_eq!(applied(&h), 5);
}

#[test]
fn after_an_uncommitted_zxid_its_epochs_unconfirmed_ones_are_left_out() {
    let mut rule = CommitRule::new(3, 3);
    assert_eq!(rule.judge(e1(1), 3, 3), Verdict::Committed);
    assert_eq!(rule.judge(e1(2), 1, 3), Verdict::Uncommitted);
    // Unconfirmed alone (one of two witnesses), but after e1(2) it cannot have committed.
    assert_eq!(rule.judge(e1(3), 1, 2), Verdict::Uncommitted);
    // The next epoch starts clean.
    assert_eq!(rule.judge(e2(1), 1, 2), Verdict::Unconfirmed);
    assert_eq!(rule.judge(e2(2), 2, 2), Verdict::Committed);
    let c = rule.finish();
    assert_eq!(
        c.first_uncommitted,
        [
            Witnessed {
                zxid: e1(2),
                logged: 1,
                witnesses: 3
            },
            Witnessed {
                zxid: e1(3),
                logged: 1,
                witnesses: 2
            }
        ]
    );
    assert_eq!((c.uncommitted, c.unconfirmed), (2, 1));
}

#[test]
fn a_grant_only_in_the_uncommitted_tail_is_not_in_the_history() {
    let nodes = [member(&EVERYTHING), member(&FOLLOWER), member(&FOLLOWER)];
    // Every record applied (one member's logs): B granted when A released, at the tail.
    let mut whole = Audit::new(Vec::new());
    whole.start(None);
    merge(&mut [member(&EVERYTHING)], 1, &mut whole).unwrap();
    assert_eq!(
        grants(&whole.finish()),
        [(e1(2), NA.to_owned()), (e1(4), NB.to_owned())]
    );
    // Merged by the rule: A never released; B is granted when A's session expired.
    let h = merged(nodes.into_iter().collect(), 3);
    assert_eq!(grants(&h), [(e1(2), NA.to_owned()), (e2(1), NB.to_owned())]);
    let l = h.locks.iter().find(|l| l.path == L).unwrap();
    assert!(
        l.events.iter().all(|e| e.at.zxid != e1(4)),
        "{:?}",
        l.events
    );
    assert!(l.events.iter().any(|e| e.node == NA
        && matches!(
            e.kind,
            EventKind::Ended {
                cause: crate::replay::EndCause::Expired,
                held: true,
                ..
            }
        )));
}

#[test]
fn the_first_few_are_listed_and_every_one_counted() {
    let mut rule = CommitRule::new(3, 3);
    for n in 1..=20 {
        assert_eq!(rule.judge(e1(n), 1, 3), Verdict::Uncommitted);
    }
    let c = rule.finish();
    assert_eq!(
        (c.uncommitted, c.first_uncommitted.len()),
        (20, super::LISTED)
    );
    assert!(c.statement().unwrap().ends_with(", ..."));
}
