//! The `transpose` array→array codec: permutes the dimensions of a chunk.
//!
//! `order` is a permutation: encoded dimension `k` is decoded dimension `order[k]`. The
//! early-draft spellings `"C"` (identity) and `"F"` (reversal) are accepted too.

use super::{check_len, ChunkRepr, Config};
use crate::error::{Error, Result};
use serde_json::{json, Value};

/// `transpose` codec (array → array).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transpose {
    /// The permutation.
    pub order: TransposeOrder,
}

#[derive(Debug, Clone, PartialEq, Eq)]
/// A permutation, or the draft's `"C"` / `"F"` (reversal of whatever rank the chunk has).
pub enum TransposeOrder {
    /// Encoded dimension `k` is decoded dimension `order[k]`.
    Permutation(Vec<usize>),
    /// The draft's `"C"`: the identity.
    C,
    /// The draft's `"F"`: the dimensions reversed.
    F,
}

impl Transpose {
    pub(crate) fn from_config(cfg: &Config) -> Result<Self> {
        cfg.only(&["order"])?;
        let order = match cfg.get("order") {
            Some(Value::String(s)) if s == "C" => TransposeOrder::C,
            Some(Value::String(s)) if s == "F" => TransposeOrder::F,
            Some(Value::Array(_)) => {
                let p: Vec<usize> = cfg
                    .uints("order")?
                    .unwrap()
                    .into_iter()
                    .map(|x| x as usize)
                    .collect();
                let mut seen = vec![false; p.len()];
                for &x in &p {
                    if x >= p.len() || std::mem::replace(&mut seen[x], true) {
                        return Err(cfg.bad("order", "must be a permutation of 0..rank"));
                    }
                }
                TransposeOrder::Permutation(p)
            }
            _ => return Err(cfg.bad("order", "must be a permutation list")),
        };
        Ok(Transpose { order })
    }

    pub(crate) fn to_json(&self) -> Value {
        match &self.order {
            TransposeOrder::Permutation(p) => {
                json!({"name": "transpose", "configuration": {"order": p}})
            }
            TransposeOrder::C => json!({"name": "transpose", "configuration": {"order": "C"}}),
            TransposeOrder::F => json!({"name": "transpose", "configuration": {"order": "F"}}),
        }
    }

    /// The permutation for a chunk of rank `rank`.
    pub fn permutation(&self, rank: usize) -> Result<Vec<usize>> {
        match &self.order {
            TransposeOrder::Permutation(p) if p.len() == rank => Ok(p.clone()),
            TransposeOrder::Permutation(p) => Err(Error::metadata(format!(
                "codec `transpose`: order {p:?} does not match rank {rank}"
            ))),
            TransposeOrder::C => Ok((0..rank).collect()),
            TransposeOrder::F => Ok((0..rank).rev().collect()),
        }
    }

    pub(crate) fn encoded_repr(&self, repr: &ChunkRepr) -> Result<ChunkRepr> {
        let p = self.permutation(repr.shape.len())?;
        Ok(ChunkRepr {
            shape: p.iter().map(|&i| repr.shape[i]).collect(),
            ..repr.clone()
        })
    }

    pub(crate) fn encode(&self, data: &[u8], repr: &ChunkRepr) -> Result<Vec<u8>> {
        check_len(data.len(), repr.byte_size()?)?;
        let p = self.permutation(repr.shape.len())?;
        Ok(permute(data, &repr.shape, &p, repr.dtype.size()))
    }

    pub(crate) fn decode(&self, data: &[u8], decoded: &ChunkRepr) -> Result<Vec<u8>> {
        check_len(data.len(), decoded.byte_size()?)?;
        let p = self.permutation(decoded.shape.len())?;
        let encoded_shape: Vec<u64> = p.iter().map(|&i| decoded.shape[i]).collect();
        Ok(permute(
            data,
            &encoded_shape,
            &inverse(&p),
            decoded.dtype.size(),
        ))
    }
}

fn inverse(p: &[usize]) -> Vec<usize> {
    let mut inv = vec![0; p.len()];
    for (k, &i) in p.iter().enumerate() {
        inv[i] = k;
    }
    inv
}

/// Transpose a C-order array of `shape`: output dimension `k` is input dimension `perm[k]`.
fn permute(data: &[u8], shape: &[u64], perm: &[usize], elem: usize) -> Vec<u8> {
    let rank = shape.len();
    let mut in_strides = vec![elem; rank];
    for d in (0..rank.saturating_sub(1)).rev() {
        in_strides[d] = in_strides[d + 1] * shape[d + 1] as usize;
    }
    let out_shape: Vec<usize> = perm.iter().map(|&i| shape[i] as usize).collect();
    let strides: Vec<usize> = perm.iter().map(|&i| in_strides[i]).collect();
    let mut out = Vec::with_capacity(data.len());
    if data.is_empty() {
        return out;
    }
    let mut idx = vec![0usize; rank];
    let mut src = 0usize;
    loop {
        out.extend_from_slice(&data[src..src + elem]);
        // Odometer increment over the output's C order.
        let mut d = rank;
        loop {
            if d == 0 {
                return out;
            }
            d -= 1;
            idx[d] += 1;
            src += strides[d];
            if idx[d] < out_shape[d] {
                break;
            }
            src -= strides[d] * idx[d];
            idx[d] = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permute_2d_by_hand() {
        // [[0,1,2],[3,4,5]] transposed is [[0,3],[1,4],[2,5]].
        let data: Vec<u8> = (0..6).collect();
        assert_eq!(permute(&data, &[2, 3], &[1, 0], 1), vec![0, 3, 1, 4, 2, 5]);
        // Rank 0 and identity.
        assert_eq!(permute(&[7], &[], &[], 1), vec![7]);
        assert_eq!(permute(&data, &[3], &[0], 2), data);
    }

    #[test]
    #[allow(clippy::identity_op, clippy::erasing_op)]
    fn permute_3d_roundtrip() {
        let data: Vec<u8> = (0..24).collect();
        let p = [2, 0, 1];
        let t = permute(&data, &[2, 3, 4], &p, 1);
        // Element (i,j,k) of the input lands at (k,i,j) of the output, shape [4,2,3].
        assert_eq!(t[(3 * 2 * 3) + (1 * 3) + 2], data[(1 * 12) + (2 * 4) + 3]);
        assert_eq!(permute(&t, &[4, 2, 3], &inverse(&p), 1), data);
    }
}
