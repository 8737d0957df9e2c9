//! Our recipes and Apache Curator 5.4's on the same paths, in two processes (Curator in a JVM
//! of its own): the same checks as `cargo xtask interop <recipe>`, for a few seconds each,
//! with their negative controls (Curator on another path must be caught). They live here, not
//! in the recipe crates, because they need xtask's harness (which depends on every recipe);
//! the recipe crates' own tests need only the test kit.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod mutex {
    //! Our `InterProcessMutex` and Apache Curator 5.4's exclude each other on one lock path.
    //!
    //! The same check as `cargo xtask interop mutex`, for 8 seconds: Curator's side is a JVM of
    //! its own (`xtask/java/CuratorRecipeWorker.java` with `mutex`, two clients, a session each); ours runs in
    //! this test process (two tasks, a `zk_client::Client` each) on a runtime of its own. Every
    //! holder creates a shared marker file exclusively inside its critical section; finding it
    //! present is a violation. Needs Java, ZooKeeper and Curator (`cargo xtask deps`); the JVM
    //! is killed if it overruns, and the server when the test ends.

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
}

/// The recipes other than the mutex share one harness (`xtask::recipe_interop`): a run of
/// `seconds` of contention on the shared path, and its negative control.
mod shared {
    use xtask::recipe_interop::{Checked, Options, Totals, run};

    /// Both sides held, and never together: the run's totals, for more checks.
    pub fn both_hold_and_never_overlap(recipe: Checked) -> Totals {
        let totals = run(&Options {
            seconds: 8,
            ..Options::new(recipe)
        })
        .unwrap();
        println!("{recipe:?}: {totals:?}");
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
        totals
    }

    /// With Curator on another path, the detector must see overlaps.
    pub fn the_detector_catches_curator_elsewhere(recipe: Checked) {
        let totals = run(&Options {
            seconds: 3,
            java_path: Some("/interop/elsewhere".into()),
            ..Options::new(recipe)
        })
        .unwrap();
        assert!(
            totals.violations() > 0,
            "the detector saw nothing: {totals:?}"
        );
    }
}

mod rwlock {
    //! Our InterProcessReadWriteLock (with our downgrades) and Curator's exclude each other on
    //! the same path (`cargo xtask interop rwlock`).

    use super::shared::*;
    use xtask::recipe_interop::Checked;

    #[test]
    fn curator_and_ours_exclude_each_other() {
        let totals = both_hold_and_never_overlap(Checked::ReadWrite);
        assert!(totals.downgrades > 0, "we never downgraded: {totals:?}");
    }

    #[test]
    fn the_detector_catches_curator_on_another_path() {
        the_detector_catches_curator_elsewhere(Checked::ReadWrite);
    }
}

mod multilock {
    //! Our InterProcessMultiLock over three member paths and Curator's exclude each other on
    //! every member (`cargo xtask interop multilock`).

    use super::shared::*;
    use xtask::recipe_interop::Checked;

    #[test]
    fn curator_and_ours_exclude_each_other() {
        both_hold_and_never_overlap(Checked::MultiLock);
    }

    #[test]
    fn the_detector_catches_curator_on_another_path() {
        the_detector_catches_curator_elsewhere(Checked::MultiLock);
    }
}

mod semaphore {
    //! Our semaphores and Curator's share the same leases: never more than N held among both
    //! (`cargo xtask interop semaphore`, `interop semaphore-mutex`).

    use super::shared::*;
    use xtask::recipe_interop::Checked;

    #[test]
    fn curator_and_ours_never_hold_more_than_three_leases_of_three() {
        both_hold_and_never_overlap(Checked::Semaphore(3));
    }

    #[test]
    fn curator_and_ours_exclude_each_other_with_the_semaphore_mutex() {
        both_hold_and_never_overlap(Checked::SemaphoreMutex);
    }

    #[test]
    fn the_detector_catches_curator_on_another_path() {
        the_detector_catches_curator_elsewhere(Checked::SemaphoreMutex);
    }
}
