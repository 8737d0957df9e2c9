//! The checks a hold's node is put to against the replayed record (its claim, whether it is
//! live, carries its token and is granted), and who the record says ended it.

use super::marks::{self, Held, Mode};
use super::replay::Judge;
use super::{LockDir, rules, tree};

impl Judge<'_> {
    /// Whether `held`, named by a mark made at `marked`, is excused at `zxid`: the operator
    /// deleted that very node (its token is the deleted node's czxid) after the mark was made
    /// and at or before `zxid`.
    pub(super) fn excused_at(&self, held: &Held, marked: i64, zxid: i64) -> bool {
        self.operator_deleted
            .get(&held.node)
            .is_some_and(|&(deleted, czxid)| {
                czxid == held.token && marked < deleted && deleted <= zxid
            })
    }

    /// ` (deleted by the operator's session S at zxid Z)` when the operator deleted `node`.
    pub(super) fn operator_how(&self, node: &str) -> String {
        self.operator_deleted
            .get(node)
            .map_or_else(String::new, |(z, _)| {
                format!(" (deleted by the operator at zxid {z:#x})")
            })
    }

    /// How a node that is gone went: the zxid and session of its delete.
    pub(super) fn gone_how(&self, node: &str) -> String {
        let life = self.tree.lives.iter().rev().find(|n| n.path == node);
        match life.map(|n| (n.deleted, n.deleted_by)) {
            Some((Some(z), Some(s))) => format!(" (deleted at zxid {z:#x} by session {s:#x})"),
            Some((Some(z), None)) => format!(" (deleted at zxid {z:#x})"),
            _ => String::new(),
        }
    }

    /// The library of `session` as far as the record has said by now. Ours register every
    /// session before it touches a lock (checked at the end, with [`Judge::first_node`]), so
    /// a session that has neither registered nor marked is Curator's.
    pub(super) fn lib_of(&self, session: i64) -> String {
        self.libs
            .get(&session)
            .map_or_else(|| "java".to_owned(), String::clone)
    }

    /// The session that took `held`'s node away from its holder, when the record shows one
    /// other than the node's owner: that node's life (by its token) deleted by a session
    /// neither its owner (a release before the unmark is the holder's own doing) nor the
    /// operator's (whose deletes are excused from the delete on, and not before the mark).
    /// Before or after the mark was made: a holder that marks plainly (Curator's) may mark
    /// a node taken from it after it was granted.
    pub(super) fn vanished_by(&self, held: &Held) -> Option<i64> {
        let life = self
            .tree
            .lives
            .iter()
            .rev()
            .find(|n| n.path == held.node && n.czxid == held.token)?;
        let by = life.deleted_by?;
        (life.owner != Some(by) && !self.cfg.operators.contains(&by)).then_some(by)
    }

    /// Whether a hold's claim fits `held`'s node: it is a node of `lock` and holds `mode` by
    /// its directory's kind and its name; else why not. (A node in no lock directory the
    /// judge knows is [`Judge::check_held`]'s finding.)
    pub(super) fn check_claim(&self, lock: &str, mode: Mode, held: &Held) -> Result<(), String> {
        if !marks::is_of(&held.node, lock) {
            return Err(format!(
                "{} is not a node of the lock {lock} it names",
                held.node
            ));
        }
        let (dir, name) = tree::split(&held.node);
        match self.lock_dir(dir) {
            Some(l) if !rules::fits(l.kind, mode, name) => Err(format!(
                "{} claimed on {}, which does not hold it",
                mode.as_str(),
                held.node
            )),
            _ => Ok(()),
        }
    }

    /// Whether `held`'s node is live, carries its token, and is granted; else why not.
    pub(super) fn check_held(&self, held: &Held, owner: Option<i64>) -> Result<&LockDir, String> {
        let (dir, name) = tree::split(&held.node);
        let Some(l) = self.lock_dir(dir) else {
            return Err(format!(
                "{} is in no lock directory the judge knows",
                held.node
            ));
        };
        let Some(node) = self.tree.node(&held.node) else {
            return Err(format!("{} does not exist", held.node));
        };
        if let Some(s) = owner {
            if node.owner != Some(s) {
                return Err(format!(
                    "{} is owned by session {:#x?}, not the marker's {s:#x}",
                    held.node, node.owner
                ));
            }
        }
        if node.czxid != held.token {
            return Err(format!(
                "{} has czxid {:#x}, token {:#x} given",
                held.node, node.czxid, held.token
            ));
        }
        if !rules::granted(l.kind, self.tree.children(dir), name) {
            let order: Vec<&str> = self.tree.children(dir).collect();
            return Err(format!("{name} is not granted among {order:?}"));
        }
        Ok(l)
    }

    pub(super) fn label_of(&self, held: &[Held]) -> String {
        held.iter()
            .find_map(|h| self.lock_dir(tree::split(&h.node).0))
            .map_or_else(|| "?".to_owned(), |l| l.label.clone())
    }
}
