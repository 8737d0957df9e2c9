//! A new mark judged: its claim, its nodes (live, its own, with their tokens, granted), and
//! the exclusion in each directory it holds a node in.

use super::marks::{self, Held, Mode};
use super::replay::{Judge, Live};
use super::{Row, rules, tree};

impl Judge<'_> {
    pub(super) fn mark_created(&mut self, zxid: i64, path: &str) {
        let Some(node) = self.tree.node(path) else {
            return;
        };
        let Some(session) = node.owner else {
            // A mark lives as long as its holder's session, or it stands for a hold that
            // ended: one that is not ephemeral is no mark the judge can read.
            let data = String::from_utf8_lossy(&node.data).into_owned();
            self.verdict.errors.push(format!(
                "zxid {zxid:#x}: {path} (data {data:?}) under the marks is not ephemeral"
            ));
            return;
        };
        if let Some(lib) = marks::parse_session(&node.data) {
            self.libs.insert(session, lib);
            self.registered.entry(session).or_insert(zxid);
            return;
        }
        let name = Self::under(path, &self.cfg.marks)
            .unwrap_or(path)
            .to_owned();
        if let Some(hold) = name.strip_prefix(marks::UNMARKED) {
            let hold = hold.to_owned();
            self.unmarked_record(zxid, path, hold);
            return;
        }
        let Some(mark) = marks::parse_mark(&node.data) else {
            let data = String::from_utf8_lossy(&node.data).into_owned();
            self.verdict
                .errors
                .push(format!("zxid {zxid:#x}: mark {path} with data {data:?}"));
            return;
        };
        let label = self.label_of(&mark.holds);
        self.verdict.row(&label, &mark.lib).marks += 1;
        self.verdict.marked.insert(name);
        for held in &mark.holds {
            self.granted_since.remove(&held.node);
            self.claimed.insert(held.node.clone());
        }
        self.libs.insert(session, mark.lib.clone());
        for held in &mark.holds {
            if let Err(why) = self.check_claim(&mark.lock, mark.mode, held) {
                let text = format!("mark {path} of session {session:#x}: {why}");
                self.verdict
                    .violate(zxid, &label, &mark.lib, |r| &mut r.claims, text);
            }
        }
        for held in &mark.holds {
            if let Err(why) = self.check_held(held, Some(session)) {
                let count: fn(&mut Row) -> &mut u64 = if why.contains("czxid") {
                    |r| &mut r.tokens
                } else {
                    |r| &mut r.not_granted
                };
                let text = format!(
                    "mark {path} of session {session:#x}: {why}{}",
                    self.operator_how(&held.node)
                );
                self.verdict.violate(zxid, &label, &mark.lib, count, text);
            }
        }
        self.marks.insert(
            path.to_owned(),
            Live {
                session,
                mark: mark.clone(),
                zxid,
            },
        );
        // Exclusion in each directory the new mark holds a node in.
        for held in &mark.holds {
            let (dir, _) = tree::split(&held.node);
            let Some(l) = self.lock_dir(dir).cloned() else {
                continue;
            };
            let mut in_dir: Vec<(&String, &Live, &Held)> = Vec::new();
            // Excused marks: path, library, whether a writer.
            let mut excused: Vec<(String, String, bool)> = Vec::new();
            // A writer by its node's name or by its own claim: a hold that believes it
            // writes is a writer, whatever node it holds.
            let is_writer = |live: &Live, node: &str| {
                rules::is_writer(l.kind, tree::split(node).1) || live.mark.mode == Mode::Write
            };
            for (p, live) in &self.marks {
                for h in &live.mark.holds {
                    if tree::split(&h.node).0 != dir {
                        continue;
                    }
                    // Its node deleted by the operator since the mark was made: the holder
                    // may believe it holds, the lock rightly went on.
                    if self.excused_at(h, live.zxid, zxid) {
                        let writer = is_writer(live, &h.node);
                        excused.push((p.clone(), live.mark.lib.clone(), writer));
                    } else {
                        in_dir.push((p, live, h));
                    }
                }
            }
            let writers = in_dir
                .iter()
                .filter(|(_, live, h)| is_writer(live, &h.node))
                .count();
            // Counted once per mark, the first time leaving it out spared a breach.
            let excused_writers = excused.iter().filter(|(_, _, w)| *w).count();
            let all = in_dir.len() + excused.len();
            if !excused.is_empty()
                && !rules::excludes(
                    l.kind,
                    writers + excused_writers,
                    all - writers - excused_writers,
                )
            {
                for (p, lib, _) in excused {
                    if self.excused.insert(p) {
                        self.verdict.row(&l.label, &lib).excused += 1;
                    }
                }
            }
            if rules::excludes(l.kind, writers, in_dir.len() - writers) {
                continue;
            }
            let holders: Vec<String> = in_dir
                .iter()
                .map(|(p, live, h)| {
                    let why = match self.check_held(h, Some(live.session)) {
                        Ok(_) => String::new(),
                        Err(why) => format!(": {why}{}", self.gone_how(&h.node)),
                    };
                    format!("{p} ({}, session {:#x}{why})", live.mark.lib, live.session)
                })
                .collect();
            // Blamed on each holder whose node the rule does not grant, or, when the record
            // shows another session took that node away from under the holder's mark (which
            // let the next one in), on that session; on the new mark if none.
            let mut blamed: Vec<(String, String)> = in_dir
                .iter()
                .filter(|(_, live, h)| self.check_held(h, Some(live.session)).is_err())
                .map(|(_, live, h)| match self.vanished_by(h) {
                    Some(deleter) => (
                        self.lib_of(deleter),
                        format!("; blamed on session {deleter:#x}, which deleted {}", h.node),
                    ),
                    None => (live.mark.lib.clone(), String::new()),
                })
                .collect();
            if blamed.is_empty() {
                blamed.push((mark.lib.clone(), String::new()));
            }
            // One per library, a deleter's explanation first.
            blamed.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
            blamed.dedup_by(|a, b| a.0 == b.0);
            for (lib, why) in blamed {
                let text = format!(
                    "{} live marks in {dir}: {}{why}",
                    in_dir.len(),
                    holders.join(", ")
                );
                self.verdict
                    .violate(zxid, &l.label, &lib, |r| &mut r.exclusion, text);
            }
        }
    }
}
