//! Strings as Java's jute writes them.
//!
//! ZooKeeper 3.8's `BinaryOutputArchive.writeString` encodes each UTF-16 unit on its own, so a
//! character outside the Basic Multilingual Plane (an emoji, say) goes on the wire as two
//! 3-byte surrogates (CESU-8) instead of one 4-byte UTF-8 sequence. Every other character is
//! plain UTF-8. We encode the same way, so our bytes equal the Java client's, and we decode
//! both forms to the real character. (ZooKeeper paths cannot hold such characters at all; see
//! [`crate::validate_path`].)

use std::borrow::Cow;

/// Whether `s` encodes differently in CESU-8 than in UTF-8 (it has a 4-byte character).
fn has_supplementary(s: &str) -> bool {
    // `is_ascii` checks a word at a time: the usual path or name is done in a few steps.
    !s.is_ascii() && s.bytes().any(|b| b >= 0xf0)
}

/// The encoded length of `s`: UTF-8's, plus 2 for each supplementary character.
pub(crate) fn encoded_len(s: &str) -> usize {
    if has_supplementary(s) {
        s.len() + 2 * s.bytes().filter(|&b| b >= 0xf0).count()
    } else {
        s.len()
    }
}

/// Appends `s` as Java writes it.
pub(crate) fn encode(s: &str, out: &mut impl bytes::BufMut) {
    if !has_supplementary(s) {
        out.put_slice(s.as_bytes());
        return;
    }
    let mut units = [0u16; 2];
    for ch in s.chars() {
        for unit in ch.encode_utf16(&mut units).iter() {
            put_unit(*unit, out);
        }
    }
}

fn put_unit(unit: u16, out: &mut impl bytes::BufMut) {
    // Three-byte form for surrogates and U+0800..; shorter ones are plain UTF-8.
    match unit {
        0..=0x7f => out.put_u8(unit as u8),
        0x80..=0x7ff => {
            out.put_u8(0xc0 | (unit >> 6) as u8);
            out.put_u8(0x80 | (unit & 0x3f) as u8);
        }
        _ => {
            out.put_u8(0xe0 | (unit >> 12) as u8);
            out.put_u8(0x80 | ((unit >> 6) & 0x3f) as u8);
            out.put_u8(0x80 | (unit & 0x3f) as u8);
        }
    }
}

/// Decodes UTF-8 in which supplementary characters may also appear as CESU-8 surrogate
/// pairs. `None` if the bytes are neither (including a lone surrogate).
pub(crate) fn decode(bytes: &[u8]) -> Option<Cow<'_, str>> {
    if let Ok(s) = std::str::from_utf8(bytes) {
        return Some(Cow::Borrowed(s));
    }
    let mut out = String::with_capacity(bytes.len());
    let mut rest = bytes;
    loop {
        match std::str::from_utf8(rest) {
            Ok(s) => {
                out.push_str(s);
                return Some(Cow::Owned(out));
            }
            Err(e) => {
                let (good, bad) = rest.split_at_checked(e.valid_up_to())?;
                out.push_str(std::str::from_utf8(good).ok()?);
                let (&[a, b, c, d, e, f], tail) = bad.split_first_chunk::<6>()?;
                let hi = surrogate([a, b, c], 0xd800..=0xdbff)?;
                let lo = surrogate([d, e, f], 0xdc00..=0xdfff)?;
                out.push(char::from_u32(
                    0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00),
                )?);
                rest = tail;
            }
        }
    }
}

fn surrogate(b: [u8; 3], range: std::ops::RangeInclusive<u32>) -> Option<u32> {
    let [x, y, z] = b;
    if x != 0xed || y & 0xc0 != 0x80 || z & 0xc0 != 0x80 {
        return None;
    }
    let unit = 0xd000 | (u32::from(y & 0x3f) << 6) | u32::from(z & 0x3f);
    range.contains(&unit).then_some(unit)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn bmp_strings_are_plain_utf8() {
        let mut out = Vec::new();
        encode("/中文/ü\u{0}", &mut out);
        assert_eq!(out, "/中文/ü\u{0}".as_bytes());
        assert_eq!(encoded_len("/中文/ü"), "/中文/ü".len());
    }

    #[test]
    fn supplementary_characters_use_surrogate_pairs_like_java() {
        let mut out = Vec::new();
        encode("a😀", &mut out);
        assert_eq!(out, [b'a', 0xed, 0xa0, 0xbd, 0xed, 0xb8, 0x80]);
        assert_eq!(encoded_len("a😀"), out.len());
        assert_eq!(decode(&out).as_deref(), Some("a😀"));
        assert_eq!(decode("a😀".as_bytes()).as_deref(), Some("a😀"));
    }

    #[test]
    fn lone_or_reversed_surrogates_are_refused() {
        assert_eq!(decode(&[0xed, 0xa0, 0xbd]), None);
        assert_eq!(decode(&[0xed, 0xb8, 0x80, 0xed, 0xa0, 0xbd]), None);
        assert_eq!(decode(&[0xed, 0xa0, 0xbd, b'x', b'y', b'z']), None);
        assert_eq!(decode(&[0xff]), None);
    }
}
