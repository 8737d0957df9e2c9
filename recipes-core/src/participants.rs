//! A lock's queue as the server has it, for the person asking "who holds this lock?": each
//! child of the lock's directory in the recipe's order, with what the recipe's own rule says
//! of it (holds, or waits and watches which node). Pure: the children come from a listing.

/// Where one child of a lock's directory stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Standing {
    /// The recipe's rule grants it.
    Holds,
    /// It waits, watching this child (a name in the same directory).
    Waits {
        /// The child it watches.
        watches: String,
    },
    /// Not a node of this recipe (another recipe's, or a stray): no standing of its own,
    /// though it still takes its place in the order (Curator's mutex counts it).
    Foreign,
}

/// One child of a lock's directory, in the recipe's order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    /// The child's name.
    pub name: String,
    /// What the recipe's rule says of it.
    pub standing: Standing,
}

/// The rule a recipe applies to one of its nodes: the predicates' rules
/// ([`Exclusive`](crate::Exclusive), [`ReadPredicate`](crate::ReadPredicate),
/// [`WritePredicate`](crate::WritePredicate)), applied to a whole queue in one pass
/// (a test holds them to the predicates' verdicts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// Holds when fewer than `max` children sort before it; else watches the child `max`
    /// places ahead (the mutex: 1).
    Exclusive {
        /// How many may hold at once.
        max: usize,
    },
    /// The read lock's: holds when no write node sorts before it; else watches the first.
    Read,
    /// The write lock's: holds when first of all children; else watches the one before it.
    Write,
}

/// The queue of `children` (unsorted, as listed): sorted by `sort`, then each child judged by
/// the rule `rule_for` gives for its name (`None`: foreign), in one pass.
///
/// # Examples
///
/// ```
/// use recipes_core::participants::{Rule, Standing, places};
/// use recipes_core::{Exclusive, Predicate};
///
/// let mutex = Exclusive::mutex();
/// let children = vec!["b-lock-0000000002".to_owned(), "a-lock-0000000001".to_owned()];
/// let queue = places(children, |c| mutex.sort(c), |name| {
///     name.contains("lock-").then_some(Rule::Exclusive { max: 1 })
/// });
/// assert_eq!(queue[0].standing, Standing::Holds);
/// assert_eq!(queue[1].standing, Standing::Waits { watches: "a-lock-0000000001".into() });
/// ```
pub fn places(
    mut children: Vec<String>,
    sort: impl FnOnce(&mut [String]),
    rule_for: impl Fn(&str) -> Option<Rule>,
) -> Vec<Place> {
    sort(&mut children);
    let mut first_write: Option<usize> = None;
    let mut standings = Vec::with_capacity(children.len());
    for (index, name) in children.iter().enumerate() {
        let rule = rule_for(name);
        let ahead = |n: usize| index.checked_sub(n).and_then(|i| children.get(i));
        let standing = match rule {
            None => Standing::Foreign,
            Some(Rule::Exclusive { max }) => waits_on(ahead(max.max(1))),
            Some(Rule::Write) => waits_on(ahead(1)),
            Some(Rule::Read) => waits_on(first_write.and_then(|i| children.get(i))),
        };
        if rule == Some(Rule::Write) {
            first_write.get_or_insert(index);
        }
        standings.push(standing);
    }
    children
        .into_iter()
        .zip(standings)
        .map(|(name, standing)| Place { name, standing })
        .collect()
}

fn waits_on(watched: Option<&String>) -> Standing {
    match watched {
        None => Standing::Holds,
        Some(w) => Standing::Waits { watches: w.clone() },
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use crate::predicate::Verdict;
    use crate::{Exclusive, Predicate, ReadPredicate, WritePredicate};

    fn rw_rule(name: &str) -> Option<Rule> {
        if name.contains("__READ__") {
            Some(Rule::Read)
        } else if name.contains("__WRIT__") {
            Some(Rule::Write)
        } else {
            None
        }
    }

    /// What the predicate the machines use says of `name` in `sorted`.
    fn by_predicate(p: &dyn Predicate, sorted: &[String], name: &str) -> Standing {
        match p.verdict(sorted, name).unwrap() {
            Verdict::Hold => Standing::Holds,
            Verdict::Watch(watches) => Standing::Waits { watches },
        }
    }

    /// Every queue of up to 6 children drawn from readers, writers, mutex and lease nodes and
    /// a stray, in every order of sequence numbers: the one pass agrees with the predicates.
    #[test]
    fn the_one_pass_agrees_with_the_machines_predicates_on_every_small_queue() {
        let kinds = ["__READ__", "__WRIT__", "stray"];
        let mut checked = 0;
        for len in 0..=6u32 {
            for code in 0..3usize.pow(len) {
                let mut c = code;
                let children: Vec<String> = (0..len)
                    .map(|i| {
                        let kind = kinds[c % 3];
                        c /= 3;
                        match kind {
                            "stray" => format!("stray{i}"),
                            k => format!("_c_{i}-{k}{:010}", i),
                        }
                    })
                    .collect();
                let queue = places(children.clone(), crate::rwlock::rw_sort, rw_rule);
                let mut sorted = children.clone();
                crate::rwlock::rw_sort(&mut sorted);
                for place in &queue {
                    let expected = match rw_rule(&place.name) {
                        Some(Rule::Read) => by_predicate(&ReadPredicate, &sorted, &place.name),
                        Some(Rule::Write) => by_predicate(&WritePredicate, &sorted, &place.name),
                        _ => Standing::Foreign,
                    };
                    assert_eq!(place.standing, expected, "{sorted:?}");
                }
                // The same children as mutex and lease nodes (max 1 and 2).
                for max in [1, 2] {
                    let p = Exclusive::new("__", max);
                    let queue = places(
                        children.clone(),
                        |c| p.sort(c),
                        |name| name.contains("__").then_some(Rule::Exclusive { max }),
                    );
                    let mut sorted = children.clone();
                    p.sort(&mut sorted);
                    for place in &queue {
                        if place.name.contains("__") {
                            assert_eq!(place.standing, by_predicate(&p, &sorted, &place.name));
                        }
                    }
                }
                checked += 1;
            }
        }
        assert_eq!(checked, (0..=6).map(|l| 3usize.pow(l)).sum::<usize>());
    }

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn a_read_write_queue_shows_shared_readers_a_waiting_writer_and_readers_behind_it() {
        let children = names(&[
            "_c_w-__WRIT__0000000003",
            "_c_r1-__READ__0000000001",
            "_c_r3-__READ__0000000004",
            "_c_r2-__READ__0000000002",
            "stray",
        ]);
        let queue = places(children, crate::rwlock::rw_sort, rw_rule);
        let got: Vec<(&str, &Standing)> = queue
            .iter()
            .map(|p| (p.name.as_str(), &p.standing))
            .collect();
        let waits = |w: &str| Standing::Waits { watches: w.into() };
        assert_eq!(
            got,
            vec![
                ("_c_r1-__READ__0000000001", &Standing::Holds),
                ("_c_r2-__READ__0000000002", &Standing::Holds),
                (
                    "_c_w-__WRIT__0000000003",
                    &waits("_c_r2-__READ__0000000002")
                ),
                (
                    "_c_r3-__READ__0000000004",
                    &waits("_c_w-__WRIT__0000000003")
                ),
                ("stray", &Standing::Foreign),
            ]
        );
    }

    #[test]
    fn a_foreign_child_sorting_first_blocks_the_mutex_and_has_no_standing() {
        let mutex = Exclusive::mutex();
        let queue = places(
            names(&["x-lock-0000000005", "-stray"]),
            |c| mutex.sort(c),
            |name| name.contains("lock-").then_some(Rule::Exclusive { max: 1 }),
        );
        assert_eq!(queue[0].standing, Standing::Foreign);
        assert_eq!(
            queue[1].standing,
            Standing::Waits {
                watches: "-stray".into()
            }
        );
    }

    #[test]
    fn an_empty_directory_has_an_empty_queue() {
        let mutex = Exclusive::mutex();
        assert!(places(Vec::new(), |c| mutex.sort(c), |_| Some(Rule::Write)).is_empty());
    }
}
