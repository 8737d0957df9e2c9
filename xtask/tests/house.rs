//! Issue 53: drawn by its imports, no crate of the product has a circle among its modules
//! (`xtask::house` draws them; its unit tests are the negative controls: a circle of two
//! siblings, one through a third module, and what is not a circle).

use std::path::Path;

/// Every crate of the product and the tooling, by its `src`.
const CRATES: &[&str] = &[
    "zk-proto/src",
    "zk-client/src",
    "zk-client/mem-server/src",
    "recipes-core/src",
    "recipes-core/sim/src",
    "recipes-core/audit/src",
    "recipe-mutex/src",
    "recipe-rwlock/src",
    "recipe-semaphore/src",
    "recipe-multilock/src",
    "xtask/src",
    "xtask/testkit/src",
    "xtask/sim-layer/src",
];

#[test]
fn no_crate_has_a_circle_among_its_modules() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut found = Vec::new();
    for krate in CRATES {
        let circles = xtask::house::circles_in(&root.join(krate)).expect("the sources read");
        found.extend(
            circles
                .into_iter()
                .map(|c| format!("{krate}: {}", c.join(" <-> "))),
        );
    }
    assert!(
        found.is_empty(),
        "modules that use each other:\n{}",
        found.join("\n")
    );
}

/// Each crate's level in the house: a crate's `[dependencies]` among ours sit on lower
/// levels, or are its parent (a nested crate uses the crate it is nested in: zk-mem-server
/// is zk-client's, zk-sim and zk-lock-audit recipes-core's, the test kit and zk-sim-layer
/// xtask's). Dev-dependencies are not drawn (the product crates' tests use the test kit).
const LEVELS: &[(&str, &str, u32, Option<&str>)] = &[
    ("zk-proto", "zk-proto", 0, None),
    ("zk-client", "zk-client", 1, None),
    (
        "zk-mem-server",
        "zk-client/mem-server",
        1,
        Some("zk-client"),
    ),
    ("recipes-core", "recipes-core", 1, None),
    ("zk-sim", "recipes-core/sim", 1, Some("recipes-core")),
    (
        "zk-lock-audit",
        "recipes-core/audit",
        1,
        Some("recipes-core"),
    ),
    ("recipe-mutex", "recipe-mutex", 2, None),
    ("recipe-rwlock", "recipe-rwlock", 3, None),
    ("recipe-semaphore", "recipe-semaphore", 3, None),
    ("recipe-multilock", "recipe-multilock", 4, None),
    ("xtask", "xtask", 5, None),
    // The test kit depends on no crate of ours: the ground floor, wherever it is nested.
    ("zk-testkit", "xtask/testkit", 0, Some("xtask")),
    ("zk-sim-layer", "xtask/sim-layer", 5, Some("xtask")),
];

/// The names in a manifest's `[dependencies]` table.
fn dependencies(manifest: &str) -> Vec<String> {
    let mut inside = false;
    let mut out = Vec::new();
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            inside = line == "[dependencies]";
            continue;
        }
        if inside && !line.starts_with('#') {
            let name: String = line
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '-' || *c == '_')
                .collect();
            if !name.is_empty() {
                out.push(name);
            }
        }
    }
    out
}

#[test]
fn no_crate_imports_back_up() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let level = |name: &str| LEVELS.iter().find(|(n, ..)| *n == name).map(|l| l.2);
    let mut found = Vec::new();
    for (name, dir, own, parent) in LEVELS {
        let manifest =
            std::fs::read_to_string(root.join(dir).join("Cargo.toml")).expect("the manifest reads");
        let deps = dependencies(&manifest);
        assert!(
            !deps.is_empty() || *name == "zk-proto" || *name == "recipes-core",
            "{name}: no dependencies read"
        );
        for dep in deps {
            let Some(theirs) = level(&dep) else { continue };
            if theirs >= *own && Some(dep.as_str()) != *parent {
                found.push(format!("{name} (level {own}) uses {dep} (level {theirs})"));
            }
        }
    }
    assert!(found.is_empty(), "imports back up:\n{}", found.join("\n"));
}

#[test]
fn a_manifest_s_dependencies_are_read_from_its_table_only() {
    let manifest = "[package]\nname = \"a\"\n[dependencies]\nzk-client.workspace = true\n# recipe-mutex = x\nrecipes-core = { path = \"..\" }\n[dev-dependencies]\nrecipe-mutex = \"1\"\n";
    assert_eq!(dependencies(manifest), ["zk-client", "recipes-core"]);
}
