//! ACLs as a ZooKeeper 3.8 server with its default providers (`ip` and `digest`) enforces
//! them: the identities a connection has (its IP, and each `digest` identity `addAuth` gave
//! it), an ACL's check against them, and the fix-up a new ACL goes through before a node
//! takes it (`PrepRequestProcessor.fixupACL`: duplicates dropped, `auth` expanded to the
//! connection's authenticated identities, each other id valid for its scheme).

use zk_proto::ErrorCode;
use zk_proto::records::{Acl, ClientInfo, Id, Perms};

/// The address every connection is known by (`ip` identity): the server serves loopback and
/// in-memory streams only.
pub const LOOPBACK: &str = "127.0.0.1";

/// The identities of a new connection: its IP.
pub fn new_connection() -> Vec<Id> {
    vec![Id {
        scheme: "ip".into(),
        id: LOOPBACK.into(),
    }]
}

/// The identity that passes every check (ZooKeeper's `super` scheme): how
/// `ServerConfig::skip_acl` is served.
pub fn superuser() -> Id {
    Id {
        scheme: "super".into(),
        id: "".into(),
    }
}

/// The identity `addAuth` with `scheme` and `auth` gives, or `AuthFailed` for a scheme no
/// provider serves (as ZooKeeper answers before closing the connection).
pub fn authenticate(scheme: &str, auth: &[u8]) -> Result<Id, ErrorCode> {
    match scheme {
        "digest" => Ok(Id {
            scheme: "digest".into(),
            id: digest_id(&String::from_utf8_lossy(auth)).into(),
        }),
        // ZooKeeper's IP provider answers with the connection's own address.
        "ip" => Ok(Id {
            scheme: "ip".into(),
            id: LOOPBACK.into(),
        }),
        _ => Err(ErrorCode::AuthFailed),
    }
}

/// `whoAmI`'s answer: each identity's scheme and user (a digest identity's user name, an
/// IP identity's address).
pub fn client_infos(ids: &[Id]) -> Vec<ClientInfo> {
    ids.iter()
        .filter(|id| id.scheme != "super")
        .map(|id| ClientInfo {
            auth_scheme: id.scheme.to_string(),
            user: match &*id.scheme {
                "digest" => id.id.split(':').next().unwrap_or_default().to_owned(),
                _ => id.id.to_string(),
            },
        })
        .collect()
}

/// `user:base64(sha1(user:password))` for `user:password` (ZooKeeper's
/// `DigestAuthenticationProvider.generateDigest`).
pub fn digest_id(user_password: &str) -> String {
    let user = user_password.split(':').next().unwrap_or_default();
    format!("{user}:{}", base64(&sha1(user_password.as_bytes())))
}

/// Whether `ids` may do `perm` on a node with `acl` (`ZooKeeperServer.checkACL`): an empty
/// ACL or a `super` identity lets anyone; otherwise an entry granting `perm` to `world:anyone` or to one of `ids`.
pub fn check(acl: &[Acl], perm: Perms, ids: &[Id]) -> Result<(), ErrorCode> {
    if acl.is_empty() || ids.iter().any(|id| id.scheme == "super") {
        return Ok(());
    }
    let granted = acl.iter().any(|a| {
        a.perms.0 & perm.0 != 0
            && ((a.id.scheme == "world" && a.id.id == "anyone")
                || ids
                    .iter()
                    .any(|id| id.scheme == a.id.scheme && matches(&a.id.scheme, &id.id, &a.id.id)))
    });
    if granted {
        Ok(())
    } else {
        Err(ErrorCode::NoAuth)
    }
}

/// Whether identity `have` of `scheme` matches an ACL's id `want`.
fn matches(scheme: &str, have: &str, want: &str) -> bool {
    match scheme {
        "digest" => have == want,
        "ip" => ip_matches(have, want),
        _ => false,
    }
}

/// The ACL a node takes for `acl` asked by a connection with `ids`, or `InvalidAcl`.
pub fn fixup(acl: &[Acl], ids: &[Id]) -> Result<Vec<Acl>, ErrorCode> {
    let mut unique: Vec<&Acl> = Vec::with_capacity(acl.len());
    for a in acl {
        if !unique.contains(&a) {
            unique.push(a);
        }
    }
    if unique.is_empty() {
        return Err(ErrorCode::InvalidAcl);
    }
    let mut out = Vec::with_capacity(unique.len());
    for a in unique {
        match &*a.id.scheme {
            "world" if a.id.id == "anyone" => out.push(a.clone()),
            "auth" => {
                // Expanded to the connection's authenticated identities (digest; an IP is
                // not one).
                let before = out.len();
                out.extend(ids.iter().filter(|id| id.scheme == "digest").map(|id| Acl {
                    perms: a.perms,
                    id: id.clone(),
                }));
                if out.len() == before {
                    return Err(ErrorCode::InvalidAcl);
                }
            }
            "digest" if digest_valid(&a.id.id) => out.push(a.clone()),
            "ip" if parse_ip(&a.id.id).is_some() => out.push(a.clone()),
            _ => return Err(ErrorCode::InvalidAcl),
        }
    }
    Ok(out)
}

/// `getACL` for a caller without `ADMIN`: digest ids shown as `user:x`.
pub fn redacted(acl: &[Acl]) -> Vec<Acl> {
    acl.iter()
        .map(|a| {
            let mut a = a.clone();
            if a.id.scheme == "digest" {
                let user = a.id.id.split(':').next().unwrap_or_default();
                a.id.id = format!("{user}:x").into();
            }
            a
        })
        .collect()
}

/// Java's `id.split(":").length == 2`: trailing empty parts dropped.
fn digest_valid(id: &str) -> bool {
    let mut parts: Vec<&str> = id.split(':').collect();
    while parts.last().is_some_and(|p| p.is_empty()) {
        parts.pop();
    }
    parts.len() == 2
}

/// An `ip` ACL id: an address, optionally `/bits`.
fn parse_ip(id: &str) -> Option<(std::net::IpAddr, u32)> {
    let (addr, bits) = match id.split_once('/') {
        Some((addr, bits)) => (addr, Some(bits.parse::<u32>().ok()?)),
        None => (id, None),
    };
    let addr: std::net::IpAddr = addr.parse().ok()?;
    let max = if addr.is_ipv4() { 32 } else { 128 };
    let bits = bits.unwrap_or(max);
    (bits <= max).then_some((addr, bits))
}

fn ip_matches(have: &str, want: &str) -> bool {
    let (Some((have, _)), Some((want, bits))) = (parse_ip(have), parse_ip(want)) else {
        return false;
    };
    let (have, want, len): (u128, u128, u32) = match (have, want) {
        (std::net::IpAddr::V4(h), std::net::IpAddr::V4(w)) => {
            (u32::from(h).into(), u32::from(w).into(), 32)
        }
        (std::net::IpAddr::V6(h), std::net::IpAddr::V6(w)) => (h.into(), w.into(), 128),
        _ => return false,
    };
    let shift = len - bits;
    let mask = if shift >= 128 { 0 } else { u128::MAX << shift };
    have & mask == want & mask
}

/// SHA-1 (FIPS 180-4) of `data`: what the digest scheme names identities by.
fn sha1(data: &[u8]) -> [u8; 20] {
    let mut h: [u32; 5] = [
        0x6745_2301,
        0xEFCD_AB89,
        0x98BA_DCFE,
        0x1032_5476,
        0xC3D2_E1F0,
    ];
    let bit_len = (data.len() as u64).wrapping_mul(8);
    let mut message = data.to_vec();
    message.push(0x80);
    while message.len() % 64 != 56 {
        message.push(0);
    }
    message.extend_from_slice(&bit_len.to_be_bytes());
    for block in message.chunks_exact(64) {
        // The message schedule as a window of 16 words, the current one first.
        let mut w = [0u32; 16];
        for (slot, word) in w.iter_mut().zip(block.chunks_exact(4)) {
            *slot = word.iter().fold(0, |acc, b| (acc << 8) | u32::from(*b));
        }
        let [mut a, mut b, mut c, mut d, mut e] = h;
        for i in 0..80 {
            let (f, k) = match i {
                0..=19 => ((b & c) | (!b & d), 0x5A82_7999),
                20..=39 => (b ^ c ^ d, 0x6ED9_EBA1),
                40..=59 => ((b & c) | (b & d) | (c & d), 0x8F1B_BCDC),
                _ => (b ^ c ^ d, 0xCA62_C1D6),
            };
            let t = a
                .rotate_left(5)
                .wrapping_add(f)
                .wrapping_add(e)
                .wrapping_add(k)
                .wrapping_add(w[0]);
            e = d;
            d = c;
            c = b.rotate_left(30);
            b = a;
            a = t;
            // W[i+16] = (W[i+13] ^ W[i+8] ^ W[i+2] ^ W[i]) <<< 1.
            let next = (w[13] ^ w[8] ^ w[2] ^ w[0]).rotate_left(1);
            w.rotate_left(1);
            w[15] = next;
        }
        for (hi, v) in h.iter_mut().zip([a, b, c, d, e]) {
            *hi = hi.wrapping_add(v);
        }
    }
    let mut out = [0u8; 20];
    for (chunk, v) in out.chunks_exact_mut(4).zip(h) {
        chunk.copy_from_slice(&v.to_be_bytes());
    }
    out
}

/// Standard base64 with padding.
fn base64(data: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [
            chunk.first().copied().unwrap_or(0),
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for (i, shift) in [18u32, 12, 6, 0].into_iter().enumerate() {
            if i <= chunk.len() {
                let index = (n >> shift & 63) as usize;
                out.push(char::from(ALPHABET.get(index).copied().unwrap_or(b'=')));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    fn acl(perms: Perms, scheme: &str, id: &str) -> Acl {
        Acl {
            perms,
            id: Id {
                scheme: scheme.to_owned().into(),
                id: id.to_owned().into(),
            },
        }
    }

    #[test]
    fn sha1_and_base64_give_zookeepers_digest_ids() {
        assert_eq!(
            hex(&sha1(b"abc")),
            "a9993e364706816aba3e25717850c26c9cd0d89d"
        );
        assert_eq!(hex(&sha1(b"")), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
        // Two blocks (56 bytes: the length no longer fits in the first).
        assert_eq!(
            hex(&sha1(
                b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"
            )),
            "84983e441c3bd26ebaae4aa1f95129e5e54670f1"
        );
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        // The id both clients of the Java interop test authenticate as.
        assert_eq!(
            digest_id("alice:secret"),
            "alice:aYXlLOpEooaV1cRAvUL1fp9Qt7E="
        );
    }

    #[test]
    fn checks_grant_by_world_digest_and_ip() {
        let alice = authenticate("digest", b"alice:secret").unwrap();
        let mut ids = new_connection();
        let open = [acl(Perms::ALL, "world", "anyone")];
        assert_eq!(check(&open, Perms::WRITE, &ids), Ok(()));
        assert_eq!(check(&[], Perms::WRITE, &ids), Ok(()));
        let read_only = [acl(Perms::READ, "world", "anyone")];
        assert_eq!(
            check(&read_only, Perms::WRITE, &ids),
            Err(ErrorCode::NoAuth)
        );
        let hers = [acl(Perms::ALL, "digest", &alice.id)];
        assert_eq!(check(&hers, Perms::READ, &ids), Err(ErrorCode::NoAuth));
        ids.push(alice.clone());
        assert_eq!(check(&hers, Perms::READ, &ids), Ok(()));
        assert_eq!(
            check(&[acl(Perms::READ, "ip", "127.0.0.0/8")], Perms::READ, &ids),
            Ok(())
        );
        assert_eq!(
            check(&[acl(Perms::READ, "ip", "10.0.0.1")], Perms::READ, &ids),
            Err(ErrorCode::NoAuth)
        );
        assert_eq!(authenticate("x509", b""), Err(ErrorCode::AuthFailed));
        let skip = [superuser()];
        assert_eq!(check(&read_only, Perms::WRITE, &skip), Ok(()));
        assert!(client_infos(&skip).is_empty());
        assert_eq!(
            client_infos(&ids)
                .iter()
                .map(|c| (c.auth_scheme.as_str(), c.user.as_str()))
                .collect::<Vec<_>>(),
            [("ip", "127.0.0.1"), ("digest", "alice")]
        );
    }

    #[test]
    fn fixup_expands_auth_drops_duplicates_and_refuses_what_no_provider_reads() {
        let mut ids = new_connection();
        let auth = [acl(Perms::ALL, "auth", "")];
        // Only an IP: no authenticated identity to expand to.
        assert_eq!(fixup(&auth, &ids), Err(ErrorCode::InvalidAcl));
        let bob = authenticate("digest", b"bob:pw").unwrap();
        ids.push(bob.clone());
        assert_eq!(
            fixup(&auth, &ids),
            Ok(vec![acl(Perms::ALL, "digest", &bob.id)])
        );
        let open = acl(Perms::ALL, "world", "anyone");
        assert_eq!(fixup(&[open.clone(), open.clone()], &ids), Ok(vec![open]));
        for bad in [
            acl(Perms::ALL, "world", "someone"),
            acl(Perms::ALL, "digest", "no-colon"),
            acl(Perms::ALL, "digest", "a:"),
            acl(Perms::ALL, "ip", "not-an-address"),
            acl(Perms::ALL, "ip", "10.0.0.0/33"),
            acl(Perms::ALL, "super", "x"),
        ] {
            assert_eq!(
                fixup(std::slice::from_ref(&bad), &ids),
                Err(ErrorCode::InvalidAcl),
                "{bad:?}"
            );
        }
        assert_eq!(fixup(&[], &ids), Err(ErrorCode::InvalidAcl));
        assert_eq!(
            redacted(&[acl(Perms::READ, "digest", &bob.id)]),
            [acl(Perms::READ, "digest", "bob:x")]
        );
    }
}
