//! A register write judged: its claim, the node it was made under, the live mark standing
//! for it, its token and its value against the register's last write.

use super::Row;
use super::marks::{self, Mode};
use super::replay::{Judge, Last};

impl Judge<'_> {
    pub(super) fn written(&mut self, zxid: i64, session: i64, path: &str) {
        let data = self
            .tree
            .node(path)
            .map(|n| n.data.clone())
            .unwrap_or_default();
        let Some(value) = marks::parse_register(&data) else {
            let data = String::from_utf8_lossy(&data).into_owned();
            self.verdict
                .errors
                .push(format!("zxid {zxid:#x}: register {path} set to {data:?}"));
            return;
        };
        let Some(marks::Writer {
            lib,
            lock,
            mode,
            held,
        }) = value.by
        else {
            self.verdict.errors.push(format!(
                "zxid {zxid:#x}: register {path} set by session {session:#x} without its writer"
            ));
            return;
        };
        let register = Self::under(path, &self.cfg.registers).unwrap_or(path);
        let Some(tied) = self.cfg.register_locks.get(register).cloned() else {
            self.verdict.errors.push(format!(
                "zxid {zxid:#x}: register {path} is tied to no lock the judge knows"
            ));
            return;
        };
        // The register's row: its own lock's recipe, whatever node it was written under.
        let label = self
            .cfg
            .locks
            .iter()
            .find(|l| l.dir == tied || marks::is_of(&l.dir, &tied))
            .map_or_else(
                || self.label_of(std::slice::from_ref(&held)),
                |l| l.label.clone(),
            );
        self.verdict.row(&label, &lib).writes += 1;
        let what = format!("write {} of {path} by session {session:#x}", value.value);
        let mut granted = true;
        // Each register is tied to its lock, written under that lock's node, in a mode that
        // keeps every other holder out.
        let mut wrong = Vec::new();
        if lock != tied {
            wrong.push(format!("names the lock {lock}, the register is {tied}'s"));
            if !marks::is_of(&held.node, &tied) {
                wrong.push(format!("{} is not a node of its lock {tied}", held.node));
            }
        }
        if let Err(why) = self.check_claim(&lock, mode, &held) {
            wrong.push(why);
        }
        if mode == Mode::Read {
            wrong.push("a read hold does not write: readers share the lock".to_owned());
        }
        if !wrong.is_empty() {
            granted = false;
            let text = format!("{what}: {}", wrong.join("; "));
            self.verdict
                .violate(zxid, &label, &lib, |r| &mut r.claims, text);
        }
        match self.check_held(&held, None) {
            Err(why) => {
                granted = false;
                let count: fn(&mut Row) -> &mut u64 = if why.contains("czxid") {
                    |r| &mut r.tokens
                } else {
                    |r| &mut r.not_granted
                };
                let how = self.operator_how(&held.node);
                self.verdict
                    .violate(zxid, &label, &lib, count, format!("{what}: {why}{how}"));
            }
            Ok(_) => {
                let marked = self.marks.values().any(|live| {
                    live.mark.mode == mode && live.mark.holds.iter().any(|h| h.node == held.node)
                });
                if !marked {
                    granted = false;
                    let text = format!(
                        "{what}: no live {} mark stands for {}",
                        mode.as_str(),
                        held.node
                    );
                    self.verdict
                        .violate(zxid, &label, &lib, |r| &mut r.not_granted, text);
                }
            }
        }
        if let Some(last) = self.registers.get(path).cloned() {
            // A breach after a write that was not granted is that write's doing.
            let blamed = if last.granted {
                lib.clone()
            } else {
                last.lib.clone()
            };
            if let Some(prev) = last.token.filter(|&t| held.token < t) {
                let text = format!("{what}: token {:#x} after {prev:#x}", held.token);
                self.verdict
                    .violate(zxid, &label, &blamed, |r| &mut r.tokens, text);
            }
            if value.value != last.value + 1 {
                let text = format!(
                    "{what}: after {} written at zxid {:#x} by session {:#x} (lost update)",
                    last.value, last.zxid, last.session
                );
                self.verdict
                    .violate(zxid, &label, &blamed, |r| &mut r.lost_updates, text);
            }
        }
        self.registers.insert(
            path.to_owned(),
            Last {
                value: value.value,
                token: Some(held.token),
                lib,
                granted,
                zxid,
                session,
            },
        );
    }
}
