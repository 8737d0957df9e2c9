//! Makes sure what the project's tools and tests need is on the machine: Java, ZooKeeper's and
//! Curator's jars, and Python's kazoo, all from Debian packages.
//!
//! [`ensure`] checks each [`Need`]; when something is missing it installs the Debian packages
//! with `apt-get` if running as root, and otherwise returns an error naming the command to run.

use std::collections::BTreeSet;
use std::fmt;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::java::jar;

/// Something the project needs on the machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Need {
    /// A Java runtime and compiler: `java` and `javac` on the `PATH`.
    Java,
    /// ZooKeeper 3.8's server and client jars and an SLF4J binding, in `/usr/share/java`.
    ZooKeeper,
    /// Apache Curator 5.4's recipes, framework and client jars and Guava, in `/usr/share/java`.
    Curator,
    /// Python's kazoo ZooKeeper client, importable by `/usr/bin/python3`.
    Kazoo,
}

impl Need {
    /// A short name for messages.
    pub fn name(self) -> &'static str {
        match self {
            Need::Java => "Java",
            Need::ZooKeeper => "ZooKeeper",
            Need::Curator => "Curator",
            Need::Kazoo => "kazoo",
        }
    }

    /// Whether this need is met on this machine now.
    pub fn is_present(self) -> bool {
        match self {
            Need::Java => runs("java", &["-version"]) && runs("javac", &["-version"]),
            Need::ZooKeeper => {
                // netty-codec: for servers with a TLS client port (the zookeeper jar's manifest
                // does not name it).
                jars_exist(&[
                    "zookeeper",
                    "zookeeper-jute",
                    "slf4j-api",
                    "slf4j-simple",
                    "netty-codec",
                ])
            }
            Need::Curator => jars_exist(&[
                "curator-recipes",
                "curator-framework",
                "curator-client",
                "guava",
            ]),
            Need::Kazoo => runs("/usr/bin/python3", &["-c", "import kazoo"]),
        }
    }

    /// The Debian packages that provide this need.
    pub fn packages(self) -> &'static [&'static str] {
        match self {
            Need::Java => &["openjdk-17-jdk-headless"],
            Need::ZooKeeper => &["zookeeper", "libslf4j-java", "libnetty-java"],
            // libcurator-recipes-java depends on the framework, client and Guava packages;
            // naming them too keeps the list right if that ever changes.
            Need::Curator => &[
                "libcurator-recipes-java",
                "libcurator-framework-java",
                "libcurator-client-java",
                "libguava-java",
            ],
            Need::Kazoo => &["python3-kazoo"],
        }
    }
}

impl fmt::Display for Need {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why [`ensure`] could not make the needs present.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DepsError {
    /// Something is missing and this process is not root, so it cannot install it. Run
    /// `command` (it uses `sudo`), then try again.
    Missing {
        /// What is missing.
        needs: Vec<Need>,
        /// The shell command that installs it.
        command: String,
    },
    /// `apt-get` could not be run or failed; its output went to the terminal. Fix what it
    /// reported (network, package sources) and try again.
    InstallFailed {
        /// The command that failed.
        command: String,
        /// How it failed: its exit status or why it could not start.
        reason: String,
    },
    /// The packages were installed but the needs are still not met: the machine's packages do
    /// not provide what xtask expects (for example a different Debian release). Install them
    /// by hand.
    StillMissing {
        /// What is still missing.
        needs: Vec<Need>,
    },
}

impl fmt::Display for DepsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DepsError::Missing { needs, command } => {
                write!(f, "missing {}; install with: {command}", names(needs))
            }
            DepsError::InstallFailed { command, reason } => {
                write!(f, "`{command}` failed: {reason}")
            }
            DepsError::StillMissing { needs } => write!(
                f,
                "still missing {} after installing {}",
                names(needs),
                packages_for(needs).join(" ")
            ),
        }
    }
}

impl std::error::Error for DepsError {}

/// Makes sure every need in `needs` is met.
///
/// Does nothing when all are present. Otherwise, when running as root, runs `apt-get update`
/// (once per process) and `apt-get install -y` for the missing needs' packages, with their
/// output going to this process's terminal, and checks again. When not root, it installs
/// nothing.
///
/// # Errors
/// [`DepsError::Missing`] when not root (the message holds the `sudo apt-get ...` command to
/// run), [`DepsError::InstallFailed`] when `apt-get` fails, and [`DepsError::StillMissing`]
/// when the packages did not provide what is needed.
pub fn ensure(needs: &[Need]) -> Result<(), DepsError> {
    let missing = missing(needs);
    if missing.is_empty() {
        return Ok(());
    }
    let packages = packages_for(&missing);
    if !is_root() {
        return Err(DepsError::Missing {
            command: format!(
                "sudo apt-get update && sudo apt-get install -y {}",
                packages.join(" ")
            ),
            needs: missing,
        });
    }
    println!(
        "xtask: installing {} (for {})",
        packages.join(" "),
        names(&missing)
    );
    static UPDATED: AtomicBool = AtomicBool::new(false);
    if !UPDATED.load(Ordering::Relaxed) {
        apt_get(&["update"])?;
        UPDATED.store(true, Ordering::Relaxed);
    }
    let mut install = vec!["install", "-y"];
    install.extend(packages.iter().copied());
    apt_get(&install)?;
    let still = self::missing(needs);
    if still.is_empty() {
        Ok(())
    } else {
        Err(DepsError::StillMissing { needs: still })
    }
}

/// The needs among `needs` that are not met, without duplicates, in order.
fn missing(needs: &[Need]) -> Vec<Need> {
    let unique: BTreeSet<Need> = needs.iter().copied().collect();
    unique
        .into_iter()
        .filter(|need| !need.is_present())
        .collect()
}

/// The packages for `needs`, without duplicates, in order.
fn packages_for(needs: &[Need]) -> Vec<&'static str> {
    let mut packages: Vec<&'static str> = Vec::new();
    for package in needs
        .iter()
        .flat_map(|need| need.packages().iter().copied())
    {
        if !packages.contains(&package) {
            packages.push(package);
        }
    }
    packages
}

/// "Java, ZooKeeper" for messages.
fn names(needs: &[Need]) -> String {
    needs
        .iter()
        .map(|need| need.name())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Runs `apt-get <args>` non-interactively with its output on our terminal.
fn apt_get(args: &[&str]) -> Result<(), DepsError> {
    let command = format!("apt-get {}", args.join(" "));
    let status = Command::new("apt-get")
        .args(args)
        .env("DEBIAN_FRONTEND", "noninteractive")
        .stdin(Stdio::null())
        .status()
        .map_err(|e| DepsError::InstallFailed {
            command: command.clone(),
            reason: e.to_string(),
        })?;
    if status.success() {
        Ok(())
    } else {
        Err(DepsError::InstallFailed {
            command,
            reason: status.to_string(),
        })
    }
}

/// Whether this process runs as root (`id -u` prints 0).
fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .stderr(Stdio::null())
        .output()
        .is_ok_and(|out| out.status.success() && String::from_utf8_lossy(&out.stdout).trim() == "0")
}

/// Whether `program args...` runs and exits with success, its output discarded.
fn runs(program: &str, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// Whether `/usr/share/java/<name>.jar` exists for every name.
fn jars_exist(names: &[&str]) -> bool {
    names.iter().all(|name| jar(name).is_file())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn missing_names_the_sudo_command() {
        let err = DepsError::Missing {
            needs: vec![Need::Java, Need::Kazoo],
            command: format!(
                "sudo apt-get update && sudo apt-get install -y {}",
                packages_for(&[Need::Java, Need::Kazoo]).join(" ")
            ),
        };
        assert_eq!(
            err.to_string(),
            "missing Java, kazoo; install with: sudo apt-get update && \
             sudo apt-get install -y openjdk-17-jdk-headless python3-kazoo"
        );
    }

    #[test]
    fn packages_are_listed_once() {
        let packages = packages_for(&[Need::ZooKeeper, Need::Curator, Need::ZooKeeper]);
        assert_eq!(
            packages,
            [
                "zookeeper",
                "libslf4j-java",
                "libnetty-java",
                "libcurator-recipes-java",
                "libcurator-framework-java",
                "libcurator-client-java",
                "libguava-java",
            ]
        );
    }
}
