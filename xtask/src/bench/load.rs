//! The machine's load during a worker's window: the 1-minute load average at its edges, and
//! the CPU time that processes other than the worker, the server and the bench itself used in
//! it (every CPU's busy time from `/proc/stat`, less those three processes' own). A window in
//! which the others used more than [`NOISY_CORE_SHARE`] of one core is noisy: its numbers
//! measured the machine as much as the libraries.
//!
//! [`Snapshot::take`] reads `/proc`; [`WindowLoad::between`] is the pure accounting.

use std::time::Duration;

use super::procfs;

/// Others' CPU time, as a share of one core over the window, above which a run is noisy.
pub(crate) const NOISY_CORE_SHARE: f64 = 0.10;

/// What `/proc` says at one edge of a window; a field is `None` when it could not be read.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Snapshot {
    /// The 1-minute load average.
    pub load_average: Option<f64>,
    /// Every CPU's busy time so far, in clock ticks.
    pub machine_busy: Option<u64>,
    /// The server's CPU time so far (`utime + stime`), in clock ticks.
    pub server: Option<u64>,
    /// The bench's own CPU time so far (it reads `mntr` during the window), in clock ticks.
    pub bench: Option<u64>,
}

impl Snapshot {
    /// Reads the machine's and the processes' counters now (`server_pid`: the server's JVM).
    pub(crate) fn take(server_pid: Option<u32>) -> Snapshot {
        Snapshot {
            load_average: procfs::load_average().ok(),
            machine_busy: procfs::machine_busy_ticks().ok(),
            server: server_pid.and_then(|pid| procfs::cpu_ticks(&pid.to_string()).ok()),
            bench: procfs::cpu_ticks("self").ok(),
        }
    }
}

/// The machine's load over one worker's window.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct WindowLoad {
    /// The 1-minute load average at the window's start.
    pub load_start: Option<f64>,
    /// The 1-minute load average at the window's end.
    pub load_end: Option<f64>,
    /// The CPU time of every other process in the window, as a share of one core (0.25: a
    /// quarter of one CPU's time); `None` when a counter could not be read.
    pub others_cores: Option<f64>,
}

impl WindowLoad {
    /// The load between `start` and `end`, `window` apart, given that the worker used
    /// `worker_ticks` of CPU in it and a clock tick is `1/hz` s. The others' time is the
    /// machine's busy time less the worker's, the server's and the bench's (0 when those add
    /// up to more: the counters are sampled at slightly different moments).
    pub(crate) fn between(
        start: &Snapshot,
        end: &Snapshot,
        worker_ticks: u64,
        window: Duration,
        hz: u64,
    ) -> WindowLoad {
        let delta = |a: Option<u64>, b: Option<u64>| Some(b?.saturating_sub(a?));
        let others_cores = (|| {
            let busy = delta(start.machine_busy, end.machine_busy)?;
            let ours = delta(start.server, end.server)?
                .saturating_add(delta(start.bench, end.bench)?)
                .saturating_add(worker_ticks);
            let seconds = window.as_secs_f64();
            if hz == 0 || seconds <= 0.0 {
                return None;
            }
            Some(busy.saturating_sub(ours) as f64 / hz as f64 / seconds)
        })();
        WindowLoad {
            load_start: start.load_average,
            load_end: end.load_average,
            others_cores,
        }
    }

    /// Whether the others used more than [`NOISY_CORE_SHARE`] of one core.
    pub(crate) fn noisy(&self) -> bool {
        self.others_cores.is_some_and(|c| c > NOISY_CORE_SHARE)
    }

    /// `1.9→2.1` (the load average at the edges), `?` where unread.
    pub(crate) fn describe_load_average(&self) -> String {
        let one = |v: Option<f64>| v.map_or("?".to_owned(), |v| format!("{v:.2}"));
        format!("{}→{}", one(self.load_start), one(self.load_end))
    }

    /// `4% of a core`, with `noisy` past the threshold; `?` when unread.
    pub(crate) fn describe_others(&self) -> String {
        match self.others_cores {
            Some(c) if self.noisy() => format!("{:.0}% noisy", c * 100.0),
            Some(c) => format!("{:.0}%", c * 100.0),
            None => "?".to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(load: f64, busy: u64, server: u64, bench: u64) -> Snapshot {
        Snapshot {
            load_average: Some(load),
            machine_busy: Some(busy),
            server: Some(server),
            bench: Some(bench),
        }
    }

    #[test]
    fn others_are_the_machine_less_the_worker_the_server_and_the_bench() {
        // 2 s at 100 Hz: 300 busy ticks, of which the worker 150, the server 100, the bench
        // 10: the others used 40 ticks = 0.4 s in 2 s = 20% of a core.
        let start = snap(1.5, 1000, 500, 20);
        let end = snap(1.75, 1300, 600, 30);
        let load = WindowLoad::between(&start, &end, 150, Duration::from_secs(2), 100);
        assert_eq!(load.others_cores, Some(0.2));
        assert!(load.noisy());
        assert_eq!(load.describe_load_average(), "1.50→1.75");
        assert_eq!(load.describe_others(), "20% noisy");
        // 10 ticks in 2 s: 5% of a core, quiet.
        let end = snap(1.75, 1270, 600, 30);
        let load = WindowLoad::between(&start, &end, 150, Duration::from_secs(2), 100);
        assert_eq!(load.others_cores, Some(0.05));
        assert!(!load.noisy());
        assert_eq!(load.describe_others(), "5%");
    }

    #[test]
    fn counters_that_overlap_or_are_missing_give_zero_or_nothing() {
        let start = snap(1.0, 1000, 500, 20);
        // The processes' own ticks add up to more than the machine's: 0, not a wrap.
        let end = snap(1.0, 1100, 600, 30);
        let load = WindowLoad::between(&start, &end, 50, Duration::from_secs(1), 100);
        assert_eq!(load.others_cores, Some(0.0));
        let unread = Snapshot {
            server: None,
            ..end
        };
        let load = WindowLoad::between(&start, &unread, 50, Duration::from_secs(1), 100);
        assert_eq!(load.others_cores, None);
        assert!(!load.noisy());
        assert_eq!(load.describe_others(), "?");
        let load = WindowLoad::between(&start, &end, 50, Duration::ZERO, 100);
        assert_eq!(load.others_cores, None);
        let load = WindowLoad::between(&Snapshot::default(), &end, 50, Duration::ZERO, 100);
        assert_eq!(load.describe_load_average(), "?→1.00");
    }
}
