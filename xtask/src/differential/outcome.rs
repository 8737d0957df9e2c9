//! What one step gave on one server, and the comparison of the two: equal field by field,
//! except that zxids and session ids are the servers' own, so each is mapped (one real value
//! to one in-memory value, order kept), and times are checked on each side against its own
//! zxids (one transaction, one time; later transactions, no earlier times). Pure: no IO.

use std::collections::BTreeMap;

use zk_proto::records::Stat;

/// A step's result, as both servers are compared on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// Nothing but success (`delete`, `sync`).
    Done,
    /// A created node's path.
    Created(String),
    /// `exists`: the stat, if the node exists.
    Exists(Option<Stat>),
    /// `getData`.
    Data(Vec<u8>, Stat),
    /// `setData`, `setACL`.
    Stat(Stat),
    /// `getChildren` (sorted: a real server lists them in its hash set's order), with the
    /// parent's stat for `getChildren2`.
    Children(Vec<String>, Option<Stat>),
    /// `getACL`: each entry as `perms scheme:id`.
    Acl(Vec<String>, Stat),
    /// `multi`: each op's result.
    Multi(Vec<MultiReply>),
    /// `getEphemerals` (sorted).
    Names(Vec<String>),
    /// `getAllChildrenNumber`.
    Count(i32),
}

/// One op's result in a `multi`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MultiReply {
    /// Created, with the stat the server gave (containers and TTL nodes only).
    Created(String, Option<Stat>),
    /// Deleted.
    Deleted,
    /// The new stat.
    DataSet(Stat),
    /// The check passed.
    Checked,
}

/// A step's outcome: its reply, or its error as the client reports it (`NoNode`,
/// `MultiFailed { index: 1, source: BadVersion }`, ...).
pub type Outcome = Result<Reply, String>;

/// The events each session received by the end of a step (sorted within the step, as
/// `type path`).
pub type Events = Vec<Vec<String>>;

/// A one-to-one, order-keeping map between the real server's values and the in-memory one's.
#[derive(Debug, Default)]
struct Bijection {
    forward: BTreeMap<i64, i64>,
    back: BTreeMap<i64, i64>,
}

impl Bijection {
    fn map(&mut self, real: i64, mem: i64, what: &str, ordered: bool) -> Result<(), String> {
        match (self.forward.get(&real), self.back.get(&mem)) {
            (Some(&m), _) if m != mem => {
                return Err(format!(
                    "{what} {real:#x} was {m:#x} in memory, now {mem:#x}"
                ));
            }
            (_, Some(&r)) if r != real => {
                return Err(format!(
                    "in-memory {what} {mem:#x} was real {r:#x}, now {real:#x}"
                ));
            }
            (Some(_), Some(_)) => return Ok(()),
            _ => {}
        }
        if ordered {
            // The nearest pairs on either side must keep the order.
            let below = self.forward.range(..real).next_back().map(|(_, &m)| m);
            let above = self.forward.range(real..).next().map(|(_, &m)| m);
            if below.is_some_and(|m| m >= mem) || above.is_some_and(|m| m <= mem) {
                return Err(format!(
                    "{what} order differs: real {real:#x} maps to {mem:#x}, between {below:?} and {above:?}"
                ));
            }
        }
        self.forward.insert(real, mem);
        self.back.insert(mem, real);
        Ok(())
    }
}

/// One side's times against its zxids: one transaction has one time, and a later
/// transaction no earlier time.
#[derive(Debug, Default)]
struct Clock {
    at: BTreeMap<i64, i64>,
}

impl Clock {
    fn check(&mut self, zxid: i64, time: i64, side: &str) -> Result<(), String> {
        if let Some(&t) = self.at.get(&zxid) {
            if t != time {
                return Err(format!("{side}: zxid {zxid:#x} has times {t} and {time}"));
            }
            return Ok(());
        }
        let before = self.at.range(..zxid).next_back().map(|(_, &t)| t);
        let after = self.at.range(zxid..).next().map(|(_, &t)| t);
        if before.is_some_and(|t| t > time) || after.is_some_and(|t| t < time) {
            return Err(format!(
                "{side}: zxid {zxid:#x} at {time} out of order with its neighbours ({before:?}, {after:?})"
            ));
        }
        self.at.insert(zxid, time);
        Ok(())
    }
}

/// The comparison of one run: the maps built so far.
#[derive(Debug, Default)]
pub struct Comparer {
    zxids: Bijection,
    sessions: Bijection,
    real_clock: Clock,
    mem_clock: Clock,
}

impl Comparer {
    /// A comparison with nothing mapped yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The two sides' session ids of one session slot.
    pub fn session(&mut self, real: i64, mem: i64) -> Result<(), String> {
        self.sessions.map(real, mem, "session", false)
    }

    /// Compares two stats.
    pub fn stat(&mut self, real: &Stat, mem: &Stat) -> Result<(), String> {
        let same = |name: &str, a: i32, b: i32| {
            if a == b {
                Ok(())
            } else {
                Err(format!("{name}: real {a}, in memory {b}"))
            }
        };
        same("version", real.version, mem.version)?;
        same("cversion", real.cversion, mem.cversion)?;
        same("aversion", real.aversion, mem.aversion)?;
        same("dataLength", real.data_length, mem.data_length)?;
        same("numChildren", real.num_children, mem.num_children)?;
        self.zxids.map(real.czxid, mem.czxid, "czxid", true)?;
        self.zxids.map(real.mzxid, mem.mzxid, "mzxid", true)?;
        self.zxids.map(real.pzxid, mem.pzxid, "pzxid", true)?;
        if (real.ephemeral_owner == 0) != (mem.ephemeral_owner == 0) {
            return Err(format!(
                "ephemeralOwner: real {:#x}, in memory {:#x}",
                real.ephemeral_owner, mem.ephemeral_owner
            ));
        }
        if session_owner(real.ephemeral_owner) || session_owner(mem.ephemeral_owner) {
            self.sessions.map(
                real.ephemeral_owner,
                mem.ephemeral_owner,
                "ephemeralOwner",
                false,
            )?;
        } else if real.ephemeral_owner != mem.ephemeral_owner {
            // Not a session's: clients are shown 0 (containers and TTL nodes too).
            return Err(format!(
                "ephemeralOwner: real {:#x}, in memory {:#x}",
                real.ephemeral_owner, mem.ephemeral_owner
            ));
        }
        self.real_clock
            .check(real.czxid, real.ctime, "real ctime")?;
        self.real_clock
            .check(real.mzxid, real.mtime, "real mtime")?;
        self.mem_clock
            .check(mem.czxid, mem.ctime, "in-memory ctime")?;
        self.mem_clock
            .check(mem.mzxid, mem.mtime, "in-memory mtime")
    }

    fn stats(&mut self, real: Option<&Stat>, mem: Option<&Stat>) -> Result<(), String> {
        match (real, mem) {
            (Some(r), Some(m)) => self.stat(r, m),
            (None, None) => Ok(()),
            (r, m) => Err(format!(
                "stat: real {}, in memory {}",
                if r.is_some() { "some" } else { "none" },
                if m.is_some() { "some" } else { "none" }
            )),
        }
    }

    /// Compares two outcomes of one step: `Err` says how they differ.
    pub fn outcome(&mut self, real: &Outcome, mem: &Outcome) -> Result<(), String> {
        let differ = || format!("real {real:?}\n    in memory {mem:?}");
        let (real, mem) = match (real, mem) {
            (Ok(r), Ok(m)) => (r, m),
            (Err(r), Err(m)) if r == m => return Ok(()),
            _ => return Err(differ()),
        };
        let within = |e: String| format!("{e}\n    real {real:?}\n    in memory {mem:?}");
        match (real, mem) {
            (Reply::Exists(r), Reply::Exists(m)) => {
                self.stats(r.as_ref(), m.as_ref()).map_err(within)
            }
            (Reply::Data(rd, r), Reply::Data(md, m)) if rd == md => self.stat(r, m).map_err(within),
            (Reply::Stat(r), Reply::Stat(m)) => self.stat(r, m).map_err(within),
            (Reply::Children(rc, r), Reply::Children(mc, m)) if rc == mc => {
                self.stats(r.as_ref(), m.as_ref()).map_err(within)
            }
            (Reply::Acl(ra, r), Reply::Acl(ma, m)) if ra == ma => self.stat(r, m).map_err(within),
            (Reply::Multi(r), Reply::Multi(m)) if r.len() == m.len() => {
                for (r, m) in r.iter().zip(m) {
                    match (r, m) {
                        (MultiReply::Created(rp, r), MultiReply::Created(mp, m)) if rp == mp => {
                            self.stats(r.as_ref(), m.as_ref()).map_err(within)?
                        }
                        (MultiReply::DataSet(r), MultiReply::DataSet(m)) => {
                            self.stat(r, m).map_err(within)?
                        }
                        (MultiReply::Deleted, MultiReply::Deleted)
                        | (MultiReply::Checked, MultiReply::Checked) => {}
                        _ => return Err(differ()),
                    }
                }
                Ok(())
            }
            (r, m) if stat_free(r) && r == m => Ok(()),
            _ => Err(differ()),
        }
    }
}

/// Whether an `ephemeralOwner` is a session's (not nobody's, a container's or a TTL node's
/// encoding, which the two servers must give alike).
fn session_owner(owner: i64) -> bool {
    owner != 0 && owner != i64::MIN && (owner as u64 >> 56) != 0xff
}

/// Replies with no stat in them, compared as they are.
fn stat_free(reply: &Reply) -> bool {
    matches!(
        reply,
        Reply::Done | Reply::Created(_) | Reply::Names(_) | Reply::Count(_)
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn stat(czxid: i64, mzxid: i64, version: i32, owner: i64) -> Stat {
        Stat {
            czxid,
            mzxid,
            ctime: 1000 + czxid,
            mtime: 1000 + mzxid,
            version,
            cversion: 0,
            aversion: 0,
            ephemeral_owner: owner,
            data_length: 1,
            num_children: 0,
            pzxid: czxid,
        }
    }

    #[test]
    fn zxids_and_sessions_are_mapped_not_equal() {
        let mut c = Comparer::new();
        let real = Ok(Reply::Stat(stat(0x1_0000_0005, 0x1_0000_0007, 1, 0x77)));
        let mem = Ok(Reply::Stat(stat(12, 14, 1, 0x99)));
        c.outcome(&real, &mem).unwrap();
        // The same real zxid later maps to the same in-memory one.
        let real = Ok(Reply::Exists(Some(stat(
            0x1_0000_0007,
            0x1_0000_0007,
            0,
            0,
        ))));
        let mem = Ok(Reply::Exists(Some(stat(14, 14, 0, 0))));
        c.outcome(&real, &mem).unwrap();
    }

    /// The negative controls: each kind of difference the run must catch.
    #[test]
    fn every_kind_of_difference_is_caught() {
        let base = || (Comparer::new(), stat(0x1_0000_0005, 0x1_0000_0007, 1, 0x77));
        // A field differs.
        let (mut c, s) = base();
        let mut m = s.clone();
        m.version = 2;
        assert!(c.outcome(&Ok(Reply::Stat(s)), &Ok(Reply::Stat(m))).is_err());
        // A zxid mapped to two values.
        let (mut c, s) = base();
        let m = stat(12, 14, 1, 0x99);
        c.outcome(&Ok(Reply::Stat(s.clone())), &Ok(Reply::Stat(m)))
            .unwrap();
        let m2 = stat(12, 15, 1, 0x99);
        assert!(
            c.outcome(&Ok(Reply::Stat(s)), &Ok(Reply::Stat(m2)))
                .is_err()
        );
        // Zxids out of order.
        let (mut c, _) = base();
        let a = stat(0x10, 0x10, 0, 0);
        let b = stat(0x20, 0x20, 0, 0);
        c.outcome(&Ok(Reply::Stat(a)), &Ok(Reply::Stat(stat(5, 5, 0, 0))))
            .unwrap();
        assert!(
            c.outcome(&Ok(Reply::Stat(b)), &Ok(Reply::Stat(stat(4, 4, 0, 0))))
                .is_err()
        );
        // Two sessions' nodes owned by one.
        let (mut c, _) = base();
        c.outcome(
            &Ok(Reply::Stat(stat(1, 1, 0, 0xa))),
            &Ok(Reply::Stat(stat(1, 1, 0, 0xc))),
        )
        .unwrap();
        assert!(
            c.outcome(
                &Ok(Reply::Stat(stat(2, 2, 0, 0xb))),
                &Ok(Reply::Stat(stat(2, 2, 0, 0xc)))
            )
            .is_err()
        );
        // An error against a success, and two different errors.
        let (mut c, s) = base();
        assert!(
            c.outcome(&Err("NoNode".into()), &Ok(Reply::Stat(s)))
                .is_err()
        );
        assert!(
            c.outcome(&Err("NoNode".into()), &Err("NodeExists".into()))
                .is_err()
        );
        // Children, names, data.
        let (mut c, s) = base();
        assert!(
            c.outcome(
                &Ok(Reply::Children(vec!["a".into()], None)),
                &Ok(Reply::Children(vec!["b".into()], None))
            )
            .is_err()
        );
        assert!(
            c.outcome(
                &Ok(Reply::Data(b"x".to_vec(), s.clone())),
                &Ok(Reply::Data(b"y".to_vec(), s))
            )
            .is_err()
        );
        // A time that goes back as zxids go forward.
        let (mut c, _) = base();
        let mut late = stat(0x30, 0x30, 0, 0);
        late.ctime = 5;
        late.mtime = 5;
        c.outcome(
            &Ok(Reply::Stat(stat(0x20, 0x20, 0, 0))),
            &Ok(Reply::Stat(stat(2, 2, 0, 0))),
        )
        .unwrap();
        assert!(
            c.outcome(&Ok(Reply::Stat(late)), &Ok(Reply::Stat(stat(3, 3, 0, 0))))
                .is_err()
        );
    }
}
