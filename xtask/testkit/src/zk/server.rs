//! [`ZkServer`]: one standalone ZooKeeper server for tests, a thin wrapper over a one-member
//! [`Ensemble`].

use std::collections::BTreeMap;
use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;

use super::{Ensemble, Mode, ZkOptions};

/// One standalone ZooKeeper server on 127.0.0.1 for tests; dropping it kills the server and
/// removes its files. For faults on it or other accessors use [`ensemble`](Self::ensemble) and
/// [`ensemble_mut`](Self::ensemble_mut) with member index 0.
///
/// # Examples
/// ```no_run
/// use zk_testkit::zk::ZkServer;
///
/// # fn main() -> std::io::Result<()> {
/// let mut zk = ZkServer::start()?;
/// assert_eq!(zk.four_letter("ruok")?, "imok");
/// zk.restart()?; // same port, same data
/// println!("connect to {}", zk.connect_string());
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct ZkServer {
    ensemble: Ensemble,
}

impl ZkServer {
    /// Starts a standalone server with default options and waits until it serves.
    ///
    /// # Errors
    /// As for [`Ensemble::start`].
    pub fn start() -> io::Result<ZkServer> {
        Self::start_with(ZkOptions::default())
    }

    /// Starts a standalone server with `opts` and waits until it serves.
    ///
    /// # Errors
    /// As for [`Ensemble::start`].
    pub fn start_with(opts: ZkOptions) -> io::Result<ZkServer> {
        Ensemble::start(1, opts).map(|ensemble| ZkServer { ensemble })
    }

    /// `127.0.0.1:<port>`, for clients.
    pub fn connect_string(&self) -> String {
        self.ensemble.connect_string()
    }

    /// The client address.
    pub fn addr(&self) -> SocketAddr {
        self.ensemble.client_addr(0)
    }

    /// The client port.
    pub fn port(&self) -> u16 {
        self.addr().port()
    }

    /// The JVM's pid, `None` while killed.
    pub fn pid(&self) -> Option<u32> {
        self.ensemble.pid(0)
    }

    /// The server's `dataDir`.
    pub fn data_dir(&self) -> PathBuf {
        self.ensemble.data_dir(0)
    }

    /// The file receiving the server's output.
    pub fn log_path(&self) -> PathBuf {
        self.ensemble.log_path(0)
    }

    /// Sends a four-letter word; see [`Ensemble::four_letter`].
    ///
    /// # Errors
    /// As for [`Ensemble::four_letter`].
    pub fn four_letter(&self, cmd: &str) -> io::Result<String> {
        self.ensemble.four_letter(0, cmd)
    }

    /// The `mntr` answer as a map; see [`Ensemble::mntr`].
    ///
    /// # Errors
    /// As for [`Ensemble::four_letter`].
    pub fn mntr(&self) -> io::Result<BTreeMap<String, String>> {
        self.ensemble.mntr(0)
    }

    /// The `srvr` mode; see [`Ensemble::mode`].
    ///
    /// # Errors
    /// As for [`Ensemble::four_letter`].
    pub fn mode(&self) -> io::Result<Option<Mode>> {
        self.ensemble.mode(0)
    }

    /// Kills the server with SIGKILL; see [`Ensemble::kill`].
    ///
    /// # Errors
    /// As for [`Ensemble::kill`].
    pub fn kill(&mut self) -> io::Result<()> {
        self.ensemble.kill(0)
    }

    /// Restarts the server on the same port with the same data; see [`Ensemble::restart`].
    ///
    /// # Errors
    /// As for [`Ensemble::restart`].
    pub fn restart(&mut self) -> io::Result<()> {
        self.ensemble.restart(0)
    }

    /// Stops the server with SIGSTOP; see [`Ensemble::pause`].
    ///
    /// # Errors
    /// As for [`Ensemble::pause`].
    pub fn pause(&mut self) -> io::Result<()> {
        self.ensemble.pause(0)
    }

    /// Continues the server with SIGCONT; see [`Ensemble::resume`].
    ///
    /// # Errors
    /// As for [`Ensemble::resume`].
    pub fn resume(&mut self) -> io::Result<()> {
        self.ensemble.resume(0)
    }

    /// The underlying one-member ensemble.
    pub fn ensemble(&self) -> &Ensemble {
        &self.ensemble
    }

    /// The underlying one-member ensemble, for faults and waits on member 0.
    pub fn ensemble_mut(&mut self) -> &mut Ensemble {
        &mut self.ensemble
    }
}
