//! [`Outage`]: how long a client has had no server, and why its latest attempts failed, so
//! that code above (a lock's acquire) can tell "busy" from "no server" and say which.

use std::fmt;
use std::time::Duration;

use crate::Error;

/// The client has no server connection: how long, which servers it has, and how its latest
/// attempts failed ([`Client::outage`](crate::Client::outage)). Its `Display` is one line
/// for a log or an error message.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Outage {
    /// How long no server has been connected, when this was taken.
    pub lasted: Duration,
    /// The connect string's servers (`host:port`).
    pub servers: Vec<String>,
    /// The latest failed connection attempts, oldest first: at most one per server of the
    /// connect string. Empty while the first attempt since the connection was lost is still
    /// under way (or waiting out the reconnect pause).
    pub attempts: Vec<Error>,
}

impl fmt::Display for Outage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Tenths of a second, rounded half up, in integers: `{:.1}` of an `f64` would link
        // float formatting into every program holding a lock (21 KB of its 1.6 MB).
        let tenths = self.lasted.as_millis().saturating_add(50) / 100;
        write!(
            f,
            "no ZooKeeper server connected for {}.{} s (servers: {})",
            tenths / 10,
            tenths % 10,
            if self.servers.is_empty() {
                "none".to_owned()
            } else {
                self.servers.join(", ")
            }
        )?;
        if !self.attempts.is_empty() {
            f.write_str("; latest attempts: ")?;
            for (i, attempt) in self.attempts.iter().enumerate() {
                if i > 0 {
                    f.write_str("; ")?;
                }
                write!(f, "{attempt}")?;
            }
        }
        Ok(())
    }
}

/// What the session task records for [`Outage`]: when the connection went and the attempts
/// since.
#[derive(Debug, Default, Clone)]
pub(crate) struct Down {
    /// When the last connection was lost (`None` while connected, and before the first).
    pub since: Option<tokio::time::Instant>,
    /// The latest failed attempts since, oldest first, at most `servers.len()` of them.
    pub attempts: Vec<Error>,
    /// The connect string's servers.
    pub servers: Vec<String>,
}

impl Down {
    /// The connection was lost at `now` (kept if already down: an outage starts once).
    pub(crate) fn lost(&mut self, now: tokio::time::Instant) {
        self.since.get_or_insert(now);
    }

    /// A connection was established: no outage.
    pub(crate) fn connected(&mut self) {
        self.since = None;
        self.attempts.clear();
    }

    /// An attempt failed with `error`: kept, dropping the oldest past one per server.
    pub(crate) fn failed(&mut self, error: Error) {
        self.attempts.push(error);
        let keep = self.servers.len().max(1);
        if self.attempts.len() > keep {
            let extra = self.attempts.len() - keep;
            self.attempts.drain(..extra);
        }
    }

    /// The outage at `now`, if the client is down.
    pub(crate) fn at(&self, now: tokio::time::Instant) -> Option<Outage> {
        let since = self.since?;
        Some(Outage {
            lasted: now.saturating_duration_since(since),
            servers: self.servers.clone(),
            attempts: self.attempts.clone(),
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn refused(server: &str) -> Error {
        Error::Unreachable {
            server: server.to_owned(),
            error: crate::IoError(std::sync::Arc::new(std::io::Error::from(
                std::io::ErrorKind::ConnectionRefused,
            ))),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn an_outage_starts_once_keeps_one_attempt_per_server_and_ends_when_connected() {
        let t0 = tokio::time::Instant::now();
        let mut down = Down {
            servers: vec!["a:1".into(), "b:2".into()],
            ..Down::default()
        };
        assert_eq!(down.at(t0), None, "connected: no outage");
        down.lost(t0);
        down.lost(t0 + Duration::from_secs(5)); // still the same outage
        for s in ["a:1", "b:2", "a:1"] {
            down.failed(refused(s));
        }
        let outage = down.at(t0 + Duration::from_millis(12_340)).unwrap();
        assert_eq!(outage.lasted, Duration::from_millis(12_340));
        assert_eq!(outage.attempts, vec![refused("b:2"), refused("a:1")]);
        let text = outage.to_string();
        assert!(
            text.starts_with("no ZooKeeper server connected for 12.3 s (servers: a:1, b:2); latest attempts: could not connect to b:2"),
            "{text}"
        );
        for (ms, shown) in [
            (0, "0.0"),
            (49, "0.0"),
            (50, "0.1"),
            (1_960, "2.0"),
            (12_350, "12.4"),
        ] {
            let at = down.since.unwrap() + Duration::from_millis(ms);
            let text = down.at(at).unwrap().to_string();
            assert!(
                text.contains(&format!(" for {shown} s ")),
                "{ms} ms: {text}"
            );
        }
        down.connected();
        assert_eq!(down.at(t0 + Duration::from_secs(20)), None);
        down.lost(t0 + Duration::from_secs(30));
        let again = down.at(t0 + Duration::from_secs(31)).unwrap();
        assert_eq!(again.lasted, Duration::from_secs(1));
        assert!(again.attempts.is_empty());
        assert!(again.to_string().ends_with("(servers: a:1, b:2)"));
    }
}
