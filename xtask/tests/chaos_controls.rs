//! The chaos suite's negative controls, as CI runs them: runs of ours that must fail, judged
//! from the servers' transaction logs alone (the log judge), not from what our clients say.
//!
//! - **No fence**: our register writes without the guard's fencing check, while whole client
//!   processes are paused past their session timeout (SIGSTOP, the GC-pause case): a paused
//!   holder resumes and writes after the server ended its hold; the log shows a write whose
//!   node is gone.
//! - **Grant on disconnect**: a waiter that holds when its connection drops, whatever is ahead
//!   of it (the history the client-side checker's old rules excused: a second holder let in
//!   while the first holder's node lives on), under connection cuts: the log shows marks of
//!   holds the recipe's rule does not grant.
//! - **Hand-off shortcut**: a waiter that holds on its predecessor's deletion without listing
//!   again, under connection cuts (waiters giving up ahead of it are enough).
//! - **Cohort double grant**: our mutex clients as one cohort per process (`--cohort`) that
//!   grants its node to two local waiters at once: the log shows two live marks.
//! - **No node watch** (issue 48): our holds keep no watch on their own node, under the
//!   nemesis `delete-held` (held nodes deleted through a session of its own, as an operator
//!   would): the log shows holds of ours whose node that session deleted, and their holders,
//!   never told, hold on. The run fails with exactly that finding of the lost signal's table;
//!   the log judge (which excuses the operator's overlap) and the clients' checker find
//!   nothing.
//! - **Lease wait shortcut**: a semaphore's waiter that lets the inner lock go while it waits
//!   and takes its lease as soon as `leases/` changes, without counting again: the log shows
//!   marks of leases beyond the first N.
//! - **Deletes others** (blame): before each acquire, our mutex client deletes the node that
//!   sorts first in the lock's directory, another client's, by name: the log shows lock nodes
//!   deleted by a session other than their owner's, charged to ours (`foreign`).
//!
//! - **Server loss**: the servers' record showing they lost committed transactions (a
//!   register's version set again at a version the log had already reached, by the leader of
//!   a later epoch): the run is inconclusive, failing unless it accepts the loss, and says so.
//!   A real loss cannot be forced on demand (ZooKeeper 3.8.0 lost history in long runs with
//!   member kills, in ZOOKEEPER-4643's window), so this control takes a real, passing run's
//!   logs (every member's, kept) and appends to each the epoch such a leader would have
//!   logged, then judges them again from the files, as the run does.
//!
//! Each control asserts its own finding, not a sum over every kind: violations of ours (the
//! judge's row counter for that kind: `not-granted` for the first three and the lease wait,
//! `exclusion` for the cohort, `foreign` for the deletes) in the row of one of its recipes.
//! Each runs on two seeds ([`SEEDS`]), finding it on each, for half the seconds one seed
//! ran before (their findings come by the dozen or hundred a run), but `no-fence`, three
//! quarters (a few findings a run, one per pause aimed at a hold).
//!
//! The runs one after another (each starts its own ensemble; the tests take turns); needs
//! the planted worker, so the feature `plant` (on in `cargo xtask test`, which runs
//! `--all-features`). Only our processes run: the controls judge ours.

#![cfg(feature = "plant")]
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use xtask::chaos::judge::{self, Config, Row, Verdict, logs};
use xtask::chaos::nemesis::Kind;
use xtask::chaos::ours::ChaosPlant;
use xtask::chaos::run::{ChaosOptions, run};
use xtask::recipe::{LEASES, Recipe};
use zk_proto::txnlog::{FileHeader, SetDataTxn, TxnBody, TxnEntry, TxnHeader, encode_log};

/// One control's run: what it changes, under which faults, and the finding of ours it must
/// show.
struct Control {
    name: &'static str,
    fence: bool,
    plant: Option<ChaosPlant>,
    cohort: bool,
    nemesis: &'static [Kind],
    recipes: &'static [Recipe],
    seconds: u64,
    /// What the log judge must find; `None`: nothing (the finding is the lost signal's).
    expect: Option<Expect>,
}

/// The finding a control must show in the log judge's table: violations of ours (library
/// `rust`) of one kind (a row counter), in the row of one of the control's recipes.
struct Expect {
    /// The counter's column, for the message.
    kind: &'static str,
    /// The counter.
    count: fn(&Row) -> u64,
}

impl Expect {
    /// The violations of ours of this kind, per recipe of `recipes`.
    fn found(&self, judge: &Verdict, recipes: &[Recipe]) -> Vec<(&'static str, u64)> {
        recipes
            .iter()
            .map(|r| {
                let row = judge.rows.get(&(r.name().to_owned(), "rust".to_owned()));
                (r.name(), row.map_or(0, self.count))
            })
            .collect()
    }
}

/// A hold or a write whose node the recipe's rule did not grant (or that was gone).
const NOT_GRANTED: Expect = Expect {
    kind: "not-granted",
    count: |r| r.not_granted,
};

const CONTROLS: [Control; 4] = [
    Control {
        name: "no-fence",
        fence: false,
        plant: None,
        cohort: false,
        nemesis: &[Kind::OursPause],
        recipes: &[Recipe::Mutex, Recipe::Rwlock, Recipe::Multilock],
        // Three quarters of one seed's 40 s: its findings are few (six in 40 s on seed 1,
        // one per pause aimed at a hold).
        seconds: 30,
        // A paused holder's unfenced write accepted after its node went with its session.
        expect: Some(NOT_GRANTED),
    },
    Control {
        name: "grant-on-disconnect",
        fence: true,
        plant: Some(ChaosPlant::GrantOnDisconnect),
        cohort: false,
        nemesis: &[Kind::ClientCut, Kind::ClientStall],
        recipes: &Recipe::ALL,
        seconds: 15,
        // A mark of a hold taken while a node ahead lived.
        expect: Some(NOT_GRANTED),
    },
    Control {
        name: "shortcut",
        fence: true,
        plant: Some(ChaosPlant::Shortcut),
        cohort: false,
        nemesis: &[Kind::ClientCut],
        recipes: &Recipe::ALL,
        seconds: 15,
        // A mark of a hold taken on a predecessor's deletion while another node sorted first.
        expect: Some(NOT_GRANTED),
    },
    Control {
        name: "cohort-double-grant",
        fence: true,
        plant: Some(ChaosPlant::CohortDoubleGrant),
        cohort: true,
        nemesis: &[Kind::ClientCut],
        recipes: &[Recipe::Mutex],
        seconds: 10,
        // Two local waiters marking the one node, both granted: two live marks.
        expect: Some(Expect {
            kind: "exclusion",
            count: |r| r.exclusion,
        }),
    },
];

/// The semaphore's lease wait, planted (run alone: `CONTROLS` holds the grants of the
/// acquire machine).
const LEASE_WAIT_SHORTCUT: Control = Control {
    name: "lease-wait-shortcut",
    fence: true,
    plant: Some(ChaosPlant::LeaseWaitShortcut),
    cohort: false,
    nemesis: &[Kind::ClientCut],
    recipes: &[Recipe::SemaphoreMutex],
    seconds: 10,
    // Waiters side by side, each taking the one lease freed: a mark of a lease beyond
    // the first N.
    expect: Some(NOT_GRANTED),
};

/// Blame: our client deleting another client's node by name.
const DELETES_OTHERS: Control = Control {
    name: "deletes-others",
    fence: true,
    plant: Some(ChaosPlant::DeletesOthers),
    cohort: false,
    nemesis: &[Kind::ClientCut],
    recipes: &[Recipe::Mutex],
    seconds: 10,
    // Another session's node deleted by a session of ours: charged to ours, the deleter.
    expect: Some(Expect {
        kind: "foreign",
        count: |r| r.foreign_deletes,
    }),
};

/// The seeds each control runs on (its nemesis's schedule, its workers' draws).
const SEEDS: [u64; 2] = [1, 2];

/// One ensemble at a time: the tests take turns.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// A run of our processes alone (a 3-member ensemble, a 4 s session timeout), each hold
/// lasting `hold` (`None`: the workers' usual few ms).
fn run_control(control: &Control, hold: Option<Duration>, seed: u64) -> xtask::chaos::run::Outcome {
    run_with(&options(control, hold, seed))
}

/// Runs `opts`, saying how long the run took.
fn run_with(opts: &ChaosOptions) -> xtask::chaos::run::Outcome {
    let classpath = xtask::curator::classpath().unwrap();
    let started = Instant::now();
    let outcome = run(opts, Path::new(env!("CARGO_BIN_EXE_zk-worker")), &classpath).unwrap();
    println!(
        "seed {}: the run took {:.1} s",
        opts.seed,
        started.elapsed().as_secs_f64()
    );
    outcome
}

/// A control's options on `seed`.
fn options(control: &Control, hold: Option<Duration>, seed: u64) -> ChaosOptions {
    let out_dir = xtask::paths::target_dir().join("chaos");
    std::fs::create_dir_all(&out_dir).unwrap();
    ChaosOptions {
        seconds: control.seconds,
        members: 3,
        seed,
        nemesis: control.nemesis.to_vec(),
        ours_processes: 2,
        curator_processes: 0,
        clients: if control.cohort { 4 } else { 2 },
        leases: LEASES,
        session_timeout: Duration::from_secs(4),
        fence: control.fence,
        plant: control.plant,
        cohort: control.cohort,
        recipes: control.recipes.to_vec(),
        out_dir,
        spacing: None,
        hold,
        accept_server_loss: false,
        keep_logs: false,
    }
}

/// Issue 48's control, a pair of runs alike but for the plant: the operator deletes held
/// nodes of ours (`delete-held`), each hold lasting 2 s (longer than the lost signal's 1 s
/// bound). With the node watch, every holder it ended is told in time and the run passes.
/// Without it (`no-node-watch`), a delete that lands early in a hold goes untold past the
/// bound: the holder learns only at a fenced write at the hold's end, or never. That run must
/// fail with that finding alone (told late or never, of holds whose node another session
/// deleted), from the servers' log against the histories; the log judge (which excuses the
/// operator's overlap) and the clients' checker find nothing in either run. Each pair on
/// each seed, 15 s a run (25 s on one seed before).
#[test]
fn holds_not_told_their_node_was_deleted_fail_the_lost_signal() {
    let _turn = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let hold = Some(Duration::from_secs(2));
    let pairs = SEEDS
        .iter()
        .flat_map(|&seed| [(seed, None), (seed, Some(ChaosPlant::NoNodeWatch))]);
    for (seed, plant) in pairs {
        let control = Control {
            name: plant.map_or("node-watch", |p| p.name()),
            fence: true,
            plant,
            cohort: false,
            nemesis: &[Kind::DeleteHeld],
            recipes: &[Recipe::Mutex, Recipe::Rwlock, Recipe::Multilock],
            seconds: 15,
            expect: None,
        };
        let outcome = run_control(&control, hold, seed);
        let (judge, report, signal) = (&outcome.judge, &outcome.report, &outcome.signal);
        println!(
            "control {}, seed {seed}:\n{judge}\n{report}\n{signal}",
            control.name
        );
        assert!(
            outcome.timeline.iter().any(|a| a.kind == Kind::DeleteHeld),
            "no delete carried out: {:?}",
            outcome.skipped
        );
        // The overlap the operator caused is excused, and nothing else is wrong: the log
        // judge and the clients' checker pass.
        assert!(judge.errors.is_empty(), "{:?}", judge.errors);
        assert_eq!(judge.failure(), None, "{judge}");
        assert_eq!(report.failure(), None, "{report}");
        let ours = signal.deleted.get("rust").cloned().unwrap_or_default();
        let findings = signal.findings();
        match plant {
            None => {
                assert!(findings.is_empty(), "{findings:?}\n{signal}");
                assert!(!ours.in_time.is_empty(), "no holder of ours told: {signal}");
            }
            // The one finding: holds of ours whose node another session deleted, told late
            // or never.
            Some(_) => {
                assert!(
                    !findings.is_empty()
                        && findings
                            .iter()
                            .all(|f| f.contains("whose node another session deleted")),
                    "{findings:?}\n{signal}"
                );
                assert!(ours.late + ours.missing > 0, "{signal}");
            }
        }
        let _ = std::fs::remove_dir_all(&outcome.dir);
    }
}

#[test]
fn the_negative_controls_fail_from_the_servers_log() {
    let _turn = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    for control in CONTROLS {
        fails_with_its_finding(&control);
    }
}

#[test]
fn the_lease_wait_shortcut_fails_from_the_servers_log() {
    let _turn = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    fails_with_its_finding(&LEASE_WAIT_SHORTCUT);
}

#[test]
fn our_delete_of_another_clients_node_is_charged_to_us() {
    let _turn = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    fails_with_its_finding(&DELETES_OTHERS);
}

/// Runs `control` on each seed and asserts its own finding on each: violations of ours of the
/// expected kind, in one of its recipes, and the judge's failure.
fn fails_with_its_finding(control: &Control) {
    for seed in SEEDS {
        fails_with_its_finding_on(control, seed);
    }
}

fn fails_with_its_finding_on(control: &Control, seed: u64) {
    let outcome = run_control(control, None, seed);
    let judge = &outcome.judge;
    println!("control {}, seed {seed}:\n{judge}", control.name);
    for a in &outcome.timeline {
        println!("fault: {} on {}", a.kind, a.target);
    }
    // The logs themselves were read as a whole: the failure is ours, not the judge's.
    assert!(
        judge.errors.is_empty(),
        "control {}, seed {seed}: judge errors {:?}",
        control.name,
        judge.errors
    );
    let expect = control.expect.as_ref().unwrap();
    let found = expect.found(judge, control.recipes);
    println!(
        "control {}, seed {seed}: {} of ours {found:?}",
        control.name, expect.kind
    );
    assert!(
        found.iter().any(|&(_, n)| n > 0) && judge.failure().is_some(),
        "control {}, seed {seed}: no {} violation of ours in {found:?}:\n{judge}",
        control.name,
        expect.kind
    );
    let _ = std::fs::remove_dir_all(&outcome.dir);
}

/// The server-loss control (see the module's docs): a real run of ours on the mutex, passing,
/// its members' logs kept; to each log the next epoch is appended, whose leader took office
/// without the history from the register's second write on and sets that version again (as
/// ZooKeeper 3.8.0's did in long runs). Judged again from the files: the servers lost
/// committed transactions, so the run is inconclusive and fails; accepting the loss, it
/// passes and reports the loss. On each seed.
#[test]
fn a_server_loss_makes_the_run_inconclusive() {
    let _turn = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let control = Control {
        name: "server-loss",
        fence: true,
        plant: None,
        cohort: false,
        nemesis: &[Kind::ClientCut],
        recipes: &[Recipe::Mutex],
        seconds: 5,
        expect: None,
    };
    for seed in SEEDS {
        let opts = ChaosOptions {
            keep_logs: true,
            ..options(&control, None, seed)
        };
        let outcome = run_with(&opts);
        println!(
            "control server-loss, seed {seed}, as run:\n{}",
            outcome.judge
        );
        // The run as the servers served it: judged whole, nothing wrong.
        assert_eq!(outcome.judge.failure(), None, "{}", outcome.judge);
        assert!(outcome.judge.server_loss.is_none(), "{}", outcome.judge);
        let members: Vec<PathBuf> = (0..opts.members)
            .map(|i| outcome.dir.join(format!("member-{i}")))
            .collect();
        let (register, had) = lose_history(&members);
        let cfg = Config::chaos(control.recipes, LEASES);
        let verdict = judge::judge_dirs(&members, &cfg).unwrap();
        println!("control server-loss, seed {seed}, the loss appended:\n{verdict}");
        let loss = verdict.server_loss.clone().expect("the loss is seen");
        assert_eq!(
            (loss.path.as_str(), loss.version, loss.had),
            (register.as_str(), 2, usize::try_from(had).unwrap()),
            "{verdict}"
        );
        // What came before the loss is judged, and is clean; the run is inconclusive.
        assert!(verdict.errors.is_empty(), "{:?}", verdict.errors);
        assert!(verdict.violations.is_empty(), "{verdict}");
        let failure = verdict.failure().expect("an unaccepted loss fails the run");
        assert!(failure.contains("inconclusive"), "{failure}");
        assert!(verdict.to_string().contains("INCONCLUSIVE"), "{verdict}");
        // `--accept-server-loss`: the run passes, the loss reported.
        let accepting = Config {
            accept_server_loss: true,
            ..cfg
        };
        let verdict = judge::judge_dirs(&members, &accepting).unwrap();
        assert_eq!(verdict.failure(), None, "{verdict}");
        let text = verdict.to_string();
        assert!(
            text.contains("THE SERVERS LOST COMMITTED TRANSACTIONS")
                && text.contains("the loss is accepted"),
            "{text}"
        );
        let _ = std::fs::remove_dir_all(&outcome.dir);
    }
}

/// Appends to every member's log (`<dir>/version-2`) the first txn of the next epoch: the
/// mutex's register set at version 2 again, as by a leader lacking the history from its
/// second write on. The register's path and the version the logs had reached.
fn lose_history(members: &[PathBuf]) -> (String, i32) {
    let register = format!("/chaos-registers/{}", Recipe::Mutex.name());
    let logs: Vec<logs::MemberLog> = members
        .iter()
        .map(|d| logs::read_member(d).unwrap())
        .collect();
    let merged = logs::merge(&logs);
    assert!(merged.errors.is_empty(), "{:?}", merged.errors);
    let last = merged.entries.last().expect("the run logged its txns");
    let had = merged
        .entries
        .iter()
        .filter(|e| !e.body.changed_nothing())
        .flat_map(|e| versions_set(&e.body, &register))
        .max()
        .unwrap_or(0);
    assert!(had >= 2, "the run wrote its register {had} times");
    let zxid = (((last.zxid() >> 32) + 1) << 32) | 1;
    let body = TxnBody::SetData(SetDataTxn {
        path: register.clone(),
        data: Some(b"2 rust /chaos/mutex exclusive -@0".to_vec().into()),
        version: 2,
    });
    let entry = TxnEntry {
        header: TxnHeader {
            client_id: last.session_id(),
            cxid: 1,
            zxid,
            time: last.header.time + 1,
            op: body.op_code(),
        },
        body,
        digest: None,
    };
    let mut bytes = BytesMut::new();
    encode_log(&FileHeader::new(0), [&entry], &mut bytes).unwrap();
    for member in members {
        let file = member.join("version-2").join(format!("log.{zxid:x}"));
        std::fs::write(file, &bytes).unwrap();
    }
    (register, had)
}

/// The data versions a txn sets on `path` (inside a multi too).
fn versions_set(body: &TxnBody, path: &str) -> Vec<i32> {
    match body {
        TxnBody::Multi(ops) => ops.iter().flat_map(|op| versions_set(op, path)).collect(),
        TxnBody::SetData(t) if t.path == path => vec![t.version],
        _ => Vec::new(),
    }
}
