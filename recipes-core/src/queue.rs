//! [`Queue`]: a first-in first-out queue that keeps its first few items inline.
//!
//! A lock attempt's queues (ops to send, replies awaited, watches asked for) hold one to three
//! items at a time; as `VecDeque`s they cost a heap allocation each per attempt, a fifth of an
//! uncontended lock cycle's. This one holds its first `N` items in place and spills the rest,
//! in order, to a `VecDeque`, so the usual attempt allocates nothing for them and an unusual
//! one (a long chain of retries, many twin deletes) still has room.

use std::collections::VecDeque;

/// A FIFO queue with room for `N` items inline (`N` at least 1); more go to the heap.
///
/// ```
/// use recipes_core::queue::Queue;
///
/// let mut q: Queue<u32, 2> = Queue::new();
/// for i in 0..5 {
///     q.push_back(i);
/// }
/// assert_eq!(q.len(), 5);
/// assert_eq!(q.iter().copied().collect::<Vec<_>>(), [0, 1, 2, 3, 4]);
/// assert_eq!(q.pop_front(), Some(0));
/// assert_eq!(q.front(), Some(&1));
/// ```
#[derive(Debug, Clone)]
pub struct Queue<T, const N: usize> {
    /// The first `len` items, from `head`, wrapping.
    ring: [Option<T>; N],
    head: usize,
    len: usize,
    /// The items after the ring's, in order; empty unless the ring is full.
    spill: VecDeque<T>,
}

impl<T, const N: usize> Queue<T, N> {
    /// An empty queue; allocates nothing.
    pub fn new() -> Self {
        const { assert!(N > 0, "a Queue needs room for one item inline") };
        Self {
            ring: std::array::from_fn(|_| None),
            head: 0,
            len: 0,
            spill: VecDeque::new(),
        }
    }

    /// The number of items.
    pub fn len(&self) -> usize {
        self.len + self.spill.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends `item`.
    pub fn push_back(&mut self, item: T) {
        if self.len < N && self.spill.is_empty() {
            if let Some(slot) = self.ring.get_mut((self.head + self.len) % N) {
                *slot = Some(item);
                self.len += 1;
                return;
            }
        }
        self.spill.push_back(item);
    }

    /// Removes the first item.
    pub fn pop_front(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        let item = self.ring.get_mut(self.head).and_then(Option::take);
        self.head = (self.head + 1) % N;
        self.len -= 1;
        if let Some(next) = self.spill.pop_front() {
            // The ring had no room: the oldest spilled item takes the freed place.
            if let Some(slot) = self.ring.get_mut((self.head + self.len) % N) {
                *slot = Some(next);
                self.len += 1;
            }
        }
        item
    }

    /// The first item.
    pub fn front(&self) -> Option<&T> {
        if self.len == 0 {
            return None;
        }
        self.ring.get(self.head).and_then(Option::as_ref)
    }

    /// The first item, mutably.
    pub fn front_mut(&mut self) -> Option<&mut T> {
        if self.len == 0 {
            return None;
        }
        self.ring.get_mut(self.head).and_then(Option::as_mut)
    }

    /// The items, first to last.
    pub fn iter(&self) -> impl Iterator<Item = &T> {
        let (before, from_head) = self.ring.split_at(self.head);
        // The ring's empty places hold `None`: skipping them leaves its items in order.
        from_head
            .iter()
            .chain(before)
            .filter_map(Option::as_ref)
            .chain(&self.spill)
    }

    /// The items, first to last, mutably.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut T> {
        let (before, from_head) = self.ring.split_at_mut(self.head);
        from_head
            .iter_mut()
            .chain(before)
            .filter_map(Option::as_mut)
            .chain(&mut self.spill)
    }

    /// Removes every item.
    pub fn clear(&mut self) {
        self.ring.iter_mut().for_each(|slot| *slot = None);
        self.head = 0;
        self.len = 0;
        self.spill.clear();
    }
}

impl<T, const N: usize> Default for Queue<T, N> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Random pushes and pops against a `VecDeque`, through the ring's wrap and the spill.
    #[test]
    fn behaves_as_a_vecdeque() {
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut ours: Queue<u64, 3> = Queue::new();
        let mut model = VecDeque::new();
        for step in 0..20_000 {
            let roll = next() % 10;
            if roll < 5 {
                ours.push_back(step);
                model.push_back(step);
            } else if roll < 9 {
                assert_eq!(ours.pop_front(), model.pop_front());
            } else if roll == 9 && step % 7 == 0 {
                ours.clear();
                model.clear();
            }
            assert_eq!(ours.len(), model.len());
            assert_eq!(ours.is_empty(), model.is_empty());
            assert_eq!(ours.front(), model.front());
            assert!(ours.iter().eq(model.iter()));
            if let (Some(a), Some(b)) = (ours.front_mut(), model.front_mut()) {
                *a += 1;
                *b += 1;
            }
            for (a, b) in ours.iter_mut().zip(model.iter_mut()) {
                assert_eq!(a, b);
            }
        }
    }

    #[test]
    fn holds_n_items_without_spilling() {
        let mut q: Queue<String, 2> = Queue::new();
        q.push_back("a".into());
        q.push_back("b".into());
        assert!(q.spill.is_empty());
        q.push_back("c".into());
        assert_eq!(q.spill.len(), 1);
        assert_eq!(q.pop_front().as_deref(), Some("a"));
        assert!(q.spill.is_empty(), "the spilled item moved into the ring");
        assert_eq!(q.iter().map(String::as_str).collect::<Vec<_>>(), ["b", "c"]);
    }
}
