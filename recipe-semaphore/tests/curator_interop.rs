//! Our semaphores and Apache Curator 5.4's share the same leases on the same paths, in two
//! processes (Curator in a JVM of its own): the same check as `cargo xtask interop semaphore`
//! and `cargo xtask interop semaphore-mutex`, for 8 seconds each, never more than N leases
//! held among both, both making progress; and the negative control (Curator on another path
//! must be caught).

#![allow(clippy::unwrap_used)]

use xtask::recipe_interop::{Checked, Options, run};

fn shares(recipe: Checked) {
    let totals = run(&Options {
        seconds: 8,
        ..Options::new(recipe)
    })
    .unwrap();
    println!("{recipe:?}: {totals:?}");
    assert_eq!(
        totals.violations(),
        0,
        "more holders than leases: {totals:?}"
    );
    assert!(
        totals.java.acquisitions > 0,
        "Curator never held: {totals:?}"
    );
    assert!(totals.rust.acquisitions > 0, "we never held: {totals:?}");
}

#[test]
fn curator_and_ours_never_hold_more_than_three_leases_of_three() {
    shares(Checked::Semaphore(3));
}

#[test]
fn curator_and_ours_exclude_each_other_with_the_semaphore_mutex() {
    shares(Checked::SemaphoreMutex);
}

#[test]
fn the_detector_catches_curator_on_another_path() {
    let totals = run(&Options {
        seconds: 3,
        java_path: Some("/interop/elsewhere".into()),
        ..Options::new(Checked::SemaphoreMutex)
    })
    .unwrap();
    assert!(
        totals.violations() > 0,
        "the slot detector saw nothing: {totals:?}"
    );
}
