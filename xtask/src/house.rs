//! The house drawn by its imports: which module of a crate uses which, and the circles among
//! them.
//!
//! - A module is a source file (`a/b.rs` or `a/b/mod.rs` is `a::b`); an edge goes from a
//!   module to the module a `crate::` or `super::` path in its code names (the longest
//!   prefix that is a module: an item re-exported by `a` counts as `a`).
//! - A parent and its descendants may use each other (a folder's `mod.rs` re-exports its
//!   children, a child uses its parent's types): those edges are not drawn.
//! - A circle is a set of modules, none an ancestor of another, that reach each other: two
//!   files that each need the other, which is one concern in two files or a missing third.
//!
//! Comments are skipped (a doc link is not an import); `use` lists with braces are read for
//! their first segment only, which is the module they name.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// A module's path inside its crate (`["layer", "driver", "run"]`); the crate root is empty.
pub type ModulePath = Vec<String>;

/// The module a source file holds, from its path relative to the crate's `src`.
pub fn module_of(relative: &Path) -> ModulePath {
    let mut parts: ModulePath = relative
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

/// Every module of a crate with the modules it names, from `(module, source)` pairs.
pub fn edges(files: &[(ModulePath, String)]) -> BTreeMap<ModulePath, BTreeSet<ModulePath>> {
    let known: BTreeSet<&ModulePath> = files.iter().map(|(m, _)| m).collect();
    let resolve = |path: &[String]| -> ModulePath {
        (0..=path.len())
            .rev()
            .map(|n| path.get(..n).unwrap_or_default().to_vec())
            .find(|p| known.contains(p))
            .unwrap_or_default()
    };
    let mut out = BTreeMap::new();
    for (module, source) in files {
        let mut named = BTreeSet::new();
        for line in source.lines() {
            let code = line.split("//").next().unwrap_or_default();
            for (at, _) in code
                .match_indices("crate::")
                .chain(code.match_indices("super::"))
            {
                let preceded = code
                    .get(..at)
                    .and_then(|s| s.chars().last())
                    .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$');
                if preceded {
                    continue;
                }
                let rest = code.get(at..).unwrap_or_default();
                let segments: Vec<&str> = rest
                    .split("::")
                    .map(|s| {
                        let end = s
                            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                            .unwrap_or(s.len());
                        s.get(..end).unwrap_or_default()
                    })
                    .take_while(|s| !s.is_empty())
                    .collect();
                let mut base = ModulePath::new();
                let mut names = segments.as_slice();
                match names.first() {
                    Some(&"crate") => names = names.get(1..).unwrap_or_default(),
                    _ => {
                        base = module.clone();
                        while names.first() == Some(&"super") {
                            base.pop();
                            names = names.get(1..).unwrap_or_default();
                        }
                    }
                }
                let mut path = base;
                path.extend(names.iter().map(|s| (*s).to_owned()));
                let target = resolve(&path);
                if target != *module {
                    named.insert(target);
                }
            }
        }
        out.insert(module.clone(), named);
    }
    out
}

fn is_ancestor(a: &ModulePath, b: &ModulePath) -> bool {
    a.len() <= b.len() && b.get(..a.len()) == Some(a.as_slice())
}

/// The circles among a crate's modules (each sorted), parent-child edges left out.
pub fn circles(edges: &BTreeMap<ModulePath, BTreeSet<ModulePath>>) -> Vec<Vec<ModulePath>> {
    let graph: BTreeMap<&ModulePath, Vec<&ModulePath>> = edges
        .iter()
        .map(|(m, ts)| {
            let ts = ts
                .iter()
                .filter(|t| !is_ancestor(t, m) && !is_ancestor(m, t))
                .collect();
            (m, ts)
        })
        .collect();
    // Two modules are in one circle when each reaches the other.
    let reach = |from: &ModulePath| -> BTreeSet<&ModulePath> {
        let mut seen = BTreeSet::new();
        let mut stack: Vec<&ModulePath> = graph.get(from).cloned().unwrap_or_default();
        while let Some(m) = stack.pop() {
            if seen.insert(m) {
                stack.extend(graph.get(m).cloned().unwrap_or_default());
            }
        }
        seen
    };
    let reached: BTreeMap<&ModulePath, BTreeSet<&ModulePath>> =
        graph.keys().map(|m| (*m, reach(m))).collect();
    let mut placed = BTreeSet::new();
    let mut out = Vec::new();
    for m in graph.keys() {
        if placed.contains(*m) {
            continue;
        }
        let mut circle: Vec<ModulePath> = reached
            .get(m)
            .into_iter()
            .flatten()
            .filter(|o| reached.get(*o).is_some_and(|r| r.contains(m)))
            .map(|o| (*o).clone())
            .collect();
        if circle.is_empty() {
            continue;
        }
        if !circle.contains(m) {
            circle.push((*m).clone());
        }
        circle.sort();
        placed.extend(circle.iter().cloned());
        out.push(circle);
    }
    out
}

/// The circles of the crate whose sources are under `src`, by module path (`a::b`).
pub fn circles_in(src: &Path) -> std::io::Result<Vec<Vec<String>>> {
    let mut files = Vec::new();
    let mut dirs = vec![src.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let path = entry?.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let relative = path.strip_prefix(src).unwrap_or(&path);
                files.push((module_of(relative), std::fs::read_to_string(&path)?));
            }
        }
    }
    Ok(circles(&edges(&files))
        .into_iter()
        .map(|c| c.into_iter().map(|m| m.join("::")).collect())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(s: &str) -> ModulePath {
        s.split("::")
            .filter(|p| !p.is_empty())
            .map(str::to_owned)
            .collect()
    }

    fn files(list: &[(&str, &str)]) -> Vec<(ModulePath, String)> {
        list.iter().map(|(p, s)| (m(p), (*s).to_owned())).collect()
    }

    #[test]
    fn two_siblings_that_use_each_other_are_a_circle() {
        let found = circles(&edges(&files(&[
            ("", "mod driver;"),
            ("driver", "mod run; mod cleanup;"),
            ("driver::run", "use super::cleanup::run_cleanups;"),
            ("driver::cleanup", "use super::run::Run;"),
        ])));
        assert_eq!(found, [vec![m("driver::cleanup"), m("driver::run")]]);
    }

    #[test]
    fn a_circle_through_a_third_module_and_crate_paths_is_found() {
        let found = circles(&edges(&files(&[
            ("a", "use crate::b::X;"),
            ("b", "fn f() { crate::c::g() }"),
            ("c", "pub use crate::a::Y;"),
            ("d", "use crate::a::Y;"),
        ])));
        assert_eq!(found, [vec![m("a"), m("b"), m("c")]]);
    }

    #[test]
    fn parents_and_children_comments_and_one_way_uses_are_not_circles() {
        let found = circles(&edges(&files(&[
            (
                "hold",
                "pub use watch::NodeLife; use crate::driver::Acquired;",
            ),
            (
                "hold::watch",
                "use super::session_loss; // crate::driver::x",
            ),
            ("driver", "/// [`crate::hold::Holds`]\nfn f() {}"),
            ("metrics", "use crate::hold::watch::NodeLife; // super::x"),
        ])));
        assert!(found.is_empty(), "{found:?}");
    }

    #[test]
    fn module_paths_come_from_file_paths() {
        assert_eq!(module_of(Path::new("lib.rs")), m(""));
        assert_eq!(module_of(Path::new("layer/mod.rs")), m("layer"));
        assert_eq!(
            module_of(Path::new("layer/driver/run.rs")),
            m("layer::driver::run")
        );
    }
}
