//! Proof that the async layer's simulator can fail: the defects the async layer once had
//! (issue 23: 2, a guard dropped off the runtime gives its delete up; 3, a turn that ignores
//! the deadline and the session's end; 10, `Lost` ends every waiter) are put back one at a
//! time and each is caught within a bounded sweep, while the real layer passes the same
//! schedules. One test, so that the process-wide plant switch is never shared.

#![allow(clippy::unwrap_used)]

use recipe_mutex::plant::{self, Plant};
use zk_sim::Recipe;
use zk_sim::layer::{LayerConfig, run, sweep};

/// Each planted defect, the recipe it was planted under and the seed that caught it first in a
/// sweep from seed 1 (kept: the seed's schedule of faults and choices is fixed, so it catches
/// the defect again).
const KEPT: [(Plant, Recipe, u64); 4] = [
    (Plant::NoRuntimeRetry, Recipe::Mutex, 3),
    (Plant::TurnIgnoresDeadline, Recipe::Mutex, 11),
    (Plant::LostEndsWaiters, Recipe::Mutex, 3),
    (Plant::LostEndsWaiters, Recipe::Semaphore { leases: 2 }, 10),
];

#[test]
fn planted_defects_are_caught_and_the_real_layer_passes() {
    for recipe in Recipe::ALL {
        plant::set(None);
        let clean = sweep(60, 1, LayerConfig::new(recipe));
        assert!(clean.is_ok(), "{}: {}", recipe.name(), clean.unwrap_err());
    }
    for (defect, recipe, seed) in KEPT {
        // The real layer passes the seed...
        plant::set(None);
        let clean = run(seed, LayerConfig::new(recipe));
        assert!(clean.is_ok(), "{}: {}", recipe.name(), clean.unwrap_err());
        // ...and the planted one fails it.
        plant::set(Some(defect));
        let caught = run(seed, LayerConfig::new(recipe));
        plant::set(None);
        let failure = caught.err().unwrap_or_else(|| {
            panic!(
                "{defect:?} on {}: seed {seed} no longer catches it",
                recipe.name()
            )
        });
        println!("{defect:?} on {}: caught at {failure}", recipe.name());
    }
}
