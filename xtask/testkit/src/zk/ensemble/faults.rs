//! The faults a test injects into an [`Ensemble`]'s members: kill, start again, restart,
//! pause and resume, and waiting until a member serves again.

use super::*;

impl Ensemble {
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

    pub(super) fn member(&self, i: usize) -> &Member {
        match self.members.get(i) {
            Some(member) => member,
            None => panic!(
                "ZooKeeper member {i} out of range: the ensemble has {}",
                self.len()
            ),
        }
    }

    pub(super) fn checked(&self, i: usize) -> io::Result<&Member> {
        let len = self.members.len();
        self.members.get(i).ok_or_else(|| out_of_range(i, len))
    }

    pub(super) fn checked_mut(&mut self, i: usize) -> io::Result<&mut Member> {
        let len = self.members.len();
        self.members.get_mut(i).ok_or_else(|| out_of_range(i, len))
    }
}
