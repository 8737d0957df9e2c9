//! What the holds of one exclusive lock say about the order it was held in ([`LockOrder`]):
//! hand-offs between Curator and us, the lock nodes' sequence numbers, our fencing tokens.

use super::holds::Hold;

/// The lock order, from the holds of one lock sorted by when they began.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LockOrder {
    /// Holds by Curator's clients.
    pub java_entries: u64,
    /// Holds by ours.
    pub rust_entries: u64,
    /// Consecutive holds where the holder went from Curator to us or back.
    pub handoffs: u64,
    /// Consecutive holds whose lock nodes' sequence numbers did not increase (a fair lock's
    /// holders follow the sequence; the only innocent cause is the container parent being
    /// deleted while empty and recreated, which restarts the sequence), a cohort's local
    /// hand-offs aside (ours after ours on one node, the later with no token).
    pub sequence_decreases: u64,
    /// Our holds whose fencing token (the lock node's czxid) was not above the previous one
    /// of ours in lock order.
    pub token_regressions: u64,
    /// Between consecutive holds, by who held then who: Curator then Curator, Curator then
    /// ours, ours then Curator, ours then ours: (count, total ns from one hold's beginning to
    /// the next one's, which includes the first one's hold).
    pub gaps: [(u64, u64); 4],
    /// The shortest hand-offs between the sides, from one hold's end to the next one's
    /// beginning, in ns: Curator then ours, ours then Curator (none without such a hand-off;
    /// negative when the holds overlapped). They bound how far the two sides' clocks can
    /// disagree: if Curator's stamps ran `s` ahead of ours, the real hand-offs would be the
    /// first minus `s` and the second plus `s`, both positive, so `-second < s < first`.
    pub closest: [Option<i64>; 2],
    /// The longest run of our holds between two of Curator's (a cohort's batch, seen from
    /// Curator's waiters): how many, and from the first one's beginning to the last one's
    /// end, in ns.
    pub longest_ours_run: (u64, u64),
}

impl LockOrder {
    /// The order of `holds` (all of one lock).
    pub fn of(holds: &[Hold]) -> LockOrder {
        let mut sorted: Vec<&Hold> = holds.iter().collect();
        sorted.sort_by_key(|h| (h.from, h.to));
        let mut order = LockOrder::default();
        let mut last: Option<&Hold> = None;
        let mut last_seq: Option<u64> = None;
        let mut last_token: Option<i64> = None;
        // Our run under way: its holds and when its first one began.
        let mut run: Option<(u64, u64)> = None;
        for hold in sorted {
            if hold.is_java() {
                if let (Some((n, from)), Some(prev)) = (run.take(), last) {
                    let span = prev.to.saturating_sub(from);
                    if (n, span) > order.longest_ours_run {
                        order.longest_ours_run = (n, span);
                    }
                }
            } else {
                run = Some(run.map_or((1, hold.from), |(n, from)| (n + 1, from)));
            }
            // A cohort's local hand-off: ours after ours on the same node, carrying no
            // token of its own (the batch's first hold has it).
            let local_handoff = last.is_some_and(|prev| {
                !prev.is_java() && !hold.is_java() && hold.token.is_none() && prev.node == hold.node
            });
            if hold.is_java() {
                order.java_entries += 1;
            } else {
                order.rust_entries += 1;
            }
            if let Some(prev) = last {
                if prev.is_java() != hold.is_java() {
                    order.handoffs += 1;
                }
                let kind = usize::from(!prev.is_java()) * 2 + usize::from(!hold.is_java());
                if prev.is_java() != hold.is_java() {
                    let gap = i64::try_from(hold.from).unwrap_or(i64::MAX)
                        - i64::try_from(prev.to).unwrap_or(i64::MAX);
                    if let Some(slot) = order.closest.get_mut(usize::from(!prev.is_java())) {
                        *slot = Some(slot.map_or(gap, |g| g.min(gap)));
                    }
                }
                if let Some(gap) = order.gaps.get_mut(kind) {
                    gap.0 += 1;
                    gap.1 += hold.from.saturating_sub(prev.from);
                }
            }
            last = Some(hold);
            let seq = hold.node.as_deref().and_then(sequence);
            if let (Some(prev), Some(seq)) = (last_seq, seq)
                && (seq < prev || (seq == prev && !local_handoff))
            {
                order.sequence_decreases += 1;
            }
            last_seq = seq.or(last_seq);
            if let Some(token) = hold.token {
                if last_token.is_some_and(|prev| token <= prev) {
                    order.token_regressions += 1;
                }
                last_token = Some(token);
            }
        }
        order
    }
}

/// The sequence number of a lock node's name (`..-lock-0000000012` → 12).
fn sequence(node: &str) -> Option<u64> {
    node.rsplit_once("lock-")?.1.parse().ok()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::interop::holds::Mode;

    fn h(who: &str, seq: u64, token: Option<i64>, from: u64) -> Hold {
        Hold {
            who: who.into(),
            n: 1,
            on: "lock".into(),
            mode: Mode::Exclusive,
            from,
            to: from + 100,
            node: Some(format!("_c_x-lock-{seq:010}")),
            token,
        }
    }

    #[test]
    fn the_order_is_read_from_the_beginnings() {
        // Given out of order, as the files are read.
        let holds = [
            h("java-0", 2, None, 4000),
            h("rust-0", 0, Some(100), 1000),
            h("rust-1", 4, Some(90), 8000),
            h("java-1", 1, None, 3000),
            h("rust-0", 3, Some(120), 8500),
        ];
        let order = LockOrder::of(&holds);
        assert_eq!((order.java_entries, order.rust_entries), (2, 3));
        assert_eq!(order.handoffs, 2);
        assert_eq!(order.sequence_decreases, 1);
        assert_eq!(order.token_regressions, 1);
        assert_eq!(order.gaps, [(1, 1000), (1, 4000), (1, 2000), (1, 500)]);
        // Holds last 100 ns: Curator's ends at 4100, ours begins at 8000; ours ends at 1100,
        // Curator's begins at 3000.
        assert_eq!(order.closest, [Some(3900), Some(1900)]);
    }

    #[test]
    fn a_cohorts_local_hand_offs_are_not_sequence_decreases() {
        // Ours on node 5 three times (a batch: the first with the token), then Curator on 6.
        let holds = [
            h("rust-0", 5, Some(100), 1000),
            h("rust-1", 5, None, 2000),
            h("rust-0", 5, None, 3000),
            h("java-0", 6, None, 4000),
        ];
        let order = LockOrder::of(&holds);
        assert_eq!((order.sequence_decreases, order.token_regressions), (0, 0));
        // Curator's waiter waited behind three of ours: 1000 to 3100.
        assert_eq!(order.longest_ours_run, (3, 2100));
        // Ours on one node twice, each with the token: the same node held twice.
        let twice = [
            h("rust-0", 5, Some(100), 1000),
            h("rust-1", 5, Some(100), 2000),
        ];
        let order = LockOrder::of(&twice);
        assert_eq!((order.sequence_decreases, order.token_regressions), (1, 1));
    }

    #[test]
    fn sequences_are_read_from_node_names() {
        assert_eq!(sequence("_c_ab-lock-0000000012"), Some(12));
        assert_eq!(sequence("lock-x"), None);
        assert_eq!(sequence("other"), None);
    }
}
