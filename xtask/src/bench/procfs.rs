//! A process's CPU time and peak memory, and the machine's load, read from Linux's `/proc`.

use std::fs;
use std::io;
use std::process::Command;

/// `utime + stime` of the process behind `/proc/<pid>/stat` (`pid` may be `self`), in clock
/// ticks ([`clock_ticks_per_second`]): the CPU time of all its threads so far.
///
/// # Errors
/// The file cannot be read (the process is gone) or does not have the expected layout.
pub fn cpu_ticks(pid: &str) -> io::Result<u64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat"))?;
    parse_cpu_ticks(&stat)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, format!("bad stat: {stat}")))
}

/// `utime + stime` from the text of a `/proc/<pid>/stat` file. The command name, in
/// parentheses, may hold spaces, so the fields are counted from its closing parenthesis:
/// after it come `state` (field 3) ... `utime` (14) and `stime` (15).
pub fn parse_cpu_ticks(stat: &str) -> Option<u64> {
    let (_, rest) = stat.rsplit_once(')')?;
    let mut fields = rest.split_ascii_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(utime + stime)
}

/// The peak resident set size (`VmHWM`) of the process behind `/proc/<pid>/status`, in KiB.
///
/// # Errors
/// The file cannot be read or has no `VmHWM` line.
pub fn peak_rss_kib(pid: &str) -> io::Result<u64> {
    let status = fs::read_to_string(format!("/proc/{pid}/status"))?;
    parse_peak_rss_kib(&status)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "no VmHWM in status"))
}

/// `VmHWM` in KiB from the text of a `/proc/<pid>/status` file.
pub fn parse_peak_rss_kib(status: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.split_ascii_whitespace().next())
        .and_then(|kib| kib.parse().ok())
}

/// The 1-minute load average, from `/proc/loadavg`.
///
/// # Errors
/// The file cannot be read or does not start with a number.
pub fn load_average() -> io::Result<f64> {
    let text = fs::read_to_string("/proc/loadavg")?;
    parse_load_average(&text)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, format!("bad loadavg: {text}")))
}

/// The 1-minute load average from the text of `/proc/loadavg` (`0.62 7.21 7.25 1/111 28847`).
pub fn parse_load_average(loadavg: &str) -> Option<f64> {
    loadavg
        .split_ascii_whitespace()
        .next()?
        .parse()
        .ok()
        .filter(|v: &f64| v.is_finite())
}

/// The busy time of every CPU together, from `/proc/stat`, in clock ticks (the unit of
/// [`cpu_ticks`]).
///
/// # Errors
/// The file cannot be read or its `cpu` line does not have the expected layout.
pub fn machine_busy_ticks() -> io::Result<u64> {
    let stat = fs::read_to_string("/proc/stat")?;
    parse_machine_busy_ticks(&stat)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "no cpu line in /proc/stat"))
}

/// The busy ticks of all CPUs from the text of `/proc/stat`: on its first line, `cpu  user
/// nice system idle iowait irq softirq steal guest guest_nice`, every field but `idle` and
/// `iowait` (time nothing ran) and the two `guest` ones (already counted in `user` and
/// `nice`). Fields a kernel does not have count as 0, but the first four must be there.
pub fn parse_machine_busy_ticks(stat: &str) -> Option<u64> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let fields: Vec<u64> = line
        .split_ascii_whitespace()
        .skip(1)
        .map(|f| f.parse().ok())
        .collect::<Option<_>>()?;
    if fields.len() < 4 {
        return None;
    }
    let field = |i: usize| fields.get(i).copied().unwrap_or(0);
    // user, nice, system, (idle, iowait,) irq, softirq, steal.
    Some([0, 1, 2, 5, 6, 7].into_iter().map(field).sum())
}

/// Clock ticks per second (`getconf CLK_TCK`), the unit of [`cpu_ticks`]; 100 if `getconf`
/// cannot tell, as on every common Linux configuration.
pub fn clock_ticks_per_second() -> u64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .filter(|out| out.status.success())
        .and_then(|out| String::from_utf8_lossy(&out.stdout).trim().parse().ok())
        .filter(|&hz| hz > 0)
        .unwrap_or(100)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_ticks_are_counted_after_the_command_name() {
        let stat = "4242 (java (main) x) S 1 4242 4242 0 -1 4194560 12 0 0 0 \
                    250 40 0 0 20 0 9 0 100 1000 200 18446744073709551615";
        assert_eq!(parse_cpu_ticks(stat), Some(290));
        assert_eq!(parse_cpu_ticks("1 (x) S 1"), None);
    }

    #[test]
    fn the_load_average_is_the_first_field() {
        assert_eq!(
            parse_load_average("0.62 7.21 7.25 1/111 28847\n"),
            Some(0.62)
        );
        assert_eq!(parse_load_average(""), None);
        assert_eq!(parse_load_average("x 1 2"), None);
    }

    #[test]
    fn busy_ticks_leave_out_idle_iowait_and_guests() {
        let stat = "cpu  100 20 30 5000 40 1 2 3 50 60\ncpu0 1 2 3 4\nintr 1 2\n";
        assert_eq!(
            parse_machine_busy_ticks(stat),
            Some(100 + 20 + 30 + 1 + 2 + 3)
        );
        // An old kernel's four fields.
        assert_eq!(parse_machine_busy_ticks("cpu  1 2 3 4\n"), Some(6));
        assert_eq!(parse_machine_busy_ticks("cpu  1 2 3\n"), None);
        assert_eq!(parse_machine_busy_ticks("cpu0 1 2 3 4\n"), None);
        assert_eq!(parse_machine_busy_ticks("cpu  1 x 3 4\n"), None);
    }

    #[test]
    fn peak_rss_is_read_from_vmhwm() {
        let status = "Name:\tzk\nVmPeak:\t  9000 kB\nVmHWM:\t    5120 kB\nVmRSS:\t 4000 kB\n";
        assert_eq!(parse_peak_rss_kib(status), Some(5120));
        assert_eq!(parse_peak_rss_kib("Name:\tzk\n"), None);
    }
}
