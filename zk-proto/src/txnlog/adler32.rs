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
    let (mut a, mut b) = (1u32, 0u32);
    for chunk in bytes.chunks(NMAX) {
        for &byte in chunk {
            a += u32::from(byte);
            b += a;
        }
        a %= MOD;
        b %= MOD;
    }
    (b << 16) | a
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
