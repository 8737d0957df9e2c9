//! Our InterProcessReadWriteLock (with our downgrades) and Apache Curator 5.4's exclude each other on the same paths, in two
//! processes (Curator in a JVM of its own): the same check as `cargo xtask interop rwlock`,
//! for 8 seconds, and its negative control (Curator on another path must be caught).

#![allow(clippy::unwrap_used)]

use xtask::recipe_interop::{Checked, Options, run};

#[test]
fn curator_and_ours_exclude_each_other() {
    let totals = run(&Options {
        seconds: 8,
        ..Options::new(Checked::ReadWrite)
    })
    .unwrap();
    println!("{totals:?}");
    assert_eq!(
        totals.violations(),
        0,
        "Curator and ours overlapped: {totals:?}"
    );
    assert!(
        totals.java.acquisitions > 0,
        "Curator never held: {totals:?}"
    );
    assert!(totals.rust.acquisitions > 0, "we never held: {totals:?}");
    assert!(totals.downgrades > 0, "we never downgraded: {totals:?}");
}

#[test]
fn the_detector_catches_curator_on_another_path() {
    let totals = run(&Options {
        seconds: 3,
        java_path: Some("/interop/elsewhere".into()),
        ..Options::new(Checked::ReadWrite)
    })
    .unwrap();
    assert!(
        totals.violations() > 0,
        "the overlap detector saw nothing: {totals:?}"
    );
}
