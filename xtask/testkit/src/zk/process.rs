//! One member of an ensemble: its directory, ports and JVM process; and the signals and
//! liveness checks used on ZooKeeper processes.

use std::fs::{self, OpenOptions};
use std::io::{self, Write as _};
use std::net::{Ipv4Addr, SocketAddr};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};

use super::ZkOptions;
use super::config::MemberPorts;
use super::program::Program;
use crate::java::jar;

/// Whether a member's JVM dies with the process that started it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Launch {
    /// Tied to this process: the launcher watches a stdin pipe we hold and halts at its end.
    Watched,
    /// Outlives this process: stdin is `/dev/null` and the JVM has its own process group.
    Detached,
}

/// What is the same for every member's JVM command line.
#[derive(Debug, Clone)]
pub(crate) struct Jvm {
    /// Directory holding the compiled `ZkLauncher` class.
    pub launcher_dir: PathBuf,
    /// ZooKeeper's main class: standalone or quorum peer.
    pub main_class: &'static str,
    /// `-Xmx` in MiB.
    pub heap_mb: u32,
    /// More `-Dkey=value` system properties.
    pub system_properties: Vec<(String, String)>,
    /// The program members run: this JVM, or the in-memory server instead.
    pub program: Program,
    /// The options the members were started with (the in-memory server's session limits).
    pub opts: ZkOptions,
}

/// A running JVM and, when watched, the stdin pipe that keeps it alive.
#[derive(Debug)]
struct Running {
    child: Child,
    /// Never written; closing it (or our death) makes the launcher halt.
    _stdin: Option<ChildStdin>,
}

/// One member: directory `dir` with `zoo.cfg`, `data/` (and `data/myid`) and `server.log`.
#[derive(Debug)]
pub(crate) struct Member {
    /// The member's directory.
    pub dir: PathBuf,
    /// The ports it listens on.
    pub ports: MemberPorts,
    /// Its JVM while running.
    running: Option<Running>,
    /// Whether it was stopped with SIGSTOP and not yet continued.
    paused: bool,
}

impl Member {
    /// A member that is not started yet.
    pub fn new(dir: PathBuf, ports: MemberPorts) -> Self {
        Member {
            dir,
            ports,
            running: None,
            paused: false,
        }
    }

    /// The member's `dataDir`.
    pub fn data_dir(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// The member's `zoo.cfg`.
    pub fn cfg_path(&self) -> PathBuf {
        self.dir.join("zoo.cfg")
    }

    /// The file receiving the JVM's stdout and stderr.
    pub fn log_path(&self) -> PathBuf {
        self.dir.join("server.log")
    }

    /// The client address, 127.0.0.1:<client port>.
    pub fn client_addr(&self) -> SocketAddr {
        SocketAddr::from((Ipv4Addr::LOCALHOST, self.ports.client))
    }

    /// Creates the member's directories and writes `zoo.cfg` and, for ensembles, `myid`.
    pub fn write_files(&self, cfg: &str, myid: Option<usize>) -> io::Result<()> {
        fs::create_dir_all(self.data_dir())?;
        fs::write(self.cfg_path(), cfg)?;
        if let Some(id) = myid {
            fs::write(self.data_dir().join("myid"), format!("{id}\n"))?;
        }
        Ok(())
    }

    /// Starts the member's JVM. Its output is appended to [`log_path`](Self::log_path).
    ///
    /// Errors when it is already running or `java` cannot be started.
    pub fn spawn(&mut self, jvm: &Jvm, launch: Launch) -> io::Result<()> {
        if self.running.is_some() {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("member in {} is already running", self.dir.display()),
            ));
        }
        let mut cmd = match &jvm.program {
            Program::Java => java_command(jvm),
            Program::Mem(bin) => {
                let mut cmd = Command::new(bin);
                cmd.args(Program::mem_args(&jvm.opts, self.ports.client, &self.dir));
                cmd
            }
        };
        if launch == Launch::Watched {
            cmd.arg("--watch-stdin");
        }
        if jvm.program == Program::Java {
            cmd.arg(jvm.main_class).arg(self.cfg_path());
        }

        let mut log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())?;
        writeln!(log, "==== xtask: starting {cmd:?}")?;
        cmd.stdout(log.try_clone()?).stderr(log);
        match launch {
            Launch::Watched => {
                cmd.stdin(Stdio::piped());
            }
            Launch::Detached => {
                cmd.stdin(Stdio::null()).process_group(0);
            }
        }
        let mut child = cmd.spawn().map_err(|e| {
            io::Error::new(e.kind(), format!("starting {:?}: {e}", cmd.get_program()))
        })?;
        let stdin = child.stdin.take();
        self.running = Some(Running {
            child,
            _stdin: stdin,
        });
        self.paused = false;
        Ok(())
    }

    /// The JVM's pid while running.
    pub fn pid(&self) -> Option<u32> {
        self.running.as_ref().map(|r| r.child.id())
    }

    /// Whether a JVM was started and not yet killed or seen exiting.
    pub fn is_running(&self) -> bool {
        self.running.is_some()
    }

    /// Whether the member is stopped by [`pause`](Self::pause).
    pub fn is_paused(&self) -> bool {
        self.paused
    }

    /// If the JVM has exited on its own, reaps it and returns its status.
    pub fn poll_exit(&mut self) -> io::Result<Option<ExitStatus>> {
        let Some(running) = self.running.as_mut() else {
            return Ok(None);
        };
        let status = running.child.try_wait()?;
        if status.is_some() {
            self.running = None;
            self.paused = false;
        }
        Ok(status)
    }

    /// Kills the JVM with SIGKILL and waits for it. Does nothing when it is not running.
    pub fn kill(&mut self) -> io::Result<()> {
        if let Some(mut running) = self.running.take() {
            if self.paused {
                // SIGKILL ends a stopped process too; continuing it first is only tidier.
                let _ = signal(running.child.id(), "CONT");
                self.paused = false;
            }
            running.child.kill()?;
            running.child.wait()?;
        }
        Ok(())
    }

    /// Stops the JVM with SIGSTOP: it keeps its sockets but answers nothing.
    pub fn pause(&mut self) -> io::Result<()> {
        let pid = self.require_pid()?;
        signal(pid, "STOP")?;
        self.paused = true;
        Ok(())
    }

    /// Continues a JVM stopped by [`pause`](Self::pause) with SIGCONT.
    pub fn resume(&mut self) -> io::Result<()> {
        let pid = self.require_pid()?;
        signal(pid, "CONT")?;
        self.paused = false;
        Ok(())
    }

    /// Hands over the JVM, leaving this member not running: dropping a [`Child`] does not kill.
    pub fn take_child(&mut self) -> Option<Child> {
        self.paused = false;
        self.running.take().map(|running| running.child)
    }

    /// The last `lines` lines of the member's log, for error messages.
    pub fn log_tail(&self, lines: usize) -> String {
        log_tail(&self.log_path(), lines)
    }

    fn require_pid(&self) -> io::Result<u32> {
        self.pid().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotConnected,
                format!("member in {} is not running", self.dir.display()),
            )
        })
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        let _ = self.kill();
    }
}

/// The JVM classpath: the launcher's classes, ZooKeeper (whose manifest brings its own
/// dependencies, but not `netty-codec`, without which a TLS client port fails every
/// handshake) and SLF4J with its simple binding.
fn classpath(launcher_dir: &Path) -> String {
    format!(
        "{}:{}:{}:{}:{}:{}",
        launcher_dir.display(),
        jar("zookeeper").display(),
        jar("zookeeper-jute").display(),
        jar("netty-codec").display(),
        jar("slf4j-api").display(),
        jar("slf4j-simple").display()
    )
}

/// The last `lines` lines of the file at `path`, or a note saying it could not be read.
pub(crate) fn log_tail(path: &Path, lines: usize) -> String {
    match fs::read(path) {
        Ok(bytes) => {
            let text = String::from_utf8_lossy(&bytes);
            let all: Vec<&str> = text.lines().collect();
            let start = all.len().saturating_sub(lines);
            all.get(start..).unwrap_or_default().join("\n")
        }
        Err(e) => format!("(cannot read {}: {e})", path.display()),
    }
}

/// Sends `SIG<name>` (for example `"STOP"`, `"CONT"`, `"TERM"`, `"KILL"`) to `pid` with the
/// `kill` command.
pub(crate) fn signal(pid: u32, name: &str) -> io::Result<()> {
    let output = Command::new("kill")
        .arg(format!("-{name}"))
        .arg(pid.to_string())
        .stdin(Stdio::null())
        .output()
        .map_err(|e| io::Error::new(e.kind(), format!("running kill: {e}")))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(io::Error::other(format!(
            "kill -{name} {pid}: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        )))
    }
}

/// Whether process `pid` exists and is not a zombie, from `/proc/<pid>/stat`.
pub(crate) fn is_alive(pid: u32) -> bool {
    let Ok(stat) = fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // "<pid> (<comm>) <state> ...": comm may hold spaces and parentheses.
    let state = stat
        .rsplit_once(')')
        .and_then(|(_, rest)| rest.trim_start().chars().next());
    !matches!(state, None | Some('Z' | 'X'))
}

/// The command line of process `pid`, arguments joined by spaces; `None` when it is gone.
pub(crate) fn cmdline(pid: u32) -> Option<String> {
    let raw = fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let args: Vec<String> = raw
        .split(|&b| b == 0)
        .filter(|arg| !arg.is_empty())
        .map(|arg| String::from_utf8_lossy(arg).into_owned())
        .collect();
    Some(args.join(" "))
}

/// The JVM's command line up to the launcher's own arguments.
fn java_command(jvm: &Jvm) -> Command {
    let mut cmd = Command::new("java");
    cmd.arg(format!("-Xmx{}m", jvm.heap_mb))
        .args([
            "-XX:+UseSerialGC",
            "-XX:-UsePerfData",
            "-Djava.net.preferIPv4Stack=true",
            "-Dzookeeper.extendedTypesEnabled=true",
            "-Dzookeeper.admin.enableServer=false",
            "-Dzookeeper.4lw.commands.whitelist=*",
            "-Dorg.slf4j.simpleLogger.defaultLogLevel=info",
            "-Dorg.slf4j.simpleLogger.showDateTime=true",
            "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
        ])
        .args(
            jvm.system_properties
                .iter()
                .map(|(k, v)| format!("-D{k}={v}")),
        )
        .arg("-cp")
        .arg(classpath(&jvm.launcher_dir))
        .arg("ZkLauncher");
    cmd
}
