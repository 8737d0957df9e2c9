//! A global allocator that counts: [`Counting`] hands every call to the system allocator and
//! counts the allocations (`alloc`, `alloc_zeroed`, `realloc`) and the bytes they asked for, so
//! that the benchmark worker can say how many allocations one lock cycle makes, a number that
//! does not move between runs.
//!
//! ```
//! #[global_allocator]
//! static ALLOC: count_alloc::Counting = count_alloc::Counting;
//!
//! fn main() {
//!     let before = count_alloc::counts();
//!     let work: Vec<u8> = std::hint::black_box(Vec::with_capacity(64));
//!     let spent = count_alloc::counts().since(before);
//!     assert!(spent.allocations >= 1 && spent.bytes >= 64);
//!     drop(work);
//! }
//! ```
//!
//! Not a profiler: it says how many, not where (valgrind's DHAT or heaptrack say where).
//!
//! The counters are relaxed atomics: one uncontended `fetch_add` per call, and the counts are
//! exact once the threads that allocated have synchronized with the reader (a runtime's
//! `block_on` returning, a join).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);
/// Bytes allocated and not yet freed.
static LIVE: AtomicI64 = AtomicI64::new(0);

/// The system allocator, counted. Install it with `#[global_allocator]`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Counting;

fn count(size: usize) {
    ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
    BYTES.fetch_add(size as u64, Ordering::Relaxed);
}

/// `change` bytes more (or fewer) in use.
fn live_by(change: i64) {
    LIVE.fetch_add(change, Ordering::Relaxed);
}

/// A size as the live count's signed bytes (a size is at most `isize::MAX`).
fn signed(size: usize) -> i64 {
    i64::try_from(size).unwrap_or(i64::MAX)
}

// SAFETY: every call is passed unchanged to `System`, which upholds `GlobalAlloc`'s contract;
// the counting touches only two atomics and never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        // SAFETY: the caller's contract for `alloc` is `System.alloc`'s.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            live_by(signed(layout.size()));
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        // SAFETY: as for `alloc`.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            live_by(signed(layout.size()));
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        live_by(-signed(layout.size()));
        // SAFETY: `ptr` came from this allocator, which is `System`'s, with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size);
        // SAFETY: as for `dealloc`; `new_size` is the caller's, checked by its contract.
        let moved = unsafe { System.realloc(ptr, layout, new_size) };
        if !moved.is_null() {
            live_by(signed(new_size) - signed(layout.size()));
        }
        moved
    }
}

/// The allocations counted since the process started (zero when [`Counting`] is not the
/// global allocator).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counts {
    /// Calls to `alloc`, `alloc_zeroed` and `realloc`.
    pub allocations: u64,
    /// The bytes those calls asked for (a `realloc` counts its new size).
    pub bytes: u64,
}

impl Counts {
    /// What was counted between `earlier` and `self`.
    #[must_use]
    pub fn since(self, earlier: Counts) -> Counts {
        Counts {
            allocations: self.allocations.saturating_sub(earlier.allocations),
            bytes: self.bytes.saturating_sub(earlier.bytes),
        }
    }
}

/// The counts so far.
#[must_use]
pub fn counts() -> Counts {
    Counts {
        allocations: ALLOCATIONS.load(Ordering::Relaxed),
        bytes: BYTES.load(Ordering::Relaxed),
    }
}

/// The bytes allocated and not yet freed, as asked for (the allocator's own overhead not
/// included): the live heap, for "what does a held lock keep". Zero when [`Counting`] is not
/// the global allocator.
#[must_use]
pub fn live() -> i64 {
    LIVE.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[global_allocator]
    static ALLOC: Counting = Counting;

    #[test]
    fn counts_each_allocation_and_its_bytes() {
        // Other test threads may allocate meanwhile: count on this thread only by bracketing
        // allocations that cannot be elided, and accept others' on top.
        let before = counts();
        let a: Vec<u8> = std::hint::black_box(Vec::with_capacity(1000));
        let mut b: Vec<u64> = std::hint::black_box(Vec::with_capacity(4));
        b.reserve_exact(100);
        let spent = counts().since(before);
        assert!(spent.allocations >= 3, "{spent:?}");
        // 1000, then 4 u64s, then a realloc to 100 u64s.
        assert!(spent.bytes >= 1000 + 32 + 800, "{spent:?}");
        drop((a, b));
        let after_drop = counts().since(before);
        assert_eq!(
            after_drop.allocations, spent.allocations,
            "a free is not an allocation"
        );
    }

    #[test]
    fn live_bytes_rise_with_an_allocation_and_fall_with_its_free() {
        // Megabytes against what the other test's thread allocates and frees meanwhile (a few
        // hundred bytes): each check allows it `SLACK` either way.
        const MB: i64 = 1 << 20;
        const SLACK: i64 = 64 << 10;
        let before = live();
        let mut a: Vec<u8> = std::hint::black_box(Vec::with_capacity(MB as usize));
        assert!(live() - before >= MB - SLACK, "{}", live() - before);
        a.shrink_to(16);
        assert!(live() - before < SLACK, "a realloc to less counts less");
        a.reserve_exact(2 * MB as usize);
        assert!(live() - before >= 2 * MB - SLACK);
        drop(a);
        assert!(live() - before < SLACK, "{}", live() - before);
    }
}
