//! What the benchmarks' reports say about the machine and the libraries' versions.

use std::process::Command;

use crate::java;

/// The Python that has kazoo (Debian's `python3-kazoo`), which the benchmarks run kazoo's
/// workers with.
pub(crate) const PYTHON: &str = "/usr/bin/python3";

/// The benchmark reports' machine line: `machine: <n> CPUs (nproc), <model>`.
pub(crate) fn machine() -> String {
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let model = cpu_model().unwrap_or_else(|| "unknown CPU".to_owned());
    format!("machine: {cpus} CPUs (nproc), {model}")
}

/// The CPU model from `/proc/cpuinfo`.
pub(crate) fn cpu_model() -> Option<String> {
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    info.lines()
        .find_map(|line| line.strip_prefix("model name"))
        .and_then(|rest| rest.split_once(':'))
        .map(|(_, model)| model.trim().to_owned())
}

/// The version in the name of the file behind `/usr/share/java/<name>.jar` (a symlink to
/// `<name>-<version>.jar` on Debian).
pub(crate) fn jar_version(name: &str) -> Option<String> {
    let target = std::fs::read_link(java::jar(name)).ok()?;
    let file = target.file_name()?.to_str()?;
    file.strip_prefix(&format!("{name}-"))?
        .strip_suffix(".jar")
        .map(str::to_owned)
}

/// The first line of `java -version`.
pub(crate) fn java_version() -> String {
    Command::new("java")
        .arg("-version")
        .output()
        .ok()
        .and_then(|out| {
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .next()
                .map(str::to_owned)
        })
        .unwrap_or_else(|| "java".to_owned())
}

/// kazoo's version, from the Python that runs it.
pub(crate) fn kazoo_version() -> Option<String> {
    let out = Command::new(PYTHON)
        .args([
            "-c",
            "import kazoo.version; print(kazoo.version.__version__)",
        ])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// `Python 3.x.y` of [`PYTHON`].
pub(crate) fn python_version() -> String {
    Command::new(PYTHON)
        .arg("--version")
        .output()
        .ok()
        .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_owned())
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| "python3".to_owned())
}
