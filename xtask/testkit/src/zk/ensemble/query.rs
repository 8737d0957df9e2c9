//! What a test asks of an [`Ensemble`]: addresses and connect strings, ports, files, the
//! members' four-letter words and modes, and waiting for a leader or a mode.

use super::*;

impl Ensemble {
    /// The client addresses of all members, comma-separated, as clients take them:
    /// `127.0.0.1:p1,127.0.0.1:p2,...`.
    pub fn connect_string(&self) -> String {
        connect_string_of(self.members.iter().map(Member::client_addr))
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
        let all: Option<Vec<SocketAddr>> = (0..self.members.len())
            .map(|i| self.secure_addr(i))
            .collect();
        all.filter(|a| !a.is_empty()).map(connect_string_of)
    }

    /// The certificates the TLS client ports use, with [`ZkOptions::tls`]: the CA for
    /// clients' roots, and a client certificate for mutual TLS.
    pub fn pki(&self) -> Option<&TestPki> {
        self.pki.as_ref()
    }

    /// Whether member `i`'s TLS client port completes a handshake and answers (true without
    /// TLS).
    pub(super) fn secure_port_serves(&self, i: usize) -> bool {
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
    pub(super) fn describe(&self, i: usize) -> String {
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
}
