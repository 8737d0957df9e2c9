//! Path validation, with the rules of Java's `PathUtils.validatePath`.

/// Why a path is not a valid ZooKeeper path. Checked before anything is sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PathError {
    /// The path is empty.
    #[error("path is empty")]
    Empty,
    /// The path does not start with `/`.
    #[error("path {path:?} does not start with /")]
    NotAbsolute {
        /// The path.
        path: String,
    },
    /// The path ends with `/` (only the root may).
    #[error("path {path:?} ends with /")]
    TrailingSlash {
        /// The path.
        path: String,
    },
    /// The path has an empty segment (`//`).
    #[error("path {path:?} has an empty segment at byte {index}")]
    EmptySegment {
        /// The path.
        path: String,
        /// Where.
        index: usize,
    },
    /// The path has a `.` or `..` segment.
    #[error("path {path:?} has a relative segment at byte {index}")]
    RelativeSegment {
        /// The path.
        path: String,
        /// Where.
        index: usize,
    },
    /// The path has a character ZooKeeper refuses (NUL, control characters, U+E000..U+F8FF,
    /// U+FFF0..U+FFFF, or anything outside the Basic Multilingual Plane, which Java sees as
    /// surrogates).
    #[error("path {path:?} has the invalid character {ch:?} at byte {index}")]
    BadChar {
        /// The path.
        path: String,
        /// The character.
        ch: char,
        /// Where.
        index: usize,
    },
}

/// Checks `path` as the server would. For a sequential create, the server appends a number to
/// the name, so a trailing `/` (a name made only of the sequence number) is allowed.
///
/// # Examples
///
/// ```
/// use zk_proto::validate_path;
///
/// assert!(validate_path("/locks/a", false).is_ok());
/// assert!(validate_path("/", false).is_ok());
/// assert!(validate_path("/locks/", true).is_ok()); // sequential: becomes /locks/0000000001
/// assert!(validate_path("/locks/", false).is_err());
/// assert!(validate_path("locks", false).is_err());
/// assert!(validate_path("/a/../b", false).is_err());
/// ```
pub fn validate_path(path: &str, sequential: bool) -> Result<(), PathError> {
    let err_path = || path.to_owned();
    if path.is_empty() {
        return Err(PathError::Empty);
    }
    if !path.starts_with('/') {
        return Err(PathError::NotAbsolute { path: err_path() });
    }
    if path == "/" && !sequential {
        return Ok(());
    }
    if path.ends_with('/') && !sequential {
        return Err(PathError::TrailingSlash { path: err_path() });
    }
    // Most paths are ASCII with no control character, no `//` and no `/.`: then no segment
    // can be empty, `.` or `..`. Two passes without branches or carried state (so that they
    // run a word at a time) tell; a path with `//` or `/.` gets its segments checked, one
    // with any other character the full scan.
    let bytes = path.as_bytes();
    let plain = bytes
        .iter()
        .fold(true, |plain, &b| plain & (b.wrapping_sub(0x20) < 0x5f));
    if plain {
        let suspect = bytes
            .iter()
            .zip(bytes.iter().skip(1))
            .fold(false, |suspect, (&a, &b)| {
                suspect | ((a == b'/') & ((b == b'/') | (b == b'.')))
            });
        return if suspect {
            check_segments(path, sequential)
        } else {
            Ok(())
        };
    }
    // Otherwise ASCII is scanned byte by byte, without decoding UTF-8 (the same checks).
    if path.is_ascii() {
        let chars = path.bytes().enumerate().map(|(i, b)| (i, char::from(b)));
        scan(path, sequential, chars)
    } else {
        scan(path, sequential, path.char_indices())
    }
}

/// The segment and character checks over `path`'s characters with their byte offsets.
fn scan(
    path: &str,
    sequential: bool,
    chars: impl Iterator<Item = (usize, char)>,
) -> Result<(), PathError> {
    let mut segment_start = 1;
    for (index, ch) in chars.skip(1) {
        if ch == '/' {
            check_segment(path, segment_start, index)?;
            segment_start = index + 1;
            continue;
        }
        if is_forbidden(ch) {
            return Err(PathError::BadChar {
                path: path.to_owned(),
                ch,
                index,
            });
        }
    }
    // The last segment: for a sequential path the server appends digits, so it is never
    // empty, "." or "..".
    if !sequential {
        check_segment(path, segment_start, path.len())?;
    }
    Ok(())
}

/// [`scan`]'s segment checks alone, for a path whose characters are all allowed: the same
/// errors at the same places.
fn check_segments(path: &str, sequential: bool) -> Result<(), PathError> {
    let mut start = 1;
    let mut segments = path.get(1..).unwrap_or_default().split('/').peekable();
    while let Some(segment) = segments.next() {
        let end = start + segment.len();
        // The last segment of a sequential path gets the server's digits.
        if segments.peek().is_some() || !sequential {
            check_segment(path, start, end)?;
        }
        start = end + 1;
    }
    Ok(())
}

fn check_segment(path: &str, start: usize, end: usize) -> Result<(), PathError> {
    match path.get(start..end) {
        Some("") => Err(PathError::EmptySegment {
            path: path.to_owned(),
            index: start,
        }),
        Some(".") | Some("..") => Err(PathError::RelativeSegment {
            path: path.to_owned(),
            index: start,
        }),
        _ => Ok(()),
    }
}

fn is_forbidden(ch: char) -> bool {
    matches!(ch,
        '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' | '\u{e000}'..='\u{f8ff}' | '\u{fff0}'..)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    /// The byte scan of ASCII paths decides exactly as the character scan.
    #[test]
    fn the_ascii_scan_agrees_with_the_char_scan() {
        let alphabet = [b'/', b'/', b'.', b'a', b'-', b'\0', 0x1f, 0x7f, b' ', b'0'];
        let mut rng = 0x2545_f491_4f6c_dd1d_u64;
        for _ in 0..50_000 {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let len = 1 + (rng % 9) as usize;
            let mut bytes = vec![b'/'];
            let mut r = rng;
            for _ in 1..len {
                bytes.push(alphabet[(r % alphabet.len() as u64) as usize]);
                r /= alphabet.len() as u64;
            }
            let path = std::str::from_utf8(&bytes).unwrap();
            for sequential in [false, true] {
                let fast = validate_path(path, sequential);
                // Paths the early checks decide never reach the scan.
                let early = path.is_empty()
                    || !path.starts_with('/')
                    || (path.ends_with('/') && !sequential);
                let slow = if early {
                    fast.clone()
                } else {
                    scan(path, sequential, path.char_indices())
                };
                assert_eq!(fast, slow, "{path:?} sequential={sequential}");
            }
        }
    }

    #[test]
    fn accepts_what_java_accepts() {
        for p in [
            "/",
            "/a",
            "/a/b",
            "/a.b",
            "/.a",
            "/a..",
            "/...",
            "/中文/ü",
            "/a b",
            "/_c_x-lock-",
        ] {
            assert_eq!(validate_path(p, false), Ok(()), "{p}");
        }
        for p in ["/a/", "/", "/locks/lock-"] {
            assert_eq!(validate_path(p, true), Ok(()), "{p} sequential");
        }
    }

    #[test]
    fn refuses_what_java_refuses() {
        assert_eq!(validate_path("", false), Err(PathError::Empty));
        let bad = [
            "a",
            "/a/",
            "//",
            "/a//b",
            "/.",
            "/..",
            "/a/.",
            "/a/../b",
            "/a\u{0}",
            "/\u{1}",
            "/\u{7f}",
            "/\u{9f}",
            "/\u{e000}",
            "/\u{f8ff}",
            "/\u{fff0}",
            "/\u{ffff}",
            "/😀",
        ];
        for p in bad {
            assert!(validate_path(p, false).is_err(), "{p:?}");
        }
        assert!(matches!(
            validate_path("/a//b", false),
            Err(PathError::EmptySegment { index: 3, .. })
        ));
        assert!(matches!(
            validate_path("/a/./", true),
            Err(PathError::RelativeSegment { .. })
        ));
        assert!(validate_path("//", true).is_err());
    }
}
