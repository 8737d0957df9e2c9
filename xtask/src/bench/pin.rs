//! Keeping the server and the workers off each other's CPUs: on a small machine they would
//! otherwise preempt each other, and one round's ratios move by ±10% (issue 17's method).

use std::process::Command;

/// Which CPUs the server and the workers run on, if the machine allows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pinning {
    /// `taskset` CPU list for the server's JVM.
    pub server: String,
    /// `taskset` CPU list for every worker.
    pub workers: String,
}

impl Pinning {
    /// Server on CPU 0, workers on the others: with 2 CPUs or more and `taskset` present.
    pub(crate) fn plan() -> Option<Pinning> {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let taskset = Command::new("taskset").arg("-V").output().is_ok();
        (cpus >= 2 && taskset).then(|| Pinning {
            server: "0".to_owned(),
            workers: if cpus == 2 {
                "1".to_owned()
            } else {
                format!("1-{}", cpus - 1)
            },
        })
    }

    /// Moves every thread of process `pid` (the server) to the server's CPUs.
    pub(crate) fn pin_server(&self, pid: u32) -> std::io::Result<()> {
        let status = Command::new("taskset")
            .args(["-a", "-pc", &self.server, &pid.to_string()])
            .stdout(std::process::Stdio::null())
            .status()?;
        if status.success() {
            Ok(())
        } else {
            Err(std::io::Error::other(format!("taskset failed: {status}")))
        }
    }

    /// A command for `program` that runs on the workers' CPUs.
    pub(crate) fn command(
        pinning: Option<&Pinning>,
        program: impl AsRef<std::ffi::OsStr>,
    ) -> Command {
        match pinning {
            Some(p) => {
                let mut cmd = Command::new("taskset");
                cmd.arg("-c").arg(&p.workers).arg(program);
                cmd
            }
            None => Command::new(program),
        }
    }

    /// What the report says about it.
    pub(crate) fn describe(pinning: Option<&Pinning>) -> String {
        match pinning {
            Some(p) => format!(
                "pinning: server on CPU {}, workers on CPU {} (taskset)",
                p.server, p.workers
            ),
            None => {
                "pinning: none (--pin off, one CPU, or no taskset): server and workers share the CPUs"
                    .to_owned()
            }
        }
    }
}
