//! Is a worker's warm-up long enough? Its measured window cut into [`SLICE`]s, each slice's
//! rate of server requests (`zk_packets_received` read every slice), and whether the first
//! slice is within [`FLAT_TOLERANCE`] of the later ones: a first slice well off the others
//! means the window began while something (the client's JIT, the server, a connection) was
//! still warming up.
//!
//! The rate is the server's, read with `mntr`, so it is the same for every library whatever
//! its worker prints; in a steady run a library's requests per cycle are constant, so the
//! request rate follows the cycle rate.
//!
//! Pure: the readings come in with their times.

use std::time::Duration;

/// The length of a slice.
pub(crate) const SLICE: Duration = Duration::from_millis(500);

/// How far (relative) the first slice's rate may be from the median of the later ones for
/// the window to count as flat.
pub(crate) const FLAT_TOLERANCE: f64 = 0.10;

/// The rate per second between each two consecutive `readings` (time since the window's
/// start, counter value). A piece shorter than half a [`SLICE`] (the window's end just after
/// a reading) is left out: too short to give a rate; so is one where the counter went back.
pub(crate) fn rates(readings: &[(Duration, u64)]) -> Vec<f64> {
    readings
        .windows(2)
        .filter_map(|pair| match pair {
            [(t0, v0), (t1, v1)] => {
                let dt = t1.saturating_sub(*t0);
                let dv = v1.checked_sub(*v0)?;
                (dt >= SLICE / 2).then(|| dv as f64 / dt.as_secs_f64())
            }
            _ => None,
        })
        .collect()
}

/// The first slice's rate against the later ones'.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Flatness {
    /// The first slice's rate, per second.
    pub first: f64,
    /// The median rate of the later slices, per second.
    pub later: f64,
}

impl Flatness {
    /// The flatness of `rates` (per slice, in order); `None` with fewer than two slices or
    /// later slices without requests.
    pub(crate) fn of(rates: &[f64]) -> Option<Flatness> {
        let (&first, rest) = rates.split_first()?;
        let later = super::interval::median(rest)?;
        (later > 0.0).then_some(Flatness { first, later })
    }

    /// The first slice relative to the later ones: -0.2 is 20% slower.
    pub(crate) fn deviation(&self) -> f64 {
        self.first / self.later - 1.0
    }

    /// Whether the first slice is within [`FLAT_TOLERANCE`] of the later ones.
    pub(crate) fn flat(&self) -> bool {
        self.deviation().abs() <= FLAT_TOLERANCE
    }

    /// `-3% flat`, `-24% WARMING`.
    pub(crate) fn describe(&self) -> String {
        let word = if self.flat() { "flat" } else { "WARMING" };
        format!("{:+.0}% {word}", self.deviation() * 100.0)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn rates_are_per_slice_and_a_short_tail_is_left_out() {
        let readings = [
            (ms(0), 1000),
            (ms(500), 1400),
            (ms(1000), 1900),
            (ms(1500), 2400),
            (ms(1600), 2500),
        ];
        assert_eq!(rates(&readings), [800.0, 1000.0, 1000.0]);
        // A counter that went back (a restarted server) gives no rate.
        assert_eq!(rates(&[(ms(0), 10), (ms(500), 5)]), Vec::<f64>::new());
        assert_eq!(rates(&[(ms(0), 10)]), Vec::<f64>::new());
    }

    #[test]
    fn a_first_slice_off_by_more_than_a_tenth_is_warming() {
        let f = Flatness::of(&[800.0, 1000.0, 1000.0, 990.0]).unwrap();
        assert_eq!((f.first, f.later), (800.0, 1000.0));
        assert!(!f.flat());
        assert_eq!(f.describe(), "-20% WARMING");
        let f = Flatness::of(&[950.0, 1000.0, 990.0]).unwrap();
        assert!(f.flat());
        assert_eq!(f.describe(), "-5% flat");
        // Faster at first is as much a sign as slower.
        assert!(!Flatness::of(&[1200.0, 1000.0]).unwrap().flat());
        assert_eq!(Flatness::of(&[1000.0]), None);
        assert_eq!(Flatness::of(&[1000.0, 0.0]), None);
    }
}
