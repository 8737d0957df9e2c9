//! [`Ensemble`]: ZooKeeper servers on loopback for tests, one standalone server or a quorum,
//! with faults to inject (kill, restart, pause, partitions) and cleanup on drop.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use super::config::{self, MemberPorts};
use super::detached::{DetachedEnsemble, DetachedMember};
use super::four_letter::{Mode, four_letter, parse_mntr, parse_mode};
use super::ports::free_ports;
use super::process::{Jvm, Launch, Member};
use super::program::Program;
use super::secure::{self, TestPki};
use super::{ZkOptions, connect_string_of};
use crate::deps::{self, Need};
use crate::java;

mod faults;
mod partition;
mod query;

use partition::Links;

/// How often conditions are polled while waiting for servers.
const POLL_INTERVAL: Duration = Duration::from_millis(50);
/// Timeout of one `srvr` probe while waiting; a paused or overloaded member answers nothing.
const PROBE_TIMEOUT: Duration = Duration::from_secs(3);
/// Timeout of [`Ensemble::four_letter`] and the accessors built on it.
const FOUR_LETTER_TIMEOUT: Duration = Duration::from_secs(5);
/// How many times a start is tried when a port picked free was taken by someone else.
const START_ATTEMPTS: usize = 3;
/// How many log lines an error message quotes.
const LOG_TAIL_LINES: usize = 40;

/// ZooKeeper's standalone main class.
const STANDALONE_MAIN: &str = "org.apache.zookeeper.server.ZooKeeperServerMain";
/// ZooKeeper's quorum-peer main class.
const QUORUM_MAIN: &str = "org.apache.zookeeper.server.quorum.QuorumPeerMain";

/// ZooKeeper 3.8 servers on 127.0.0.1 for tests: one standalone server, or an ensemble of N
/// quorum peers. Dropping it kills every server and removes its files.
///
/// [`start`](Self::start) picks free ports, writes each member's `zoo.cfg` and data directory
/// under one temporary directory (`<temp dir>/xtask-zk-<pid>-<n>`), starts one JVM per member,
/// and returns once every member serves: a standalone server answers `srvr` with
/// `Mode: standalone`; in an ensemble a leader is elected and every member reports its mode.
///
/// Members are numbered from 0 (member `i` has `myid` `i + 1`). Faults act on one member:
/// [`kill`](Self::kill) (SIGKILL), [`start_member`](Self::start_member) and
/// [`restart`](Self::restart) (same ports and data), [`pause`](Self::pause) and
/// [`resume`](Self::resume) (SIGSTOP and SIGCONT: sockets stay open, nothing answers).
/// With [`ZkOptions::partitionable`], the members reach each other through fault proxies, and
/// [`isolate`](Self::isolate) cuts one off from the others until [`heal`](Self::heal).
///
/// Servers never outlive the test: [`Drop`] (which also runs when a test panics) kills them,
/// and each JVM halts by itself when the process that started it dies, even by SIGKILL,
/// because it watches a pipe that process holds. One gap: a member still paused when its
/// starter is SIGKILLed stays stopped, as it cannot run to notice. Set `XTASK_KEEP_ZK=1` to
/// keep the files (configs, data, `server.log`) after the drop; the path is printed.
///
/// Methods that take a member index `i` panic when it is out of range if they return a plain
/// value, and return an `InvalidInput` error if they return a `Result`.
///
/// # Examples
/// ```no_run
/// use std::time::Duration;
/// use zk_testkit::zk::{Ensemble, Mode, ZkOptions};
///
/// # fn main() -> std::io::Result<()> {
/// let mut zk = Ensemble::start(3, ZkOptions::default())?;
/// println!("clients connect to {}", zk.connect_string());
/// let leader = zk.wait_leader(Duration::from_secs(30))?;
/// zk.kill(leader)?;
/// let next = zk.wait_leader(Duration::from_secs(30))?;
/// assert_ne!(next, leader);
/// zk.restart(leader)?; // back as a follower, same ports and data
/// assert_eq!(zk.mode(leader)?, Some(Mode::Follower));
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct Ensemble {
    /// The temporary directory holding every member's directory.
    root: PathBuf,
    /// The members, index `i` having `myid` `i + 1`.
    members: Vec<Member>,
    /// The JVM command line shared by the members.
    jvm: Jvm,
    /// Whether members die with this process.
    launch: Launch,
    /// The options it was started with.
    opts: ZkOptions,
    /// Whether drop removes `root` (false once detached).
    remove_on_drop: bool,
    /// The certificates, with a TLS client port.
    pki: Option<TestPki>,
    /// Each member's TLS client port (empty without TLS).
    secure_ports: Vec<u16>,
    /// The proxies between the members, with [`ZkOptions::partitionable`].
    links: Option<Links>,
}

impl Ensemble {
    /// Starts `n` members (1 = a standalone server) and waits until they serve.
    ///
    /// Retries the whole start (with new ports) up to twice when a member could not bind a
    /// port. Checks once per process that Java and ZooKeeper are installed
    /// ([`deps::ensure`], which may install them when running as root), and compiles the Java
    /// launcher on first use.
    ///
    /// # Errors
    /// `n` is 0, or 1 with [`ZkOptions::partitionable`]; Java or ZooKeeper are missing; a
    /// member exits, or the ensemble does not serve within [`ZkOptions::start_timeout`]. The
    /// message then quotes the end of the member's `server.log`.
    pub fn start(n: usize, opts: ZkOptions) -> io::Result<Ensemble> {
        Self::start_as(n, opts, Launch::Watched)
    }

    /// Starts `n` members that outlive this process, waits until they serve, and hands back
    /// their pids, ports and directory. Nothing stops them automatically: use
    /// [`DetachedEnsemble::stop`]. This is what `cargo xtask zk start` uses.
    ///
    /// Each JVM gets its own process group and `/dev/null` as stdin, so neither this process's
    /// exit nor a Ctrl-C in its terminal ends it.
    ///
    /// # Errors
    /// As for [`start`](Self::start), and `InvalidInput` with [`ZkOptions::partitionable`]
    /// (the proxies between the members live in this process); on error no member is left
    /// running.
    pub fn start_detached(n: usize, opts: ZkOptions) -> io::Result<DetachedEnsemble> {
        let mut ensemble = Self::start_as(n, opts, Launch::Detached)?;
        Ok(ensemble.detach())
    }

    fn start_as(n: usize, opts: ZkOptions, launch: Launch) -> io::Result<Ensemble> {
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "an ensemble needs at least one member",
            ));
        }
        if opts.partitionable && n < 2 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a partitionable ensemble needs at least two members: a standalone server has no links to cut",
            ));
        }
        if opts.partitionable && launch == Launch::Detached {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a partitionable ensemble cannot be detached: the proxies between its members live in this process",
            ));
        }
        let program = Program::from_env()?;
        program.check(n, &opts)?;
        // The in-memory server needs neither Java nor ZooKeeper's jars.
        let launcher_dir = if program.is_mem() {
            PathBuf::new()
        } else {
            ensure_deps()?;
            java::compile(
                "zk-launcher",
                &[java::java_dir().join("ZkLauncher.java")],
                "",
            )?
        };
        let mut jvm = Jvm {
            launcher_dir,
            main_class: if n == 1 { STANDALONE_MAIN } else { QUORUM_MAIN },
            heap_mb: opts.jvm_heap_mb,
            system_properties: opts.system_properties.clone(),
            program,
            opts: opts.clone(),
        };
        let (key, value) = partition::MAX_NOTIFICATION_INTERVAL;
        if opts.partitionable && !jvm.system_properties.iter().any(|(k, _)| k == key) {
            jvm.system_properties
                .push((key.to_owned(), value.to_owned()));
        }
        let mut attempt = 1;
        loop {
            let mut ensemble = Self::create(n, opts.clone(), jvm.clone(), launch)?;
            let started = ensemble
                .spawn_all()
                .and_then(|()| ensemble.wait_all_serving(ensemble.opts.start_timeout));
            match started {
                Ok(()) => return Ok(ensemble),
                Err(e) if attempt < START_ATTEMPTS && ensemble.port_clash() => {
                    eprintln!("xtask: a ZooKeeper port was taken, starting again ({e})");
                    attempt += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Picks ports and writes every member's files, starting nothing.
    fn create(n: usize, opts: ZkOptions, jvm: Jvm, launch: Launch) -> io::Result<Ensemble> {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        if NEXT.load(Ordering::Relaxed) == 0 {
            remove_stale_roots(&std::env::temp_dir());
        }
        if let Some(port) = opts.port {
            // Another server on the fixed port would answer for ours, which would die of a
            // BindException unseen: say so now.
            if let Err(e) = std::net::TcpListener::bind(("127.0.0.1", port)) {
                return Err(io::Error::new(
                    io::ErrorKind::AddrInUse,
                    format!(
                        "port {port} is taken ({e}): another server listens there; stop it, or choose another port"
                    ),
                ));
            }
        }
        let root = std::env::temp_dir().join(format!(
            "{}{}-{}",
            root_prefix(launch),
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        if root.exists() {
            // Left by an earlier process that had the same pid.
            fs::remove_dir_all(&root)?;
        }
        fs::create_dir_all(&root)?;
        // The ensemble owns `root` from here: an error below drops it, which removes it.
        let mut ensemble = Ensemble {
            root,
            members: Vec::with_capacity(n),
            jvm,
            launch,
            opts,
            remove_on_drop: true,
            pki: None,
            secure_ports: Vec::new(),
            links: None,
        };
        let per_member = if n == 1 { 1 } else { 3 };
        let secure = if ensemble.opts.tls.is_some() { n } else { 0 };
        let picked = free_ports(n * per_member + secure)?;
        let mut picked = picked.into_iter();
        let mut all = Vec::with_capacity(n);
        for i in 0..n {
            let mut next = || picked.next().unwrap_or(0);
            let client = match (i, ensemble.opts.port) {
                (0, Some(port)) => {
                    let _ = next();
                    port
                }
                _ => next(),
            };
            let (peer, election) = if n == 1 { (0, 0) } else { (next(), next()) };
            all.push(MemberPorts {
                client,
                peer,
                election,
            });
        }
        let mut security = Vec::new();
        if let Some(sasl) = &ensemble.opts.sasl {
            let jaas = secure::write_jaas(sasl, &ensemble.root)?;
            ensemble.jvm.system_properties.push((
                "java.security.auth.login.config".to_owned(),
                jaas.display().to_string(),
            ));
            security.extend(secure::sasl_config(sasl));
        }
        if ensemble.opts.tls.is_some() {
            ensemble.pki = Some(TestPki::generate(&ensemble.root.join("pki"))?);
            ensemble.secure_ports = picked.by_ref().take(n).collect();
        }
        if ensemble.opts.partitionable {
            ensemble.links = Some(Links::start(&all, &ensemble.secure_ports)?);
        }
        for (i, ports) in all.iter().enumerate() {
            let member = Member::new(ensemble.root.join(format!("member-{i}")), *ports);
            // The security lines before `extra_config`, which comes last and so can override
            // anything (`ssl.enabledProtocols`, say).
            let without_extras = ZkOptions {
                extra_config: Vec::new(),
                ..ensemble.opts.clone()
            };
            let routes = ensemble.links.as_ref().map(|links| links.routes_from(i, n));
            let mut cfg = config::render_routed(
                &without_extras,
                i,
                &all,
                routes.as_deref(),
                &member.data_dir(),
            );
            let mut lines = security.clone();
            if let (Some(tls), Some(pki), Some(port)) = (
                &ensemble.opts.tls,
                &ensemble.pki,
                ensemble.secure_ports.get(i),
            ) {
                lines.extend(secure::tls_config(tls, pki, *port));
            }
            lines.extend(ensemble.opts.extra_config.iter().cloned());
            for (key, value) in lines {
                cfg.push_str(&format!("{key}={value}\n"));
            }
            member.write_files(&cfg, (n > 1).then_some(i + 1))?;
            ensemble.members.push(member);
        }
        Ok(ensemble)
    }

    fn spawn_all(&mut self) -> io::Result<()> {
        for member in &mut self.members {
            member.spawn(&self.jvm, self.launch)?;
        }
        Ok(())
    }

    /// Whether a member's log says a port was already in use, and new ports may help: not when
    /// the clash is on member 0 and its client port was fixed by [`ZkOptions::port`].
    fn port_clash(&self) -> bool {
        let clashed = |member: &Member| {
            let log = fs::read_to_string(member.log_path()).unwrap_or_default();
            log.contains("Address already in use") || log.contains("BindException")
        };
        let fixed = self.opts.port.is_some() && self.members.first().is_some_and(clashed);
        !fixed && self.members.iter().any(clashed)
    }

    /// Waits until every member reports a mode and one of them leads (or is standalone).
    fn wait_all_serving(&mut self, timeout: Duration) -> io::Result<()> {
        let deadline = Instant::now() + timeout;
        loop {
            self.check_exited()?;
            let modes: Vec<Option<Mode>> = self
                .members
                .iter()
                .map(|member| probe_mode(member.client_addr()))
                .collect();
            if modes.iter().all(Option::is_some)
                && modes.iter().flatten().any(|m| m.is_leading())
                && (0..self.members.len()).all(|i| self.secure_port_serves(i))
            {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(self.timed_out(timeout, &modes));
            }
            thread::sleep(POLL_INTERVAL);
        }
    }

    /// An error for every member that exited on its own, quoting its log.
    fn check_exited(&mut self) -> io::Result<()> {
        for (i, member) in self.members.iter_mut().enumerate() {
            if let Some(status) = member.poll_exit()? {
                return Err(io::Error::other(format!(
                    "ZooKeeper member {i} (client port {}) exited ({status}); end of {}:\n{}",
                    member.ports.client,
                    member.log_path().display(),
                    member.log_tail(LOG_TAIL_LINES)
                )));
            }
        }
        Ok(())
    }

    /// The error for a start that did not finish in time.
    fn timed_out(&self, timeout: Duration, modes: &[Option<Mode>]) -> io::Error {
        let mut message = format!(
            "ZooKeeper ({} member{}) did not serve within {timeout:?}:",
            self.members.len(),
            if self.members.len() == 1 { "" } else { "s" }
        );
        for (i, (member, mode)) in self.members.iter().zip(modes).enumerate() {
            let mode = mode.map_or("no mode", Mode::as_str);
            message.push_str(&format!(
                "\n  member {i} (port {}): {mode}",
                member.ports.client
            ));
        }
        // Quote the members without a mode, or all when none is missing (no leader).
        let any_missing = modes.iter().any(Option::is_none);
        for (i, (member, mode)) in self.members.iter().zip(modes).enumerate() {
            if mode.is_none() || !any_missing {
                message.push_str(&format!(
                    "\nend of member {i}'s {}:\n{}",
                    member.log_path().display(),
                    member.log_tail(LOG_TAIL_LINES)
                ));
            }
        }
        io::Error::new(io::ErrorKind::TimedOut, message)
    }

    /// Leaves the members running past this value's drop and describes them.
    fn detach(&mut self) -> DetachedEnsemble {
        let members = self
            .members
            .iter_mut()
            .filter_map(|member| {
                let ports = member.ports;
                let dir = member.dir.clone();
                member.take_child().map(|child| DetachedMember {
                    pid: child.id(),
                    ports,
                    dir,
                })
            })
            .collect();
        self.remove_on_drop = false;
        DetachedEnsemble {
            root: self.root.clone(),
            members,
        }
    }
}

impl Drop for Ensemble {
    fn drop(&mut self) {
        for member in &mut self.members {
            let _ = member.kill();
        }
        if !self.remove_on_drop {
            return;
        }
        if std::env::var_os("XTASK_KEEP_ZK").is_some_and(|v| v == "1") {
            eprintln!("xtask: keeping ZooKeeper files in {}", self.root.display());
        } else {
            let _ = fs::remove_dir_all(&self.root);
        }
    }
}

fn out_of_range(i: usize, len: usize) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("ZooKeeper member {i} out of range: the ensemble has {len}"),
    )
}

/// The start of an ensemble directory's name: `xtask-zk-<pid>-<n>` for servers tied to their
/// process, `xtask-zk-detached-<pid>-<n>` for those of `cargo xtask zk start`, which outlive
/// the process that started them (and are removed by `zk stop`, never by the sweep).
fn root_prefix(launch: Launch) -> &'static str {
    match launch {
        Launch::Watched => "xtask-zk-",
        Launch::Detached => "xtask-zk-detached-",
    }
}

/// Removes the ensembles' directories (`xtask-zk-<pid>-<n>`) in `temp` whose process is gone:
/// a test binary's shared server lives in a `static`, which is never dropped, and a killed
/// test drops nothing; its JVMs die with it (the stdin watch), its files stay until here.
/// Detached ensembles' directories (`xtask-zk-detached-...`) are left alone: their servers
/// run on after the process that started them.
fn remove_stale_roots(temp: &Path) {
    let Ok(entries) = fs::read_dir(temp) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("xtask-zk-"))
            .and_then(|rest| rest.split_once('-'))
            .and_then(|(pid, _)| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if pid != std::process::id() && !Path::new("/proc").join(pid.to_string()).exists() {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}

/// The mode `srvr` reports at `addr`, or `None` when it does not answer or does not serve.
fn probe_mode(addr: SocketAddr) -> Option<Mode> {
    four_letter(addr, "srvr", PROBE_TIMEOUT)
        .ok()
        .and_then(|text| parse_mode(&text))
}

/// Whether the TLS client port at `addr` completes a handshake and answers `ruok`.
fn tls_serves(pki: &TestPki, addr: SocketAddr) -> bool {
    pki.probe(addr, PROBE_TIMEOUT)
        .is_ok_and(|answer| answer == "imok")
}

/// Checks, once per process, that Java and ZooKeeper are installed.
fn ensure_deps() -> io::Result<()> {
    static CHECKED: Mutex<bool> = Mutex::new(false);
    let mut checked = CHECKED.lock().unwrap_or_else(PoisonError::into_inner);
    if !*checked {
        deps::ensure(&[Need::Java, Need::ZooKeeper]).map_err(io::Error::other)?;
        *checked = true;
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// Issue 26, item 1: the sweep removed the directory of a server from `zk start` (whose
    /// starting process had exited), and the server died at its next connection.
    #[test]
    fn the_sweep_leaves_detached_servers_alone() {
        let temp = std::env::temp_dir().join(format!("xtask-sweep-test-{}", std::process::id()));
        let _ = fs::remove_dir_all(&temp);
        // A pid that is not running: above the kernel's largest.
        let gone = 4_194_304 + 7;
        let stale = temp.join(format!("{}{gone}-0", root_prefix(Launch::Watched)));
        let detached = temp.join(format!("{}{gone}-0", root_prefix(Launch::Detached)));
        fs::create_dir_all(&stale).unwrap();
        fs::create_dir_all(&detached).unwrap();
        remove_stale_roots(&temp);
        assert!(!stale.exists(), "a dead process's directory stays");
        assert!(
            detached.exists(),
            "a detached server's directory was removed"
        );
        fs::remove_dir_all(&temp).unwrap();
    }

    /// Issue 26, item 2: a fixed port another server already listens on is refused before
    /// anything starts (the other server used to answer for ours).
    #[test]
    fn a_taken_fixed_port_is_refused() {
        let taken = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
        let port = taken.local_addr().unwrap().port();
        let opts = ZkOptions::default().port(port);
        let jvm = Jvm {
            launcher_dir: PathBuf::new(),
            main_class: STANDALONE_MAIN,
            heap_mb: opts.jvm_heap_mb,
            system_properties: Vec::new(),
            program: Program::Java,
            opts: opts.clone(),
        };
        let err = Ensemble::create(1, opts, jvm, Launch::Detached)
            .err()
            .unwrap();
        assert_eq!(err.kind(), io::ErrorKind::AddrInUse);
        assert!(
            err.to_string().contains(&format!("port {port} is taken")),
            "{err}"
        );
    }
}
