//! Which server program the test kit starts: ZooKeeper 3.8 in a JVM (the default), or, with
//! `ZK_TESTKIT_SERVER=mem`, zk-mem-server's `zk-mem-server` binary (named by
//! `ZK_MEM_SERVER_BIN`), so the same real-server tests run against the in-memory server with
//! no Java on the machine. `cargo xtask test` does both; the test kit itself depends on no
//! crate of the workspace, so it is told where the binary is rather than building it.
//!
//! The in-memory server is one standalone server without TLS or SASL: an ensemble or a
//! secure port is refused with [`io::ErrorKind::Unsupported`], and such tests are left out of
//! the in-memory run by name. It keeps its snapshot in the member's directory, so a restart
//! keeps the data and the sessions, as ZooKeeper's does.

use std::io;
use std::path::PathBuf;

use super::ZkOptions;

/// The variable choosing the server program: `java` (the default) or `mem`.
pub const SERVER_ENV: &str = "ZK_TESTKIT_SERVER";
/// The variable naming the `zk-mem-server` binary when [`SERVER_ENV`] is `mem`.
pub const MEM_BIN_ENV: &str = "ZK_MEM_SERVER_BIN";

/// The server program members run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Program {
    /// ZooKeeper 3.8 in a JVM.
    Java,
    /// The `zk-mem-server` binary at this path.
    Mem(PathBuf),
}

impl Program {
    /// The program [`SERVER_ENV`] names.
    ///
    /// # Errors
    /// `InvalidInput` for another value, or `mem` without [`MEM_BIN_ENV`].
    pub fn from_env() -> io::Result<Program> {
        let choice = std::env::var(SERVER_ENV).unwrap_or_default();
        match choice.as_str() {
            "" | "java" => Ok(Program::Java),
            "mem" => std::env::var_os(MEM_BIN_ENV)
                .map(|bin| Program::Mem(PathBuf::from(bin)))
                .ok_or_else(|| {
                    io::Error::new(
                        io::ErrorKind::InvalidInput,
                        format!(
                            "{SERVER_ENV}=mem needs {MEM_BIN_ENV}, the zk-mem-server binary \
                             (`cargo build -p zk-mem-server --bin zk-mem-server`; `cargo xtask test` sets both)"
                        ),
                    )
                }),
            other => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{SERVER_ENV}={other:?}: expected `java` or `mem`"),
            )),
        }
    }

    /// Whether the tests run against the in-memory server.
    pub fn is_mem(&self) -> bool {
        matches!(self, Program::Mem(_))
    }

    /// Refuses what this program cannot be: for the in-memory one, more than one member, a
    /// TLS port, SASL, or partitionable links.
    ///
    /// # Errors
    /// `Unsupported`, saying what needs the Java server.
    pub fn check(&self, members: usize, opts: &ZkOptions) -> io::Result<()> {
        if !self.is_mem() {
            return Ok(());
        }
        let needs = if members > 1 {
            Some("an ensemble")
        } else if opts.tls.is_some() {
            Some("a TLS port")
        } else if opts.sasl.is_some() {
            Some("SASL")
        } else {
            None
        };
        match needs {
            None => Ok(()),
            Some(what) => Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!(
                    "{what} needs the Java server ({SERVER_ENV}=mem serves one standalone server)"
                ),
            )),
        }
    }

    /// The in-memory server's arguments for `opts`, a client port and the member's directory
    /// (its snapshot kept there, so a restart keeps the data and sessions as ZooKeeper's data
    /// directory does): the session limits ZooKeeper would derive from the tick time, and the
    /// container manager's interval from the `znode.container.checkIntervalMs` system
    /// property when it is set.
    pub fn mem_args(opts: &ZkOptions, port: u16, data_dir: &std::path::Path) -> Vec<String> {
        let tick = opts.tick_time_ms;
        let min = opts
            .min_session_timeout_ms
            .unwrap_or(tick.saturating_mul(2));
        let max = opts
            .max_session_timeout_ms
            .unwrap_or(tick.saturating_mul(20));
        let mut args = vec![
            "--port".to_owned(),
            port.to_string(),
            "--min-session-timeout-ms".to_owned(),
            min.to_string(),
            "--max-session-timeout-ms".to_owned(),
            max.to_string(),
            "--data-dir".to_owned(),
            data_dir.display().to_string(),
        ];
        let container_check = opts
            .system_properties
            .iter()
            .rev()
            .find(|(key, _)| key == "znode.container.checkIntervalMs");
        if let Some((_, ms)) = container_check {
            args.extend(["--container-check-ms".to_owned(), ms.clone()]);
        }
        args
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::zk::SaslOptions;

    #[test]
    fn the_in_memory_server_refuses_what_it_cannot_be() {
        let mem = Program::Mem(PathBuf::from("/x"));
        let opts = ZkOptions::default();
        assert!(mem.check(1, &opts).is_ok());
        assert_eq!(
            mem.check(3, &opts).unwrap_err().kind(),
            io::ErrorKind::Unsupported
        );
        let sasl = ZkOptions::default().sasl(SaslOptions::default());
        assert_eq!(
            mem.check(1, &sasl).unwrap_err().kind(),
            io::ErrorKind::Unsupported
        );
        assert!(Program::Java.check(3, &sasl).is_ok());
        let dir = std::path::Path::new("/m");
        let args = Program::mem_args(&opts.session_timeouts_ms(100, 9000), 7, dir);
        assert_eq!(
            args,
            [
                "--port",
                "7",
                "--min-session-timeout-ms",
                "100",
                "--max-session-timeout-ms",
                "9000",
                "--data-dir",
                "/m"
            ]
        );
        assert_eq!(
            Program::mem_args(&ZkOptions::default(), 7, dir)
                .get(3)
                .unwrap(),
            "1000"
        );
        let containers =
            ZkOptions::default().system_property("znode.container.checkIntervalMs", "100");
        assert_eq!(
            Program::mem_args(&containers, 7, dir).get(8..).unwrap(),
            ["--container-check-ms", "100"]
        );
    }
}
