//! The `gzip` bytes→bytes codec (RFC 1952).
//!
//! Encoding uses libdeflate (one gzip member per chunk, from the whole buffer, with a
//! compressor reused per thread and level): its level 1 compresses like C zlib's level 1, at
//! zlib-rs' speed, whereas the level 1 of zlib-rs and zlib-ng is a *quick* strategy that
//! barely compresses. zarrs and tensorstore write what their zlib gives; every gzip reader reads
//! either. Decoding uses flate2 with the zlib-rs back end (`MultiGzDecoder`: members
//! concatenated by other writers are all read), capped at the expected size: libdeflate's Rust
//! binding does not say where a member ends, so a second member or trailing bytes would go
//! unnoticed, and its small speed gain is not worth accepting an over-long stream.

use super::Config;
use crate::error::{Error, Result};
// `bufread` decoders read the in-memory input directly (`read` ones copy it through a 32 KiB
// `BufReader` allocated per chunk).
use flate2::bufread::MultiGzDecoder;
use serde_json::{json, Value};
use std::cell::RefCell;
use std::io::Read;

thread_local! {
    /// The last compressor used on this thread and its level (a libdeflate compressor holds
    /// hundreds of KiB of match-finder tables: too much to set up per chunk).
    static COMPRESSOR: RefCell<Option<(u32, libdeflater::Compressor)>> = const { RefCell::new(None) };
}

/// `gzip` codec (bytes → bytes): one RFC 1952 member per chunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gzip {
    /// Compression level, 0–9.
    pub level: u32,
}

/// Free this thread's compressor (for [`crate::release_memory`]); returns 1 if there was one.
/// A compressor in use (a call further up this thread's stack) is left.
pub(crate) fn release_contexts() -> usize {
    COMPRESSOR.with(super::free_slot)
}

impl Gzip {
    pub(crate) fn from_config(cfg: &Config) -> Result<Self> {
        cfg.only(&["level"])?;
        let level = cfg.int("level")?.unwrap_or(5);
        if !(0..=9).contains(&level) {
            return Err(cfg.bad("level", "must be between 0 and 9"));
        }
        Ok(Gzip {
            level: level as u32,
        })
    }

    pub(crate) fn to_json(&self) -> Value {
        json!({"name": "gzip", "configuration": {"level": self.level}})
    }

    /// Run `f` with this thread's compressor for this level.
    fn with_compressor<T>(
        &self,
        f: impl FnOnce(&mut libdeflater::Compressor) -> Result<T>,
    ) -> Result<T> {
        COMPRESSOR.with(|slot| {
            let mut slot = slot.borrow_mut();
            if slot.as_ref().is_none_or(|(level, _)| *level != self.level) {
                // Levels 0..=9 are checked at parse time; libdeflate accepts 0..=12.
                let lvl = libdeflater::CompressionLvl::new(self.level as i32).map_err(|e| {
                    Error::InvalidArgument(format!("gzip level {}: {e:?}", self.level))
                })?;
                *slot = Some((self.level, libdeflater::Compressor::new(lvl)));
            }
            f(&mut slot.as_mut().expect("set above").1)
        })
    }

    /// The most bytes one member of `n` input bytes takes (libdeflate's bound).
    pub(crate) fn bound(&self, n: usize) -> Result<usize> {
        self.with_compressor(|c| Ok(c.gzip_compress_bound(n)))
    }

    /// Compress into `out` (at least [`Gzip::bound`] bytes); returns the member's size.
    pub(crate) fn encode_into(&self, data: &[u8], out: &mut [u8]) -> Result<usize> {
        // The bound always suffices: an error here is libdeflate's own failure.
        self.with_compressor(|c| {
            c.gzip_compress(data, out)
                .map_err(|e| Error::InvalidArgument(format!("gzip: {e:?}")))
        })
    }

    pub(crate) fn decode(&self, data: &[u8], max_out: u64) -> Result<Vec<u8>> {
        read_capped(MultiGzDecoder::new(data), max_out, "gzip")
    }
}

/// Read a decompressing stream to its end, failing once it would exceed `max_out` bytes.
pub(crate) fn read_capped(reader: impl Read, max_out: u64, codec: &str) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    let mut limited = reader.take(max_out.saturating_add(1));
    limited
        .read_to_end(&mut out)
        .map_err(|e| Error::corrupt(format!("{codec}: {e}")))?;
    if out.len() as u64 > max_out {
        return Err(Error::corrupt(format!(
            "{codec}: stream expands past the expected {max_out} bytes"
        )));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A smooth gradient with 6 bits of noise (as the benchmark image), 16-bit little-endian.
    fn image_like(n: usize) -> Vec<u8> {
        let mut s: u64 = 0x9E37_79B9_7F4A_7C15;
        (0..n)
            .flat_map(|i| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                ((8000 + 2 * i as u64 + (s >> 58)) as u16).to_le_bytes()
            })
            .collect()
    }

    /// The codec's encoding (libdeflate writing into a new buffer).
    fn encode(gz: &Gzip, data: &[u8]) -> Vec<u8> {
        super::super::BytesToBytes::Gzip(gz.clone())
            .encode(data)
            .unwrap()
    }

    /// Every level writes one RFC 1952 member that flate2 (zlib-rs) decodes to the input, with
    /// the CRC-32 and size trailer flate2 computes; level 1 compresses the image-like data
    /// (as C zlib's level 1 does) rather than zlib-rs' quick strategy's near-copy.
    #[test]
    #[cfg_attr(miri, ignore = "libdeflate is C, which Miri cannot run")]
    fn libdeflate_members_decode_with_flate2() {
        let data = image_like(4096);
        for level in 0..=9 {
            let out = encode(&Gzip { level }, &data);
            assert_eq!(
                &out[..3],
                &[0x1f, 0x8b, 8],
                "gzip magic and deflate, level {level}"
            );
            let mut crc = flate2::Crc::new();
            crc.update(&data);
            let trailer = &out[out.len() - 8..];
            assert_eq!(
                trailer[..4],
                crc.sum().to_le_bytes(),
                "CRC-32, level {level}"
            );
            assert_eq!(trailer[4..], (data.len() as u32).to_le_bytes());
            let back = Gzip { level }.decode(&out, data.len() as u64).unwrap();
            assert_eq!(back, data, "level {level}");
        }
        let ours = encode(&Gzip { level: 1 }, &data).len();
        let mut zlib_rs = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(1));
        std::io::Write::write_all(&mut zlib_rs, &data).unwrap();
        let theirs = zlib_rs.finish().unwrap().len();
        assert!(
            ours * 10 < theirs * 9,
            "level 1: {ours} bytes vs zlib-rs {theirs}"
        );
    }

    /// Decoding reads every member of a multi-member stream (as bgzip or pigz write), through
    /// both paths (`decode` and `decode_into` an exact buffer), and refuses a stream with more
    /// output than expected, trailing bytes after the last member, or a cut member.
    #[test]
    #[cfg_attr(miri, ignore = "libdeflate is C, which Miri cannot run")]
    fn members_trailing_bytes_and_cuts() {
        let data = image_like(2048);
        let gz = Gzip { level: 1 };
        let (a, b) = data.split_at(1000);
        let (ma, mb, empty) = (encode(&gz, a), encode(&gz, b), encode(&gz, &[]));
        let two = [&ma[..], &mb[..]].concat();
        let b2b = super::super::BytesToBytes::Gzip(gz.clone());
        let decode_into = |stream: &[u8], len: usize| {
            let mut out = vec![0u8; len];
            b2b.decode_into(stream, &mut out).map(|_| out)
        };
        assert_eq!(gz.decode(&two, data.len() as u64).unwrap(), data);
        assert_eq!(decode_into(&two, data.len()).unwrap(), data);
        // An empty member after the data is still a valid stream of the same bytes.
        let with_empty = [&two[..], &empty[..]].concat();
        assert_eq!(decode_into(&with_empty, data.len()).unwrap(), data);
        // Two members where one was expected: more output than the chunk holds.
        for e in [
            gz.decode(&two, a.len() as u64).unwrap_err(),
            decode_into(&two, a.len()).unwrap_err(),
        ] {
            assert_eq!(
                e.to_string(),
                format!(
                    "corrupt shard: gzip: stream expands past the expected {} bytes",
                    a.len()
                )
            );
        }
        // Bytes after the last member that are not a member, and a member cut short.
        let garbage = [&ma[..], b"these bytes are not gzip"].concat();
        let cut = &ma[..ma.len() - 3];
        for (stream, why) in [
            (&garbage[..], "invalid gzip header"),
            (cut, "unexpected end of file"),
        ] {
            for e in [
                gz.decode(stream, a.len() as u64).unwrap_err(),
                decode_into(stream, a.len()).unwrap_err(),
            ] {
                assert_eq!(e.to_string(), format!("corrupt shard: gzip: {why}"));
            }
        }
    }
}
