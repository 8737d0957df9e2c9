//! [`DetachedEnsemble`]: ZooKeeper servers that outlive the process that started them (what
//! `cargo xtask zk start` leaves running), the state file describing them, and stopping them.

use std::fs;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant};

use super::config::MemberPorts;
use super::four_letter::{Mode, four_letter, parse_mode};
use super::process::{cmdline, is_alive, signal};
use crate::paths::target_dir;

/// How often liveness is polled while stopping.
const POLL_INTERVAL: Duration = Duration::from_millis(50);
/// How long a SIGKILLed process may take to vanish before [`DetachedEnsemble::stop`] fails.
const KILL_WAIT: Duration = Duration::from_secs(5);

/// One member of a [`DetachedEnsemble`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DetachedMember {
    /// The JVM's pid.
    pub pid: u32,
    /// Its ports.
    pub ports: MemberPorts,
    /// Its directory (`zoo.cfg`, `data/`, `server.log`).
    pub dir: PathBuf,
}

impl DetachedMember {
    /// The client address.
    pub fn client_addr(&self) -> SocketAddr {
        SocketAddr::from((Ipv4Addr::LOCALHOST, self.ports.client))
    }

    /// Whether the pid is alive and still this member's JVM (its command line names this
    /// member's `zoo.cfg`), so that a reused pid is never taken for ours.
    pub fn is_alive(&self) -> bool {
        let cfg = self.dir.join("zoo.cfg");
        is_alive(self.pid)
            && cmdline(self.pid).is_some_and(|line| {
                line.contains("ZkLauncher") && line.contains(&*cfg.to_string_lossy())
            })
    }

    /// The mode `srvr` reports (2 s timeout); `None` when it answers without serving.
    ///
    /// # Errors
    /// It does not answer: down, or not listening yet.
    pub fn mode(&self) -> io::Result<Option<Mode>> {
        four_letter(self.client_addr(), "srvr", Duration::from_secs(2)).map(|t| parse_mode(&t))
    }
}

/// How [`DetachedEnsemble::stop`] ended one member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stopped {
    /// It was not running (or its pid now belongs to another program, left alone).
    AlreadyGone,
    /// It exited after SIGTERM.
    Terminated,
    /// It ignored SIGTERM for the grace period and was killed with SIGKILL.
    Killed,
}

/// ZooKeeper servers started by [`Ensemble::start_detached`](super::Ensemble::start_detached):
/// nothing stops them but [`stop`](Self::stop) (or killing their pids).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DetachedEnsemble {
    /// The temporary directory holding the members' directories.
    pub root: PathBuf,
    /// The members, index `i` having `myid` `i + 1`.
    pub members: Vec<DetachedMember>,
}

impl DetachedEnsemble {
    /// Where `cargo xtask zk start` records its servers: `<target dir>/xtask-zk/state`.
    pub fn state_path() -> PathBuf {
        target_dir().join("xtask-zk").join("state")
    }

    /// `127.0.0.1:p1,127.0.0.1:p2,...`, for clients.
    pub fn connect_string(&self) -> String {
        super::connect_string_of(self.members.iter().map(DetachedMember::client_addr))
    }

    /// Whether any member is still alive.
    pub fn any_alive(&self) -> bool {
        self.members.iter().any(DetachedMember::is_alive)
    }

    /// The state file's text: a `root=` line, then one `member=<pid> <client> <peer>
    /// <election>` line per member.
    pub fn to_state(&self) -> String {
        let mut text = String::from(
            "# Written by `cargo xtask zk start`; read by `cargo xtask zk status` and `zk stop`.\n",
        );
        text.push_str(&format!("root={}\n", self.root.display()));
        for member in &self.members {
            let p = member.ports;
            text.push_str(&format!(
                "member={} {} {} {}\n",
                member.pid, p.client, p.peer, p.election
            ));
        }
        text
    }

    /// Parses [`to_state`](Self::to_state)'s text.
    ///
    /// # Errors
    /// `InvalidData` naming the line that is not understood, or when there is no `root=`.
    pub fn from_state(text: &str) -> io::Result<DetachedEnsemble> {
        let bad = |line: &str| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("xtask zk state: cannot read line {line:?}"),
            )
        };
        let mut root = None;
        let mut numbers = Vec::new();
        for line in text.lines().map(str::trim) {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            if let Some(path) = line.strip_prefix("root=") {
                root = Some(PathBuf::from(path));
            } else if let Some(fields) = line.strip_prefix("member=") {
                let fields: Vec<&str> = fields.split_whitespace().collect();
                let [pid, client, peer, election] = fields.as_slice() else {
                    return Err(bad(line));
                };
                let pid: u32 = pid.parse().map_err(|_| bad(line))?;
                let port = |s: &str| s.parse::<u16>().map_err(|_| bad(line));
                let ports = MemberPorts {
                    client: port(client)?,
                    peer: port(peer)?,
                    election: port(election)?,
                };
                numbers.push((pid, ports));
            } else {
                return Err(bad(line));
            }
        }
        let root = root.ok_or_else(|| bad("root=..."))?;
        let members = numbers
            .into_iter()
            .enumerate()
            .map(|(i, (pid, ports))| DetachedMember {
                pid,
                ports,
                dir: root.join(format!("member-{i}")),
            })
            .collect();
        Ok(DetachedEnsemble { root, members })
    }

    /// Writes the state file at `path` (creating its directory), replacing it atomically.
    ///
    /// # Errors
    /// The file cannot be written.
    pub fn save(&self, path: &Path) -> io::Result<()> {
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir)?;
        }
        let scratch = path.with_extension("tmp");
        fs::write(&scratch, self.to_state())?;
        fs::rename(&scratch, path)
    }

    /// Reads the state file at `path`; `None` when there is none.
    ///
    /// # Errors
    /// It cannot be read or parsed.
    pub fn load(path: &Path) -> io::Result<Option<DetachedEnsemble>> {
        match fs::read_to_string(path) {
            Ok(text) => Self::from_state(&text).map(Some),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Stops every member: SIGTERM, then SIGKILL to those still alive after `grace`; then
    /// removes the temporary directory. Returns how each member ended, in member order.
    ///
    /// Only processes whose command line names this ensemble's files are signalled.
    ///
    /// # Errors
    /// `kill` cannot be run, or a member is still alive after SIGKILL; the directory is then
    /// left in place.
    pub fn stop(&self, grace: Duration) -> io::Result<Vec<Stopped>> {
        let mut outcome: Vec<Stopped> = Vec::with_capacity(self.members.len());
        for member in &self.members {
            if member.is_alive() {
                signal(member.pid, "TERM")?;
                outcome.push(Stopped::Terminated);
            } else {
                outcome.push(Stopped::AlreadyGone);
            }
        }
        let deadline = Instant::now() + grace;
        while self.any_alive() && Instant::now() < deadline {
            thread::sleep(POLL_INTERVAL);
        }
        for (member, how) in self.members.iter().zip(outcome.iter_mut()) {
            if member.is_alive() {
                signal(member.pid, "KILL")?;
                *how = Stopped::Killed;
            }
        }
        let deadline = Instant::now() + KILL_WAIT;
        while self.any_alive() {
            if Instant::now() >= deadline {
                let pids: Vec<String> = self
                    .members
                    .iter()
                    .filter(|m| m.is_alive())
                    .map(|m| m.pid.to_string())
                    .collect();
                return Err(io::Error::other(format!(
                    "ZooKeeper pids {} still alive after SIGKILL",
                    pids.join(", ")
                )));
            }
            thread::sleep(POLL_INTERVAL);
        }
        match fs::remove_dir_all(&self.root) {
            Ok(()) => Ok(outcome),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(outcome),
            Err(e) => Err(io::Error::new(
                e.kind(),
                format!("removing {}: {e}", self.root.display()),
            )),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn state_round_trips() {
        let ensemble = DetachedEnsemble {
            root: PathBuf::from("/tmp/xtask zk-1-0"),
            members: vec![
                DetachedMember {
                    pid: 10,
                    ports: MemberPorts {
                        client: 1,
                        peer: 2,
                        election: 3,
                    },
                    dir: PathBuf::from("/tmp/xtask zk-1-0/member-0"),
                },
                DetachedMember {
                    pid: 11,
                    ports: MemberPorts {
                        client: 4,
                        peer: 5,
                        election: 6,
                    },
                    dir: PathBuf::from("/tmp/xtask zk-1-0/member-1"),
                },
            ],
        };
        let parsed = DetachedEnsemble::from_state(&ensemble.to_state());
        assert_eq!(parsed.ok(), Some(ensemble));
    }

    #[test]
    fn bad_state_is_an_error() {
        for text in [
            "root=/x\nmember=1 2 3\n",
            "member=1 2 3 4\n",
            "root=/x\nbogus\n",
        ] {
            assert!(DetachedEnsemble::from_state(text).is_err(), "{text:?}");
        }
    }
}
