//! The `blosc` bytes→bytes codec, through c-blosc 1.x bundled by the `blosc-src` crate (the
//! same library zarr-python's numcodecs and zarrs use, so streams are identical).
//!
//! This is the only module outside the FFI layer with `unsafe`: calls into c-blosc. Every call
//! is preceded by `blosc_cbuffer_validate`, which checks the header against the real input
//! length, and the output buffer is sized from the validated header and capped by the caller's
//! limit before anything is allocated.

use super::Config;
use crate::error::{Error, Result};
use serde_json::{json, Value};
use std::ffi::{c_int, c_void, CString};

/// c-blosc's per-buffer overhead (`BLOSC_MAX_OVERHEAD`).
const MAX_OVERHEAD: usize = 16;
/// c-blosc 1.x refuses inputs larger than this (`BLOSC_MAX_BUFFERSIZE`).
const MAX_BUFFERSIZE: usize = i32::MAX as usize - MAX_OVERHEAD;

/// Blosc's pre-filter (`shuffle` in the configuration), with c-blosc's numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shuffle {
    /// `"noshuffle"`: bytes as they are.
    NoShuffle = 0,
    /// `"shuffle"`: byte *i* of every element together, per `typesize`.
    Shuffle = 1,
    /// `"bitshuffle"`: bit *i* of every element together.
    BitShuffle = 2,
}

/// `blosc` codec (bytes → bytes), as numcodecs and zarrs configure c-blosc 1.x.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blosc {
    /// The inner compressor: `blosclz`, `lz4`, `lz4hc`, `zlib` or `zstd`.
    pub cname: String,
    /// Compression level, 0–9.
    pub clevel: u8,
    /// The pre-filter; `None` when the configuration omits it (or gives numcodecs' `-1`,
    /// "auto"): [`Blosc::resolve`] then chooses as zarr-python and tensorstore do.
    pub shuffle: Option<Shuffle>,
    /// Element size the shuffle works on; `None` when the configuration omits it:
    /// [`Blosc::resolve`] then takes the array's element size.
    pub typesize: Option<usize>,
    /// Block size in bytes; 0 lets c-blosc choose.
    pub blocksize: usize,
}

const CNAMES: [&str; 5] = ["blosclz", "lz4", "lz4hc", "zlib", "zstd"];

impl Blosc {
    pub(crate) fn from_config(cfg: &Config) -> Result<Self> {
        cfg.only(&["cname", "clevel", "shuffle", "typesize", "blocksize"])?;
        let cname = cfg.str("cname")?.unwrap_or("zstd").to_string();
        if !CNAMES.contains(&cname.as_str()) {
            return Err(cfg.bad(
                "cname",
                "is not a compressor this build has (blosclz, lz4, lz4hc, zlib, zstd)",
            ));
        }
        let clevel = cfg.int("clevel")?.unwrap_or(5);
        if !(0..=9).contains(&clevel) {
            return Err(cfg.bad("clevel", "must be between 0 and 9"));
        }
        // numcodecs-style integers are accepted too (0, 1, 2; -1 is "auto", as if absent).
        let shuffle = match cfg.get("shuffle") {
            None => None,
            Some(Value::String(s)) if s == "noshuffle" => Some(Shuffle::NoShuffle),
            Some(Value::String(s)) if s == "shuffle" => Some(Shuffle::Shuffle),
            Some(Value::String(s)) if s == "bitshuffle" => Some(Shuffle::BitShuffle),
            Some(v) if v.as_i64() == Some(0) => Some(Shuffle::NoShuffle),
            Some(v) if v.as_i64() == Some(1) => Some(Shuffle::Shuffle),
            Some(v) if v.as_i64() == Some(2) => Some(Shuffle::BitShuffle),
            Some(v) if v.as_i64() == Some(-1) => None,
            Some(_) => return Err(cfg.bad("shuffle", "must be noshuffle, shuffle or bitshuffle")),
        };
        let typesize = cfg.int("typesize")?;
        if typesize.is_some_and(|t| !(1..=255).contains(&t)) {
            return Err(cfg.bad("typesize", "must be between 1 and 255"));
        }
        let blocksize = cfg.int("blocksize")?.unwrap_or(0);
        if blocksize < 0 {
            return Err(cfg.bad("blocksize", "must not be negative"));
        }
        Ok(Blosc {
            cname,
            clevel: clevel as u8,
            shuffle,
            typesize: typesize.map(|t| t as usize),
            blocksize: blocksize as usize,
        })
    }

    /// Fill in what the configuration left out, for data of `element_size`-byte elements (the
    /// array's data type, wherever in the chain blosc sits): `typesize` becomes the element
    /// size, and `shuffle` bitshuffle for 1-byte elements, else byte shuffle. zarr-python
    /// (`evolve_from_array_spec`) and tensorstore choose the same, so an array whose
    /// `zarr.json` says only `{"cname": "lz4"}` is encoded byte for byte as they encode it, and
    /// the metadata written records the choice, as the blosc spec requires. (This library
    /// used to take typesize 1 and no shuffle: valid streams, but not the peers' bytes, and a
    /// shuffle that did nothing.) Elements larger than c-blosc's largest typesize (255 bytes:
    /// raw `r<N>` types) have no typesize to shuffle by: typesize 1 and no shuffle then, as
    /// tensorstore decides (a shuffle the configuration asks for still runs, over bytes).
    pub fn resolve(&mut self, element_size: usize) {
        let shufflable = (1..=255).contains(&element_size);
        let t = *self
            .typesize
            .get_or_insert(if shufflable { element_size } else { 1 });
        self.shuffle.get_or_insert(if shufflable {
            default_shuffle(t)
        } else {
            Shuffle::NoShuffle
        });
    }

    /// The shuffle and typesize encoding uses: as given or resolved; for a configuration never
    /// resolved, typesize 1 and the shuffle [`Blosc::resolve`] would choose for it.
    pub fn effective(&self) -> (Shuffle, usize) {
        let t = self.typesize.unwrap_or(1);
        (self.shuffle.unwrap_or(default_shuffle(t)), t)
    }

    pub(crate) fn to_json(&self) -> Value {
        let mut config = json!({"cname": self.cname, "clevel": self.clevel});
        if let Some(shuffle) = self.shuffle {
            config["shuffle"] = json!(match shuffle {
                Shuffle::NoShuffle => "noshuffle",
                Shuffle::Shuffle => "shuffle",
                Shuffle::BitShuffle => "bitshuffle",
            });
        }
        if let Some(t) = self.typesize {
            config["typesize"] = json!(t);
        }
        config["blocksize"] = json!(self.blocksize);
        json!({"name": "blosc", "configuration": config})
    }

    /// The most bytes a compressed buffer of `n` input bytes takes (c-blosc's overhead
    /// added); an error for more input than c-blosc takes (checked before any room is made).
    pub(crate) fn bound(n: usize) -> Result<usize> {
        if n > MAX_BUFFERSIZE {
            return Err(Error::InvalidArgument(format!(
                "blosc: {n} bytes exceed c-blosc's {MAX_BUFFERSIZE}-byte limit"
            )));
        }
        Ok(n + MAX_OVERHEAD)
    }

    /// Compress into `out` (at least [`Blosc::bound`] bytes); returns the compressed size.
    pub(crate) fn encode_into(&self, data: &[u8], out: &mut [u8]) -> Result<usize> {
        Blosc::bound(data.len())?;
        let (shuffle, typesize) = self.effective();
        let cname = CString::new(self.cname.as_str()).expect("validated name has no NUL");
        // SAFETY: `data` and `out` are valid for the lengths given and do not overlap; c-blosc
        // writes at most `out.len()` bytes; `cname` outlives the call.
        let n = unsafe {
            blosc_src::blosc_compress_ctx(
                c_int::from(self.clevel),
                shuffle as c_int,
                typesize,
                data.len(),
                data.as_ptr().cast::<c_void>(),
                out.as_mut_ptr().cast::<c_void>(),
                out.len(),
                cname.as_ptr(),
                self.blocksize,
                1,
            )
        };
        if n <= 0 {
            return Err(Error::InvalidArgument(format!(
                "blosc: compression failed ({n})"
            )));
        }
        Ok(n as usize)
    }

    pub(crate) fn decode(&self, data: &[u8], max_out: u64) -> Result<Vec<u8>> {
        decode(data, max_out)
    }
}

/// zarr-python's and tensorstore's choice when the configuration names no shuffle.
fn default_shuffle(typesize: usize) -> Shuffle {
    match typesize {
        1 => Shuffle::BitShuffle,
        _ => Shuffle::Shuffle,
    }
}

/// Decompress one blosc buffer of at most `max_out` decoded bytes.
pub fn decode(data: &[u8], max_out: u64) -> Result<Vec<u8>> {
    let nbytes = validated_size(data)?;
    if nbytes as u64 > max_out {
        return Err(Error::corrupt(format!(
            "blosc: header claims {nbytes} bytes, more than the expected {max_out}"
        )));
    }
    let mut out = vec![0u8; nbytes];
    decode_into(data, &mut out)?;
    Ok(out)
}

/// Decompress one blosc buffer of exactly `out.len()` decoded bytes into `out`.
pub fn decode_into(data: &[u8], out: &mut [u8]) -> Result<()> {
    let nbytes = validated_size(data)?;
    if nbytes != out.len() {
        return Err(Error::corrupt(format!(
            "blosc: header claims {nbytes} bytes where {} were expected",
            out.len()
        )));
    }
    if nbytes == 0 {
        return Ok(());
    }
    // SAFETY: the header was validated against `data.len()`, so c-blosc reads within `data`;
    // it writes at most `out.len()` bytes.
    let n = unsafe {
        blosc_src::blosc_decompress_ctx(
            data.as_ptr().cast::<c_void>(),
            out.as_mut_ptr().cast::<c_void>(),
            out.len(),
            1,
        )
    };
    if n < 0 || n as usize != nbytes {
        return Err(Error::corrupt(format!("blosc: decompression failed ({n})")));
    }
    Ok(())
}

/// The decoded size a blosc header claims, after checking the header against the real input
/// length.
fn validated_size(data: &[u8]) -> Result<usize> {
    let mut nbytes = 0usize;
    // SAFETY: c-blosc reads at most `data.len()` bytes of `data` (it checks the length
    // before reading the header) and writes one usize.
    let valid = unsafe {
        blosc_src::blosc_cbuffer_validate(data.as_ptr().cast::<c_void>(), data.len(), &mut nbytes)
    };
    if valid < 0 {
        return Err(Error::corrupt("blosc: invalid header"));
    }
    Ok(nbytes)
}
