//! [`Sample`]: what one benchmark worker reports, as one `RESULT key=value ...` line.

use std::fmt;

use crate::line::Fields;

/// One worker's measurements of one workload.
///
/// The Rust worker (`src/bin/zk-worker.rs`, mode `bench`) and the Java one
/// (`java/JavaClientBench.java`) print the same line:
///
/// ```text
/// RESULT ops=51234 measure_ms=10000 p50_ns=18000 p99_ns=41000 cpu_window_ticks=612 cpu_total_ticks=700 hwm_kib=6400
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Sample {
    /// Operations completed inside the measured window.
    pub ops: u64,
    /// The length of the measured window, in ms.
    pub measure_ms: u64,
    /// Median latency of those operations, in ns (see [`Histogram`](super::histogram::Histogram)).
    pub p50_ns: u64,
    /// 99th percentile latency, in ns.
    pub p99_ns: u64,
    /// The worker's `utime + stime` during the window, in clock ticks.
    pub cpu_window_ticks: u64,
    /// The worker's `utime + stime` from its start to its report (start-up, connect,
    /// warm-up, window), in clock ticks.
    pub cpu_total_ticks: u64,
    /// The worker's peak resident set size (`VmHWM`), in KiB.
    pub hwm_kib: u64,
}

impl Sample {
    /// Operations per second in the window.
    pub fn ops_per_sec(&self) -> f64 {
        if self.measure_ms == 0 {
            return 0.0;
        }
        self.ops as f64 * 1000.0 / self.measure_ms as f64
    }

    /// CPU time per operation in the window, in µs, given the clock tick rate.
    pub fn cpu_us_per_op(&self, ticks_per_sec: u64) -> f64 {
        if self.ops == 0 || ticks_per_sec == 0 {
            return f64::NAN;
        }
        self.cpu_window_ticks as f64 * 1e6 / ticks_per_sec as f64 / self.ops as f64
    }

    /// Parses a `RESULT ...` line; every field must be present once.
    ///
    /// # Errors
    /// The line does not start with `RESULT`, a field is missing, unknown, repeated, or not a
    /// number; the message says which.
    pub fn parse(line: &str) -> Result<Sample, String> {
        let f = Fields::parse(line, "RESULT")?.only(&FIELDS)?;
        Ok(Sample {
            ops: f.number("ops")?,
            measure_ms: f.number("measure_ms")?,
            p50_ns: f.number("p50_ns")?,
            p99_ns: f.number("p99_ns")?,
            cpu_window_ticks: f.number("cpu_window_ticks")?,
            cpu_total_ticks: f.number("cpu_total_ticks")?,
            hwm_kib: f.number("hwm_kib")?,
        })
    }
}

/// The keys of a `RESULT` line, in the order they are printed.
const FIELDS: [&str; 7] = [
    "ops",
    "measure_ms",
    "p50_ns",
    "p99_ns",
    "cpu_window_ticks",
    "cpu_total_ticks",
    "hwm_kib",
];

impl fmt::Display for Sample {
    /// The `RESULT ...` line, without a newline.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "RESULT ops={} measure_ms={} p50_ns={} p99_ns={} cpu_window_ticks={} \
             cpu_total_ticks={} hwm_kib={}",
            self.ops,
            self.measure_ms,
            self.p50_ns,
            self.p99_ns,
            self.cpu_window_ticks,
            self.cpu_total_ticks,
            self.hwm_kib
        )
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_line_round_trips() {
        let s = Sample {
            ops: 51234,
            measure_ms: 10_000,
            p50_ns: 18_000,
            p99_ns: 41_000,
            cpu_window_ticks: 612,
            cpu_total_ticks: 700,
            hwm_kib: 6400,
        };
        assert_eq!(Sample::parse(&s.to_string()).unwrap(), s);
        assert!((s.ops_per_sec() - 5123.4).abs() < 1e-9);
        assert!((s.cpu_us_per_op(100) - 6_120_000.0 / 51234.0).abs() < 1e-9);
    }

    #[test]
    fn bad_lines_say_why() {
        assert!(
            Sample::parse("ERROR boom")
                .unwrap_err()
                .contains("not a RESULT")
        );
        let missing = "RESULT ops=1 measure_ms=1 p50_ns=1 p99_ns=1 cpu_window_ticks=1 hwm_kib=1";
        assert!(
            Sample::parse(missing)
                .unwrap_err()
                .contains("cpu_total_ticks")
        );
        assert!(Sample::parse("RESULT ops=x").unwrap_err().contains("ops=x"));
        assert!(
            Sample::parse("RESULT ops=1 ops=2")
                .unwrap_err()
                .contains("twice")
        );
    }
}
