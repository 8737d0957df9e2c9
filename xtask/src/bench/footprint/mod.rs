//! `cargo xtask bench footprint`: what the client costs its host, counted rather than timed.
//!
//! - [`counted`]: user-space instructions (callgrind) and heap allocations (the worker's
//!   counting allocator) per uncontended lock cycle of every recipe, numbers that do not move
//!   between runs the way CPU time does;
//! - [`floor`]: the same count for the mutex cycle's three requests sent and read with tokio
//!   and zk-proto alone, the floor under ours;
//! - [`size`]: the stripped size of the one-lock program (recipe-mutex's `one_lock`
//!   example, built as a user builds it: a crate of its own outside the workspace, release
//!   profile), what a second `lock()` call site adds, what each optional feature adds, and
//!   where the bytes go by crate and by function.
//!
//! Both are written to `target/bench/footprint.md`.

pub mod counted;
pub mod floor;
pub mod size;

use std::error::Error;
use std::fmt::Write as _;

type Result<T> = std::result::Result<T, Box<dyn Error>>;

/// The most a mutex cycle's instructions may be over the floor through a connection task
/// (issue 35: within 2×; its earlier absolute 25,000 was withdrawn).
pub const FLOOR_FACTOR_TARGET: f64 = 2.0;
/// Allocations per uncontended mutex cycle the issue sets as the target.
pub const ALLOCATIONS_TARGET: f64 = 15.0;
/// The one-lock program's stripped size that it must not grow past: the size last reported
/// (README, issue 35; the earlier target, zookeeper-client 0.11's 1,134,720 B, was withdrawn).
pub const SIZE_CEILING: u64 = 1_612_264;

/// Runs both parts and writes the page.
///
/// # Errors
/// A build that fails, no ZooKeeper, a worker that fails.
pub fn run() -> Result<()> {
    let started = std::time::Instant::now();
    let costs = counted::measure_all()?;
    let sizes = size::measure()?;
    let body = page(&costs, &sizes, started.elapsed());
    println!("{body}");
    let path = super::report::write_page(&super::report::dir(), "footprint", &body, &[])?;
    println!("report: {}", path.display());
    Ok(())
}

/// The page: both tables and the split.
fn page(costs: &[counted::Cost], sizes: &size::Sizes, took: std::time::Duration) -> String {
    let mut out = String::from("# Footprint: the client's own cost, counted\n\n");
    out.push_str(&counted::table(costs));
    out.push('\n');
    out.push_str(&size::table(sizes));
    let _ = writeln!(
        out,
        "\n{} wall-clock for this page, builds included.",
        super::progress::human(took)
    );
    out
}
