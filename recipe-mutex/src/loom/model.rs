//! What the crate's loom models share: run a model in every interleaving up to a preemption
//! bound, and show that a model with a plant fails for the invariant it checks.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use ::loom::model::Builder;

/// Preemptions explored per interleaving unless `LOOM_MAX_PREEMPTIONS` says otherwise.
pub(crate) const PREEMPTIONS: usize = 3;

/// Runs `model` in every interleaving loom explores; how many that was (printed with
/// `--nocapture`).
pub(crate) fn check(model: impl Fn() + Sync + Send + 'static) -> usize {
    let mut builder = Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(PREEMPTIONS);
    }
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = runs.clone();
    builder.check(move || {
        counted.fetch_add(1, Ordering::Relaxed);
        model();
    });
    let runs = runs.load(Ordering::Relaxed);
    eprintln!("{runs} interleavings");
    runs
}

/// Checks that loom finds a failure of `model` (with a plant), and that it is the one
/// `expected` names: the model shown able to fail, and for its invariant.
pub(crate) fn fails(model: impl Fn() + Sync + Send + 'static, expected: &str) {
    let Err(panic) = catch_unwind(AssertUnwindSafe(|| check(model))) else {
        panic!("loom found no failure; expected {expected:?}");
    };
    let message = panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or_default();
    assert!(
        message.contains(expected),
        "loom found {message:?}, not {expected:?}"
    );
}
