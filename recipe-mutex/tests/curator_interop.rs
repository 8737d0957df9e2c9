//! Our `InterProcessMutex` and Apache Curator 5.4's exclude each other on one lock path.
//!
//! The same check as `cargo xtask interop mutex`, for 8 seconds: Curator's side is a JVM of
//! its own (`xtask/java/CuratorMutexWorker.java`, two clients, a session each); ours runs in
//! this test process (two tasks, a `zk_client::Client` each) on a runtime of its own. Every
//! holder creates a shared marker file exclusively inside its critical section; finding it
//! present is a violation. Needs Java, ZooKeeper and Curator (`cargo xtask deps`); the JVM
//! is killed if it overruns, and the server when the test ends.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use xtask::interop::{InteropOptions, RustSide, run_mutex};

#[test]
fn curator_and_ours_exclude_each_other() {
    let totals = run_mutex(&InteropOptions {
        seconds: 8,
        java_clients: 2,
        rust_clients: 2,
        rust_side: RustSide::InProcess,
        ..InteropOptions::default()
    })
    .unwrap();
    println!("{totals}");
    assert_eq!(totals.violations(), 0, "two holders at once:\n{totals}");
    assert!(
        totals.java.acquisitions > 0,
        "Curator never took the lock:\n{totals}"
    );
    assert!(
        totals.rust.acquisitions > 0,
        "we never took the lock:\n{totals}"
    );
    assert!(
        totals.order.handoffs > 0,
        "the lock never passed between Curator and us:\n{totals}"
    );
    assert_eq!(
        totals.order.token_regressions, 0,
        "our fencing tokens went backwards:\n{totals}"
    );
    assert_eq!(
        totals.order.java_entries + totals.order.rust_entries,
        totals.java.acquisitions + totals.rust.acquisitions,
        "every acquisition is logged once:\n{totals}"
    );
    assert_eq!(totals.failure(), None);
}
