//! What the sides report ([`Counts`]) and what the harness makes of it all ([`Totals`]): the
//! checker's verdict, the lock order for the mutex, and why the run fails, if it does.

use std::collections::BTreeSet;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use super::Result;
use super::check::{Rule, Verdict};
use super::holds::Hold;
use super::order::LockOrder;
use crate::recipe::Recipe;

/// What one side reports at the end of its run: `COUNTS side=<s> clients=<n>
/// acquisitions=<n> errors=<n>`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Clients (sessions) on this side.
    pub clients: u64,
    /// Times a client of this side acquired (a semaphore's acquisition of two leases is one).
    pub acquisitions: u64,
    /// Failed acquires or releases (logged on stderr; the loop goes on).
    pub errors: u64,
}

impl Counts {
    /// The `COUNTS` line for side `side` (`java`, `rust`).
    pub fn line(&self, side: &str) -> String {
        format!(
            "COUNTS side={side} clients={} acquisitions={} errors={}",
            self.clients, self.acquisitions, self.errors
        )
    }

    /// Parses a `COUNTS` line; returns the side and the counts.
    ///
    /// # Errors
    /// Not a `COUNTS` line, a missing key or a value that is not a number.
    pub fn parse(line: &str) -> Result<(String, Counts)> {
        let f = crate::line::Fields::parse(line, "COUNTS")?;
        let counts = Counts {
            clients: f.number("clients")?,
            acquisitions: f.number("acquisitions")?,
            errors: f.number("errors")?,
        };
        Ok((f.text("side")?.to_owned(), counts))
    }
}

/// The outcome of a run.
#[derive(Debug, Clone)]
pub struct Totals {
    /// The recipe.
    pub recipe: Recipe,
    /// Its checker.
    pub rule: Rule,
    /// Whether Curator was on another path (a negative control: violations expected).
    pub negative_control: bool,
    /// What Curator's side counted.
    pub java: Counts,
    /// What ours counted.
    pub rust: Counts,
    /// Acquisitions recorded in Curator's holds (distinct client and count).
    pub java_recorded: u64,
    /// Acquisitions recorded in ours.
    pub rust_recorded: u64,
    /// The checker's verdict on both sides' holds.
    pub verdict: Verdict,
    /// The lock order (the mutex only).
    pub order: Option<LockOrder>,
    /// How long the contention ran (from `GO` to the last `COUNTS`).
    pub elapsed: Duration,
    /// The ZooKeeper server's version.
    pub server_version: String,
    /// The run's directory (the holds), kept when the run failed.
    pub kept_dir: Option<PathBuf>,
    /// How many times our clients' connections were cut (`--cut-every-ms`).
    pub cuts: u64,
}

impl Totals {
    /// Checks `holds` against `recipe`'s rule and puts it all together.
    ///
    /// # Errors
    /// A hold the rule does not know.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        recipe: Recipe,
        rule: Rule,
        negative_control: bool,
        (java, rust): (Counts, Counts),
        holds: &[Hold],
        elapsed: Duration,
        server_version: String,
    ) -> Result<Totals> {
        let recorded = |java: bool| {
            holds
                .iter()
                .filter(|h| h.is_java() == java)
                .map(|h| (h.who.as_str(), h.n))
                .collect::<BTreeSet<_>>()
                .len() as u64
        };
        Ok(Totals {
            recipe,
            rule,
            negative_control,
            java,
            rust,
            java_recorded: recorded(true),
            rust_recorded: recorded(false),
            verdict: super::check::check(rule, holds)?,
            order: (recipe == Recipe::Mutex).then(|| LockOrder::of(holds)),
            elapsed,
            server_version,
            kept_dir: None,
            cuts: 0,
        })
    }

    /// Holds that broke the recipe's rule.
    pub fn violations(&self) -> u64 {
        self.verdict.violations
    }

    /// Why the run fails, if it does: a violation (none, for a negative control), a side that
    /// never acquired, an acquisition without its hold recorded, or our fencing tokens going
    /// backwards in lock order.
    pub fn failure(&self) -> Option<String> {
        let mut why = Vec::new();
        if self.negative_control {
            if self.violations() == 0 {
                why.push("negative control: the checker saw no violation".to_owned());
            }
        } else if self.violations() > 0 {
            why.push(format!(
                "{} violations: {:?} broken",
                self.violations(),
                self.rule
            ));
        }
        for (side, counts, recorded) in [
            ("Curator's clients", self.java, self.java_recorded),
            ("our clients", self.rust, self.rust_recorded),
        ] {
            if counts.acquisitions == 0 {
                why.push(format!("{side} never acquired"));
            }
            if counts.acquisitions != recorded {
                why.push(format!(
                    "{side} counted {} acquisitions but recorded {recorded}",
                    counts.acquisitions
                ));
            }
        }
        if let Some(order) = &self.order
            && order.token_regressions > 0
        {
            why.push(format!(
                "our fencing tokens went backwards {} times in lock order",
                order.token_regressions
            ));
        }
        (!why.is_empty()).then(|| why.join("; "))
    }
}

impl fmt::Display for Totals {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (j, r, v) = (&self.java, &self.rust, &self.verdict);
        let secs = self.elapsed.as_secs_f64().max(1e-9);
        writeln!(
            f,
            "server:  ZooKeeper {}, standalone, one fresh server",
            self.server_version
        )?;
        for (who, c) in [("curator:", j), ("ours:   ", r)] {
            writeln!(
                f,
                "{who} {:>6} acquisitions ({:>6.1}/s) by {} clients, {} errors",
                c.acquisitions,
                c.acquisitions as f64 / secs,
                c.clients,
                c.errors
            )?;
        }
        writeln!(
            f,
            "check:   {:?} over {} holds: {} violations, at most {} held at once{}",
            self.rule,
            v.holds,
            v.violations,
            v.peak,
            if self.recipe == Recipe::Rwlock {
                format!(", {} downgrades of ours", v.downgrades)
            } else {
                String::new()
            }
        )?;
        if let Some(o) = &self.order {
            write_order(f, o)?;
        }
        writeln!(
            f,
            "time:    {:.1} s of contention",
            self.elapsed.as_secs_f64()
        )?;
        if self.cuts > 0 {
            writeln!(
                f,
                "faults:  our clients' connections cut {} times (sessions kept)",
                self.cuts
            )?;
        }
        if !v.conflicts.is_empty() {
            writeln!(f, "conflicts (the hold that began, and one it overlapped):")?;
            for c in &v.conflicts {
                writeln!(f, "  >> {}", c.later)?;
                writeln!(f, "     {} ({} held)", c.earlier, c.held)?;
            }
        }
        if let Some(dir) = &self.kept_dir {
            writeln!(f, "kept:    {}", dir.display())?;
        }
        Ok(())
    }
}

fn write_order(f: &mut fmt::Formatter<'_>, o: &LockOrder) -> fmt::Result {
    writeln!(
        f,
        "order:   {} holds ({} Curator, {} ours), {} handoffs between Curator and ours",
        o.java_entries + o.rust_entries,
        o.java_entries,
        o.rust_entries,
        o.handoffs
    )?;
    writeln!(
        f,
        "         lock-node sequence {} in lock order; our fencing tokens {}",
        if o.sequence_decreases == 0 {
            "always increasing".to_owned()
        } else {
            format!(
                "decreased {} times (a recreated container parent restarts it)",
                o.sequence_decreases
            )
        },
        if o.token_regressions == 0 {
            "always increasing".to_owned()
        } else {
            format!("went backwards {} times", o.token_regressions)
        }
    )?;
    if o.longest_ours_run.0 > 0 {
        writeln!(
            f,
            "         longest run of ours between two of Curator's: {} holds in {:.2} ms",
            o.longest_ours_run.0,
            o.longest_ours_run.1 as f64 / 1e6
        )?;
    }
    let gap = |(n, total): (u64, u64)| {
        if n == 0 {
            "-".to_owned()
        } else {
            format!("{:.2} ms", total as f64 / n as f64 / 1e6)
        }
    };
    writeln!(
        f,
        "handoff: mean hold-to-hold (hold included): curator->curator {}, curator->ours {}, \
         ours->curator {}, ours->ours {}",
        gap(o.gaps[0]),
        gap(o.gaps[1]),
        gap(o.gaps[2]),
        gap(o.gaps[3])
    )?;
    if let [Some(to_ours), Some(to_curator)] = o.closest {
        let us = |ns: i64| ns as f64 / 1e3;
        writeln!(
            f,
            "clocks:  closest hand-offs curator->ours {:.1} µs, ours->curator {:.1} µs: \
             Curator's clock is at most the first ahead of ours and the second behind",
            us(to_ours),
            us(to_curator)
        )?;
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::interop::holds::Mode;

    #[test]
    fn counts_round_trip() {
        let c = Counts {
            clients: 2,
            acquisitions: 300,
            errors: 1,
        };
        let (side, parsed) = Counts::parse(&c.line("rust")).unwrap();
        assert_eq!((side.as_str(), parsed), ("rust", c));
        assert!(Counts::parse("COUNTS side=java acquisitions=1").is_err());
    }

    fn hold(who: &str, n: u64, from: u64, token: Option<i64>) -> Hold {
        Hold {
            who: who.into(),
            n,
            on: "lock".into(),
            mode: Mode::Exclusive,
            from,
            to: from + 10,
            node: None,
            token,
        }
    }

    fn totals(negative: bool, holds: &[Hold], java: u64, rust: u64) -> Totals {
        let counts = |acquisitions| Counts {
            clients: 1,
            acquisitions,
            errors: 0,
        };
        Totals::new(
            Recipe::Mutex,
            Rule::Exclusive,
            negative,
            (counts(java), counts(rust)),
            holds,
            Duration::from_secs(1),
            "3.8".into(),
        )
        .unwrap()
    }

    #[test]
    fn a_clean_run_passes_and_every_failure_is_named() {
        let clean = [
            hold("java-0", 1, 0, None),
            hold("rust-0", 1, 20, Some(5)),
            hold("rust-0", 2, 40, Some(7)),
        ];
        assert_eq!(totals(false, &clean, 1, 2).failure(), None);
        // The same holds as a negative control: it saw nothing, so it fails.
        assert!(
            totals(true, &clean, 1, 2)
                .failure()
                .unwrap()
                .contains("saw no")
        );
        // A count without its hold.
        let why = totals(false, &clean, 1, 3).failure().unwrap();
        assert!(
            why.contains("counted 3 acquisitions but recorded 2"),
            "{why}"
        );
        // An overlap, and tokens backwards.
        let bad = [
            hold("java-0", 1, 0, None),
            hold("rust-0", 1, 5, Some(9)),
            hold("rust-0", 2, 40, Some(7)),
        ];
        let t = totals(false, &bad, 1, 2);
        let why = t.failure().unwrap();
        assert!(why.contains("1 violations"), "{why}");
        assert!(why.contains("backwards 1 times"), "{why}");
        assert!(t.to_string().contains(">> HOLD who=rust-0 n=1"), "{t}");
        // No hold of Curator's.
        let why = totals(false, &clean[1..], 0, 2).failure().unwrap();
        assert!(why.contains("Curator's clients never acquired"), "{why}");
    }
}
