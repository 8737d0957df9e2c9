//! [`Chroot`]: the prefix a connect string's `/path` puts under every client path.

/// Maps client paths to server paths and back. Without a chroot both are the same.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Chroot(Option<String>);

impl Chroot {
    /// `root` must be a valid path other than `/` (see `ConnectString::parse`).
    pub(crate) fn new(root: Option<String>) -> Self {
        Chroot(root)
    }

    /// The server path of an already validated client path.
    pub(crate) fn to_server(&self, path: &str) -> Option<String> {
        Some(match &self.0 {
            None => path.to_owned(),
            Some(root) if path == "/" => root.clone(),
            Some(root) => format!("{root}{path}"),
        })
    }

    /// The server path of an already validated client path, reusing its allocation.
    pub(crate) fn to_server_owned(&self, mut path: String) -> Option<String> {
        Some(match &self.0 {
            None => path,
            Some(root) if path == "/" => root.clone(),
            Some(root) => {
                path.insert_str(0, root);
                path
            }
        })
    }

    /// The client path of a server path; a path outside the chroot is returned whole. In
    /// place: no allocation.
    pub(crate) fn to_client(&self, mut path: String) -> String {
        let Some(root) = &self.0 else {
            return path;
        };
        match path.strip_prefix(root.as_str()) {
            Some("") => "/".to_owned(),
            Some(rest) if rest.starts_with('/') => {
                path.replace_range(..root.len(), "");
                path
            }
            _ => path,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn maps_both_ways() {
        let c = Chroot::new(Some("/app".into()));
        assert_eq!(c.to_server("/").as_deref(), Some("/app"));
        assert_eq!(c.to_server("/a/b").as_deref(), Some("/app/a/b"));
        assert_eq!(c.to_client("/app".into()), "/");
        assert_eq!(c.to_client("/app/a".into()), "/a");
        assert_eq!(c.to_client("/apple".into()), "/apple");
        assert_eq!(Chroot::default().to_client("/x".into()), "/x");
    }
}
