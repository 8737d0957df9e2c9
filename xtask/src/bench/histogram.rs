//! [`Histogram`]: latencies recorded in fixed memory, with percentiles good to 0.2%.
//!
//! Both benchmark workers record every operation's latency into the same bucket layout
//! (`java/JavaClientBench.java` has a copy), so their percentiles are computed the same way
//! and recording costs neither of them memory that grows with the run: a list of every
//! latency would add megabytes to the peak RSS being measured.

/// Values below this are counted exactly, one bucket each.
const EXACT: u64 = 1024;
/// Buckets per power of two above [`EXACT`]: 9 bits after the leading one.
const SUB_BITS: u32 = 9;
/// Enough buckets for every `u64`.
const BUCKETS: usize = 56 << SUB_BITS;

/// A latency histogram in ns: values below 1024 exactly; above, 10 significant bits
/// (relative error under 1/512). About 112 KiB.
///
/// # Examples
/// ```
/// use xtask::bench::histogram::Histogram;
///
/// let mut h = Histogram::new();
/// for ns in 1..=100 {
///     h.record(ns * 1000);
/// }
/// assert_eq!(h.count(), 100);
/// let p50 = h.percentile(50);
/// assert!(p50 <= 50_000 && p50 > 50_000 - 50_000 / 512);
/// assert_eq!(Histogram::new().percentile(50), 0);
/// ```
#[derive(Debug, Clone)]
pub struct Histogram {
    counts: Vec<u32>,
    total: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Self::new()
    }
}

impl Histogram {
    /// An empty histogram.
    pub fn new() -> Self {
        Histogram {
            counts: vec![0; BUCKETS],
            total: 0,
        }
    }

    /// Counts one value.
    pub fn record(&mut self, value: u64) {
        if let Some(count) = self.counts.get_mut(bucket(value)) {
            *count = count.saturating_add(1);
            self.total += 1;
        }
    }

    /// Adds every value counted in `other`.
    pub fn merge(&mut self, other: &Histogram) {
        for (mine, theirs) in self.counts.iter_mut().zip(&other.counts) {
            *mine = mine.saturating_add(*theirs);
        }
        self.total += other.total;
    }

    /// How many values were counted.
    pub fn count(&self) -> u64 {
        self.total
    }

    /// The nearest-rank `p`th percentile (`p` in 0..=100): the smallest bucket holding the
    /// value of rank `ceil(p/100 * n)`, reported as that bucket's lowest value; 0 when empty.
    pub fn percentile(&self, p: u64) -> u64 {
        let rank = (self.total * p.min(100)).div_ceil(100).max(1);
        let mut seen = 0u64;
        for (index, &count) in self.counts.iter().enumerate() {
            seen += u64::from(count);
            if seen >= rank {
                return lowest(index);
            }
        }
        0
    }
}

/// The bucket of `value`.
fn bucket(value: u64) -> usize {
    if value < EXACT {
        return value as usize;
    }
    let shift = 63 - value.leading_zeros() - SUB_BITS;
    ((shift as usize) << SUB_BITS) + (value >> shift) as usize
}

/// The smallest value in bucket `index`.
fn lowest(index: usize) -> u64 {
    let index = index as u64;
    if index < EXACT {
        return index;
    }
    let shift = (index >> SUB_BITS) - 1;
    let mantissa = (index & ((1 << SUB_BITS) - 1)) | (1 << SUB_BITS);
    mantissa << shift
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_contiguous_and_bounded() {
        assert_eq!(bucket(1023), 1023);
        assert_eq!(bucket(1024), 1024);
        assert_eq!(bucket(1025), 1024);
        assert_eq!(bucket(1026), 1025);
        assert_eq!(bucket(2047), 1535);
        assert_eq!(bucket(2048), 1536);
        assert!(bucket(u64::MAX) < BUCKETS);
        for v in [0, 5, 1023, 1024, 1500, 2048, 99_999, 1 << 40, u64::MAX] {
            let b = bucket(v);
            assert!(lowest(b) <= v, "{v}");
            assert!(v - lowest(b) <= v / 512, "{v}");
            assert_eq!(bucket(lowest(b)), b, "{v}");
        }
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let mut h = Histogram::new();
        for v in 1..=100 {
            h.record(v);
        }
        assert_eq!(h.percentile(50), 50);
        assert_eq!(h.percentile(99), 99);
        assert_eq!(h.percentile(100), 100);
        assert_eq!(h.percentile(0), 1);
        let mut other = Histogram::new();
        other.record(1000);
        h.merge(&other);
        assert_eq!(h.count(), 101);
        assert_eq!(h.percentile(100), 1000);
    }
}
