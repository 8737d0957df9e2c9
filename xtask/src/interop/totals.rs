//! What the sides report ([`Counts`]) and what the harness makes of them: the lock-order
//! log ([`LockOrder`]) and the mutex run's totals ([`MutexTotals`]).

use super::*;

/// What one side reports at the end of its run: `COUNTS side=<s> clients=<n>
/// acquisitions=<n> violations=<n> errors=<n>`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Clients (sessions) on this side.
    pub clients: u64,
    /// Times a client of this side took the lock.
    pub acquisitions: u64,
    /// Times a client of this side found the marker present in its critical section (or
    /// gone when it came to delete it).
    pub violations: u64,
    /// Failed acquires, releases or critical sections (logged on stderr; the loop goes on).
    pub errors: u64,
}

impl Counts {
    /// The `COUNTS` line for side `side` (`java`, `rust`).
    pub fn line(&self, side: &str) -> String {
        format!(
            "COUNTS side={side} clients={} acquisitions={} violations={} errors={}",
            self.clients, self.acquisitions, self.violations, self.errors
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
            violations: f.number("violations")?,
            errors: f.number("errors")?,
        };
        Ok((f.text("side")?.to_owned(), counts))
    }
}

/// What the shared log says about the order in which the lock was held.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LockOrder {
    /// Critical sections logged by Curator's clients.
    pub java_entries: u64,
    /// Critical sections logged by ours.
    pub rust_entries: u64,
    /// Consecutive critical sections where the holder went from Curator to us or back.
    pub handoffs: u64,
    /// Consecutive critical sections whose lock nodes' sequence numbers did not increase (a
    /// fair lock's holders follow the sequence; the only innocent cause is the container
    /// parent being deleted while empty and recreated, which restarts the sequence).
    pub sequence_decreases: u64,
    /// Our critical sections whose fencing token (the lock node's czxid) was not above the
    /// previous one of ours in lock order.
    pub token_regressions: u64,
    /// The log lines around the first overlaps, for the report.
    pub overlap_context: Vec<String>,
    /// Between consecutive critical sections, by who held then who: Curator then Curator,
    /// Curator then ours, ours then Curator, ours then ours: (count, total µs from one
    /// entry to the next, which includes the first one's hold).
    pub gaps: [(u64, u64); 4],
}

/// The outcome of [`run_mutex`].
#[derive(Debug, Clone)]
pub struct MutexTotals {
    /// Curator's side.
    pub java: Counts,
    /// Ours.
    pub rust: Counts,
    /// From the shared log.
    pub order: LockOrder,
    /// How long the contention ran (from `GO` to the last `COUNTS`).
    pub elapsed: Duration,
    /// The ZooKeeper server's version.
    pub server_version: String,
    /// The temporary directory of the marker and the log, kept when there were violations.
    pub kept_dir: Option<PathBuf>,
}

impl MutexTotals {
    /// Violations seen by both sides.
    pub fn violations(&self) -> u64 {
        self.java.violations + self.rust.violations
    }

    /// Why the run fails, if it does: a violation, a side that never took the lock, or our
    /// fencing tokens going backwards in lock order.
    pub fn failure(&self) -> Option<String> {
        let mut why = Vec::new();
        if self.violations() > 0 {
            why.push(format!(
                "{} violations: two holders at once",
                self.violations()
            ));
        }
        if self.java.acquisitions == 0 {
            why.push("Curator's clients never took the lock".to_owned());
        }
        if self.rust.acquisitions == 0 {
            why.push("our clients never took the lock".to_owned());
        }
        if self.order.token_regressions > 0 {
            why.push(format!(
                "our fencing tokens went backwards {} times in lock order",
                self.order.token_regressions
            ));
        }
        (!why.is_empty()).then(|| why.join("; "))
    }
}

impl fmt::Display for MutexTotals {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (j, r, o) = (&self.java, &self.rust, &self.order);
        let secs = self.elapsed.as_secs_f64().max(1e-9);
        writeln!(
            f,
            "server:  ZooKeeper {}, standalone, one fresh server",
            self.server_version
        )?;
        writeln!(
            f,
            "curator: {:>6} acquisitions ({:>6.1}/s) by {} clients, {} violations, {} errors",
            j.acquisitions,
            j.acquisitions as f64 / secs,
            j.clients,
            j.violations,
            j.errors
        )?;
        writeln!(
            f,
            "ours:    {:>6} acquisitions ({:>6.1}/s) by {} clients, {} violations, {} errors",
            r.acquisitions,
            r.acquisitions as f64 / secs,
            r.clients,
            r.violations,
            r.errors
        )?;
        writeln!(
            f,
            "log:     {} critical sections ({} Curator, {} ours), {} handoffs between Curator \
             and ours",
            o.java_entries + o.rust_entries,
            o.java_entries,
            o.rust_entries,
            o.handoffs
        )?;
        writeln!(
            f,
            "order:   lock-node sequence {} in lock order; our fencing tokens {}",
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
        let gap = |(n, total): (u64, u64)| {
            if n == 0 {
                "-".to_owned()
            } else {
                format!("{:.2} ms", total as f64 / n as f64 / 1e3)
            }
        };
        writeln!(
            f,
            "handoff: mean entry-to-entry (hold included): curator->curator {}, \
             curator->ours {}, ours->curator {}, ours->ours {}",
            gap(o.gaps[0]),
            gap(o.gaps[1]),
            gap(o.gaps[2]),
            gap(o.gaps[3])
        )?;
        writeln!(
            f,
            "time:    {:.1} s of contention",
            self.elapsed.as_secs_f64()
        )?;
        if !o.overlap_context.is_empty() {
            writeln!(
                f,
                "overlaps (log lines around each: holder, its count, lock node, token, flag):"
            )?;
            for line in &o.overlap_context {
                writeln!(f, "  {line}")?;
            }
        }
        if let Some(dir) = &self.kept_dir {
            writeln!(f, "kept:    {}", dir.display())?;
        }
        Ok(())
    }
}

/// Reads the shared log: `<holder> <its count> <lock node> <token or -> <ok|OVERLAP> <unix
/// µs>` per critical section, in the order the lock was held.
pub(super) fn read_log(path: &Path) -> Result<LockOrder> {
    let text = match fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == ErrorKind::NotFound => String::new(),
        Err(e) => return Err(format!("reading {}: {e}", path.display()).into()),
    };
    let lines: Vec<&str> = text.lines().collect();
    let mut order = LockOrder::default();
    let mut last_side: Option<&str> = None;
    let mut last_seq: Option<i64> = None;
    let mut last_token: Option<i64> = None;
    let mut last_micros: Option<u64> = None;
    let mut overlaps = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let &[who, _n, node, token, flag, micros] = fields.as_slice() else {
            order
                .overlap_context
                .push(format!("malformed log line: {line}"));
            continue;
        };
        let side = who.split('-').next().unwrap_or(who);
        match side {
            "java" => order.java_entries += 1,
            _ => order.rust_entries += 1,
        }
        let micros: Option<u64> = micros.parse().ok();
        if let (Some(prev), Some(now), Some(prev_side)) = (last_micros, micros, last_side) {
            let kind = usize::from(prev_side != "java") * 2 + usize::from(side != "java");
            if let Some(gap) = order.gaps.get_mut(kind) {
                gap.0 += 1;
                gap.1 += now.saturating_sub(prev);
            }
        }
        last_micros = micros;
        if last_side.is_some_and(|s| s != side) {
            order.handoffs += 1;
        }
        last_side = Some(side);
        let seq = node
            .rsplit_once("lock-")
            .and_then(|(_, seq)| seq.parse::<i64>().ok());
        if let (Some(prev), Some(seq)) = (last_seq, seq)
            && seq <= prev
        {
            order.sequence_decreases += 1;
        }
        last_seq = seq.or(last_seq);
        if let Ok(token) = token.parse::<i64>() {
            if last_token.is_some_and(|prev| token <= prev) {
                order.token_regressions += 1;
            }
            last_token = Some(token);
        }
        if flag != "ok" {
            overlaps.push(i);
        }
    }
    order.overlap_context = overlap_context(&lines, &overlaps);
    Ok(order)
}

/// The log lines around the first [`OVERLAPS_SHOWN`] overlaps (at `overlaps`, indexes into
/// `lines`): three before and after each, overlaps marked `>>`, gaps as `...`.
fn overlap_context(lines: &[&str], overlaps: &[usize]) -> Vec<String> {
    let shown = overlaps.get(..OVERLAPS_SHOWN).unwrap_or(overlaps);
    let mut out = Vec::new();
    let mut upto = 0;
    for &i in shown {
        let from = i.saturating_sub(3).max(upto);
        let to = (i + 4).min(lines.len());
        if from > upto {
            out.push("...".to_owned());
        }
        for (k, line) in lines.iter().enumerate().take(to).skip(from) {
            let mark = if overlaps.contains(&k) { ">>" } else { "  " };
            out.push(format!("{mark} {line}"));
        }
        upto = to.max(upto);
    }
    if let Some(more) = overlaps.len().checked_sub(shown.len()).filter(|&n| n > 0) {
        out.push(format!("... and {more} more overlaps: see the kept log"));
    }
    out
}
