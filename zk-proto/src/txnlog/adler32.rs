//! [`adler32`]: the checksum of each log record (`java.util.zip.Adler32`, RFC 1950).

/// The largest prime below 2^16.
const MOD: u32 = 65_521;
/// The most bytes whose sums cannot overflow a `u32` before the modulo (zlib's `NMAX`).
const NMAX: usize = 5_552;

/// The Adler-32 checksum of `bytes`, as `java.util.zip.Adler32` computes it.
///
/// ```
/// use zk_proto::txnlog::adler32;
///
/// assert_eq!(adler32(b""), 1);
/// assert_eq!(adler32(b"Wikipedia"), 0x11e6_0398);
/// ```
pub fn adler32(bytes: &[u8]) -> u32 {
    let mut sum = Adler32::new();
    sum.update(bytes);
    sum.value()
}

/// An Adler-32 checksum fed in pieces (`java.util.zip.Adler32.update`), for a stream read a
/// piece at a time.
///
/// ```
/// use zk_proto::txnlog::{Adler32, adler32};
///
/// let mut sum = Adler32::new();
/// sum.update(b"Wiki");
/// sum.update(b"pedia");
/// assert_eq!(sum.value(), adler32(b"Wikipedia"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Adler32 {
    a: u32,
    b: u32,
}

impl Default for Adler32 {
    fn default() -> Self {
        Self::new()
    }
}

impl Adler32 {
    /// The checksum of nothing (1).
    pub fn new() -> Self {
        Adler32 { a: 1, b: 0 }
    }

    /// Adds `bytes`.
    pub fn update(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(NMAX) {
            for &byte in chunk {
                self.a += u32::from(byte);
                self.b += self.a;
            }
            self.a %= MOD;
            self.b %= MOD;
        }
    }

    /// The checksum of the bytes added so far.
    pub fn value(&self) -> u32 {
        (self.b << 16) | self.a
    }
}

#[cfg(test)]
mod tests {
    use super::adler32;

    #[test]
    fn known_vectors() {
        assert_eq!(adler32(b""), 0x0000_0001);
        assert_eq!(adler32(b"a"), 0x0062_0062);
        assert_eq!(adler32(b"abc"), 0x024d_0127);
        assert_eq!(adler32(b"message digest"), 0x2975_0586);
        assert_eq!(adler32(b"abcdefghijklmnopqrstuvwxyz"), 0x9086_0b20);
        assert_eq!(adler32(b"Wikipedia"), 0x11e6_0398);
    }

    #[test]
    fn long_inputs_wrap_the_sums() {
        // Python's zlib.adler32 of 1 MiB of 0xff and of 100,000 zeros.
        let ff = vec![0xff; 1 << 20];
        assert_eq!(adler32(&ff), 0x8e88_ef11);
        assert_eq!(adler32(&ff), naive(&ff));
        assert_eq!(adler32(&[0u8; 100_000]), 0x86af_0001);
        // In pieces of every size, across the NMAX boundary.
        for piece in [1, 7, 5_551, 5_552, 5_553, 100_000] {
            let mut sum = super::Adler32::new();
            ff.chunks(piece).for_each(|c| sum.update(c));
            assert_eq!(sum.value(), 0x8e88_ef11, "pieces of {piece}");
        }
    }

    /// The definition, one modulo per byte.
    fn naive(bytes: &[u8]) -> u32 {
        let (mut a, mut b) = (1u64, 0u64);
        for &byte in bytes {
            a = (a + u64::from(byte)) % 65_521;
            b = (b + a) % 65_521;
        }
        ((b << 16) | a) as u32
    }
}
