//! [`Ensemble`]: ZooKeeper servers on loopback for tests, one standalone server or a quorum,
//! with faults to inject (kill, restart, pause) and cleanup on drop.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use super::ZkOptions;
use super::config::{self, MemberPorts};
use super::detached::{DetachedEnsemble, DetachedMember};
use super::four_letter::{Mode, four_letter, parse_mntr, parse_mode};
use super::ports::free_ports;
use super::process::{Jvm, Launch, Member};
use super::secure::{self, TestPki};
use crate::deps::{self, Need};
use crate::java;

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
    /// `n` is 0; Java or ZooKeeper are missing; a member exits, or the ensemble does not serve
    /// within [`ZkOptions::start_timeout`]. The message then quotes the end of the member's
    /// `server.log`.
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
    /// As for [`start`](Self::start); on error no member is left running.
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
        ensure_deps()?;
        let launcher_dir = java::compile(
            "zk-launcher",
            &[java::java_dir().join("ZkLauncher.java")],
            "",
        )?;
        let jvm = Jvm {
            launcher_dir,
            main_class: if n == 1 { STANDALONE_MAIN } else { QUORUM_MAIN },
            heap_mb: opts.jvm_heap_mb,
            system_properties: opts.system_properties.clone(),
        };
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
        let root = std::env::temp_dir().join(format!(
            "xtask-zk-{}-{}",
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
        for (i, ports) in all.iter().enumerate() {
            let member = Member::new(ensemble.root.join(format!("member-{i}")), *ports);
            // The security lines before `extra_config`, which comes last and so can override
            // anything (`ssl.enabledProtocols`, say).
            let without_extras = ZkOptions {
                extra_config: Vec::new(),
                ..ensemble.opts.clone()
            };
            let mut cfg = config::render(&without_extras, i, &all, &member.data_dir());
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

    /// The client addresses of all members, comma-separated, as clients take them:
    /// `127.0.0.1:p1,127.0.0.1:p2,...`.
    pub fn connect_string(&self) -> String {
        self.members
            .iter()
            .map(|member| member.client_addr().to_string())
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The number of members.
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// Always false: an ensemble has at least one member.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// The options the ensemble was started with.
    pub fn options(&self) -> &ZkOptions {
        &self.opts
    }

    /// The temporary directory holding every member's files.
    pub fn root_dir(&self) -> &Path {
        &self.root
    }

    /// Member `i`'s client address.
    ///
    /// # Panics
    /// When `i >= self.len()`.
    pub fn client_addr(&self, i: usize) -> SocketAddr {
        self.member(i).client_addr()
    }

    /// Member `i`'s TLS client port's address, with [`ZkOptions::tls`].
    pub fn secure_addr(&self, i: usize) -> Option<SocketAddr> {
        let port = *self.secure_ports.get(i)?;
        Some(SocketAddr::from(([127, 0, 0, 1], port)))
    }

    /// `127.0.0.1:<secure port>,...`, for TLS clients, with [`ZkOptions::tls`].
    pub fn secure_connect_string(&self) -> Option<String> {
        let all: Option<Vec<String>> = (0..self.members.len())
            .map(|i| self.secure_addr(i).map(|a| a.to_string()))
            .collect();
        all.filter(|a| !a.is_empty()).map(|a| a.join(","))
    }

    /// The certificates the TLS client ports use, with [`ZkOptions::tls`]: the CA for
    /// clients' roots, and a client certificate for mutual TLS.
    pub fn pki(&self) -> Option<&TestPki> {
        self.pki.as_ref()
    }

    /// Whether member `i`'s TLS client port completes a handshake and answers (true without
    /// TLS).
    fn secure_port_serves(&self, i: usize) -> bool {
        match (&self.pki, self.secure_addr(i)) {
            (Some(pki), Some(addr)) => tls_serves(pki, addr),
            _ => true,
        }
    }

    /// Member `i`'s ports (client; peer and election in an ensemble, 0 when standalone).
    ///
    /// # Panics
    /// When `i >= self.len()`.
    pub fn ports(&self, i: usize) -> MemberPorts {
        self.member(i).ports
    }

    /// Member `i`'s JVM pid, `None` while it is killed.
    ///
    /// # Panics
    /// When `i >= self.len()`.
    pub fn pid(&self, i: usize) -> Option<u32> {
        self.member(i).pid()
    }

    /// Whether member `i` is running (started, and not killed or seen exiting).
    ///
    /// # Panics
    /// When `i >= self.len()`.
    pub fn is_running(&self, i: usize) -> bool {
        self.member(i).is_running()
    }

    /// Whether member `i` is paused by [`pause`](Self::pause).
    ///
    /// # Panics
    /// When `i >= self.len()`.
    pub fn is_paused(&self, i: usize) -> bool {
        self.member(i).is_paused()
    }

    /// Member `i`'s `dataDir` (snapshots, transaction logs, `myid`); kept across restarts.
    ///
    /// # Panics
    /// When `i >= self.len()`.
    pub fn data_dir(&self, i: usize) -> PathBuf {
        self.member(i).data_dir()
    }

    /// The file receiving member `i`'s server output (appended to across restarts).
    ///
    /// # Panics
    /// When `i >= self.len()`.
    pub fn log_path(&self, i: usize) -> PathBuf {
        self.member(i).log_path()
    }

    /// Sends the four-letter word `cmd` to member `i` and returns its answer (5 s timeout; use
    /// the free function [`four_letter`] with [`client_addr`](Self::client_addr) for another).
    ///
    /// # Errors
    /// See [`four_letter`]; also `InvalidInput` for a bad index.
    pub fn four_letter(&self, i: usize, cmd: &str) -> io::Result<String> {
        four_letter(self.checked(i)?.client_addr(), cmd, FOUR_LETTER_TIMEOUT)
    }

    /// Member `i`'s `mntr` answer as a map (`zk_server_state`, `zk_znode_count`, ...).
    ///
    /// # Errors
    /// As for [`four_letter`](Self::four_letter).
    pub fn mntr(&self, i: usize) -> io::Result<BTreeMap<String, String>> {
        self.four_letter(i, "mntr").map(|text| parse_mntr(&text))
    }

    /// Member `i`'s mode from `srvr`: `None` when it answers but does not serve (no quorum).
    ///
    /// # Errors
    /// As for [`four_letter`](Self::four_letter): it is down, paused or slow.
    pub fn mode(&self, i: usize) -> io::Result<Option<Mode>> {
        self.four_letter(i, "srvr").map(|text| parse_mode(&text))
    }

    /// The member that leads (or the standalone server), asking each running, unpaused member
    /// with `srvr`; `None` when none answers as leader.
    pub fn leader(&self) -> Option<usize> {
        self.members.iter().position(|member| {
            member.is_running()
                && !member.is_paused()
                && probe_mode(member.client_addr()).is_some_and(Mode::is_leading)
        })
    }

    /// Waits up to `timeout` until some member leads, and returns it.
    ///
    /// # Errors
    /// `TimedOut` when no leader appears in time, with each member's mode in the message.
    pub fn wait_leader(&self, timeout: Duration) -> io::Result<usize> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(i) = self.leader() {
                return Ok(i);
            }
            if Instant::now() >= deadline {
                let modes: Vec<String> = (0..self.len()).map(|i| self.describe(i)).collect();
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("no leader within {timeout:?}: {}", modes.join(", ")),
                ));
            }
            thread::sleep(POLL_INTERVAL);
        }
    }

    /// Waits up to `timeout` until member `i` reports `mode` (`srvr`), e.g. a quorum's
    /// survivor turning read-only.
    ///
    /// # Errors
    /// `InvalidInput` for a bad index; `TimedOut`, with the member's state, when time runs
    /// out.
    pub fn wait_mode(&self, i: usize, mode: Mode, timeout: Duration) -> io::Result<()> {
        self.checked(i)?;
        let deadline = Instant::now() + timeout;
        while self.mode(i).ok().flatten() != Some(mode) {
            if Instant::now() >= deadline {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("not {mode:?} within {timeout:?}: {}", self.describe(i)),
                ));
            }
            thread::sleep(POLL_INTERVAL);
        }
        Ok(())
    }

    /// "member i: <mode | no mode | down | paused>" for messages.
    fn describe(&self, i: usize) -> String {
        let Some(member) = self.members.get(i) else {
            return format!("member {i}: none");
        };
        let state = if !member.is_running() {
            "down"
        } else if member.is_paused() {
            "paused"
        } else {
            probe_mode(member.client_addr()).map_or("no mode", Mode::as_str)
        };
        format!("member {i}: {state}")
    }

    /// Waits up to `timeout` until member `i` reports a mode (serves).
    ///
    /// # Errors
    /// `InvalidInput` for a bad index; `NotConnected` when it is killed or paused; an error
    /// quoting its log when it exits; `TimedOut` (also quoting its log) when time runs out.
    pub fn wait_serving(&mut self, i: usize, timeout: Duration) -> io::Result<()> {
        let deadline = Instant::now() + timeout;
        let secure = self.pki.clone().zip(self.secure_addr(i));
        loop {
            let member = self.checked_mut(i)?;
            if let Some(status) = member.poll_exit()? {
                return Err(io::Error::other(format!(
                    "ZooKeeper member {i} exited ({status}); end of {}:\n{}",
                    member.log_path().display(),
                    member.log_tail(LOG_TAIL_LINES)
                )));
            }
            if !member.is_running() || member.is_paused() {
                return Err(io::Error::new(
                    io::ErrorKind::NotConnected,
                    format!(
                        "ZooKeeper member {i} is {}",
                        if member.is_paused() {
                            "paused"
                        } else {
                            "not running"
                        }
                    ),
                ));
            }
            let plain = probe_mode(member.client_addr()).is_some();
            if plain
                && secure
                    .as_ref()
                    .is_none_or(|(pki, addr)| tls_serves(pki, *addr))
            {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "ZooKeeper member {i} did not serve within {timeout:?}; end of {}:\n{}",
                        member.log_path().display(),
                        member.log_tail(LOG_TAIL_LINES)
                    ),
                ));
            }
            thread::sleep(POLL_INTERVAL);
        }
    }

    /// Kills member `i` with SIGKILL and waits for it to be gone; nothing when it is down.
    ///
    /// # Errors
    /// `InvalidInput` for a bad index, or the kill failing.
    pub fn kill(&mut self, i: usize) -> io::Result<()> {
        self.checked_mut(i)?.kill()
    }

    /// Starts member `i` again (same ports, same data) without waiting for it to serve; see
    /// [`wait_serving`](Self::wait_serving). Nothing when it is running.
    ///
    /// # Errors
    /// `InvalidInput` for a bad index, or `java` not starting.
    pub fn start_member(&mut self, i: usize) -> io::Result<()> {
        let launch = self.launch;
        let jvm = self.jvm.clone();
        let member = self.checked_mut(i)?;
        member.poll_exit()?;
        if member.is_running() {
            return Ok(());
        }
        member.spawn(&jvm, launch)
    }

    /// Kills member `i` if it runs, starts it again on the same ports with the same data, and
    /// waits (up to [`ZkOptions::start_timeout`]) until it serves; in an ensemble, until it
    /// reports a mode, which needs a quorum.
    ///
    /// # Errors
    /// As for [`kill`](Self::kill), [`start_member`](Self::start_member) and
    /// [`wait_serving`](Self::wait_serving).
    pub fn restart(&mut self, i: usize) -> io::Result<()> {
        self.kill(i)?;
        self.start_member(i)?;
        self.wait_serving(i, self.opts.start_timeout)
    }

    /// Stops member `i` with SIGSTOP: its sockets stay open and connections stay up, but it
    /// answers nothing (not even four-letter words) and sends no heartbeats until
    /// [`resume`](Self::resume).
    ///
    /// # Errors
    /// `InvalidInput` for a bad index; `NotConnected` when it is not running; `kill` failing.
    pub fn pause(&mut self, i: usize) -> io::Result<()> {
        self.checked_mut(i)?.pause()
    }

    /// Continues member `i` after [`pause`](Self::pause) with SIGCONT.
    ///
    /// # Errors
    /// As for [`pause`](Self::pause).
    pub fn resume(&mut self, i: usize) -> io::Result<()> {
        self.checked_mut(i)?.resume()
    }

    fn member(&self, i: usize) -> &Member {
        match self.members.get(i) {
            Some(member) => member,
            None => panic!(
                "ZooKeeper member {i} out of range: the ensemble has {}",
                self.len()
            ),
        }
    }

    fn checked(&self, i: usize) -> io::Result<&Member> {
        let len = self.members.len();
        self.members.get(i).ok_or_else(|| out_of_range(i, len))
    }

    fn checked_mut(&mut self, i: usize) -> io::Result<&mut Member> {
        let len = self.members.len();
        self.members.get_mut(i).ok_or_else(|| out_of_range(i, len))
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
