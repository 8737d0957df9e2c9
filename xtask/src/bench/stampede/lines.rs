//! The lines between `bench stampede` and its worker (`zk-worker stampede`), written and
//! parsed here, with no IO.
//!
//! ```text
//! READY on=<addr>=<n>,...                                  worker: every session connected, where each sits
//! CUT <addr>|all                                           bench: the member at <addr> is about to be cut
//!                                                          (all: the leader killed, every session hit)
//! ARMED                                                    worker: the moment noted, its sessions followed
//! BACK tracked=<n> back=<n> ended=<n> first_us=<us> p50_us=<us> p99_us=<us> last_us=<us> on=<addr>=<n>,...
//!                                                          worker: every followed session back, or the budget passed
//! CLOSE                                                    bench: close the sessions and exit
//! ```
//!
//! The times of `BACK` are the worker's own, from `ARMED` to each followed session's next
//! connection (`0` when none came back).

use std::net::SocketAddr;
use std::time::Duration;

use crate::line::Fields;

/// How many sessions sit at each address (a proxy's, as the clients see it), in address order.
pub type Placement = Vec<(SocketAddr, u64)>;

/// `on=<addr>=<n>,...`'s value.
fn placement_text(on: &Placement) -> String {
    on.iter()
        .map(|(addr, n)| format!("{addr}={n}"))
        .collect::<Vec<_>>()
        .join(",")
}

fn parse_placement(text: &str) -> Result<Placement, String> {
    if text.is_empty() {
        return Ok(Vec::new());
    }
    text.split(',')
        .map(|pair| {
            let (addr, n) = pair
                .rsplit_once('=')
                .ok_or_else(|| format!("`{pair}` is not <addr>=<n>"))?;
            let addr = addr
                .parse()
                .map_err(|_| format!("`{addr}` is not an address"))?;
            let n = n
                .parse()
                .map_err(|_| format!("`{n}` is not a whole number"))?;
            Ok((addr, n))
        })
        .collect()
}

/// The sessions at `addr` in `on`.
pub fn at(on: &Placement, addr: SocketAddr) -> u64 {
    on.iter().filter(|(a, _)| *a == addr).map(|(_, n)| n).sum()
}

/// `READY`: every session connected.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Ready {
    /// Where the sessions sit.
    pub on: Placement,
}

impl Ready {
    /// The line's text.
    pub fn line(&self) -> String {
        format!("READY on={}", placement_text(&self.on))
    }

    /// Parses a `READY` line.
    ///
    /// # Errors
    /// Another line, or a field missing, unknown or malformed.
    pub fn parse(line: &str) -> Result<Ready, String> {
        let f = Fields::parse(line, "READY")?.only(&["on"])?;
        Ok(Ready {
            on: parse_placement(f.text("on")?)?,
        })
    }
}

/// `BACK`: the followed sessions after the cut.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Back {
    /// Sessions that sat on the cut member.
    pub tracked: u64,
    /// Of them, connected again within the budget.
    pub back: u64,
    /// Of them, sessions that ended (expired, closed) instead.
    pub ended: u64,
    /// The first one back, from `ARMED`.
    pub first: Duration,
    /// The median one.
    pub p50: Duration,
    /// The 99th percentile.
    pub p99: Duration,
    /// The last one: every session back.
    pub last: Duration,
    /// Where every session sits now.
    pub on: Placement,
}

impl Back {
    /// The figures of `delays` (each back session's, any order) for `tracked` sessions of
    /// which `ended` ended; `on` as given.
    pub fn of(tracked: u64, ended: u64, mut delays: Vec<Duration>, on: Placement) -> Back {
        delays.sort_unstable();
        let pick = |q: f64| {
            let last = delays.len().saturating_sub(1);
            // Nearest rank: the smallest delay with at least q of them at or below it.
            let rank = ((delays.len() as f64 * q).ceil() as usize).clamp(1, last + 1) - 1;
            delays.get(rank).copied().unwrap_or_default()
        };
        Back {
            tracked,
            back: delays.len() as u64,
            ended,
            first: delays.first().copied().unwrap_or_default(),
            p50: pick(0.5),
            p99: pick(0.99),
            last: delays.last().copied().unwrap_or_default(),
            on,
        }
    }

    /// The line's text.
    pub fn line(&self) -> String {
        let us = |d: Duration| d.as_micros();
        format!(
            "BACK tracked={} back={} ended={} first_us={} p50_us={} p99_us={} last_us={} on={}",
            self.tracked,
            self.back,
            self.ended,
            us(self.first),
            us(self.p50),
            us(self.p99),
            us(self.last),
            placement_text(&self.on)
        )
    }

    /// Parses a `BACK` line.
    ///
    /// # Errors
    /// Another line, or a field missing, unknown or malformed.
    pub fn parse(line: &str) -> Result<Back, String> {
        let f = Fields::parse(line, "BACK")?.only(&[
            "tracked", "back", "ended", "first_us", "p50_us", "p99_us", "last_us", "on",
        ])?;
        let us = |key: &str| f.number(key).map(Duration::from_micros);
        Ok(Back {
            tracked: f.number("tracked")?,
            back: f.number("back")?,
            ended: f.number("ended")?,
            first: us("first_us")?,
            p50: us("p50_us")?,
            p99: us("p99_us")?,
            last: us("last_us")?,
            on: parse_placement(f.text("on")?)?,
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn addr(port: u16) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], port))
    }

    #[test]
    fn lines_read_back_what_they_wrote() {
        let ready = Ready {
            on: vec![(addr(4000), 1000), (addr(4001), 0)],
        };
        assert_eq!(
            ready.line(),
            "READY on=127.0.0.1:4000=1000,127.0.0.1:4001=0"
        );
        assert_eq!(Ready::parse(&ready.line()).unwrap(), ready);
        let ms = Duration::from_millis;
        let back = Back::of(
            3,
            1,
            vec![ms(30), ms(10)],
            vec![(addr(4001), 1), (addr(4002), 1)],
        );
        assert_eq!(
            back.line(),
            "BACK tracked=3 back=2 ended=1 first_us=10000 p50_us=10000 p99_us=30000 \
             last_us=30000 on=127.0.0.1:4001=1,127.0.0.1:4002=1"
        );
        assert_eq!(Back::parse(&back.line()).unwrap(), back);
        assert_eq!(at(&back.on, addr(4002)), 1);
        assert_eq!(at(&back.on, addr(4000)), 0);
    }

    #[test]
    fn percentiles_are_nearest_rank_and_none_back_reads_zero() {
        let ms = Duration::from_millis;
        let delays: Vec<Duration> = (1..=100).map(ms).collect();
        let back = Back::of(100, 0, delays, Vec::new());
        assert_eq!(
            (back.first, back.p50, back.p99, back.last),
            (ms(1), ms(50), ms(99), ms(100))
        );
        let none = Back::of(5, 5, Vec::new(), Vec::new());
        assert_eq!((none.back, none.last), (0, Duration::ZERO));
    }

    #[test]
    fn malformed_lines_are_refused() {
        assert!(Ready::parse("READY on=nowhere=3").is_err());
        assert!(Ready::parse("READY on=127.0.0.1:1=x").is_err());
        assert!(Back::parse("BACK tracked=1").is_err());
        assert!(Back::parse("READY on=").is_err());
    }
}
