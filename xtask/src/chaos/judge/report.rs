//! The verdict as the run's report shows it: the table of rows, the server loss, the first
//! violations, and every finding for the report's file.

use std::fmt;

use super::Verdict;

/// How many violations the report prints.
const SHOWN: usize = 12;

impl Verdict {
    /// Every violation and judge error, one per line (the report shows the first few).
    pub fn all_findings(&self) -> String {
        let mut text = String::new();
        for v in &self.violations {
            text.push_str(&format!(
                "zxid {:#x} {} {}: {}\n",
                v.zxid, v.label, v.lib, v.text
            ));
        }
        for e in &self.errors {
            text.push_str(&format!("judge error: {e}\n"));
        }
        text
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (a, b) = self.span.unwrap_or_default();
        let (marks, writes) = self.judged();
        writeln!(
            f,
            "log judge: {} txns judged ({marks} marks, {writes} register writes), zxids \
             {a:#x}..{b:#x} (every member's log, merged; {} logged by a minority left out, \
             never committed)",
            self.txns, self.uncommitted
        )?;
        writeln!(
            f,
            "{:<16} {:<5} {:>7} {:>7} {:>11} {:>9} {:>6} {:>5} {:>8} {:>6} {:>7} {:>6} {:>6} {:>7}",
            "recipe",
            "lib",
            "marks",
            "writes",
            "not-granted",
            "exclusion",
            "tokens",
            "lost",
            "no-inner",
            "missed",
            "foreign",
            "claim",
            "unacct",
            "excused"
        )?;
        for ((label, lib), r) in &self.rows {
            writeln!(
                f,
                "{label:<16} {lib:<5} {:>7} {:>7} {:>11} {:>9} {:>6} {:>5} {:>8} {:>6} {:>7} {:>6} {:>6} {:>7}",
                r.marks,
                r.writes,
                r.not_granted,
                r.exclusion,
                r.tokens,
                r.lost_updates,
                r.no_inner,
                r.missed_turns,
                r.foreign_deletes,
                r.claims,
                r.unaccounted,
                r.excused
            )?;
        }
        let deletes = |operator: bool| {
            let mut nodes: Vec<&str> = self
                .ended_by_delete
                .iter()
                .filter(|d| d.by_operator == operator)
                .map(|d| d.node.as_str())
                .collect();
            nodes.sort_unstable();
            nodes.dedup();
            nodes.len()
        };
        match self.accounted {
            Some(n) => writeln!(
                f,
                "  holds of ours accounted for: {n}, each by its mark or by an unmarked record \
                 and the lost signal ({} unmarked records)",
                self.unmarked.len()
            )?,
            None if self.server_loss.is_some() => writeln!(
                f,
                "  holds of ours not accounted for: the servers lost history"
            )?,
            None => {}
        }
        let (operator, others) = (deletes(true), deletes(false));
        if operator + others > 0 {
            writeln!(
                f,
                "  held nodes deleted by another session: {operator} by the operator (excused: \
                 the marks counted in `excused`), {others} by a client"
            )?;
        }
        if let Some(loss) = &self.server_loss {
            writeln!(
                f,
                "  THE SERVERS LOST COMMITTED TRANSACTIONS: at zxid {:#x} the {} of {} went back \
                 to {} where the logs (a majority of members) had reached {} ({} first logged at \
                 {:#x}): the leader of epoch {:#x} took office without the history from there, \
                 which the servers had served; judged up to {:#x}, where its epoch began, {} \
                 txns from there not judged",
                loss.zxid,
                loss.what,
                loss.path,
                loss.version,
                loss.had,
                loss.version,
                loss.since,
                loss.zxid >> 32,
                loss.parted,
                self.unjudged
            )?;
            writeln!(
                f,
                "  {}",
                if self.server_loss_accepted {
                    "the loss is accepted: the run is judged up to there"
                } else {
                    "INCONCLUSIVE: the run fails (a run may accept a server loss)"
                }
            )?;
        }
        for v in self.violations.iter().take(SHOWN) {
            writeln!(f, "  zxid {:#x} {} {}: {}", v.zxid, v.label, v.lib, v.text)?;
        }
        if self.violations.len() > SHOWN {
            writeln!(f, "  ... {} more", self.violations.len() - SHOWN)?;
        }
        for e in self.errors.iter().take(SHOWN) {
            writeln!(f, "  judge error: {e}")?;
        }
        if self.errors.len() > SHOWN {
            writeln!(f, "  ... {} more judge errors", self.errors.len() - SHOWN)?;
        }
        Ok(())
    }
}
