//! Proof that the async layer's simulator can fail: the defects the async layer once had
//! (issue 23: 2, a guard dropped off the runtime gives its delete up; 3, a turn that ignores
//! the deadline and the session's end; 10, `Lost` ends every waiter) are put back one at a
//! time and each is caught within a bounded sweep, while the real layer passes the same
//! schedules. One test, so that the process-wide plant switch is never shared.

#![allow(clippy::unwrap_used)]

use recipe_mutex::plant::{self, Plant};
use zk_sim::Recipe;
use zk_sim::layer::{LayerConfig, sweep};

/// How many schedules a planted defect may take to be caught.
const BOUND: u64 = 400;

/// The first seed of every sweep (the sweeps that caught each defect when it was planted).
const FIRST_SEED: u64 = 1;

#[test]
fn planted_defects_are_caught_and_the_real_layer_passes() {
    for recipe in Recipe::ALL {
        plant::set(None);
        let clean = sweep(60, FIRST_SEED, LayerConfig::new(recipe));
        assert!(clean.is_ok(), "{}: {}", recipe.name(), clean.unwrap_err());
    }
    for (defect, recipe) in [
        (Plant::NoRuntimeRetry, Recipe::Mutex),
        (Plant::TurnIgnoresDeadline, Recipe::Mutex),
        (Plant::LostEndsWaiters, Recipe::Mutex),
        (Plant::LostEndsWaiters, Recipe::Semaphore { leases: 2 }),
    ] {
        plant::set(Some(defect));
        let caught = sweep(BOUND, FIRST_SEED, LayerConfig::new(recipe));
        plant::set(None);
        let failure = caught.err().unwrap_or_else(|| {
            panic!(
                "{defect:?} on {}: not caught in {BOUND} schedules",
                recipe.name()
            )
        });
        println!("{defect:?} on {}: caught at {failure}", recipe.name());
    }
}
