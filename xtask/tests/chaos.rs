//! `cargo xtask chaos --seconds 60` as CI runs it: every recipe, ours and Curator's, on a
//! 3-member ensemble under the seeded nemesis, each holder updating a protected register; the
//! checker must find no overlap, no accepted stale write or lost update of ours, no stuck
//! acquire and no node of ours left, and every recipe must have run on both sides; the
//! servers' transaction logs must hold a mark of every recipe on both sides (the log judge's
//! verdict is printed, not yet asserted). Our workers are this build's `zk-worker` (a debug
//! build: slower, the same code).

#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::time::Duration;

use xtask::chaos::nemesis::Kind;
use xtask::chaos::run::{ChaosOptions, run};
use xtask::recipe::{LEASES, Recipe};

#[test]
fn a_minute_of_chaos_finds_nothing_wrong() {
    let out_dir = xtask::paths::target_dir().join("chaos");
    std::fs::create_dir_all(&out_dir).unwrap();
    let opts = ChaosOptions {
        seconds: 60,
        members: 3,
        seed: 1,
        nemesis: Kind::ALL.to_vec(),
        ours_processes: 2,
        curator_processes: 2,
        clients: 2,
        leases: LEASES,
        session_timeout: Duration::from_secs(4),
        fence: true,
        shortcut: false,
        recipes: Recipe::ALL.to_vec(),
        out_dir: out_dir.clone(),
    };
    let classpath = xtask::curator::classpath().unwrap();
    let outcome = run(
        &opts,
        Path::new(env!("CARGO_BIN_EXE_zk-worker")),
        &classpath,
    )
    .unwrap();
    let report = &outcome.report;
    println!("{report}");
    for a in &outcome.timeline {
        println!("fault: {} on {}", a.kind, a.target);
    }
    let chart = out_dir.join("chaos-test.svg");
    std::fs::write(
        &chart,
        xtask::chaos::chart::svg(
            &outcome.events,
            &outcome.timeline,
            outcome.span,
            "chaos test",
        ),
    )
    .unwrap();
    let judge = &outcome.judge;
    println!("{judge}");
    assert_eq!(
        report.failure(),
        None,
        "histories in {}:\n{report}",
        outcome.dir.display()
    );
    // The log judge's verdict is printed, not asserted yet (see chaos::run: a replay gap seen
    // in CI is being explained); its marks must be there on both sides.
    if let Some(why) = judge.failure() {
        println!("log judge, not gating yet: {why}");
    }
    for recipe in Recipe::ALL {
        for lib in ["rust", "java"] {
            let row = report.rows.get(&(recipe, lib.to_owned()));
            assert!(
                row.is_some_and(|r| r.cycles > 0),
                "{} {lib} never held:\n{report}",
                recipe.name()
            );
            let marked = judge.rows.get(&(recipe.name().to_owned(), lib.to_owned()));
            assert!(
                marked.is_some_and(|r| r.marks > 0),
                "{} {lib} left no mark in the servers' log:\n{judge}",
                recipe.name()
            );
        }
    }
    assert!(
        outcome.timeline.len() >= 5,
        "too few faults carried out: {:?}, skipped {:?}",
        outcome.timeline,
        outcome.skipped
    );
    let _ = std::fs::remove_dir_all(&outcome.dir);
}
