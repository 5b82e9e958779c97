//! Zarr v3 data types and fill values.
//!
//! In memory an element is stored in the machine's native byte order; the `bytes` codec
//! converts to and from the stored order. A fill value is kept as the bytes of one element.

use crate::error::{Error, Result};
use serde_json::Value;

/// The widest raw-bits type accepted, in bytes: `r1048576` (128 KiB per element). The spec
/// sets no bound; without one a metadata document could size a single element (its fill value,
/// every chunk's element stride) past any buffer.
pub const MAX_RAW_BYTES: usize = 1 << 17;

/// A Zarr v3 `data_type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DataType {
    /// `bool`: one byte, 0 or 1.
    Bool,
    /// `int8`.
    Int8,
    /// `int16`.
    Int16,
    /// `int32`.
    Int32,
    /// `int64`.
    Int64,
    /// `uint8`.
    UInt8,
    /// `uint16`.
    UInt16,
    /// `uint32`.
    UInt32,
    /// `uint64`.
    UInt64,
    /// `float16` (IEEE 754 half precision).
    Float16,
    /// `float32`.
    Float32,
    /// `float64`.
    Float64,
    /// `complex64`: two `float32`, real then imaginary.
    Complex64,
    /// `complex128`: two `float64`, real then imaginary.
    Complex128,
    /// `r<N>`: N raw bits, N a positive multiple of 8. Never byte-swapped.
    RawBits(usize),
}

impl DataType {
    /// Parse a `data_type` name such as `uint16` or `r24`.
    pub fn parse(name: &str) -> Result<Self> {
        use DataType::*;
        Ok(match name {
            "bool" => Bool,
            "int8" => Int8,
            "int16" => Int16,
            "int32" => Int32,
            "int64" => Int64,
            "uint8" => UInt8,
            "uint16" => UInt16,
            "uint32" => UInt32,
            "uint64" => UInt64,
            "float16" => Float16,
            "float32" => Float32,
            "float64" => Float64,
            "complex64" => Complex64,
            "complex128" => Complex128,
            _ => {
                let bits = name
                    .strip_prefix('r')
                    .and_then(|n| n.parse::<usize>().ok())
                    .filter(|&n| n > 0 && n % 8 == 0)
                    .ok_or_else(|| Error::metadata(format!("unknown data_type `{name}`")))?;
                Self::raw_bytes(bits / 8, name)?
            }
        })
    }

    /// Raw bits of `bytes` bytes per element (`r<8·bytes>`, or a v2 `|V<bytes>`), spelled
    /// `name` in the metadata: refused when 0 or wider than [`MAX_RAW_BYTES`].
    pub fn raw_bytes(bytes: usize, name: &str) -> Result<Self> {
        match bytes {
            1..=MAX_RAW_BYTES => Ok(DataType::RawBits(bytes)),
            0 => Err(Error::metadata(format!("data_type `{name}` has no bits"))),
            _ => Err(Error::metadata(format!(
                "data_type `{name}`: raw elements wider than {MAX_RAW_BYTES} bytes are not supported"
            ))),
        }
    }

    /// The Zarr v3 name.
    pub fn name(&self) -> String {
        use DataType::*;
        match self {
            Bool => "bool".into(),
            Int8 => "int8".into(),
            Int16 => "int16".into(),
            Int32 => "int32".into(),
            Int64 => "int64".into(),
            UInt8 => "uint8".into(),
            UInt16 => "uint16".into(),
            UInt32 => "uint32".into(),
            UInt64 => "uint64".into(),
            Float16 => "float16".into(),
            Float32 => "float32".into(),
            Float64 => "float64".into(),
            Complex64 => "complex64".into(),
            Complex128 => "complex128".into(),
            RawBits(n) => format!("r{}", n * 8),
        }
    }

    /// Bytes per element.
    pub fn size(&self) -> usize {
        use DataType::*;
        match self {
            Bool | Int8 | UInt8 => 1,
            Int16 | UInt16 | Float16 => 2,
            Int32 | UInt32 | Float32 => 4,
            Int64 | UInt64 | Float64 | Complex64 => 8,
            Complex128 => 16,
            RawBits(n) => *n,
        }
    }

    /// Size of the unit that is byte-swapped when converting endianness: the element itself,
    /// each half of a complex number, and 1 (no swap) for single bytes and raw bits.
    pub fn swap_unit(&self) -> usize {
        match self {
            DataType::Complex64 => 4,
            DataType::Complex128 => 8,
            DataType::RawBits(_) => 1,
            other => other.size(),
        }
    }
}

/// One element's bytes, native byte order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FillValue(pub Vec<u8>);

impl FillValue {
    /// Fill `out` (a whole number of elements) with this value: a memset when the element's
    /// bytes are all equal (0, NaN patterns aside, is the common case), otherwise by doubling
    /// copies — never element by element.
    pub fn fill(&self, out: &mut [u8]) {
        let v = &self.0;
        if v.iter().all(|&b| b == v[0]) {
            out.fill(v[0]);
            return;
        }
        let n = v.len().min(out.len());
        out[..n].copy_from_slice(&v[..n]);
        let mut done = n;
        while done < out.len() {
            let k = done.min(out.len() - done);
            out.copy_within(..k, done);
            done += k;
        }
    }

    /// True when every element of `data` is this value, byte for byte. A one-byte pattern (0
    /// for most arrays) is checked a word at a time.
    pub fn fills(&self, data: &[u8]) -> bool {
        let v = &self.0;
        if v.iter().all(|&b| b == v[0]) {
            let w = u64::from_ne_bytes([v[0]; 8]);
            let (body, tail) = data.split_at(data.len() / 8 * 8);
            return body
                .chunks_exact(8)
                .all(|x| u64::from_ne_bytes(x.try_into().unwrap()) == w)
                && tail.iter().all(|&x| x == v[0]);
        }
        data.chunks_exact(v.len()).all(|e| e == v.as_slice())
    }

    /// All-zero fill value of `dtype`.
    pub fn zero(dtype: DataType) -> Self {
        FillValue(vec![0; dtype.size()])
    }

    /// Parse a `fill_value` in any spelling the Zarr v3 core spec allows for `dtype`:
    /// booleans; integers; floats as numbers, `"NaN"`, `"Infinity"`, `"-Infinity"` or
    /// `"0x…"` (the raw IEEE bits, big-endian hex); complex as `[re, im]`; raw bits as an
    /// array of byte values (or `"0x…"`).
    pub fn parse(value: &Value, dtype: DataType) -> Result<Self> {
        let bad = || {
            Error::metadata(format!(
                "fill_value {value} is not valid for data_type {}",
                dtype.name()
            ))
        };
        use DataType::*;
        let bytes = match dtype {
            Bool => match value {
                Value::Bool(b) => vec![*b as u8],
                // Zarr v2 metadata and some writers spell it 0/1.
                Value::Number(n) if n.as_u64() == Some(0) || n.as_u64() == Some(1) => {
                    vec![n.as_u64().unwrap() as u8]
                }
                _ => return Err(bad()),
            },
            Int8 | Int16 | Int32 | Int64 => {
                let v = integer_of(value).ok_or_else(bad)?;
                let v = i64::try_from(v).map_err(|_| bad())?;
                let size = dtype.size() as u32;
                let (min, max) = if size == 8 {
                    (i64::MIN, i64::MAX)
                } else {
                    (-(1i64 << (size * 8 - 1)), (1i64 << (size * 8 - 1)) - 1)
                };
                if v < min || v > max {
                    return Err(bad());
                }
                v.to_ne_bytes()[native_low_range(8, size as usize)].to_vec()
            }
            UInt8 | UInt16 | UInt32 | UInt64 => {
                let v = integer_of(value).ok_or_else(bad)?;
                let v = u64::try_from(v).map_err(|_| bad())?;
                let size = dtype.size() as u32;
                if size < 8 && v >> (size * 8) != 0 {
                    return Err(bad());
                }
                v.to_ne_bytes()[native_low_range(8, size as usize)].to_vec()
            }
            Float16 => match float_spelling(value, 2).ok_or_else(bad)? {
                FloatSpelling::Bits(b) => (b as u16).to_ne_bytes().to_vec(),
                FloatSpelling::Value(f) => f64_to_f16_bits(f).to_ne_bytes().to_vec(),
            },
            Float32 => float32_bytes(value).ok_or_else(bad)?,
            Float64 => float64_bytes(value).ok_or_else(bad)?,
            Complex64 | Complex128 => {
                let parts = value.as_array().filter(|a| a.len() == 2).ok_or_else(bad)?;
                let mut out = Vec::with_capacity(dtype.size());
                for part in parts {
                    let b = if dtype == Complex64 {
                        float32_bytes(part)
                    } else {
                        float64_bytes(part)
                    };
                    out.extend(b.ok_or_else(bad)?);
                }
                out
            }
            RawBits(n) => match value {
                Value::Array(items) if items.len() == n => items
                    .iter()
                    .map(|v| v.as_u64().filter(|&b| b <= 255).map(|b| b as u8))
                    .collect::<Option<Vec<u8>>>()
                    .ok_or_else(bad)?,
                Value::String(s) => {
                    let bytes = parse_hex(s).ok_or_else(bad)?;
                    if bytes.len() != n {
                        return Err(bad());
                    }
                    bytes
                }
                _ => return Err(bad()),
            },
        };
        Ok(FillValue(bytes))
    }

    /// The fill value as Zarr v3 JSON (the canonical spelling). A float NaN is `"NaN"` only
    /// when its bits are the canonical quiet NaN that `"NaN"` parses to (float16 `0x7e00`,
    /// float32 `0x7fc00000`, float64 `0x7ff8000000000000`, as zarr-python and zarrs write);
    /// any other NaN is written as its bits, `"0x…"` (big-endian hex), so it parses back to the
    /// same bits. Complex numbers are written component by component the same way.
    pub fn to_json(&self, dtype: DataType) -> Value {
        use DataType::*;
        let b = &self.0;
        // `f` is the value, `bits` its `size`-byte IEEE bits, `canonical_nan` the bits "NaN" means.
        let float = |f: f64, bits: u64, size: usize, canonical_nan: u64| -> Value {
            if f.is_nan() && bits != canonical_nan {
                format!("0x{bits:0width$x}", width = 2 * size).into()
            } else if f.is_nan() {
                "NaN".into()
            } else if f == f64::INFINITY {
                "Infinity".into()
            } else if f == f64::NEG_INFINITY {
                "-Infinity".into()
            } else {
                serde_json::Number::from_f64(f).map(Value::Number).unwrap()
            }
        };
        let f32_at = |i: usize| {
            let bits = u32::from_ne_bytes(b[i..i + 4].try_into().unwrap());
            float(f32::from_bits(bits) as f64, bits as u64, 4, 0x7fc0_0000)
        };
        let f64_at = |i: usize| {
            let bits = u64::from_ne_bytes(b[i..i + 8].try_into().unwrap());
            float(f64::from_bits(bits), bits, 8, 0x7ff8_0000_0000_0000)
        };
        match dtype {
            Bool => Value::Bool(b[0] != 0),
            Int8 => (b[0] as i8).into(),
            Int16 => i16::from_ne_bytes([b[0], b[1]]).into(),
            Int32 => i32::from_ne_bytes(b[..4].try_into().unwrap()).into(),
            Int64 => i64::from_ne_bytes(b[..8].try_into().unwrap()).into(),
            UInt8 => b[0].into(),
            UInt16 => u16::from_ne_bytes([b[0], b[1]]).into(),
            UInt32 => u32::from_ne_bytes(b[..4].try_into().unwrap()).into(),
            UInt64 => u64::from_ne_bytes(b[..8].try_into().unwrap()).into(),
            Float16 => {
                let bits = u16::from_ne_bytes([b[0], b[1]]);
                float(half::f16::from_bits(bits).to_f64(), bits as u64, 2, 0x7e00)
            }
            Float32 => f32_at(0),
            Float64 => f64_at(0),
            Complex64 => Value::Array(vec![f32_at(0), f32_at(4)]),
            Complex128 => Value::Array(vec![f64_at(0), f64_at(8)]),
            RawBits(_) => Value::Array(b.iter().map(|&x| x.into()).collect()),
        }
    }
}

/// The IEEE 754 half-precision bits nearest to `f` (round to nearest, ties to even), rounded
/// once from the double's own bits: subnormal halves, overflow to ±infinity (from ±65520 up),
/// NaN to a quiet NaN keeping the sign and the payload's top bits (`f64::NAN` → `0x7e00`).
/// (`half::f16::from_f64` may round through f32 first, which rounds twice.)
fn f64_to_f16_bits(f: f64) -> u16 {
    let bits = f.to_bits();
    let sign = ((bits >> 48) & 0x8000) as u16;
    let exp = ((bits >> 52) & 0x7ff) as i64;
    let man = bits & ((1u64 << 52) - 1);
    if exp == 0x7ff {
        return match man {
            0 => sign | 0x7c00,
            _ => sign | 0x7e00 | ((man >> 42) as u16 & 0x3ff),
        };
    }
    if exp == 0 {
        // Zero or a double subnormal (below 2^-1022): far under half the least half subnormal.
        return sign;
    }
    let e = exp - 1023;
    if e > 15 {
        return sign | 0x7c00;
    }
    // The significand with its implicit bit (53 bits), shifted right by `shift` to the half's
    // 10 fraction bits (normal) or to units of 2^-24 (subnormal); the bits shifted out decide.
    let sig = man | (1u64 << 52);
    let (base, shift) = if e >= -14 {
        (((e + 15) as u64) << 10, 42)
    } else {
        (0, (28 - e) as u32)
    };
    if shift > 53 {
        return sign; // below 2^-25: rounds to zero
    }
    let kept = if e >= -14 { man >> shift } else { sig >> shift };
    let rest = sig & ((1u64 << shift) - 1);
    let half = 1u64 << (shift - 1);
    let mut h = base + kept;
    if rest > half || (rest == half && h & 1 == 1) {
        // A carry out of the fraction steps the exponent up, and out of 0x7bff gives infinity.
        h += 1;
    }
    sign | h as u16
}

/// The bytes of the low `size` bytes of a native `total`-byte integer.
fn native_low_range(total: usize, size: usize) -> std::ops::Range<usize> {
    if cfg!(target_endian = "little") {
        0..size
    } else {
        total - size..total
    }
}

/// An integer fill value; floats with an integral value are accepted (some writers emit `0.0`).
fn integer_of(value: &Value) -> Option<i128> {
    let n = value.as_number()?;
    if let Some(i) = n.as_i64() {
        return Some(i as i128);
    }
    if let Some(u) = n.as_u64() {
        return Some(u as i128);
    }
    let f = n.as_f64()?;
    (f.fract() == 0.0 && f.abs() < 9.3e18).then_some(f as i128)
}

enum FloatSpelling {
    Value(f64),
    Bits(u64),
}

fn float_spelling(value: &Value, size: usize) -> Option<FloatSpelling> {
    match value {
        Value::Number(n) => n.as_f64().map(FloatSpelling::Value),
        Value::String(s) => match s.as_str() {
            "NaN" => Some(FloatSpelling::Value(f64::NAN)),
            "Infinity" => Some(FloatSpelling::Value(f64::INFINITY)),
            "-Infinity" => Some(FloatSpelling::Value(f64::NEG_INFINITY)),
            _ => {
                let bytes = parse_hex(s)?;
                if bytes.len() != size {
                    return None;
                }
                Some(FloatSpelling::Bits(
                    bytes.iter().fold(0u64, |acc, &b| (acc << 8) | b as u64),
                ))
            }
        },
        _ => None,
    }
}

fn float32_bytes(value: &Value) -> Option<Vec<u8>> {
    Some(match float_spelling(value, 4)? {
        FloatSpelling::Bits(b) => (b as u32).to_ne_bytes().to_vec(),
        // "NaN" maps to the canonical quiet NaN, as numpy and zarr-python do.
        FloatSpelling::Value(f) => (f as f32).to_ne_bytes().to_vec(),
    })
}

fn float64_bytes(value: &Value) -> Option<Vec<u8>> {
    Some(match float_spelling(value, 8)? {
        FloatSpelling::Bits(b) => b.to_ne_bytes().to_vec(),
        FloatSpelling::Value(f) => f.to_ne_bytes().to_vec(),
    })
}

/// `"0x0a0b"` → `[0x0a, 0x0b]` (big-endian, as the spec writes raw bits).
fn parse_hex(s: &str) -> Option<Vec<u8>> {
    let hex = s.strip_prefix("0x")?;
    if hex.is_empty() || hex.len() % 2 != 0 {
        return None;
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fv(v: Value, t: &str) -> Result<Vec<u8>> {
        FillValue::parse(&v, DataType::parse(t)?).map(|f| f.0)
    }

    #[test]
    fn raw_bits_up_to_128_kib_per_element() {
        assert_eq!(DataType::parse("r8").unwrap(), DataType::RawBits(1));
        assert_eq!(DataType::parse("r1048576").unwrap().size(), 131072);
        assert_eq!(
            DataType::parse("r1048584").unwrap_err().to_string(),
            "invalid metadata: data_type `r1048584`: raw elements wider than 131072 bytes are not supported"
        );
        for bad in ["r0", "r12", "r", "r-8"] {
            assert_eq!(
                DataType::parse(bad).unwrap_err().to_string(),
                format!("invalid metadata: unknown data_type `{bad}`")
            );
        }
        assert_eq!(
            DataType::raw_bytes(0, "r0").unwrap_err().to_string(),
            "invalid metadata: data_type `r0` has no bits"
        );
    }

    #[test]
    fn parses_every_spelling() {
        assert_eq!(fv(json!(true), "bool").unwrap(), vec![1]);
        assert_eq!(fv(json!(-2), "int16").unwrap(), (-2i16).to_ne_bytes());
        assert_eq!(
            fv(json!(18446744073709551615u64), "uint64").unwrap(),
            u64::MAX.to_ne_bytes()
        );
        assert_eq!(fv(json!(1.5), "float32").unwrap(), 1.5f32.to_ne_bytes());
        // The spec's example of raw bits for a float: 0x7fc00000 is float32 quiet NaN.
        assert_eq!(
            fv(json!("0x7fc00000"), "float32").unwrap(),
            0x7fc0_0000u32.to_ne_bytes()
        );
        assert_eq!(
            fv(json!("-Infinity"), "float64").unwrap(),
            f64::NEG_INFINITY.to_ne_bytes()
        );
        // float16 1.0 is 0x3c00 (IEEE 754 half precision).
        assert_eq!(fv(json!(1.0), "float16").unwrap(), 0x3c00u16.to_ne_bytes());
        let c = fv(json!([1.0, "NaN"]), "complex64").unwrap();
        assert_eq!(&c[..4], &1.0f32.to_ne_bytes());
        assert!(f32::from_ne_bytes(c[4..].try_into().unwrap()).is_nan());
        assert_eq!(fv(json!([1, 2, 3]), "r24").unwrap(), vec![1, 2, 3]);
    }

    #[test]
    fn fills_recognises_only_the_value() {
        assert!(FillValue(vec![0]).fills(&[0u8; 19]));
        assert!(!FillValue(vec![0]).fills(&[0, 0, 0, 0, 0, 0, 0, 0, 0, 1]));
        assert!(FillValue(vec![1, 2]).fills(&[1, 2, 1, 2]));
        assert!(!FillValue(vec![1, 2]).fills(&[1, 2, 2, 1]));
    }

    #[test]
    fn fill_repeats_the_element() {
        for (v, n) in [
            (vec![0u8], 5),
            (vec![1u8, 2], 6),
            (vec![1u8, 2, 3], 9),
            (vec![7u8; 4], 8),
            (vec![9u8, 8], 0),
        ] {
            let mut out = vec![0xaau8; n];
            FillValue(v.clone()).fill(&mut out);
            assert_eq!(out, v.repeat(n / v.len()));
        }
    }

    /// Every half, and every midpoint between neighbouring halves (exact in f64, computed from
    /// `half`'s exact widening), ± one double ulp: the value itself, to even at the tie, and
    /// the nearer neighbour just off it.
    #[test]
    fn f64_to_f16_rounds_every_midpoint() {
        let wide = |h: u16| half::f16::from_bits(h).to_f64();
        // Every half; under Miri (an interpreter) every 61st, and the last.
        let step = if cfg!(miri) { 61 } else { 1 };
        for h in (0..0x7c00u16).step_by(step).chain([0x7bff]) {
            for sign in [0, 0x8000] {
                assert_eq!(f64_to_f16_bits(wide(sign | h)), sign | h);
            }
            let next = h + 1; // 0x7c00 is infinity: the tie above 65504 overflows
            let mid = match next {
                0x7c00 => 65520.0,
                _ => (wide(h) + wide(next)) / 2.0,
            };
            let even = if h % 2 == 0 { h } else { next };
            assert_eq!(f64_to_f16_bits(mid), even, "tie after {h:#06x}");
            assert_eq!(f64_to_f16_bits(-mid), 0x8000 | even, "tie after -{h:#06x}");
            let (below, above) = (
                f64::from_bits(mid.to_bits() - 1),
                f64::from_bits(mid.to_bits() + 1),
            );
            assert_eq!(f64_to_f16_bits(below), h, "below the tie after {h:#06x}");
            assert_eq!(f64_to_f16_bits(above), next, "above the tie after {h:#06x}");
        }
        assert_eq!(f64_to_f16_bits(f64::NAN), 0x7e00);
        assert_eq!(f64_to_f16_bits(f64::INFINITY), 0x7c00);
        assert_eq!(f64_to_f16_bits(f64::MIN_POSITIVE / 2.0), 0);
    }

    #[test]
    fn rejects_out_of_range_and_wrong_types() {
        assert!(fv(json!(256), "uint8").is_err());
        assert!(fv(json!(-1), "uint32").is_err());
        assert!(fv(json!(128), "int8").is_err());
        assert!(fv(json!("0x7fc0"), "float32").is_err());
        assert!(fv(json!("nan"), "float64").is_err());
        assert!(fv(json!([1.0]), "complex128").is_err());
        assert!(fv(json!("x"), "bool").is_err());
        assert!(DataType::parse("r7").is_err());
        assert!(DataType::parse("string").is_err());
    }
}
