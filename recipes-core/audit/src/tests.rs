//! The reconstruction on scripted histories with known answers.

use zk_proto::snapshot::CONTAINER_OWNER;
use zk_proto::txnlog::{
    CloseSessionTxn, CreateContainerTxn, CreateTxn, DeleteTxn, TxnBody, TxnEntry, TxnHeader,
};

use crate::replay::{Anomaly, Audit, EndCause, EventKind, History, LockHistory, LockKind, Stamp};
use crate::report::{Range, summarize};

/// A scripted history: each call is the next zxid, `time` ms after the epoch.
struct Script {
    audit: Audit,
    zxid: i64,
}

const A: i64 = 0xa;
const B: i64 = 0xb;
const C: i64 = 0xc;
const OP: i64 = 0x0f;

impl Script {
    fn new(audit: Audit) -> Self {
        let mut audit = audit;
        audit.start(None);
        Script { audit, zxid: 0 }
    }

    fn txn(&mut self, time: i64, session: i64, cxid: i32, body: TxnBody) -> i64 {
        self.zxid += 1;
        self.audit.apply(&TxnEntry {
            header: TxnHeader {
                client_id: session,
                cxid,
                zxid: self.zxid,
                time,
                op: body.op_code(),
            },
            body,
            digest: None,
        });
        self.zxid
    }

    fn create(&mut self, time: i64, session: i64, path: &str) -> i64 {
        let cversion = i32::try_from(self.zxid + 1).unwrap();
        self.txn(time, session, 1, create_v(path, cversion))
    }

    fn delete(&mut self, time: i64, session: i64, path: &str) -> i64 {
        self.txn(time, session, 2, delete(path))
    }

    fn expire(&mut self, time: i64, session: i64, paths: &[&str]) -> i64 {
        self.txn(time, session, 0, close(paths))
    }

    /// The history, its figures tallied while replaying checked against those counted from
    /// its events.
    fn finish(self) -> History {
        let h = self.audit.finish();
        for l in h.locks.iter().filter(|_| h.events_stored) {
            assert_eq!(l.summary, summarize(l, h.kept), "{}", l.path);
        }
        h
    }
}

fn create(path: &str, ephemeral: bool) -> TxnBody {
    TxnBody::Create(CreateTxn {
        path: path.into(),
        ephemeral,
        ..CreateTxn::default()
    })
}

fn create_v(path: &str, parent_cversion: i32) -> TxnBody {
    TxnBody::Create(CreateTxn {
        path: path.into(),
        ephemeral: true,
        parent_cversion,
        ..CreateTxn::default()
    })
}

fn delete(path: &str) -> TxnBody {
    TxnBody::Delete(DeleteTxn { path: path.into() })
}

fn close(paths: &[&str]) -> TxnBody {
    TxnBody::CloseSession(Some(CloseSessionTxn {
        paths_to_delete: paths.iter().map(|p| (*p).to_owned()).collect(),
    }))
}

fn lock<'h>(h: &'h History, path: &str) -> &'h LockHistory {
    h.locks
        .iter()
        .find(|l| l.path == path)
        .unwrap_or_else(|| panic!("no lock {path} in {:?}", h.locks))
}

/// (zxid, node, what) of every event, in order: the answers tests compare.
fn story(l: &LockHistory) -> Vec<(i64, String, String)> {
    l.events
        .iter()
        .map(|e| {
            let what = match &e.kind {
                EventKind::Queued => "queued".to_owned(),
                EventKind::Present { holding, .. } => format!("present holding={holding}"),
                EventKind::Granted { wait_ms } => format!("granted wait={wait_ms}"),
                EventKind::Ended {
                    cause,
                    held,
                    for_ms,
                    next_grant_ms,
                } => format!(
                    "ended {} {}held={held} for={for_ms:?} next={next_grant_ms:?}",
                    cause.name(),
                    match cause {
                        EndCause::DeletedBy(s) => format!("by={s:#x} "),
                        _ => String::new(),
                    }
                ),
            };
            (e.at.zxid, e.node.clone(), what)
        })
        .collect()
}

fn s(z: i64, node: &str, what: &str) -> (i64, String, String) {
    (z, node.to_owned(), what.to_owned())
}

const L: &str = "/app/l";
const N0: &str = "_c_00000000-0000-0000-0000-000000000000-lock-0000000000";
const N1: &str = "_c_11111111-1111-1111-1111-111111111111-lock-0000000001";
const N2: &str = "_c_22222222-2222-2222-2222-222222222222-lock-0000000002";

fn at(dir: &str, name: &str) -> String {
    format!("{dir}/{name}")
}

#[test]
fn a_mutex_holder_expires_and_the_next_grant_comes_later() {
    let mut t = Script::new(Audit::new(vec![]));
    t.txn(
        1000,
        A,
        1,
        TxnBody::CreateContainer(CreateContainerTxn {
            path: L.into(),
            ..CreateContainerTxn::default()
        }),
    );
    t.create(1000, A, &at(L, N0));
    t.create(1100, B, &at(L, N1));
    t.create(1200, C, &at(L, N2));
    t.expire(5000, A, &[&at(L, N0)]);
    t.delete(5300, B, &at(L, N1));
    t.txn(5400, C, 7, close(&[&at(L, N2)]));
    let h = t.finish();
    let l = lock(&h, L);
    assert_eq!(l.kind, LockKind::Mutex);
    assert_eq!(
        story(l),
        [
            s(2, N0, "queued"),
            s(2, N0, "granted wait=0"),
            s(3, N1, "queued"),
            s(4, N2, "queued"),
            s(5, N0, "ended expired held=true for=Some(4000) next=Some(0)"),
            s(5, N1, "granted wait=3900"),
            s(6, N1, "ended released held=true for=Some(300) next=Some(0)"),
            s(6, N2, "granted wait=4100"),
            s(7, N2, "ended closed held=true for=Some(100) next=None"),
        ]
    );
    let sum = summarize(l, Range::default());
    assert_eq!(
        (sum.grants, sum.expired, sum.released, sum.closed),
        (3, 1, 1, 1)
    );
    assert_eq!(sum.expiry_to_next_grant_ms, [Some(0)]);
    assert_eq!(sum.max_wait_ms, Some(4100));
    assert_eq!(
        l.empty_since,
        Some(Stamp {
            zxid: 7,
            time: 5400
        })
    );
}

#[test]
fn a_node_deleted_by_another_session_names_it_and_the_gap_to_the_next_grant() {
    let mut t = Script::new(Audit::new(vec![]));
    t.create(1000, A, &at(L, N0));
    t.create(1010, B, &at(L, N1));
    t.delete(2000, OP, &at(L, N0)); // an operator
    t.delete(2500, B, &at(L, N1));
    t.create(2600, A, &at(L, N2));
    let h = t.finish();
    assert_eq!(
        story(lock(&h, L)),
        [
            s(1, N0, "queued"),
            s(1, N0, "granted wait=0"),
            s(2, N1, "queued"),
            s(
                3,
                N0,
                "ended deleted-by-other by=0xf held=true for=Some(1000) next=Some(0)"
            ),
            s(3, N1, "granted wait=990"),
            s(
                4,
                N1,
                "ended released held=true for=Some(500) next=Some(100)"
            ),
            s(5, N2, "queued"),
            s(5, N2, "granted wait=0"),
        ]
    );
    let live = &lock(&h, L).live;
    assert_eq!(lock(&h, L).strays, Vec::<String>::new());
    assert_eq!(live.len(), 1);
    assert!(live[0].held && !live[0].orphan);
}

#[test]
fn a_waiter_that_gives_up_is_not_a_hold() {
    let mut t = Script::new(Audit::new(vec![]));
    t.create(1000, A, &at(L, N0));
    t.create(1000, B, &at(L, N1));
    t.delete(1250, B, &at(L, N1));
    let h = t.finish();
    let st = story(lock(&h, L));
    assert_eq!(
        st[3],
        s(3, N1, "ended released held=false for=Some(250) next=None")
    );
    assert_eq!(summarize(lock(&h, L), Range::default()).abandoned, 1);
}

const RW: &str = "/app/rw";
const R0: &str = "_c_00000000-0000-0000-0000-000000000000-__READ__0000000000";
const R1: &str = "_c_11111111-1111-1111-1111-111111111111-__READ__0000000001";
const W2: &str = "_c_22222222-2222-2222-2222-222222222222-__WRIT__0000000002";
const R3: &str = "_c_33333333-3333-3333-3333-333333333333-__READ__0000000003";

#[test]
fn readers_share_a_writer_waits_for_them_and_a_later_reader_waits_for_the_writer() {
    let mut t = Script::new(Audit::new(vec![]));
    t.create(100, A, &at(RW, R0));
    t.create(110, B, &at(RW, R1));
    t.create(120, C, &at(RW, W2));
    t.create(130, A, &at(RW, R3));
    t.delete(200, A, &at(RW, R0));
    t.delete(300, B, &at(RW, R1));
    t.delete(400, C, &at(RW, W2));
    let h = t.finish();
    let l = lock(&h, RW);
    assert_eq!(l.kind, LockKind::ReadWrite);
    let grants: Vec<_> = story(l)
        .into_iter()
        .filter(|e| e.2.starts_with("granted"))
        .collect();
    assert_eq!(
        grants,
        [
            s(1, R0, "granted wait=0"),
            s(2, R1, "granted wait=0"),
            s(6, W2, "granted wait=180"),
            s(7, R3, "granted wait=270"),
        ]
    );
}

const SEM: &str = "/app/sem";

fn sem(dir: &str, name: &str, seq: u32) -> String {
    format!("{SEM}/{dir}/_c_{seq:08}-0000-0000-0000-000000000000-{name}{seq:010}")
}

/// Curator's SemaphoreV2 sequence for two leases: A and B each take the inner lock, make a
/// lease, count 1 then 2 (at most 2: holds), let the inner lock go. C takes the inner lock,
/// makes a lease, counts 3 and waits holding the inner lock; A returns its lease; C counts 2
/// and lets the inner lock go.
fn semaphore_script(audit: Audit) -> History {
    let mut t = Script::new(audit);
    for (i, who) in [A, B].into_iter().enumerate() {
        let i = i as u32;
        t.create(1000, who, &sem("locks", "lock-", i));
        t.create(1000, who, &sem("leases", "lease-", i));
        t.delete(1000, who, &sem("locks", "lock-", i));
    }
    t.create(2000, C, &sem("locks", "lock-", 2)); // 7
    t.create(2000, C, &sem("leases", "lease-", 2)); // 8
    t.delete(3000, A, &sem("leases", "lease-", 0)); // 9
    t.delete(3010, C, &sem("locks", "lock-", 2)); // 10
    t.finish()
}

#[test]
fn a_semaphores_lease_is_granted_when_its_session_lets_the_inner_lock_go() {
    let h = semaphore_script(Audit::new(vec![]));
    let leases = lock(&h, &format!("{SEM}/leases"));
    assert_eq!(leases.kind, LockKind::Leases { max: None });
    let grants: Vec<_> = story(leases)
        .into_iter()
        .filter(|e| e.2.starts_with("granted"))
        .map(|e| (e.0, e.2))
        .collect();
    assert_eq!(
        grants,
        [
            (3, "granted wait=0".to_owned()),
            (6, "granted wait=0".to_owned()),
            (10, "granted wait=1010".to_owned()),
        ]
    );
    let inner = lock(&h, &format!("{SEM}/locks"));
    assert_eq!(inner.kind, LockKind::SemaphoreInnerLock);
    assert_eq!(summarize(inner, Range::default()).grants, 3);
}

#[test]
fn given_its_size_a_semaphores_lease_holds_by_the_count_rule() {
    let h = semaphore_script(Audit::new(vec![]).with_leases(SEM, 2));
    let leases = lock(&h, &format!("{SEM}/leases"));
    assert_eq!(leases.kind, LockKind::Leases { max: Some(2) });
    let grants: Vec<_> = story(leases)
        .into_iter()
        .filter(|e| e.2.starts_with("granted"))
        .map(|e| (e.0, e.2))
        .collect();
    // At most 2 before it: the third lease holds once A's is gone (zxid 9).
    assert_eq!(
        grants,
        [
            (2, "granted wait=0".to_owned()),
            (5, "granted wait=0".to_owned()),
            (9, "granted wait=1000".to_owned()),
        ]
    );
}

#[test]
fn the_starting_tree_holds_before_the_logs_and_orphans_and_gaps_are_reported() {
    let mut audit = Audit::new(vec!["/app".into()]);
    let made = |zxid| Stamp { zxid, time: 500 };
    audit.add_node("", made(0), 0);
    audit.add_node("/app", made(1), 0);
    audit.add_node(L, made(2), CONTAINER_OWNER);
    audit.add_node(&at(L, N0), made(3), A);
    audit.add_node(&at(L, N1), made(4), 0); // persistent: an orphan
    audit.add_node("/other", made(5), 0);
    audit.add_node("/other/x-lock-0000000000", made(6), B); // outside the filter
    audit.start(Some(10));
    let txn = |zxid, time, session, cxid, body: TxnBody| TxnEntry {
        header: TxnHeader {
            client_id: session,
            cxid,
            zxid,
            time,
            op: body.op_code(),
        },
        body,
        digest: None,
    };
    audit.apply(&txn(9, 900, A, 1, delete("/x"))); // before the start: skipped
    audit.apply(&txn(11, 1000, A, 5, delete(&at(L, N0))));
    audit.apply(&txn(14, 1100, A, 6, delete("/nothing")));
    let h = audit.finish();
    assert_eq!(h.locks.len(), 1, "{:?}", h.locks);
    assert_eq!(
        story(lock(&h, L)),
        [
            s(3, N0, "present holding=true"),
            s(4, N1, "present holding=false"),
            s(11, N0, "ended released held=true for=None next=Some(0)"),
            s(11, N1, "granted wait=500"),
        ]
    );
    assert!(lock(&h, L).live[0].orphan);
    assert_eq!(
        h.anomalies,
        [
            Anomaly::Gap {
                after: 11,
                before: 14
            },
            Anomaly::UnknownNode {
                zxid: 14,
                path: "/nothing".into()
            }
        ]
    );
    assert_eq!(h.txns, 2);
}

#[test]
fn a_multi_applies_all_its_ops_at_one_zxid_and_a_failed_one_none() {
    let mut t = Script::new(Audit::new(vec![]));
    t.create(100, A, &at(L, N0));
    t.create(100, B, &at(L, N1));
    t.txn(
        200,
        A,
        3,
        TxnBody::Multi(vec![delete(&at(L, N0)), create(&at(L, N2), true)]),
    );
    t.txn(
        300,
        B,
        3,
        TxnBody::Multi(vec![
            delete(&at(L, N1)),
            TxnBody::Error(zk_proto::txnlog::ErrorTxn { err: -101 }),
        ]),
    );
    let h = t.finish();
    let st = story(lock(&h, L));
    assert_eq!(
        &st[3..],
        [
            s(3, N0, "ended released held=true for=Some(100) next=Some(0)"),
            s(3, N2, "queued"),
            s(3, N1, "granted wait=100"),
        ]
    );
    assert_eq!(lock(&h, L).live.len(), 2);
}

#[test]
fn json_is_well_formed_and_escapes_names() {
    let mut t = Script::new(Audit::new(vec![]));
    t.create(100, A, "/we\"ird\\dir\n/x-lock-0000000000");
    let h = t.finish();
    let j = crate::json::to_json(&h, Range::default());
    assert!(j.contains(r#""path":"/we\"ird\\dir\n""#), "{j}");
    // Balanced brackets outside strings, no raw control characters.
    let (mut depth, mut in_str, mut esc) = (0i32, false, false);
    for c in j.chars() {
        assert!(u32::from(c) >= 0x20, "raw control character in {j}");
        match (in_str, esc, c) {
            (true, true, _) => esc = false,
            (true, false, '\\') => esc = true,
            (true, false, '"') => in_str = false,
            (false, _, '"') => in_str = true,
            (false, _, '{' | '[') => depth += 1,
            (false, _, '}' | ']') => depth -= 1,
            _ => {}
        }
        assert!(depth >= 0);
    }
    assert_eq!((depth, in_str), (0, false));
    assert_eq!(crate::json::string("\u{1f}\u{7f}"), "\"\\u001f\u{7f}\"");
}

#[test]
fn a_sequence_handed_out_twice_is_history_lost() {
    let mut t = Script::new(Audit::new(vec![]));
    t.txn(100, A, 1, create_v(&at(L, N0), 1));
    t.txn(100, B, 1, create_v(&at(L, N1), 2));
    // A server that lacked the last create hands out its sequence again.
    let z = t.txn(100, C, 1, create_v(&format!("{L}/_c_x-lock-0000000001"), 2));
    t.audit.diverged(z);
    let h = t.finish();
    assert_eq!(
        h.anomalies,
        [
            Anomaly::Forgotten {
                zxid: 3,
                dir: L.into(),
                cversion: 2,
                had: 2
            },
            Anomaly::Diverged { zxid: 3 }
        ]
    );
    let text = crate::report::table(&h, Range::default());
    assert!(text.contains("HISTORY LOST"), "{text}");
    // No anomaly for a directory made again (a container removed and re-created).
    let mut t = Script::new(Audit::new(vec![]));
    t.txn(
        100,
        A,
        1,
        TxnBody::CreateContainer(CreateContainerTxn {
            path: L.into(),
            parent_cversion: 1,
            ..CreateContainerTxn::default()
        }),
    );
    t.txn(100, A, 1, create_v(&at(L, N0), 1));
    t.txn(100, A, 2, delete(&at(L, N0)));
    t.txn(
        100,
        0,
        0,
        TxnBody::DeleteContainer(DeleteTxn { path: L.into() }),
    );
    t.txn(
        100,
        A,
        1,
        TxnBody::CreateContainer(CreateContainerTxn {
            path: L.into(),
            parent_cversion: 3,
            ..CreateContainerTxn::default()
        }),
    );
    t.txn(100, A, 1, create_v(&at(L, N0), 1));
    assert_eq!(t.finish().anomalies, []);
}

#[test]
fn a_node_sorting_before_a_holder_makes_an_overlap() {
    let mut t = Script::new(Audit::new(vec![]));
    t.create(100, A, &at(L, N1));
    t.create(200, B, &at(L, N0)); // a sequence below the holder's: handed out again
    t.delete(300, A, &at(L, N1));
    t.create(400, A, &at(L, N2));
    let h = t.finish();
    assert_eq!(
        h.anomalies,
        [Anomaly::Overlap {
            zxid: 2,
            dir: L.into(),
            holders: vec![N0.into(), N1.into()]
        }]
    );
    let j = crate::json::to_json(&h, Range::default());
    assert!(
        j.contains(r#"{"overlap":{"zxid":2,"dir":"/app/l","holders":["#),
        "{j}"
    );
}

#[test]
fn the_range_keeps_the_events_in_it() {
    let mut t = Script::new(Audit::new(vec![]));
    t.create(1000, A, &at(L, N0));
    t.create(2000, B, &at(L, N1));
    t.delete(3000, A, &at(L, N0));
    let h = t.finish();
    let range = Range {
        from: Some(2000),
        to: Some(2999),
    };
    let s = summarize(lock(&h, L), range);
    assert_eq!((s.queued, s.grants, s.released), (1, 0, 0));
    let text = crate::report::timeline(&h, range);
    assert_eq!(
        text.lines().filter(|l| l.contains("zxid")).count(),
        1,
        "{text}"
    );
}

#[test]
fn a_foreign_child_is_counted_in_the_order_and_listed_as_a_stray() {
    let mut t = Script::new(Audit::new(vec![]));
    t.create(100, A, &at(L, N1));
    // An operator's node whose name sorts before every sequence: the mutex is blocked.
    t.txn(150, OP, 1, create_v(&at(L, "!block"), 2));
    t.create(200, B, &at(L, N2));
    t.delete(300, A, &at(L, N1));
    let h = t.finish();
    let l = lock(&h, L);
    assert_eq!(l.strays, ["!block"]);
    assert_eq!(l.live.len(), 1);
    assert!(!l.live[0].held, "blocked behind the stray");
    let j = crate::json::to_json(&h, Range::default());
    assert!(j.contains(r#""strays":["!block"]"#), "{j}");
}

#[test]
fn a_log_that_does_not_start_right_after_the_snapshot_is_a_gap() {
    let mut audit = Audit::new(vec![]);
    audit.start(Some(0));
    audit.apply(&TxnEntry {
        header: TxnHeader {
            client_id: A,
            cxid: 1,
            zxid: 5,
            time: 1,
            op: zk_proto::OpCode::Delete,
        },
        body: delete("/x"),
        digest: None,
    });
    let h = audit.finish();
    assert_eq!(
        h.anomalies[0],
        Anomaly::Gap {
            after: 0,
            before: 5
        }
    );
}

#[test]
fn a_mutex_named_locks_is_a_mutex_until_leases_appear_beside_it() {
    let mut t = Script::new(Audit::new(vec![]));
    t.create(100, A, &at("/x/locks", N0));
    t.create(100, A, &at("/y/locks", N0));
    t.create(100, A, &at("/y/leases", "_c_1-lease-0000000000"));
    let h = t.finish();
    assert_eq!(lock(&h, "/x/locks").kind, LockKind::Mutex);
    assert_eq!(lock(&h, "/y/locks").kind, LockKind::SemaphoreInnerLock);
}

#[test]
fn a_downgrades_read_node_holds_with_its_write_node_and_a_queued_writer_stays_out() {
    const W1: &str = "_c_00000000-0000-0000-0000-000000000000-__WRIT__0000000001";
    // The downgrade's read node: another uuid (after the write node's by name), the write
    // node's sequence, not sequential.
    const D1: &str = "_c_ffffffff-0000-0000-0000-000000000009-__READ__0000000001";
    const W2: &str = "_c_22222222-2222-2222-2222-222222222222-__WRIT__0000000002";
    let mut t = Script::new(Audit::new(vec![]));
    t.create(100, A, &at(RW, W1));
    t.create(110, B, &at(RW, W2));
    t.create(120, A, &at(RW, D1)); // the downgrade
    t.delete(130, A, &at(RW, W1)); // the write hold let go: A still reads
    t.delete(200, A, &at(RW, D1));
    let h = t.finish();
    assert_eq!(h.anomalies, []);
    let grants: Vec<_> = story(lock(&h, RW))
        .into_iter()
        .filter(|e| e.2.starts_with("granted"))
        .collect();
    assert_eq!(
        grants,
        [
            s(1, W1, "granted wait=0"),
            s(3, D1, "granted wait=0"),
            s(5, W2, "granted wait=90"),
        ]
    );
}

#[test]
fn summary_only_stores_no_events_and_tallies_the_same_figures() {
    let run = |audit: Audit| {
        let mut t = Script::new(audit);
        t.create(1000, A, &at(L, N0));
        t.create(1100, B, &at(L, N1));
        t.expire(5000, A, &[&at(L, N0)]);
        t.create(5100, C, &at(L, N2));
        t.expire(6000, B, &[&at(L, N1)]);
        t.create(9000, A, &at(L, "_c_3-lock-0000000003"));
        t.finish()
    };
    let full = run(Audit::new(vec![]));
    let lean = run(Audit::new(vec![]).summary_only());
    let (f, l) = (lock(&full, L), lock(&lean, L));
    assert!(l.events.is_empty());
    assert_eq!(l.summary, f.summary);
    assert_eq!(f.summary.expiry_to_next_grant_ms, [Some(0), Some(0)]);
    assert_eq!(
        crate::report::table(&lean, Range::default()),
        crate::report::table(&full, Range::default())
    );
    // An expiry with nobody queued learns its next grant later.
    let lone = {
        let mut t = Script::new(Audit::new(vec![]).summary_only());
        t.create(1000, A, &at(L, N0));
        t.expire(5000, A, &[&at(L, N0)]);
        t.create(5700, B, &at(L, N1));
        t.finish()
    };
    assert_eq!(lock(&lone, L).summary.expiry_to_next_grant_ms, [Some(700)]);
}
