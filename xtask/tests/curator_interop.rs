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
    //! its own (`xtask/java/CuratorMutexWorker.java`, two clients, a session each); ours runs in
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

mod rwlock {
    //! Our InterProcessReadWriteLock (with our downgrades) and Apache Curator 5.4's exclude each other on the same paths, in two
    //! processes (Curator in a JVM of its own): the same check as `cargo xtask interop rwlock`,
    //! for 8 seconds, and its negative control (Curator on another path must be caught).

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
}

mod multilock {
    //! Our InterProcessMultiLock over three member paths and Apache Curator 5.4's exclude each other on the same paths, in two
    //! processes (Curator in a JVM of its own): the same check as `cargo xtask interop multilock`,
    //! for 8 seconds, and its negative control (Curator on another path must be caught).

    use xtask::recipe_interop::{Checked, Options, run};

    #[test]
    fn curator_and_ours_exclude_each_other() {
        let totals = run(&Options {
            seconds: 8,
            ..Options::new(Checked::MultiLock)
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
    }

    #[test]
    fn the_detector_catches_curator_on_another_path() {
        let totals = run(&Options {
            seconds: 3,
            java_path: Some("/interop/elsewhere".into()),
            ..Options::new(Checked::MultiLock)
        })
        .unwrap();
        assert!(
            totals.violations() > 0,
            "the overlap detector saw nothing: {totals:?}"
        );
    }
}

mod semaphore {
    //! Our semaphores and Apache Curator 5.4's share the same leases on the same paths, in two
    //! processes (Curator in a JVM of its own): the same check as `cargo xtask interop semaphore`
    //! and `cargo xtask interop semaphore-mutex`, for 8 seconds each, never more than N leases
    //! held among both, both making progress; and the negative control (Curator on another path
    //! must be caught).

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
}
