//! Our recipes and Apache Curator 5.4's on the same paths, in two processes (Curator in a JVM
//! of its own): the same runs as `cargo xtask interop <recipe>`, for a few seconds each, with
//! their negative controls (Curator on another path must be caught). Both sides record every
//! hold (what, how, from when to when, on a clock both processes share) and the recipe's
//! checker reads them all (`xtask::interop`). Ours runs in this test process (a
//! `zk_client::Client` per task, a runtime of its own); the JVM is killed if it overruns, and
//! the server when the test ends. They live here, not in the recipe crates, because they need
//! xtask's harness (which depends on every recipe); the recipe crates' own tests need only the
//! test kit.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use xtask::interop::{InteropOptions, RustSide, Totals, run_interop};
use xtask::recipe::Recipe;

/// `seconds` of contention on `recipe`'s shared path: both sides held, never against the
/// rule, every acquisition's hold recorded; the totals, for more checks.
fn both_hold_and_never_overlap(recipe: Recipe) -> Totals {
    let totals = run_interop(&InteropOptions {
        seconds: 8,
        rust_side: RustSide::InProcess,
        ..InteropOptions::new(recipe)
    })
    .unwrap();
    println!("{totals}");
    assert_eq!(totals.violations(), 0, "the rule was broken:\n{totals}");
    assert_eq!(totals.failure(), None, "{totals}");
    totals
}

/// As [`both_hold_and_never_overlap`], with our 4 clients tasks of one session sharing one
/// cohort (`--cohort`).
fn a_cohort_of_ours_beside_curator(recipe: Recipe) -> Totals {
    let totals = run_interop(&InteropOptions {
        seconds: 8,
        rust_side: RustSide::InProcess,
        rust_clients: 4,
        cohort: true,
        ..InteropOptions::new(recipe)
    })
    .unwrap();
    println!("{totals}");
    assert_eq!(totals.violations(), 0, "the rule was broken:\n{totals}");
    assert_eq!(totals.failure(), None, "{totals}");
    totals
}

/// As [`both_hold_and_never_overlap`], with our clients' connections cut every `every` (a
/// fault proxy between them and the server; their sessions survive and reconnect, the
/// machines recover their nodes), so that exclusion is checked across reconnects.
fn never_overlap_across_cuts(recipe: Recipe, every: std::time::Duration) -> Totals {
    let totals = run_interop(&InteropOptions {
        seconds: 8,
        rust_side: RustSide::InProcess,
        cut_every: Some(every),
        ..InteropOptions::new(recipe)
    })
    .unwrap();
    println!("{totals}");
    assert!(totals.cuts >= 3, "the connections were not cut:\n{totals}");
    assert_eq!(totals.violations(), 0, "the rule was broken:\n{totals}");
    assert_eq!(totals.failure(), None, "{totals}");
    totals
}

/// With Curator on another path, the checker must see violations.
fn the_checker_catches_curator_elsewhere(recipe: Recipe) {
    let totals = run_interop(&InteropOptions {
        seconds: 3,
        java_path: Some("/interop/elsewhere".into()),
        rust_side: RustSide::InProcess,
        ..InteropOptions::new(recipe)
    })
    .unwrap();
    println!("{totals}");
    assert!(
        totals.violations() > 0,
        "the checker saw nothing:\n{totals}"
    );
    assert_eq!(totals.failure(), None, "{totals}");
}

mod mutex {
    //! Our `InterProcessMutex` and Curator's exclude each other on one lock path, the lock
    //! passes between them, and our fencing tokens increase in lock order.

    use super::*;

    #[test]
    fn curator_and_ours_exclude_each_other() {
        let totals = both_hold_and_never_overlap(Recipe::Mutex);
        let order = totals.order.as_ref().unwrap();
        assert!(
            order.handoffs > 0,
            "the lock never passed between Curator and us:\n{totals}"
        );
        assert_eq!(order.token_regressions, 0, "{totals}");
        assert_eq!(
            order.java_entries + order.rust_entries,
            totals.java.acquisitions + totals.rust.acquisitions,
            "every acquisition is one hold:\n{totals}"
        );
    }

    #[test]
    fn the_checker_catches_curator_on_another_path() {
        the_checker_catches_curator_elsewhere(Recipe::Mutex);
    }

    /// Issue 38: our tasks of one session share one `CohortMutex` (one node in Curator's
    /// queue, local hand-offs between them), and Curator's clients still get their turns
    /// and never overlap ours.
    #[test]
    fn curator_and_a_cohort_of_ours_exclude_each_other() {
        let totals = a_cohort_of_ours_beside_curator(Recipe::Mutex);
        let order = totals.order.as_ref().unwrap();
        assert!(
            order.handoffs >= 2,
            "the lock did not pass between Curator and us: {order:?}"
        );
        assert_eq!(order.sequence_decreases, 0, "{order:?}");
    }

    #[test]
    fn curator_and_ours_exclude_each_other_across_connection_cuts() {
        let totals = never_overlap_across_cuts(Recipe::Mutex, std::time::Duration::from_secs(1));
        assert_eq!(totals.order.unwrap().token_regressions, 0);
    }
}

mod rwlock {
    //! Our InterProcessReadWriteLock (with our downgrades) and Curator's: readers or one
    //! writer, never both (`cargo xtask interop rwlock`).

    use super::*;

    #[test]
    fn curator_and_ours_exclude_each_other() {
        let totals = both_hold_and_never_overlap(Recipe::Rwlock);
        assert!(
            totals.verdict.downgrades > 0,
            "we never downgraded:\n{totals}"
        );
        assert!(totals.verdict.peak > 1, "readers never shared:\n{totals}");
    }

    /// Issue 38: our tasks of one session share one `CohortReadWriteLock` (readers on one
    /// read node, writers passing one write node) beside Curator's readers and writers.
    #[test]
    fn curator_and_a_cohort_of_ours_exclude_each_other() {
        let totals = a_cohort_of_ours_beside_curator(Recipe::Rwlock);
        assert!(totals.verdict.peak > 1, "readers never shared:\n{totals}");
    }

    #[test]
    fn the_checker_catches_curator_on_another_path() {
        the_checker_catches_curator_elsewhere(Recipe::Rwlock);
    }
}

mod multilock {
    //! Our InterProcessMultiLock over three member paths and Curator's exclude each other on
    //! every member (`cargo xtask interop multilock`).

    use super::*;

    #[test]
    fn curator_and_ours_exclude_each_other() {
        both_hold_and_never_overlap(Recipe::Multilock);
    }

    #[test]
    fn the_checker_catches_curator_on_another_path() {
        the_checker_catches_curator_elsewhere(Recipe::Multilock);
    }
}

mod semaphore {
    //! Our semaphores and Curator's share the same leases: never more than N held among both
    //! (`cargo xtask interop semaphore`, `interop semaphore-mutex`).

    use super::*;

    /// Six clients (three of each) for three leases: a waiter is queued behind every lease
    /// whenever one is let go, so the leases are all taken at once many times a run, also on
    /// two loaded cores (with two of each, four clients holding for about 2 ms each, the
    /// peak read 2 once in a whole-suite run: three holds of four rarely overlapped while
    /// each acquire took longer than a hold).
    #[test]
    fn curator_and_ours_never_hold_more_than_three_leases_of_three() {
        let totals = run_interop(&InteropOptions {
            seconds: 8,
            rust_side: RustSide::InProcess,
            java_clients: 3,
            rust_clients: 3,
            ..InteropOptions::new(Recipe::Semaphore)
        })
        .unwrap();
        println!("{totals}");
        assert_eq!(totals.violations(), 0, "the rule was broken:\n{totals}");
        assert_eq!(totals.failure(), None, "{totals}");
        assert_eq!(
            totals.verdict.peak, 3,
            "the leases were never all taken:\n{totals}"
        );
    }

    #[test]
    fn curator_and_ours_exclude_each_other_with_the_semaphore_mutex() {
        both_hold_and_never_overlap(Recipe::SemaphoreMutex);
    }

    #[test]
    fn the_checker_catches_curator_on_another_path() {
        the_checker_catches_curator_elsewhere(Recipe::SemaphoreMutex);
    }

    #[test]
    fn curator_and_ours_never_hold_more_than_three_leases_across_connection_cuts() {
        never_overlap_across_cuts(Recipe::Semaphore, std::time::Duration::from_secs(1));
    }
}
