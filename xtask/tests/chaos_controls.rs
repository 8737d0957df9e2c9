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
//!
//! One test, the runs one after another (each starts its own ensemble); needs the planted
//! worker, so the feature `plant` (on in `cargo xtask test`, which runs `--all-features`).
//! Only our processes run: the controls judge ours.

#![cfg(feature = "plant")]
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::time::Duration;

use xtask::chaos::nemesis::Kind;
use xtask::chaos::ours::ChaosPlant;
use xtask::chaos::run::{ChaosOptions, run};
use xtask::recipe::{LEASES, Recipe};

/// One control's run: what it changes, under which faults, and the judge's row counter that
/// must show ours failing.
struct Control {
    name: &'static str,
    fence: bool,
    plant: Option<ChaosPlant>,
    cohort: bool,
    nemesis: &'static [Kind],
    recipes: &'static [Recipe],
    seconds: u64,
}

const CONTROLS: [Control; 4] = [
    Control {
        name: "no-fence",
        fence: false,
        plant: None,
        cohort: false,
        nemesis: &[Kind::OursPause],
        recipes: &[Recipe::Mutex, Recipe::Rwlock, Recipe::Multilock],
        seconds: 40,
    },
    Control {
        name: "grant-on-disconnect",
        fence: true,
        plant: Some(ChaosPlant::GrantOnDisconnect),
        cohort: false,
        nemesis: &[Kind::ClientCut, Kind::ClientStall],
        recipes: &Recipe::ALL,
        seconds: 30,
    },
    Control {
        name: "shortcut",
        fence: true,
        plant: Some(ChaosPlant::Shortcut),
        cohort: false,
        nemesis: &[Kind::ClientCut],
        recipes: &Recipe::ALL,
        seconds: 30,
    },
    Control {
        name: "cohort-double-grant",
        fence: true,
        plant: Some(ChaosPlant::CohortDoubleGrant),
        cohort: true,
        nemesis: &[Kind::ClientCut],
        recipes: &[Recipe::Mutex],
        seconds: 20,
    },
];

#[test]
fn the_negative_controls_fail_from_the_servers_log() {
    let out_dir = xtask::paths::target_dir().join("chaos");
    std::fs::create_dir_all(&out_dir).unwrap();
    let classpath = xtask::curator::classpath().unwrap();
    for control in CONTROLS {
        let opts = ChaosOptions {
            seconds: control.seconds,
            members: 3,
            seed: 1,
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
            out_dir: out_dir.clone(),
            spacing: None,
        };
        let outcome = run(
            &opts,
            Path::new(env!("CARGO_BIN_EXE_zk-worker")),
            &classpath,
        )
        .unwrap();
        let judge = &outcome.judge;
        println!("control {}:\n{judge}", control.name);
        for a in &outcome.timeline {
            println!("fault: {} on {}", a.kind, a.target);
        }
        // The logs themselves were read as a whole: the failure is ours, not the judge's.
        assert!(
            judge.errors.is_empty(),
            "control {}: judge errors {:?}",
            control.name,
            judge.errors
        );
        let ours: u64 = judge
            .rows
            .iter()
            .filter(|((_, lib), _)| lib == "rust")
            .map(|(_, row)| row.violations())
            .sum();
        assert!(
            ours > 0 && judge.failure().is_some(),
            "control {}: the log judge found nothing wrong:\n{judge}",
            control.name
        );
        let _ = std::fs::remove_dir_all(&outcome.dir);
    }
}
