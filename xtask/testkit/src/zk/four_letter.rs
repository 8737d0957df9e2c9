//! ZooKeeper's four-letter words: a tiny client, and parsers for the `srvr` and `mntr` answers.

use std::collections::BTreeMap;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// Sends the four-letter word `cmd` (for example `ruok`, `srvr`, `mntr`) to the server at `addr`
/// and returns everything it answers, read until the server closes the connection.
///
/// The connect, the write and the whole read together take at most `timeout`.
///
/// # Errors
/// `cmd` is not 4 ASCII letters (`InvalidInput`); the server refuses the connection (it is not
/// listening yet, or is down); or it does not answer and close within `timeout` (`TimedOut` or
/// `WouldBlock`), as when it is paused.
pub fn four_letter(addr: SocketAddr, cmd: &str, timeout: Duration) -> io::Result<String> {
    if cmd.len() != 4 || !cmd.bytes().all(|b| b.is_ascii_alphabetic()) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("four-letter word must be 4 ASCII letters, got {cmd:?}"),
        ));
    }
    let deadline = Instant::now() + timeout;
    let mut stream = TcpStream::connect_timeout(&addr, timeout)?;
    stream.set_write_timeout(Some(remaining(deadline)?))?;
    stream.write_all(cmd.as_bytes())?;
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        stream.set_read_timeout(Some(remaining(deadline)?))?;
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => answer.extend_from_slice(buf.get(..n).unwrap_or_default()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(String::from_utf8_lossy(&answer).into_owned())
}

/// The time left until `deadline`, or a `TimedOut` error once it has passed.
fn remaining(deadline: Instant) -> io::Result<Duration> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        Err(io::Error::new(
            io::ErrorKind::TimedOut,
            "four-letter word: no complete answer before the timeout",
        ))
    } else {
        Ok(left)
    }
}

/// A server's role, from the `Mode:` line of its `srvr` answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    /// A single server (`ZooKeeperServerMain`).
    Standalone,
    /// The ensemble's leader.
    Leader,
    /// A follower of the leader.
    Follower,
    /// An observer (a non-voting member).
    Observer,
    /// A member serving reads only, cut off from a quorum.
    ReadOnly,
}

impl Mode {
    /// The word ZooKeeper prints for this mode.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Standalone => "standalone",
            Mode::Leader => "leader",
            Mode::Follower => "follower",
            Mode::Observer => "observer",
            Mode::ReadOnly => "read-only",
        }
    }

    /// Whether this mode serves writes on its own or leads those who do: standalone or leader.
    pub fn is_leading(self) -> bool {
        matches!(self, Mode::Standalone | Mode::Leader)
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The mode in a `srvr` (or `stat`) answer; `None` when there is no `Mode:` line, as when the
/// server answers "This ZooKeeper instance is not currently serving requests".
pub fn parse_mode(srvr: &str) -> Option<Mode> {
    let value = srvr
        .lines()
        .find_map(|line| line.strip_prefix("Mode:"))?
        .trim();
    match value {
        "standalone" => Some(Mode::Standalone),
        "leader" => Some(Mode::Leader),
        "follower" => Some(Mode::Follower),
        "observer" => Some(Mode::Observer),
        "read-only" => Some(Mode::ReadOnly),
        _ => None,
    }
}

/// The `key<TAB>value` lines of an `mntr` answer as a map; other lines are skipped.
pub fn parse_mntr(mntr: &str) -> BTreeMap<String, String> {
    mntr.lines()
        .filter_map(|line| line.split_once('\t'))
        .map(|(key, value)| (key.trim().to_owned(), value.trim().to_owned()))
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn mode_lines() {
        let srvr = "Zookeeper version: 3.8.0\nZxid: 0x0\nMode: follower\nNode count: 5\n";
        assert_eq!(parse_mode(srvr), Some(Mode::Follower));
        assert_eq!(parse_mode("Mode: read-only\n"), Some(Mode::ReadOnly));
        assert_eq!(
            parse_mode("This ZooKeeper instance is not currently serving requests\n"),
            None
        );
    }

    #[test]
    fn mntr_pairs() {
        let map = parse_mntr("zk_version\t3.8.0\nzk_znode_count\t5\nnoise\n");
        assert_eq!(map.get("zk_znode_count").map(String::as_str), Some("5"));
        assert_eq!(map.len(), 2);
    }

    #[test]
    fn rejects_bad_words() {
        let addr: SocketAddr = ([127, 0, 0, 1], 1).into();
        for bad in ["ruo", "ruok!", "r k "] {
            let err = four_letter(addr, bad, Duration::from_millis(10));
            assert_eq!(err.map_err(|e| e.kind()), Err(io::ErrorKind::InvalidInput));
        }
    }
}
