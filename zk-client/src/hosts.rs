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
        if input.contains("://") {
            return Err(invalid(
                input,
                "a connect string has no scheme: write host:port[,host:port...][/chroot]",
            ));
        }
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
        if hosts_part.trim().is_empty() {
            return Err(invalid(input, "no host"));
        }
        let mut hosts = Vec::new();
        for part in hosts_part.split(',').map(str::trim) {
            hosts.push(parse_host(part).map_err(|reason| invalid(input, reason))?);
        }
        Ok(ConnectString { hosts, chroot })
    }
}

fn parse_port(port: &str) -> Result<u16, &'static str> {
    if port.is_empty() || !port.bytes().all(|b| b.is_ascii_digit()) {
        return Err("a port is not a number");
    }
    match port.parse::<u16>() {
        Ok(0) | Err(_) => Err("a port is out of range (1 to 65535)"),
        Ok(p) => Ok(p),
    }
}

fn parse_host(part: &str) -> Result<(String, u16), &'static str> {
    if part.is_empty() {
        return Err("an empty host (two commas in a row, or a comma at either end)");
    }
    if part.contains(char::is_whitespace) {
        return Err("hosts are separated by commas, not spaces");
    }
    if let Some(rest) = part.strip_prefix('[') {
        let (host, after) = rest
            .split_once(']')
            .ok_or("an IPv6 address without its closing `]`")?;
        if host.is_empty() {
            return Err("an empty IPv6 address");
        }
        let port = match after {
            "" => DEFAULT_PORT,
            p => parse_port(
                p.strip_prefix(':')
                    .ok_or("text after an IPv6 address's `]`")?,
            )?,
        };
        return Ok((host.to_owned(), port));
    }
    match part.rsplit_once(':') {
        // A bare IPv6 literal has several colons and no port.
        Some((host, _)) if host.contains(':') => Ok((part.to_owned(), DEFAULT_PORT)),
        Some(("", _)) => Err("a port without a host"),
        Some((host, port)) => Ok((host.to_owned(), parse_port(port)?)),
        None => Ok((part.to_owned(), DEFAULT_PORT)),
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

    fn reason(input: &str) -> &'static str {
        match ConnectString::parse(input) {
            Err(Error::InvalidHosts { reason, .. }) => reason,
            other => panic!("{input:?}: {other:?}"),
        }
    }

    #[test]
    fn refuses_bad_connect_strings_saying_what_is_wrong() {
        for bad in ["", ",", "a:", ":1", "[::1", "[::1]x", "[]:1"] {
            assert!(ConnectString::parse(bad).is_err(), "{bad:?}");
        }
        for bad in ["a/b/", "a//b"] {
            assert!(
                matches!(ConnectString::parse(bad), Err(Error::InvalidPath(_))),
                "{bad:?}"
            );
        }
        assert!(reason("zk://h:2181").contains("no scheme"));
        assert!(reason("h:1 h:2").contains("commas, not spaces"));
        assert!(reason("h:99999").contains("out of range"));
        assert!(reason("h:0").contains("out of range"));
        assert!(reason("h:port").contains("not a number"));
        assert!(reason("h:1,").contains("empty host"));
        assert!(reason("h:1,,h:2").contains("empty host"));
        assert!(reason(":1").contains("without a host"));
    }
}
