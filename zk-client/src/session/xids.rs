//! [`Xids`]: the xids of normal requests.

/// Allocates xids for normal requests: 1, 2, ... `i32::MAX`, then 1 again; never 0 or a
/// negative value, which ZooKeeper reserves (see `zk_proto::xid`).
#[derive(Debug, Clone)]
pub(crate) struct Xids {
    next: i32,
}

impl Default for Xids {
    fn default() -> Self {
        Self { next: 1 }
    }
}

impl Xids {
    pub(crate) fn next(&mut self) -> i32 {
        let xid = self.next;
        self.next = if xid == i32::MAX { 1 } else { xid + 1 };
        xid
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn wraps_to_one_never_zero_or_negative() {
        let mut x = Xids { next: i32::MAX - 1 };
        assert_eq!([x.next(), x.next(), x.next()], [i32::MAX - 1, i32::MAX, 1]);
    }
}
