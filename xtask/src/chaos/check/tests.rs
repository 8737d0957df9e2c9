//! The checker against hand-made histories: clean runs pass, and each thing it must catch
//! makes it fail or shows in the clients' view (the negative controls: a hand-off shortcut, ours with the fence off, a
//! missing lost signal, a stuck acquire, a node left).

use std::time::Duration;

use super::*;
use crate::chaos::history::{Acquire, Lost, Style};
use crate::interop::holds::Mode;

const T: Duration = Duration::from_secs(10);
const S: u64 = 1_000_000_000;

pub(crate) fn hold(who: &str, n: u64, from: u64, to: u64) -> Event {
    Event::Hold(Hold {
        who: who.into(),
        n,
        on: "lock".into(),
        mode: Mode::Exclusive,
        from,
        to,
        node: None,
        token: None,
    })
}

fn acq(who: &str, n: u64, start: u64, end: Option<u64>, outcome: AcquireEnd) -> Event {
    Event::Acquire(Acquire {
        who: who.into(),
        n,
        style: Style::Release,
        start,
        end,
        outcome,
    })
}

fn write(who: &str, n: u64, read: u64, sent: u64, result: WriteResult) -> Event {
    Event::Write(Write {
        who: who.into(),
        n,
        reg: "mutex".into(),
        read,
        sent,
        replied: sent + 1,
        result,
    })
}

fn ok(version: u64) -> WriteResult {
    WriteResult::Accepted { version }
}

/// Checks `events`, the servers' log showing each hold's session ended while it held (so
/// that a pause past the session timeout did expire it).
fn run(events: &[Event], pauses: &[Pause], nodes_left: &[LeftNode]) -> Report {
    run_lost(events, pauses, nodes_left, None)
}

/// The marks of every hold in `events`, as the judge names them.
fn every_mark(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Hold(h) => Some(format!("{}-{}", h.who, h.n)),
            _ => None,
        })
        .collect()
}

/// [`run`], with the servers' log showing they lost the history `lost`.
fn run_lost(
    events: &[Event],
    pauses: &[Pause],
    nodes_left: &[LeftNode],
    lost: Option<&crate::chaos::judge::LostStretch>,
) -> Report {
    run_ended(events, pauses, nodes_left, lost, &every_mark(events))
}

/// [`run_lost`], the servers' log showing only the marks `ended` ended by their session.
fn run_ended(
    events: &[Event],
    pauses: &[Pause],
    nodes_left: &[LeftNode],
    lost: Option<&crate::chaos::judge::LostStretch>,
    ended: &[String],
) -> Report {
    check(&Input {
        events,
        pauses,
        session_timeout: T,
        leases: 3,
        acquire_deadline: 1_000 * S,
        nodes_left,
        servers_lost: lost,
        operator_deletes: &[],
        ended_by_server: ended,
    })
}

fn row<'a>(r: &'a Report, lib: &str) -> &'a Row {
    r.rows.get(&(Recipe::Mutex, lib.to_owned())).unwrap()
}

/// Two holders one after the other, each reading what the last wrote: nothing to report.
fn clean() -> Vec<Event> {
    vec![
        acq("rust-0.mutex.0", 1, 0, Some(10), AcquireEnd::Held),
        hold("rust-0.mutex.0", 1, 10, 100),
        write("rust-0.mutex.0", 1, 0, 20, ok(1)),
        acq("java-0.mutex.0", 1, 5, Some(110), AcquireEnd::Held),
        hold("java-0.mutex.0", 1, 110, 200),
        write("java-0.mutex.0", 1, 1, 120, ok(2)),
    ]
}

#[test]
fn a_clean_history_passes() {
    let r = run(&clean(), &[], &[]);
    assert_eq!((r.failure(), r.clients_view()), (None, None), "{r}");
    assert_eq!(row(&r, "rust").cycles, 1);
    assert_eq!(row(&r, "java").writes, 1);
}

/// Negative control: a planted hand-off shortcut lets the next holder in before the first
/// let go.
#[test]
fn overlapping_holds_are_seen() {
    let mut events = clean();
    events[4] = hold("java-0.mutex.0", 1, 90, 200);
    let r = run(&events, &[], &[]);
    assert_eq!(row(&r, "java").overlaps, 1, "{r}");
    assert!(r.clients_view().unwrap().contains("1 overlapping holds"));
}

/// A zombie: our process paused past its session timeout while holding; a newer holder
/// takes the lock and writes; the zombie resumes and writes.
fn zombie(lib: &str, result: WriteResult, with_lost: bool) -> (Vec<Event>, Vec<Pause>) {
    let zombie = format!("{lib}-1.mutex.0");
    let mut events = vec![
        hold(&zombie, 1, 10 * S, 40 * S),
        write(&zombie, 1, 0, 11 * S, ok(1)),
        // The newer holder began after the zombie's session expired (pause at 12 s + 10 s).
        hold("rust-0.mutex.0", 1, 23 * S, 30 * S),
        write("rust-0.mutex.0", 1, 1, 24 * S, ok(2)),
        // Resumed at 35 s, the zombie still believes it holds, and writes.
        write(&zombie, 1, 2, 36 * S, result),
    ];
    if with_lost {
        events.push(Event::Lost(Lost {
            who: zombie.clone(),
            n: 1,
            at: 37 * S,
        }));
    }
    let pauses = vec![Pause {
        process: format!("{lib}-1"),
        from: 12 * S,
        to: 35 * S,
    }];
    (events, pauses)
}

#[test]
fn a_zombie_fenced_off_is_counted_and_passes() {
    let (events, pauses) = zombie("rust", WriteResult::Fenced, true);
    let r = run(&events, &pauses, &[]);
    assert_eq!((r.failure(), r.clients_view()), (None, None), "{r}");
    let ours = row(&r, "rust");
    assert_eq!(
        (
            ours.stale_attempted,
            ours.stale_rejected,
            ours.stale_accepted
        ),
        (1, 1, 0)
    );
    assert_eq!(ours.fenced, 1);
    assert_eq!(
        ours.cut_holds, 1,
        "the zombie's hold is cut at its pause: no overlap"
    );
    assert_eq!(ours.overlaps, 0);
}

/// Negative control: ours with the fence off: the zombie's write is accepted.
#[test]
fn an_accepted_stale_write_of_ours_is_seen() {
    let (events, pauses) = zombie("rust", ok(3), true);
    let r = run(&events, &pauses, &[]);
    assert_eq!(row(&r, "rust").stale_accepted, 1, "{r}");
    assert!(
        r.clients_view()
            .unwrap()
            .contains("1 stale writes of ours accepted")
    );
}

/// Curator's versioned write cannot fence a zombie that read afresh: counted, not judged.
#[test]
fn curators_stale_writes_are_counted_beside_ours() {
    let (events, pauses) = zombie("java", ok(3), true);
    let r = run(&events, &pauses, &[]);
    assert_eq!((r.failure(), r.clients_view()), (None, None), "{r}");
    assert_eq!(row(&r, "java").stale_accepted, 1);
    // Found by the register's order too, whatever the times say.
    let (mut events, pauses) = zombie("java", ok(3), true);
    if let Event::Write(w) = &mut events[4] {
        w.sent = 20 * S; // "sent" before the newer write's reply: only the order shows it
    }
    let r = run(&events, &pauses, &[]);
    assert_eq!(row(&r, "java").stale_accepted, 1, "{r}");
}

/// Without the pause (no reason for the hold to end), the same history is an overlap: the
/// cut is what makes the zombie not count, not a blind spot.
#[test]
fn without_the_pause_a_zombie_is_an_overlap() {
    let (events, _) = zombie("rust", WriteResult::Fenced, false);
    let r = run(&events, &[], &[]);
    assert!(r.clients_view().unwrap().contains("overlapping"), "{r}");
}

#[test]
fn a_missing_lost_signal_of_ours_fails_the_run() {
    let (events, pauses) = zombie("rust", WriteResult::Fenced, false);
    let r = run(&events, &pauses, &[]);
    assert_eq!(row(&r, "rust").lost_missing, 1, "{r}");
    assert!(r.failure().unwrap().contains("without a lost signal"));
    // A hold that did nothing after the pause is reported, not judged.
    let mut quiet = events.clone();
    quiet.remove(4);
    let r = run(&quiet, &pauses, &[]);
    assert_eq!(row(&r, "rust").lost_missing, 0, "{r}");
    assert_eq!(row(&r, "rust").lost_unobserved, 1, "{r}");
    // A pause too short to surely expire the session asks for no signal.
    let short = [Pause {
        process: "rust-1".into(),
        from: 12 * S,
        to: 24 * S,
    }];
    let r = run(&events, &short, &[]);
    assert_eq!(row(&r, "rust").lost_missing, 0, "{r}");
}

/// Chaos seed 110: a pause of ours past the session timeout, with the leader killed 3.4 s
/// into it. The new leader gave every session a fresh timeout, so the session outlived the
/// pause; the hold stood, and the server accepted its write. The servers' log shows no end
/// of the hold's session, and that record, not the pause's length, decides: no missing
/// signal.
#[test]
fn a_long_pause_the_servers_did_not_end_the_session_in_asks_for_no_signal() {
    let (events, pauses) = zombie("rust", WriteResult::Fenced, false);
    let r = run_ended(&events, &pauses, &[], None, &[]);
    assert_eq!(row(&r, "rust").lost_missing, 0, "{r}");
    assert_eq!(r.failure(), None, "{r}");
    // The same history, the servers' log showing the session ended: missing.
    let ended = ["rust-1.mutex.0-1".to_owned()];
    let r = run_ended(&events, &pauses, &[], None, &ended);
    assert_eq!(row(&r, "rust").lost_missing, 1, "{r}");
}

#[test]
fn a_lost_update_is_seen() {
    // The second holder of ours read 0 after the first had written 1.
    let events = [
        hold("rust-0.mutex.0", 1, 10, 100),
        write("rust-0.mutex.0", 1, 0, 20, ok(1)),
        hold("rust-1.mutex.0", 1, 110, 200),
        write("rust-1.mutex.0", 1, 0, 120, ok(2)),
    ];
    let r = run(&events, &[], &[]);
    assert_eq!(row(&r, "rust").lost_updates, 1, "{r}");
    assert!(
        r.clients_view().unwrap().contains("1 lost updates of ours"),
        "{r}"
    );
}

#[test]
fn a_stuck_acquire_and_a_node_left_fail_the_run() {
    let mut events = clean();
    events.push(acq("rust-0.mutex.0", 2, 150, None, AcquireEnd::Unfinished));
    events.push(acq(
        "rust-0.mutex.0",
        3,
        150,
        Some(2_000 * S),
        AcquireEnd::TimedOut,
    ));
    events.push(Event::Session(crate::chaos::history::Session {
        who: "rust-0.mutex.0".into(),
        id: 7,
        at: 0,
    }));
    events.push(Event::Session(crate::chaos::history::Session {
        who: "java-0.mutex.0".into(),
        id: 8,
        at: 0,
    }));
    let node = |owner| LeftNode {
        path: "/chaos/mutex/_c_x-lock-0000000009".to_owned(),
        owner,
        czxid: 0x3e_0000_0010,
    };
    let r = run(&events, &[], &[node(7)]);
    assert_eq!(row(&r, "rust").stuck, 2, "{r}");
    let why = r.failure().unwrap();
    assert!(why.contains("2 acquires of ours that never ended"), "{why}");
    assert!(why.contains("1 nodes of ours left"), "{why}");
    // Curator's node left is reported, not judged; one of no known session is judged.
    let mut sessions = clean();
    sessions.extend(
        events
            .iter()
            .filter(|e| matches!(e, Event::Session(_)))
            .cloned(),
    );
    let r = run(&sessions, &[], &[node(8)]);
    assert_eq!((r.failure(), r.clients_view()), (None, None), "{r}");
    assert_eq!(r.nodes_left.len(), 1);
    let r = run(&sessions, &[], &[node(9)]);
    assert!(r.failure().unwrap().contains("1 nodes of ours left"), "{r}");
    // A node made in history the servers lost (their delete of it may be what they lost):
    // reported, not judged; one made before the loss is still judged.
    let lost = |from, to, deleted: &[i64]| crate::chaos::judge::LostStretch {
        from,
        to,
        deleted: deleted
            .iter()
            .map(|&c| ("/chaos/mutex/_c_x-lock-0000000009".to_owned(), c))
            .collect(),
    };
    let stretch = lost(0x3e_0000_000b, 0x3f_0000_0000, &[]);
    let r = run_lost(&sessions, &[], &[node(7)], Some(&stretch));
    assert_eq!((r.failure(), r.nodes_left.len()), (None, 0), "{r}");
    assert_eq!(r.left_in_lost_history.len(), 1, "{r}");
    assert!(
        r.to_string()
            .contains("made or deleted in history the servers lost"),
        "{r}"
    );
    let stretch = lost(0x3e_0000_0011, 0x3f_0000_0000, &[]);
    let r = run_lost(&sessions, &[], &[node(7)], Some(&stretch));
    assert!(r.failure().unwrap().contains("1 nodes of ours left"), "{r}");
    // Issue 49: only the lost stretch. A node made after the servers' state parted from the
    // log (their own history again) is judged; one made before the stretch whose delete the
    // log has in it is not (that delete may be what they lost), one deleted elsewhere is.
    let stretch = lost(0x3e_0000_0001, 0x3e_0000_000f, &[]);
    let r = run_lost(&sessions, &[], &[node(7)], Some(&stretch));
    assert!(r.failure().unwrap().contains("1 nodes of ours left"), "{r}");
    let stretch = lost(0x3e_0000_0011, 0x3f_0000_0000, &[0x3e_0000_0010]);
    let r = run_lost(&sessions, &[], &[node(7)], Some(&stretch));
    assert_eq!(
        (r.failure(), r.left_in_lost_history.len()),
        (None, 1),
        "{r}"
    );
    let stretch = lost(0x3e_0000_0011, 0x3f_0000_0000, &[0x3e_0000_0005]);
    let r = run_lost(&sessions, &[], &[node(7)], Some(&stretch));
    assert!(r.failure().unwrap().contains("1 nodes of ours left"), "{r}");
}

#[test]
fn a_write_without_its_hold_is_reported() {
    let events = [write("rust-0.mutex.0", 7, 0, 20, ok(1))];
    let r = run(&events, &[], &[]);
    assert!(r.failure().unwrap().contains("do not fit"), "{r}");
}

/// Seen in a run: our process paused while its acquire waited; on resume the acquire
/// returned held (decided from replies read before the pause), 1.5 ms before its lost signal,
/// while a newer holder held. A pause during the acquire makes the hold stale from its start.
#[test]
fn a_hold_decided_before_a_pause_and_returned_after_it_is_not_an_overlap() {
    let events = [
        acq("rust-1.mutex.0", 1, 10 * S, Some(30 * S), AcquireEnd::Held),
        hold("rust-1.mutex.0", 1, 30 * S, 30 * S + 2_000_000),
        Event::Lost(Lost {
            who: "rust-1.mutex.0".into(),
            n: 1,
            at: 30 * S + 1_500_000,
        }),
        hold("java-0.mutex.0", 1, 29 * S, 31 * S),
    ];
    let pauses = [Pause {
        process: "rust-1".into(),
        from: 12 * S,
        to: 29 * S + 900_000_000,
    }];
    let r = run(&events, &pauses, &[]);
    assert_eq!((r.failure(), r.clients_view()), (None, None), "{r}");
    // Without the pause it is an overlap.
    let r = run(&events, &[], &[]);
    assert!(r.clients_view().unwrap().contains("overlapping"), "{r}");
}

/// Seen in a long run: a Curator acquire returned 0.3 ms after its client's session was
/// replaced (the node it decided on went with the old session) while a newer holder held.
#[test]
fn a_hold_across_its_sessions_replacement_is_cut_there() {
    let session = |id, at| {
        Event::Session(crate::chaos::history::Session {
            who: "java-1.mutex.1".into(),
            id,
            at,
        })
    };
    let events = [
        session(1, 0),
        acq("java-1.mutex.1", 1, 10 * S, Some(20 * S), AcquireEnd::Held),
        session(2, 20 * S - 1_000),
        hold("java-1.mutex.1", 1, 20 * S, 24 * S),
        hold("rust-0.mutex.0", 1, 21 * S, 22 * S),
    ];
    let r = run(&events, &[], &[]);
    assert_eq!((r.failure(), r.clients_view()), (None, None), "{r}");
    assert_eq!(row(&r, "java").session_cut, 1);
    // The same session reconnected: nothing is cut, and the overlap shows.
    let mut same = events.clone();
    same[2] = session(1, 20 * S - 1_000);
    let r = run(&same, &[], &[]);
    assert!(r.clients_view().unwrap().contains("overlapping"), "{r}");
}

/// A lost update is counted against the older hold of the two: here Curator's zombie wrote
/// between our holder's read and its write.
#[test]
fn a_lost_update_is_counted_against_the_older_hold() {
    let w = |who: &str, read, sent, version| {
        Event::Write(Write {
            who: who.into(),
            n: 1,
            reg: "mutex".into(),
            read,
            sent,
            replied: sent + 1,
            result: ok(version),
        })
    };
    let events = [
        hold("java-1.mutex.1", 1, 10, 100),
        hold("rust-0.mutex.0", 1, 50, 90),
        // The zombie writes 8 inside our read and write; ours read 7 before it, writes 8.
        w("java-1.mutex.1", 7, 70, 8),
        w("rust-0.mutex.0", 7, 80, 9),
    ];
    let r = run(&events, &[], &[]);
    assert_eq!(row(&r, "java").lost_updates, 1, "{r}");
    assert_eq!(row(&r, "rust").lost_updates, 0, "{r}");
}

/// Issue 48: the operator deleted a held node (the nemesis's `delete-held`); the next waiter
/// was rightly let in while the old holder, never told (Curator's), held on. The old hold
/// ends at the delete: only that hold, only on that node, only from then on.
#[test]
fn a_hold_whose_node_the_operator_deleted_ends_at_the_delete() {
    let old = "java-0.mutex.0";
    let events = vec![
        hold(old, 1, 10 * S, 40 * S),
        hold("rust-0.mutex.0", 1, 21 * S, 30 * S),
    ];
    let with = |deletes: &[OperatorDelete]| {
        check(&Input {
            events: &events,
            pauses: &[],
            session_timeout: T,
            leases: 3,
            acquire_deadline: 1_000 * S,
            nodes_left: &[],
            servers_lost: None,
            operator_deletes: deletes,
            ended_by_server: &[],
        })
    };
    let at = |who: &str, n: u64, on: Option<&str>, at: u64| OperatorDelete {
        who: who.into(),
        n,
        on: on.map(str::to_owned),
        at,
    };
    let r = with(&[at(old, 1, None, 20 * S)]);
    assert_eq!(r.clients_view(), None, "{r}");
    assert_eq!(
        (row(&r, "java").deleted_cut, row(&r, "java").cut_holds),
        (1, 1)
    );
    // Without it, or for another hold, or after the newer hold began: an overlap.
    for deletes in [
        vec![],
        vec![at(old, 2, None, 20 * S)],
        vec![at("java-1.mutex.0", 1, None, 20 * S)],
        vec![at(old, 1, None, 25 * S)],
        vec![at(old, 1, Some("member-1"), 20 * S)],
    ] {
        let r = with(&deletes);
        assert!(
            r.clients_view()
                .is_some_and(|v| v.contains("1 overlapping holds")),
            "{deletes:?}: {r}"
        );
    }
}

/// The log judge's list goes over: the operator's deletes only, named by their mark, a
/// multi-lock's member by its directory.
#[test]
fn the_operators_deletes_come_from_the_log_judges_list() {
    let end = |name: &str, node: &str, by_operator| crate::chaos::judge::DeletedEnd {
        name: name.into(),
        node: node.into(),
        zxid: 7,
        time_ms: 1_500,
        deleter: 0x400,
        by_operator,
    };
    let list = operator_deletes(&[
        end(
            "rust-0.mutex.1-12",
            "/chaos/mutex/_c_a-lock-0000000001",
            true,
        ),
        end(
            "java-1.multilock.0-3",
            "/chaos/multilock/2/_c_b-lock-0000000004",
            true,
        ),
        end(
            "rust-0.mutex.1-13",
            "/chaos/mutex/_c_c-lock-0000000005",
            false,
        ),
    ]);
    assert_eq!(
        list,
        [
            OperatorDelete {
                who: "rust-0.mutex.1".into(),
                n: 12,
                on: None,
                at: 1_500_000_000,
            },
            OperatorDelete {
                who: "java-1.multilock.0".into(),
                n: 3,
                on: Some("member-2".into()),
                at: 1_500_000_000,
            },
        ]
    );
}
