//! Inner chunks cut out of the benchmark image, and flate2's gzip level 1 over them: shared
//! by the harness and the zarrs peer built alone, so both ceilings compress the same chunks in
//! the same order (on whichever flate2 backend each build links).

/// Every inner chunk of a row-major 2-D array of `elem`-byte elements, cut out into one
/// buffer: shard by shard in C order, chunks in C order within a shard.
pub fn array_chunks(src: &[u8], shape: [u64; 2], shard: [u64; 2], inner: [u64; 2], elem: usize) -> Vec<u8> {
    let ([rows, cols], [s0, s1], [c0, c1]) = (shape, shard, inner);
    let row = c1 as usize * elem;
    let mut out = Vec::with_capacity(src.len());
    for sy in 0..rows / s0 {
        for sx in 0..cols / s1 {
            for cy in 0..s0 / c0 {
                for cx in 0..s1 / c1 {
                    let (r0, col0) = (sy * s0 + cy * c0, sx * s1 + cx * c1);
                    for r in r0..r0 + c0 {
                        let start = (r * cols + col0) as usize * elem;
                        out.extend_from_slice(&src[start..start + row]);
                    }
                }
            }
        }
    }
    out
}

/// flate2 gzip level 1 (raw deflate + CRC-32, one reused `Compress`) of each `chunk`-byte
/// piece of `chunks`.
pub fn flate2_gzip1_each(chunks: &[u8], chunk: usize) -> Result<(), String> {
    use flate2::{Compress, Compression, Crc, FlushCompress};
    let mut e = Compress::new(Compression::new(1), false);
    let mut out = Vec::with_capacity(2 * chunk);
    for ch in chunks.chunks(chunk) {
        e.reset();
        out.clear();
        let mut crc = Crc::new();
        crc.update(ch);
        e.compress_vec(ch, &mut out, FlushCompress::Finish).map_err(|e| e.to_string())?;
        std::hint::black_box((&out, crc.sum()));
    }
    Ok(())
}
