//! DIGEST-MD5 (RFC 2831) as ZooKeeper's servers speak it with their `DigestLoginModule`
//! (feature `sasl-digest`): `qop=auth` only (no integrity or privacy layer), the service
//! `zookeeper` on the host `zk-sasl-md5`, the user as authorization id (as the Java client).
//!
//! The flow, after the handshake: we send an empty token; the server challenges (realm,
//! nonce, `algorithm=md5-sess`); we answer with the digest of the password; the server
//! answers `rspauth`, which we check: it proves the server knows the password too.

use std::fmt::Write as _;
use std::sync::Arc;

use md5::{Digest, Md5};

use super::{Exchange, Mechanism, Step};

/// The service and host in the `digest-uri` ZooKeeper's servers expect.
const DIGEST_URI: &str = "zookeeper/zk-sasl-md5";

/// The nonce count: one response per nonce.
const NC: &str = "00000001";

/// DIGEST-MD5 with a user and password (the server's JAAS `user_<name>="<password>"`).
#[derive(Clone)]
pub(crate) struct DigestMd5 {
    user: Arc<str>,
    password: Arc<str>,
}

impl std::fmt::Debug for DigestMd5 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DigestMd5")
            .field("user", &self.user)
            .field("password", &"<redacted>")
            .finish()
    }
}

impl DigestMd5 {
    pub(crate) fn new(user: &str, password: &str) -> Self {
        Self {
            user: user.into(),
            password: password.into(),
        }
    }
}

impl Mechanism for DigestMd5 {
    fn start(&self) -> Box<dyn Exchange> {
        Box::new(Run {
            creds: self.clone(),
            cnonce: cnonce(),
            rspauth: None,
        })
    }
}

/// A fresh client nonce: 128 bits from the standard library's randomly keyed hasher
/// (seeded from the OS), in hex.
fn cnonce() -> String {
    let (a, b) = (crate::dial::random_seed(), crate::dial::random_seed());
    format!("{a:016x}{b:016x}")
}

/// One exchange.
struct Run {
    creds: DigestMd5,
    cnonce: String,
    /// The `rspauth` the server must send, once we have answered its challenge.
    rspauth: Option<String>,
}

impl Exchange for Run {
    fn initial(&mut self) -> Vec<u8> {
        Vec::new()
    }

    fn step(&mut self, token: &[u8]) -> Result<Step, String> {
        match self.rspauth.take() {
            None => {
                let challenge = Challenge::parse(token)?;
                let answer = respond(&self.creds, &challenge, &self.cnonce)?;
                self.rspauth = Some(answer.rspauth);
                Ok(Step::Respond(answer.response.into_bytes()))
            }
            Some(expected) => {
                let fields = parse_fields(token)?;
                let got =
                    field(&fields, "rspauth").ok_or("the server's last message has no rspauth")?;
                if !got.eq_ignore_ascii_case(&expected) {
                    return Err(
                        "the server's rspauth is wrong: it does not know the password \
                                (or is not the server it claims to be)"
                            .into(),
                    );
                }
                Ok(Step::Done)
            }
        }
    }
}

/// What the server's challenge says.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Challenge {
    realm: String,
    nonce: String,
    utf8: bool,
}

impl Challenge {
    fn parse(token: &[u8]) -> Result<Self, String> {
        let fields = parse_fields(token)?;
        let nonce = field(&fields, "nonce").ok_or("the challenge has no nonce")?;
        match field(&fields, "algorithm") {
            Some(a) if a.eq_ignore_ascii_case("md5-sess") => {}
            other => {
                return Err(format!(
                    "the challenge's algorithm is {other:?}, not md5-sess"
                ));
            }
        }
        if let Some(qop) = field(&fields, "qop") {
            if !qop
                .split(',')
                .any(|q| q.trim().eq_ignore_ascii_case("auth"))
            {
                return Err(format!(
                    "the server does not offer qop=auth (it offers {qop:?})"
                ));
            }
        }
        Ok(Challenge {
            realm: field(&fields, "realm").unwrap_or_default().to_owned(),
            nonce: nonce.to_owned(),
            utf8: field(&fields, "charset").is_some_and(|c| c.eq_ignore_ascii_case("utf-8")),
        })
    }
}

/// Our response, and the `rspauth` the server must answer with.
struct Answer {
    response: String,
    rspauth: String,
}

fn respond(creds: &DigestMd5, ch: &Challenge, cnonce: &str) -> Result<Answer, String> {
    let authzid = Some(&*creds.user);
    let (response, rspauth) = digests(
        &encode(&creds.user, ch.utf8)?,
        &encode(&ch.realm, ch.utf8)?,
        &encode(&creds.password, ch.utf8)?,
        &ch.nonce,
        cnonce,
        DIGEST_URI,
        authzid,
    );
    let mut out = String::new();
    if ch.utf8 {
        out.push_str("charset=utf-8,");
    }
    let _ = write!(
        out,
        "username={},realm={},nonce={},nc={NC},cnonce={},digest-uri={},maxbuf=65536,response={response},qop=auth",
        quote(&creds.user),
        quote(&ch.realm),
        quote(&ch.nonce),
        quote(cnonce),
        quote(DIGEST_URI),
    );
    if let Some(authzid) = authzid {
        let _ = write!(out, ",authzid={}", quote(authzid));
    }
    Ok(Answer {
        response: out,
        rspauth,
    })
}

/// RFC 2831 §2.1.2.1: the `response` value and the `rspauth` the server must send.
fn digests(
    user: &[u8],
    realm: &[u8],
    password: &[u8],
    nonce: &str,
    cnonce: &str,
    digest_uri: &str,
    authzid: Option<&str>,
) -> (String, String) {
    let secret = Md5::new()
        .chain_update(user)
        .chain_update(b":")
        .chain_update(realm)
        .chain_update(b":")
        .chain_update(password)
        .finalize();
    let mut a1 = Md5::new()
        .chain_update(secret)
        .chain_update(format!(":{nonce}:{cnonce}"));
    if let Some(authzid) = authzid {
        a1.update(format!(":{authzid}"));
    }
    let ha1 = hex(&a1.finalize());
    let kd = |a2: &str| {
        let ha2 = hex(&Md5::digest(a2.as_bytes()));
        hex(&Md5::digest(
            format!("{ha1}:{nonce}:{NC}:{cnonce}:auth:{ha2}").as_bytes(),
        ))
    };
    (
        kd(&format!("AUTHENTICATE:{digest_uri}")),
        kd(&format!(":{digest_uri}")),
    )
}

/// RFC 2831: with `charset=utf-8`, a string all in ISO 8859-1 is sent in ISO 8859-1, any other
/// in UTF-8; without it, only ISO 8859-1 is allowed.
fn encode(s: &str, utf8: bool) -> Result<Vec<u8>, String> {
    let latin1: Option<Vec<u8>> = s.chars().map(|c| u8::try_from(u32::from(c)).ok()).collect();
    match (latin1, utf8) {
        (Some(bytes), _) => Ok(bytes),
        (None, true) => Ok(s.as_bytes().to_vec()),
        (None, false) => {
            Err("the server did not offer charset=utf-8 and a credential is not ISO 8859-1".into())
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
    out
}

fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

fn field<'a>(fields: &'a [(String, String)], key: &str) -> Option<&'a str> {
    fields
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(key))
        .map(|(_, v)| v.as_str())
}

/// `key=value` pairs separated by commas; a value is a token or a quoted string (with `\`
/// escapes). The first of repeated keys wins (a server may offer several realms).
fn parse_fields(token: &[u8]) -> Result<Vec<(String, String)>, String> {
    let text = std::str::from_utf8(token).map_err(|_| "a SASL token that is not UTF-8")?;
    let mut fields = Vec::new();
    let mut chars = text.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace() || *c == ',') {
            chars.next();
        }
        if chars.peek().is_none() {
            return Ok(fields);
        }
        let mut key = String::new();
        while let Some(c) = chars.next_if(|c| *c != '=' && *c != ',') {
            key.push(c);
        }
        if chars.next() != Some('=') {
            return Err(format!("malformed SASL token: {key:?} has no value"));
        }
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        let mut value = String::new();
        if chars.next_if_eq(&'"').is_some() {
            loop {
                match chars.next() {
                    Some('"') => break,
                    Some('\\') => value.extend(chars.next()),
                    Some(c) => value.push(c),
                    None => return Err("malformed SASL token: an unterminated quote".into()),
                }
            }
        } else {
            while let Some(c) = chars.next_if(|c| *c != ',') {
                value.push(c);
            }
            value = value.trim_end().to_owned();
        }
        fields.push((key.trim().to_owned(), value));
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    /// RFC 2831 §4's example (IMAP, no authzid).
    #[test]
    fn rfc_2831_example() {
        let (response, rspauth) = digests(
            b"chris",
            b"elwood.innosoft.com",
            b"secret",
            "OA6MG9tEQGm2hh",
            "OA6MHXh6VqTrRk",
            "imap/elwood.innosoft.com",
            None,
        );
        assert_eq!(response, "d388dad90d4bbd760a152321f2143af7");
        assert_eq!(rspauth, "ea40f60335c427b5527b84dbabcdfffd");
    }

    #[test]
    fn parses_a_zookeeper_challenge() {
        let token = br#"realm="zk-sasl-md5",nonce="Zm9v\"YmFy",charset=utf-8,algorithm=md5-sess"#;
        let ch = Challenge::parse(token).unwrap();
        assert_eq!(ch.realm, "zk-sasl-md5");
        assert_eq!(ch.nonce, "Zm9v\"YmFy");
        assert!(ch.utf8);
    }

    #[test]
    fn refuses_what_it_cannot_do() {
        assert!(Challenge::parse(br#"realm="r",algorithm=md5-sess"#).is_err()); // no nonce
        assert!(Challenge::parse(br#"nonce="n",algorithm=md5"#).is_err());
        assert!(Challenge::parse(br#"nonce="n",algorithm=md5-sess,qop="auth-conf""#).is_err());
        assert!(parse_fields(br#"nonce="unterminated"#).is_err());
        assert!(parse_fields(b"novalue").is_err());
        assert!(parse_fields(&[0xff, 0xfe]).is_err());
    }

    #[test]
    fn a_whole_exchange_checks_rspauth() {
        let mech = DigestMd5::new("bob", "bobsecret");
        let mut run = Run {
            creds: mech.clone(),
            cnonce: "cn".into(),
            rspauth: None,
        };
        assert!(run.initial().is_empty());
        let challenge = br#"realm="zk-sasl-md5",nonce="n1",charset=utf-8,algorithm=md5-sess"#;
        let Step::Respond(response) = run.step(challenge).unwrap() else {
            panic!("no response")
        };
        let response = String::from_utf8(response).unwrap();
        assert!(response.starts_with("charset=utf-8,username=\"bob\",realm=\"zk-sasl-md5\""));
        assert!(response.contains("digest-uri=\"zookeeper/zk-sasl-md5\""));
        assert!(response.ends_with("qop=auth,authzid=\"bob\""));
        let (_, rspauth) = digests(
            b"bob",
            b"zk-sasl-md5",
            b"bobsecret",
            "n1",
            "cn",
            DIGEST_URI,
            Some("bob"),
        );
        // A wrong rspauth is refused...
        let mut wrong = Run {
            creds: mech,
            cnonce: "cn".into(),
            rspauth: Some(rspauth.clone()),
        };
        assert!(
            wrong
                .step(b"rspauth=00000000000000000000000000000000")
                .is_err()
        );
        // ...the right one completes.
        assert_eq!(
            run.step(format!("rspauth={rspauth}").as_bytes()).unwrap(),
            Step::Done
        );
    }

    #[test]
    fn credentials_outside_latin1_need_utf8() {
        assert_eq!(encode("bøb", false).unwrap(), vec![b'b', 0xf8, b'b']);
        assert_eq!(encode("b€b", true).unwrap(), "b€b".as_bytes());
        assert!(encode("b€b", false).is_err());
    }

    /// Whatever a server sends, the exchange answers or fails; it never panics.
    #[test]
    fn any_bytes_from_the_server_are_an_answer_or_an_error() {
        let mut rng = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let alphabet = b"=,\" a\\nonce realm algorithm md5-sess qop auth rspauth \xff";
        for _ in 0..20_000 {
            let len = (next() % 64) as usize;
            let token: Vec<u8> = (0..len)
                .map(|_| alphabet[(next() as usize) % alphabet.len()])
                .collect();
            for rspauth in [None, Some("00".to_owned())] {
                let mut run = Run {
                    creds: DigestMd5::new("bob", "pw"),
                    cnonce: "cn".into(),
                    rspauth,
                };
                let _ = run.step(&token);
            }
        }
    }

    #[test]
    fn debug_hides_the_password() {
        let shown = format!("{:?}", DigestMd5::new("bob", "bobsecret"));
        assert!(!shown.contains("bobsecret"));
    }
}
