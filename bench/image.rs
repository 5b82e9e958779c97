//! The benchmark's synthetic source data, shared by `benches/compare.rs`,
//! `examples/scaling.rs` and `examples/profile.rs`: a smooth gradient (a plane plus a slow 2-D
//! sinusoid) plus 6 bits of deterministic noise: compressible, like a microscope image,
//! but not trivially. Deterministic (a fixed xorshift seed), so every run and
//! every implementation sees the same bytes; a stack of planes adds a small offset per plane.

/// Deterministic xorshift64*.
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 pseudo-random bits.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

/// `planes` planes of `h`×`w` uint16 values, C order (plane, row, column). One 4096×4096 plane
/// is `benches/compare.rs`'s image, bit for bit.
pub fn generate(planes: usize, h: usize, w: usize) -> Vec<u16> {
    let sx: Vec<f64> = (0..w).map(|x| (x as f64 / 611.0).sin()).collect();
    let cy: Vec<f64> = (0..h).map(|y| (y as f64 / 487.0).cos()).collect();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut v = vec![0u16; planes * h * w];
    for z in 0..planes {
        let plane = &mut v[z * h * w..(z + 1) * h * w];
        for y in 0..h {
            for x in 0..w {
                let g = 8000.0 + 2.0 * x as f64 + 1.5 * y as f64 + 6000.0 * sx[x] * cy[y];
                // Adding 0.0 on plane 0 leaves `g` exactly as the 2-D image has it.
                let g = g + 16.0 * z as f64;
                plane[y * w + x] = (g as u32 + (rng.next() >> 58) as u32) as u16;
            }
        }
    }
    v
}
