//! The decompressors' tests: exact round trips of what real compressors wrote (flate2 at every
//! level, snap's raw blocks in snappy-java's framing), read through buffers of several sizes;
//! hand-made faults, each with its own error; a snapshot read through each.

use std::io::{BufRead, BufReader, Read, Write};

use super::*;

/// Deterministic bytes of several kinds, `len` long.
fn sample_bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut out = Vec::with_capacity(len);
    while out.len() < len {
        match next() % 5 {
            // Noise: literals.
            0 => out.extend((0..next() % 300).map(|_| next() as u8)),
            // A run of one byte: overlapping copies.
            1 => out.extend(std::iter::repeat_n(next() as u8, (next() % 700) as usize)),
            // Text-like words.
            2 => {
                for _ in 0..next() % 40 {
                    let words: [&[u8]; 4] = [b"/locks/a/_c_", b"-lock-000000", b"lease-", b" "];
                    out.extend_from_slice(words[(next() % 4) as usize]);
                }
            }
            // A copy from far back: up to the 32 KiB window's edge, and past it.
            _ if out.len() > 1000 => {
                let back = (next() as usize % out.len().min(40_000)).max(1);
                let n = (next() % 2000) as usize;
                let from = out.len() - back;
                for i in 0..n {
                    out.push(out[from + i]);
                }
            }
            _ => out.push(next() as u8),
        }
    }
    out.truncate(len);
    out
}

const SIZES: [usize; 10] = [0, 1, 2, 100, 4095, 32_767, 32_768, 32_769, 65_543, 300_001];

fn gzip(data: &[u8], level: u32) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(level));
    enc.write_all(data).unwrap();
    enc.finish().unwrap()
}

/// snappy-java's `SnappyOutputStream` framing over snap's raw blocks of `block` bytes.
fn snappy(data: &[u8], block: usize) -> Vec<u8> {
    let mut out = vec![
        0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1,
    ];
    for chunk in data.chunks(block) {
        let raw = snap::raw::Encoder::new().compress_vec(chunk).unwrap();
        out.extend_from_slice(&u32::try_from(raw.len()).unwrap().to_be_bytes());
        out.extend_from_slice(&raw);
    }
    out
}

/// Reads all of `r`, in reads of `piece` bytes.
fn read_all(mut r: impl Read, piece: usize) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::new();
    let mut buf = vec![0; piece];
    loop {
        match r.read(&mut buf)? {
            0 => return Ok(out),
            n => out.extend_from_slice(&buf[..n]),
        }
    }
}

fn gunzip(gz: &[u8]) -> Result<Vec<u8>, DecompressError> {
    read_all(GzipDecoder::new(gz), 4096).map_err(|e| DecompressError::from_io(&e).unwrap().clone())
}

fn unsnappy(s: &[u8]) -> Result<Vec<u8>, DecompressError> {
    read_all(SnappyDecoder::new(s), 4096).map_err(|e| DecompressError::from_io(&e).unwrap().clone())
}

#[test]
fn gzip_round_trips_at_every_level_size_and_input_buffer() {
    for (i, &size) in SIZES.iter().enumerate() {
        let data = sample_bytes(size, i as u64);
        for level in 0..=9 {
            let gz = gzip(&data, level);
            // Compressed bytes handed over 1, 7 and 64 KiB at a time.
            for cap in [1, 7, 1 << 16] {
                let dec = GzipDecoder::new(BufReader::with_capacity(cap, &gz[..]));
                let out = read_all(dec, 1000).unwrap();
                assert!(out == data, "size {size} level {level} cap {cap}");
            }
        }
    }
}

#[test]
fn gzip_reads_incompressible_data_and_back_references_at_the_window_edge() {
    // Random bytes (stored blocks at level 0, long literal runs elsewhere), then the same
    // 1000 bytes again exactly 32 768 and 32 000 bytes later.
    let mut data = sample_bytes(0, 0);
    let mut x = 0x1234_5678u32;
    data.extend((0..40_000).map(|_| {
        x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        (x >> 16) as u8
    }));
    let head: Vec<u8> = data[7_232..8_232].to_vec();
    data.extend_from_slice(&head);
    let again: Vec<u8> = data[9_232..10_232].to_vec();
    data.extend_from_slice(&again);
    for level in [0, 1, 6, 9] {
        assert_eq!(gunzip(&gzip(&data, level)).unwrap(), data, "level {level}");
    }
}

#[test]
fn gzip_members_follow_one_another_each_with_its_trailer() {
    let (a, b) = (sample_bytes(50_000, 1), sample_bytes(70_000, 2));
    let mut gz = gzip(&a, 6);
    gz.extend(gzip(&b, 1));
    assert_eq!(gunzip(&gz).unwrap(), [a, b].concat());
}

#[test]
fn gzip_header_fields_are_skipped_and_its_crc16_checked() {
    let data = sample_bytes(5000, 3);
    let mut gz = Vec::new();
    let mut enc = flate2::GzBuilder::new()
        .filename("snapshot.1")
        .comment("a comment")
        .extra(vec![1, 2, 3])
        .write(&mut gz, flate2::Compression::default());
    enc.write_all(&data).unwrap();
    enc.finish().unwrap();
    assert_eq!(gunzip(&gz).unwrap(), data);
    // The same with a header CRC-16 (FHCRC), made by hand: right, then wrong.
    let plain = gzip(&data, 6);
    let mut header = plain[..10].to_vec();
    header[3] |= 0x02;
    let crc = inflate::crc32(0, &header) as u16;
    let with_hcrc = [&header[..], &crc.to_le_bytes(), &plain[10..]].concat();
    assert_eq!(gunzip(&with_hcrc).unwrap(), data);
    let bad = [&header[..], &(crc ^ 1).to_le_bytes(), &plain[10..]].concat();
    assert!(matches!(
        gunzip(&bad),
        Err(DecompressError::GzipHeader { offset: 0, what }) if what.contains("CRC-16")
    ));
}

#[test]
fn crc32_matches_the_check_value() {
    assert_eq!(inflate::crc32(0, b"123456789"), 0xcbf4_3926);
    assert_eq!(
        inflate::crc32(inflate::crc32(0, b"1234"), b"56789"),
        0xcbf4_3926
    );
}

#[test]
fn gzip_faults_each_give_their_own_error() {
    let data = sample_bytes(20_000, 4);
    let gz = gzip(&data, 6);
    let n = gz.len();

    // The CRC-32 and the ISIZE in the trailer.
    let mut bad = gz.clone();
    bad[n - 8] ^= 1;
    let err = gunzip(&bad).unwrap_err();
    assert!(
        matches!(err, DecompressError::Crc { offset, .. } if offset == n as u64 - 8),
        "{err}"
    );
    let mut bad = gz.clone();
    bad[n - 1] ^= 1;
    let err = gunzip(&bad).unwrap_err();
    assert!(
        matches!(err, DecompressError::Size { offset, stored, computed: 20_000 }
            if offset == n as u64 - 4 && stored == 20_000 ^ (1 << 24)),
        "{err}"
    );

    // Every strict prefix: cut short, never a panic, never silently shorter.
    for cut in 0..n {
        let err = gunzip(&gz[..cut]).unwrap_err();
        assert!(
            matches!(
                err,
                DecompressError::Truncated {
                    format: Compression::Gzip,
                    ..
                }
            ),
            "cut at {cut}: {err}"
        );
    }

    // Not gzip; another method; bytes after the member that are not a member.
    let err = gunzip(b"ZKSN\0\0\0\x02").unwrap_err();
    assert!(
        matches!(err, DecompressError::GzipHeader { offset: 0, .. }),
        "{err}"
    );
    let mut bad = gz.clone();
    bad[2] = 7;
    assert!(matches!(
        gunzip(&bad),
        Err(DecompressError::GzipHeader { .. })
    ));
    let mut trailing = gz.clone();
    trailing.extend_from_slice(b"junk");
    let err = gunzip(&trailing).unwrap_err();
    assert!(
        matches!(err, DecompressError::GzipHeader { offset, .. } if offset == n as u64),
        "{err}"
    );

    let header = &gz[..10];
    let member = |blocks: &[u8]| [header, blocks].concat();
    // Block type 3.
    let err = gunzip(&member(&[0b111])).unwrap_err();
    assert_eq!(err, DecompressError::BlockType { offset: 10 });
    // A stored block whose NLEN is not !LEN.
    let err = gunzip(&member(&[1, 5, 0, 0xfa, 0xfe])).unwrap_err();
    assert_eq!(
        err,
        DecompressError::StoredLength {
            offset: 11,
            len: 5,
            nlen: 0xfefa
        }
    );

    // A fixed block whose first symbol is a match (length 3, distance 1): nothing before it.
    let mut w = BitWriter::default();
    w.bits(1, 1); // BFINAL
    w.bits(1, 2); // fixed
    w.code(0b000_0001, 7); // length symbol 257
    w.code(0, 5); // distance symbol 0
    let err = gunzip(&member(&w.finish())).unwrap_err();
    assert!(
        matches!(
            err,
            DecompressError::DistanceTooFar {
                distance: 1,
                available: 0,
                ..
            }
        ),
        "{err}"
    );
    // One literal, then distance symbol 30 (reserved).
    let mut w = BitWriter::default();
    w.bits(1, 1);
    w.bits(1, 2);
    w.code(0b0011_0000 + u32::from(b'a'), 8); // literal 'a'
    w.code(0b000_0001, 7);
    w.code(30, 5);
    let err = gunzip(&member(&w.finish())).unwrap_err();
    assert!(
        matches!(
            err,
            DecompressError::BadSymbol {
                what: "distance",
                ..
            }
        ),
        "{err}"
    );
    // Length symbol 286 (reserved): fixed code 11000110.
    let mut w = BitWriter::default();
    w.bits(1, 1);
    w.bits(1, 2);
    w.code(0b1100_0110, 8);
    let err = gunzip(&member(&w.finish())).unwrap_err();
    assert!(
        matches!(
            err,
            DecompressError::BadSymbol {
                what: "literal/length",
                ..
            }
        ),
        "{err}"
    );

    // A dynamic block whose code-length code is oversubscribed: 4 lengths of 1 bit.
    let mut w = BitWriter::default();
    w.bits(1, 1);
    w.bits(2, 2);
    w.bits(0, 5); // HLIT 257
    w.bits(0, 5); // HDIST 1
    w.bits(0, 4); // HCLEN 4
    for _ in 0..4 {
        w.bits(1, 3);
    }
    let err = gunzip(&member(&w.finish())).unwrap_err();
    assert!(
        matches!(err, DecompressError::HuffmanCodes { offset: 10, what } if what.contains("oversubscribed")),
        "{err}"
    );
    // A dynamic block whose first length is "repeat the previous one".
    let mut w = BitWriter::default();
    w.bits(1, 1);
    w.bits(2, 2);
    w.bits(0, 5);
    w.bits(0, 5);
    w.bits(0, 4);
    // Code lengths 16, 17, 18, 0 each 2 bits long: codes 00, 01, 10, 11.
    for _ in 0..4 {
        w.bits(2, 3);
    }
    w.code(0b01, 2); // symbol 16 (0 is 00, 16 01, 17 10, 18 11) first
    w.bits(0, 2);
    let err = gunzip(&member(&w.finish())).unwrap_err();
    assert!(
        matches!(err, DecompressError::HuffmanCodes { what, .. } if what.contains("no length before")),
        "{err}"
    );
}

#[test]
fn gzip_errors_are_sticky() {
    let mut bad = gzip(&sample_bytes(100_000, 5), 6);
    let n = bad.len();
    bad[n - 6] ^= 0x40;
    let mut dec = GzipDecoder::new(&bad[..]);
    let first = read_all(&mut dec, 4096).unwrap_err();
    let again = dec.fill_buf().unwrap_err();
    assert_eq!(
        DecompressError::from_io(&first),
        DecompressError::from_io(&again)
    );
    assert!(matches!(
        DecompressError::from_io(&again),
        Some(DecompressError::Crc { .. })
    ));
}

#[test]
fn snappy_round_trips_at_every_size_block_size_and_input_buffer() {
    for (i, &size) in SIZES.iter().enumerate() {
        let data = sample_bytes(size, 100 + i as u64);
        for block in [1024, 32 * 1024, 1 << 20] {
            let s = snappy(&data, block);
            for cap in [1, 7, 1 << 16] {
                let dec = SnappyDecoder::new(BufReader::with_capacity(cap, &s[..]));
                let out = read_all(dec, 1000).unwrap();
                assert!(out == data, "size {size} block {block} cap {cap}");
            }
        }
    }
    // Streams concatenated: the second header is skipped.
    let (a, b) = (sample_bytes(40_000, 1), sample_bytes(10, 2));
    let s = [snappy(&a, 32 * 1024), snappy(&b, 32 * 1024)].concat();
    assert_eq!(unsnappy(&s).unwrap(), [a, b].concat());
}

#[test]
fn snappy_faults_each_give_their_own_error() {
    let data = sample_bytes(70_000, 6);
    let s = snappy(&data, 32 * 1024);
    let header = &s[..16];

    // Every strict prefix: cut short (at a block's boundary too: a block was announced).
    for cut in 0..s.len() {
        let got = unsnappy(&s[..cut]);
        match got {
            // A cut between blocks reads as a shorter stream, as snappy-java reads it;
            // the snapshot's seal is what notices.
            Ok(out) => assert!(cut >= 16 && out.len() < data.len(), "cut at {cut}"),
            Err(err) => assert!(
                matches!(
                    err,
                    DecompressError::Truncated {
                        format: Compression::Snappy,
                        ..
                    }
                ),
                "cut at {cut}: {err}"
            ),
        }
    }
    assert_eq!(
        unsnappy(b""),
        Err(DecompressError::Truncated {
            format: Compression::Snappy,
            offset: 0
        })
    );

    // Not snappy-java's magic; version 0.
    let err = unsnappy(b"\x1f\x8b\x08\0\0\0\0\0\0\0\0\0\0\0\0\0").unwrap_err();
    assert!(
        matches!(err, DecompressError::SnappyHeader { offset: 0, .. }),
        "{err}"
    );
    let mut v0 = s.clone();
    v0[11] = 0;
    let err = unsnappy(&v0).unwrap_err();
    assert!(
        matches!(err, DecompressError::SnappyHeader { what, .. } if what.contains("version")),
        "{err}"
    );

    // Oversized and negative block lengths: refused, nothing allocated.
    for len in [i32::MAX, -1] {
        let bad = [header, &len.to_be_bytes()].concat();
        let err = unsnappy(&bad).unwrap_err();
        assert!(
            matches!(
                err,
                DecompressError::TooLong {
                    offset: 16,
                    what: "block",
                    ..
                }
            ),
            "{err}"
        );
    }
    // A block announcing 2^31 decompressed bytes.
    let block = [0x80, 0x80, 0x80, 0x80, 0x08, 0];
    let bad = [header, &6u32.to_be_bytes(), &block].concat();
    let err = unsnappy(&bad).unwrap_err();
    assert!(
        matches!(err, DecompressError::TooLong { offset: 20, what: "decompressed", len, .. } if len == 1 << 31),
        "{err}"
    );

    let one = |block: &[u8]| {
        let len = u32::try_from(block.len()).unwrap().to_be_bytes();
        unsnappy(&[header, &len, block].concat()).unwrap_err()
    };
    let snappy_block = |err: DecompressError, want_at: usize, want: &str| match err {
        DecompressError::SnappyBlock {
            offset: 20,
            at,
            what,
        } => assert!(at == want_at && what.contains(want), "{at} {what}"),
        other => panic!("{other}"),
    };
    // A copy with offset 0; a copy before the block's start; a literal past its end; more
    // bytes than announced; fewer; a length varint of 6 bytes.
    snappy_block(one(&[5, 0x00, b'a', 0x01, 0]), 3, "offset 0");
    snappy_block(one(&[5, 0x00, b'a', 0x01, 2]), 3, "before the block");
    snappy_block(one(&[5, 0x10, b'a']), 1, "literal runs past");
    snappy_block(one(&[1, 0x04, b'a', b'b']), 1, "more bytes");
    snappy_block(one(&[3, 0x00, b'a']), 3, "fewer bytes");
    snappy_block(one(&[0x80, 0x80, 0x80, 0x80, 0x80, 0]), 4, "longer than 5");
}

/// Random damage (a few bytes changed, then maybe cut) to real streams: an answer or an
/// error, never a panic, never more than the limits allow.
#[test]
fn damaged_streams_never_panic() {
    let data = sample_bytes(40_000, 9);
    let streams = [
        (Compression::Gzip, gzip(&data, 1)),
        (Compression::Gzip, gzip(&data, 9)),
        (Compression::Gzip, gzip(&data[..3000], 0)),
        (Compression::Snappy, snappy(&data, 32 * 1024)),
    ];
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for (method, good) in &streams {
        for _ in 0..600 {
            let mut bad = good.clone();
            for _ in 0..1 + next() % 4 {
                let at = next() as usize % bad.len();
                bad[at] ^= 1 << (next() % 8);
            }
            if next() % 3 == 0 {
                bad.truncate(next() as usize % bad.len());
            }
            let got = read_all(Decompressed::new(&bad[..], Some(*method)), 4096);
            if let Ok(out) = got {
                assert!(out.len() <= 2 * data.len() + MAX_SNAPPY_BLOCK);
            }
        }
    }
}

/// A snapshot written through each compressor reads through its decoder as it reads plain,
/// and a fault in the compressed bytes is [`SnapshotError::Decompress`].
#[test]
fn snapshots_read_through_either_decoder() {
    let stat = StatPersisted::default();
    let paths: Vec<String> = (0..3000).map(|i| format!("/l/_c_{i:05}-lock-")).collect();
    let mut nodes = vec![("", &stat), ("/l", &stat)];
    nodes.extend(paths.iter().map(|p| (p.as_str(), &stat)));
    let plain = encode_snapshot(&[(7, 4000)], &nodes);

    let read = |input: Decompressed<&[u8]>| -> Result<usize, SnapshotError> {
        let mut snap = SnapshotStream::new(input)?;
        let mut n = 0;
        while snap.next_node()?.is_some() {
            n += 1;
        }
        assert!(snap.is_sealed());
        assert_eq!(snap.offset(), plain.len());
        Ok(n)
    };
    let gz = gzip(&plain, 6);
    let sn = snappy(&plain, 32 * 1024);
    assert_eq!(read(Decompressed::new(&plain[..], None)), Ok(nodes.len()));
    assert_eq!(
        read(Decompressed::new(&gz[..], Some(Compression::Gzip))),
        Ok(nodes.len())
    );
    assert_eq!(
        read(Decompressed::new(&sn[..], Some(Compression::Snappy))),
        Ok(nodes.len())
    );

    // The gzip trailer's CRC: the snapshot's bytes all read, then the fault.
    let mut bad = gz.clone();
    let n = bad.len();
    bad[n - 8] ^= 1;
    let err = read(Decompressed::new(&bad[..], Some(Compression::Gzip))).unwrap_err();
    assert!(
        matches!(&err, SnapshotError::Decompress { offset, source: DecompressError::Crc { .. } }
            if *offset == plain.len()),
        "{err}"
    );
    // Cut in the middle: the decompressed offset where it stopped, and the compressed one.
    let err = read(Decompressed::new(
        &gz[..gz.len() / 2],
        Some(Compression::Gzip),
    ))
    .unwrap_err();
    let SnapshotError::Decompress {
        offset,
        source: DecompressError::Truncated { offset: at, .. },
    } = err
    else {
        panic!("{err}")
    };
    assert!(offset > 0 && offset < plain.len());
    assert_eq!(at, gz.len() as u64 / 2);
    assert!(err.to_string().contains("decompressed offset"), "{err}");
    // A snappy block's bytes changed: the block or the seal says so.
    let mut bad = sn.clone();
    bad[sn.len() / 2] ^= 0x55;
    assert!(read(Decompressed::new(&bad[..], Some(Compression::Snappy))).is_err());
}

/// Decode throughput on a large snapshot, plain and through each decoder; run by hand with
/// `cargo test -p zk-proto --release -- --ignored --nocapture throughput`.
#[test]
#[ignore]
fn throughput() {
    // Bytes shaped like a snapshot of 400 000 lock nodes: paths, then zeros for the stats.
    let mut plain = Vec::new();
    for i in 0..400_000u64 {
        let path = format!(
            "/app/locks/l{}/_c_{i:08x}-0000-4000-8000-{i:012x}-lock-{i:010}",
            i % 97
        );
        plain.extend_from_slice(path.as_bytes());
        plain.extend_from_slice(&i.to_be_bytes());
        plain.extend_from_slice(&[0; 52]);
    }
    let mb = plain.len() as f64 / 1e6;
    for (name, bytes) in [
        ("gzip -6", gzip(&plain, 6)),
        ("snappy", snappy(&plain, 32 * 1024)),
    ] {
        let t = std::time::Instant::now();
        let out = match name {
            "snappy" => read_all(SnappyDecoder::new(&bytes[..]), 1 << 16).unwrap(),
            _ => read_all(GzipDecoder::new(&bytes[..]), 1 << 16).unwrap(),
        };
        let s = t.elapsed().as_secs_f64();
        assert_eq!(out.len(), plain.len());
        println!(
            "{name}: {mb:.1} MB ({:.1} MB compressed) in {s:.3} s = {:.0} MB/s",
            bytes.len() as f64 / 1e6,
            mb / s
        );
        if name == "gzip -6" {
            // flate2's (miniz_oxide's) own speed on the same bytes, for scale.
            let t = std::time::Instant::now();
            let mut v = Vec::new();
            flate2::read::GzDecoder::new(&bytes[..])
                .read_to_end(&mut v)
                .unwrap();
            println!("  flate2: {:.0} MB/s", mb / t.elapsed().as_secs_f64());
        }
    }
}

/// A whole snapshot (300 000 lock nodes) read by [`SnapshotStream`], plain and through each
/// decoder; by hand, as [`throughput`].
#[test]
#[ignore]
fn snapshot_throughput() {
    let stat = StatPersisted {
        czxid: 0x1_0000_0001,
        ephemeral_owner: 0x77,
        ..StatPersisted::default()
    };
    let paths: Vec<String> = (0..300_000)
        .map(|i| format!("/l/_c_{i:08x}-0000-4000-8000-{i:012x}-lock-{i:010}"))
        .collect();
    let mut nodes = vec![("", &stat), ("/l", &stat)];
    nodes.extend(paths.iter().map(|p| (p.as_str(), &stat)));
    let plain = encode_snapshot(&[(0x77, 4000)], &nodes);
    let mb = plain.len() as f64 / 1e6;
    for (name, bytes, method) in [
        ("plain", plain.clone(), None),
        ("gzip -6", gzip(&plain, 6), Some(Compression::Gzip)),
        (
            "snappy",
            snappy(&plain, 32 * 1024),
            Some(Compression::Snappy),
        ),
    ] {
        let t = std::time::Instant::now();
        let mut snap = SnapshotStream::new(Decompressed::new(&bytes[..], method)).unwrap();
        let mut n = 0;
        while snap.next_node().unwrap().is_some() {
            n += 1;
        }
        assert!(snap.is_sealed() && n == nodes.len());
        let s = t.elapsed().as_secs_f64();
        println!(
            "snapshot {name}: {mb:.1} MB ({:.1} MB on disk), {n} nodes in {s:.3} s = {:.0} MB/s",
            bytes.len() as f64 / 1e6,
            mb / s
        );
    }
}

/// Bits packed as deflate packs them (least significant first); Huffman codes most
/// significant bit first.
#[derive(Default)]
struct BitWriter {
    out: Vec<u8>,
    acc: u64,
    n: u32,
}

impl BitWriter {
    fn bits(&mut self, v: u32, n: u32) {
        self.acc |= u64::from(v) << self.n;
        self.n += n;
        while self.n >= 8 {
            self.out.push(self.acc as u8);
            self.acc >>= 8;
            self.n -= 8;
        }
    }

    fn code(&mut self, code: u32, len: u32) {
        self.bits(code.reverse_bits() >> (32 - len), len);
    }

    fn finish(mut self) -> Vec<u8> {
        if self.n > 0 {
            self.out.push(self.acc as u8);
        }
        self.out
    }
}
