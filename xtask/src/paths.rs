//! Where the workspace and its Cargo target directory are, as seen by xtask and its tests.

use std::path::{Path, PathBuf};

/// The workspace root: the parent of the xtask crate's directory.
pub fn workspace_root() -> PathBuf {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest_dir
        .parent()
        .map_or_else(|| manifest_dir.to_path_buf(), Path::to_path_buf)
}

/// The Cargo target directory: `CARGO_TARGET_DIR` when set (a relative value is taken from the
/// workspace root), else `<workspace root>/target`.
pub fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if !dir.is_empty() => {
            let dir = PathBuf::from(dir);
            if dir.is_absolute() {
                dir
            } else {
                workspace_root().join(dir)
            }
        }
        _ => workspace_root().join("target"),
    }
}
