//! The connect string: `"host1:port1,host2:port2/optional/chroot"`, as the Java client takes it.

use crate::Error;

/// The default client port.
pub const DEFAULT_PORT: u16 = 2181;

/// A parsed connect string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectString {
    /// `(host, port)` pairs in the given order; hosts are names or IP literals (IPv6 without
    /// brackets).
    pub hosts: Vec<(String, u16)>,
    /// The chroot, if any (validated, no trailing `/`).
    pub chroot: Option<String>,
}

fn invalid(input: &str, reason: &'static str) -> Error {
    Error::InvalidHosts {
        input: input.to_owned(),
        reason,
    }
}

impl ConnectString {
    /// Parses `hosts[/chroot]`. A host is `name`, `name:port`, `1.2.3.4:port`, `[::1]:port`
    /// or `[::1]`; the port defaults to 2181. A chroot of `/` is no chroot.
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_client::ConnectString;
    ///
    /// let cs = ConnectString::parse("127.0.0.1:2181,[::1]:2182,zk3/app/locks").unwrap();
    /// assert_eq!(cs.hosts, [("127.0.0.1".into(), 2181), ("::1".into(), 2182), ("zk3".into(), 2181)]);
    /// assert_eq!(cs.chroot.as_deref(), Some("/app/locks"));
    /// assert!(ConnectString::parse("host:notaport").is_err());
    /// ```
    pub fn parse(input: &str) -> Result<ConnectString, Error> {
        let (hosts_part, chroot) = match input.find('/') {
            Some(i) => (input.get(..i).unwrap_or_default(), input.get(i..)),
            None => (input, None),
        };
        let chroot = match chroot {
            None | Some("/") => None,
            Some(c) => {
                zk_proto::validate_path(c, false)?;
                Some(c.to_owned())
            }
        };
        let mut hosts = Vec::new();
        for part in hosts_part.split(',').map(str::trim) {
            if part.is_empty() {
                continue;
            }
            hosts.push(parse_host(part).ok_or_else(|| invalid(input, "bad host:port"))?);
        }
        if hosts.is_empty() {
            return Err(invalid(input, "no host"));
        }
        Ok(ConnectString { hosts, chroot })
    }
}

fn parse_host(part: &str) -> Option<(String, u16)> {
    if let Some(rest) = part.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        let port = match after {
            "" => DEFAULT_PORT,
            p => p.strip_prefix(':')?.parse().ok()?,
        };
        return (!host.is_empty()).then(|| (host.to_owned(), port));
    }
    match part.rsplit_once(':') {
        // A bare IPv6 literal has several colons and no port.
        Some((host, _)) if host.contains(':') => Some((part.to_owned(), DEFAULT_PORT)),
        Some((host, port)) if !host.is_empty() => Some((host.to_owned(), port.parse().ok()?)),
        Some(_) => None,
        None => Some((part.to_owned(), DEFAULT_PORT)),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn parses_java_style_connect_strings() {
        let cs = ConnectString::parse("a:1, b ,[::1]:3,[fe80::1],::1/").unwrap();
        assert_eq!(
            cs.hosts,
            [
                ("a".into(), 1),
                ("b".into(), 2181),
                ("::1".into(), 3),
                ("fe80::1".into(), 2181),
                ("::1".into(), 2181)
            ]
        );
        assert_eq!(cs.chroot, None);
        assert_eq!(
            ConnectString::parse("a/x").unwrap().chroot.as_deref(),
            Some("/x")
        );
    }

    #[test]
    fn refuses_bad_connect_strings() {
        for bad in [
            "", ",", "a:", ":1", "a:99999", "[::1", "[::1]x", "a/b/", "a//b", "[]:1",
        ] {
            assert!(ConnectString::parse(bad).is_err(), "{bad:?}");
        }
    }
}
