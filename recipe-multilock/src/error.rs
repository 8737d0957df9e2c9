//! [`Error`]: how a multi-lock operation fails, member by member.

/// One member's failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberError {
    /// The member's lock path.
    pub path: String,
    /// Its kind.
    pub kind: recipe_mutex::LockKind,
    /// What went wrong.
    pub error: recipe_mutex::Error,
}

impl std::fmt::Display for MemberError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}): {}", self.path, self.kind, self.error)
    }
}

/// Why a multi-lock operation failed. Each variant says what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A member could not be made or taken. The members taken before it were released.
    #[error("multi-lock member {0}")]
    Member(MemberError),
    /// Some members failed to release (each error is here; Curator keeps only the first). The
    /// releases that failed for a lost connection go on in the background until done or the
    /// session ends.
    #[error("multi-lock release: {} member(s) failed, first {}", .0.len(), .0.first().map(ToString::to_string).unwrap_or_default())]
    Release(Vec<MemberError>),
    /// A multi-lock needs at least one member.
    #[error("a multi-lock needs at least one member")]
    NoMembers,
    /// Two members name the same path: the second would wait for the first forever. Give
    /// each path once.
    #[error("multi-lock members name {path} twice")]
    DuplicatePath {
        /// The path.
        path: String,
    },
    /// The read and the write lock of one read/write lock are both members: the second would
    /// wait for the first forever (Curator grants [write, read] as a downgrade). To downgrade,
    /// take the write lock and call `WriteGuard::downgrade()`.
    #[error(
        "multi-lock members hold the read and the write lock of {path}: use WriteGuard::downgrade() for a downgrade"
    )]
    ReadAndWrite {
        /// The read/write lock's path.
        path: String,
    },
}

impl From<MemberError> for Error {
    fn from(e: MemberError) -> Self {
        Error::Member(e)
    }
}
