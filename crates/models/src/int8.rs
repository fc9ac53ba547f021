//! int8 linear layers for the BERT encoder, on AVX-512 VNNI.
//!
//! Past the f32 encoder, both metarag and torch run MiniLM's matrix products at about this
//! CPU's f32 FMA peak (docs/results/performance.md); the products are ~80% of the time. VNNI's
//! `vpdpbusd` multiplies 64 byte pairs into 16 i32 sums per instruction, four times an f32
//! FMA's 16, and on the machines here it issues as often, so an int8 product has 4x the peak.
//! bf16 (`vdpbf16ps`) was measured first and issues at a third of the rate: no gain.
//!
//! The scheme (dynamic quantisation of the activations; only the smoothing below is calibrated,
//! on fixed sentences in the code):
//! - **weights**: per output column, symmetric, `w ≈ sw[j] · q` with `q` in -127..=127, packed
//!   once at load time in the order the kernel reads them (16 columns × 4 inputs per 64 bytes);
//! - **activations**: per row (one token), asymmetric, `x ≈ sx[i] · (u - zx[i])` with `u` in
//!   0..=255 and the row's zero exactly representable; computed for each product;
//! - **the product**: `Σ u·q` in i32 (exact; no overflow below 2^31 / (255·127) ≈ 66k inputs),
//!   then `y += sx[i]·sw[j]·(Σ u·q - zx[i]·Σ q)`, the zero point removed with the columns' sums
//!   of `q` (computed at load time);
//! - **smoothing** (SmoothQuant, `bert.rs`): per input channel, the activations are divided and
//!   the weight's rows multiplied by a factor from the channel's activation peak over the
//!   calibration sentences, which moves outlier channels' range into the weights;
//! - **outlier channels** (LLM.int8()'s decomposition, `bert.rs` picks them): the few input
//!   channels with the largest calibration peaks stay out of the int8 product and are added in
//!   f32 (their weight rows kept as they are). BERT's activations have a handful of channels
//!   far above the rest; even smoothed, they set each token's quantisation step for every other
//!   channel. On 500 2WikiMultiHopQA passages, taking the top one out of each product raised the
//!   lowest cosine to f32 from 0.9982 to 0.9991, the top four to 0.9993 (docs/results/performance.md).
//!
//! Because the integer sums are exact, the VNNI kernel and the portable reference
//! (`QLinear::forward_reference`, in tests) give bit-identical results (tested); only the rounding
//! to int8 differs from f32, and what that costs in the vectors is measured, not assumed
//! (`tests/it/encoder.rs`, docs/results/performance.md).

use rayon::prelude::*;

/// Rows quantised and multiplied as one task: their int8 copy (at most 64 × 1,536 bytes for
/// MiniLM's widest layer) stays in L2 while every column block of the weight passes over it.
const ROWS_PER_CHUNK: usize = 48;
/// Rows of one kernel tile: 6 rows × 4 column groups = 24 accumulators + 4 weight registers +
/// 1 broadcast, of AVX-512's 32.
const MR: usize = 6;
/// Column groups (16 columns each) of one kernel tile.
const NR: usize = 4;

/// Whether this CPU runs the int8 kernel (AVX-512 F/BW and VNNI).
pub(crate) fn supported() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512vnni")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// A linear layer's weight in int8, packed for the kernel.
pub(crate) struct QLinear {
    /// `[output / 16][input / 4][16 columns][4 inputs]`: one 64-byte load gives the kernel four
    /// consecutive inputs of 16 columns.
    packed: Vec<i8>,
    /// Per output column: the weight's scale.
    scale: Vec<f32>,
    /// Per output column: the sum of its quantised weights (removes the activations' zero point).
    colsum: Vec<i32>,
    input: usize,
    output: usize,
    /// Per input channel: what the activations are multiplied by before quantisation (the
    /// inverse of the smoothing folded into the weight).
    inv_smooth: Option<Vec<f32>>,
    /// Input channels computed in f32 beside the int8 product (their weight rows are zero in
    /// `packed` and their activations zero in the quantised rows).
    outliers: Vec<usize>,
    /// `[outliers.len()][output]`: those channels' f32 weight rows, unsmoothed.
    outlier_w: Vec<f32>,
}

impl QLinear {
    /// Quantises a weight stored `input × output` row-major (as the f32 layer keeps it), or
    /// `None` where the shape does not fit the kernel (inputs not a multiple of 4, outputs not
    /// a multiple of 16): such a layer stays f32. The `outliers` input channels are left out
    /// of the int8 product and added in f32.
    pub fn new(
        w: &[f32],
        input: usize,
        output: usize,
        smooth: Option<Vec<f32>>,
        outliers: &[usize],
    ) -> Option<Self> {
        assert_eq!(w.len(), input * output);
        if input == 0 || !input.is_multiple_of(4) || !output.is_multiple_of(16) {
            return None;
        }
        let mut outliers = outliers.to_vec();
        outliers.sort_unstable();
        outliers.dedup();
        assert!(
            outliers.iter().all(|&c| c < input),
            "outlier channel out of range"
        );
        let outlier_w: Vec<f32> = outliers
            .iter()
            .flat_map(|&c| w[c * output..(c + 1) * output].iter().copied())
            .collect();
        // Per input channel: the factor on the weight's row (0 for an outlier, whose row
        // leaves the int8 weight) and on the activation (0 for an outlier, so that it leaves
        // the row's range too; the zero point then cancels exactly).
        let mut on_w = smooth.unwrap_or_else(|| vec![1.0; input]);
        assert_eq!(on_w.len(), input);
        let mut on_x: Vec<f32> = on_w.iter().map(|v| 1.0 / v).collect();
        for &c in &outliers {
            on_w[c] = 0.0;
            on_x[c] = 0.0;
        }
        let identity = outliers.is_empty() && on_w.iter().all(|&v| v == 1.0);
        let smoothed;
        let w = if identity {
            w
        } else {
            smoothed = w
                .chunks_exact(output)
                .zip(&on_w)
                .flat_map(|(row, s)| row.iter().map(move |v| v * s))
                .collect::<Vec<f32>>();
            &smoothed[..]
        };
        let inv_smooth = (!identity).then_some(on_x);
        let mut scale = vec![0f32; output];
        for row in w.chunks_exact(output) {
            for (s, v) in scale.iter_mut().zip(row) {
                *s = s.max(v.abs());
            }
        }
        scale.iter_mut().for_each(|s| *s /= 127.0);
        let quant = |k: usize, j: usize| -> i8 {
            let s = scale[j];
            if s == 0.0 {
                0
            } else {
                (w[k * output + j] / s).round().clamp(-127.0, 127.0) as i8
            }
        };
        let mut packed = vec![0i8; input * output];
        let mut colsum = vec![0i32; output];
        let quads = input / 4;
        for g in 0..output / 16 {
            for kq in 0..quads {
                for c in 0..16 {
                    for t in 0..4 {
                        let (k, j) = (kq * 4 + t, g * 16 + c);
                        let q = quant(k, j);
                        packed[((g * quads + kq) * 16 + c) * 4 + t] = q;
                        colsum[j] += i32::from(q);
                    }
                }
            }
        }
        Some(QLinear {
            packed,
            scale,
            colsum,
            input,
            output,
            inv_smooth,
            outliers,
            outlier_w,
        })
    }

    /// `y += x · W` for a row-major `x` of `rows × input` (`y` holds the bias, and the residual
    /// where there is one); the kernel where the CPU has VNNI, else plain integer loops (the
    /// embedder refuses int8 there, so only tests take that path).
    pub fn forward(&self, x: &[f32], rows: usize, y: &mut [f32]) {
        assert_eq!(x.len(), rows * self.input);
        assert_eq!(y.len(), rows * self.output);
        let fast = supported();
        y.par_chunks_mut(self.output * ROWS_PER_CHUNK)
            .zip(x.par_chunks(self.input * ROWS_PER_CHUNK))
            .for_each(|(y, x)| {
                let rows = x.len() / self.input;
                let q = Quantised::of(x, rows, self.input, self.inv_smooth.as_deref());
                if fast {
                    #[cfg(target_arch = "x86_64")]
                    // SAFETY: `supported()` checked the CPU features the kernel is compiled
                    // for; `chunk_vnni` checks every bound it relies on.
                    #[allow(unsafe_code)]
                    unsafe {
                        self.chunk_vnni(&q, y)
                    }
                } else {
                    self.chunk_reference(&q, y);
                }
                self.add_outliers(x, y);
            });
    }

    /// `y += x[:, outliers] · W[outliers, :]` in f32.
    fn add_outliers(&self, x: &[f32], y: &mut [f32]) {
        if self.outliers.is_empty() {
            return;
        }
        for (x, y) in x
            .chunks_exact(self.input)
            .zip(y.chunks_exact_mut(self.output))
        {
            for (&c, w) in self
                .outliers
                .iter()
                .zip(self.outlier_w.chunks_exact(self.output))
            {
                axpy(x[c], w, y);
            }
        }
    }

    /// The same product with plain integer loops: the kernel's reference in tests.
    #[cfg(test)]
    pub fn forward_reference(&self, x: &[f32], rows: usize, y: &mut [f32]) {
        assert_eq!(x.len(), rows * self.input);
        assert_eq!(y.len(), rows * self.output);
        let q = Quantised::of(x, rows, self.input, self.inv_smooth.as_deref());
        self.chunk_reference(&q, y);
        self.add_outliers(x, y);
    }

    fn chunk_reference(&self, q: &Quantised, y: &mut [f32]) {
        let quads = self.input / 4;
        for (i, y) in y.chunks_exact_mut(self.output).enumerate() {
            let u = &q.data[i * self.input..(i + 1) * self.input];
            for (j, y) in y.iter_mut().enumerate() {
                let (g, c) = (j / 16, j % 16);
                let mut acc = 0i32;
                for kq in 0..quads {
                    let w = &self.packed[((g * quads + kq) * 16 + c) * 4..][..4];
                    for t in 0..4 {
                        acc += i32::from(u[kq * 4 + t]) * i32::from(w[t]);
                    }
                }
                let acc = acc - q.zero[i] * self.colsum[j];
                // Fused, in the kernel's order, so that both give the same bits.
                *y = (q.scale[i] * self.scale[j]).mul_add(acc as f32, *y);
            }
        }
    }

    /// One chunk of rows through the VNNI kernel: tiles of up to 6 rows × 64 columns, the
    /// last column block narrower where `output` is not a multiple of 64.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    #[allow(unsafe_code)]
    unsafe fn chunk_vnni(&self, q: &Quantised, y: &mut [f32]) {
        let rows = q.zero.len();
        assert_eq!(q.data.len(), rows * self.input);
        assert_eq!(y.len(), rows * self.output);
        assert_eq!(self.packed.len(), self.input * self.output);
        let groups = self.output / 16;
        let mut g = 0;
        while g < groups {
            let ng = (groups - g).min(NR);
            let mut r = 0;
            while r < rows {
                let mr = (rows - r).min(MR);
                // SAFETY (for each call): rows `r..r + mr` and groups `g..g + ng` lie inside
                // `q`, `y` and `packed` (asserted above and by the loop bounds); the kernel
                // reads and writes nothing else.
                unsafe {
                    match (mr, ng) {
                        (6, 4) => self.tile::<6, 4>(q, y, r, g),
                        (5, 4) => self.tile::<5, 4>(q, y, r, g),
                        (4, 4) => self.tile::<4, 4>(q, y, r, g),
                        (3, 4) => self.tile::<3, 4>(q, y, r, g),
                        (2, 4) => self.tile::<2, 4>(q, y, r, g),
                        (1, 4) => self.tile::<1, 4>(q, y, r, g),
                        (m, n) => {
                            // Narrow last block (fewer than 64 columns left): one group at a
                            // time, each row tile as above.
                            for gg in g..g + n {
                                match m {
                                    6 => self.tile::<6, 1>(q, y, r, gg),
                                    5 => self.tile::<5, 1>(q, y, r, gg),
                                    4 => self.tile::<4, 1>(q, y, r, gg),
                                    3 => self.tile::<3, 1>(q, y, r, gg),
                                    2 => self.tile::<2, 1>(q, y, r, gg),
                                    _ => self.tile::<1, 1>(q, y, r, gg),
                                }
                            }
                        }
                    }
                }
                r += mr;
            }
            g += ng;
        }
    }

    /// `M` rows from `r` × `N` groups of 16 columns from group `g`: the integer sums in
    /// registers over the whole input, then scaled onto `y`.
    ///
    /// # Safety
    /// The CPU has AVX-512 F/BW and VNNI; `r + M <= rows` and `g + N <= output / 16`.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    #[allow(unsafe_code)]
    #[inline]
    unsafe fn tile<const M: usize, const N: usize>(
        &self,
        q: &Quantised,
        y: &mut [f32],
        r: usize,
        g: usize,
    ) {
        use std::arch::x86_64::*;
        // SAFETY: the caller's contract (CPU features, tile inside the matrices).
        unsafe {
            let quads = self.input / 4;
            let mut acc = [[_mm512_setzero_si512(); N]; M];
            // Pointers set up once and bumped with wrapping adds: the debug build checks
            // every `usize` product and every `ptr::add` for overflow, which inside this
            // loop cost the kernel more than half its speed.
            let mut a: [*const u8; M] =
                std::array::from_fn(|m| q.data.as_ptr().wrapping_add((r + m) * self.input));
            let mut b: [*const i8; N] =
                std::array::from_fn(|n| self.packed.as_ptr().wrapping_add((g + n) * quads * 64));
            for _ in 0..quads {
                let mut w = [_mm512_setzero_si512(); N];
                for (w, b) in w.iter_mut().zip(&mut b) {
                    *w = _mm512_loadu_si512(b.cast());
                    *b = b.wrapping_add(64);
                }
                for (acc, a) in acc.iter_mut().zip(&mut a) {
                    // Through `[u8; 4]` (alignment 1): a plain load, with none of the
                    // checks that `read_unaligned` carries in a debug build.
                    let u = i32::from_ne_bytes(*(*a as *const [u8; 4]));
                    *a = a.wrapping_add(4);
                    let u = _mm512_set1_epi32(u);
                    for (acc, w) in acc.iter_mut().zip(&w) {
                        *acc = _mm512_dpbusd_epi32(*acc, u, *w);
                    }
                }
            }
            for (m, acc) in acc.iter().enumerate() {
                let row = r + m;
                let zero = _mm512_set1_epi32(q.zero[row]);
                let sx = _mm512_set1_ps(q.scale[row]);
                for (n, acc) in acc.iter().enumerate() {
                    let col = (g + n) * 16;
                    let colsum = _mm512_loadu_si512(self.colsum.as_ptr().wrapping_add(col).cast());
                    let sums = _mm512_sub_epi32(*acc, _mm512_mullo_epi32(zero, colsum));
                    let sw = _mm512_loadu_ps(self.scale.as_ptr().wrapping_add(col));
                    let out = y.as_mut_ptr().wrapping_add(row * self.output + col);
                    let v = _mm512_fmadd_ps(
                        _mm512_mul_ps(sx, sw),
                        _mm512_cvtepi32_ps(sums),
                        _mm512_loadu_ps(out),
                    );
                    _mm512_storeu_ps(out, v);
                }
            }
        }
    }
}

/// Rows of activations in u8 with their per-row scale and zero point.
struct Quantised {
    data: Vec<u8>,
    scale: Vec<f32>,
    zero: Vec<i32>,
}

impl Quantised {
    /// Each row (times `inv_smooth` per channel, where given) mapped onto 0..=255 over its
    /// range widened to hold 0.
    fn of(x: &[f32], rows: usize, width: usize, inv_smooth: Option<&[f32]>) -> Self {
        let mut data = vec![0u8; rows * width];
        let mut scale = vec![0f32; rows];
        let mut zero = vec![0i32; rows];
        let ones;
        let inv_smooth = match inv_smooth {
            Some(s) => s,
            None => {
                ones = vec![1f32; width];
                &ones
            }
        };
        for (i, (row, out)) in x
            .chunks_exact(width)
            .zip(data.chunks_exact_mut(width))
            .enumerate()
        {
            (scale[i], zero[i]) = quantise_row(row, inv_smooth, out);
        }
        Quantised { data, scale, zero }
    }
}

crate::wide::wide! {
    /// `y += a · x`.
    fn axpy(a: f32, x: &[f32], y: &mut [f32]) {
        for (y, x) in y.iter_mut().zip(x) {
            *y += a * x;
        }
    }
}

crate::wide::wide! {
    /// One row of [`Quantised::of`]: its scale and zero point (0, 0 for a row of zeros, or one
    /// that is not finite: it stays zero rather than spreading NaN).
    fn quantise_row(row: &[f32], inv_smooth: &[f32], out: &mut [u8]) -> (f32, i32) {
        // The range in 16 lanes, `if` rather than `f32::min` (whose NaN rule keeps the loop
        // scalar).
        let (mut lo, mut hi) = ([0f32; 16], [0f32; 16]);
        let mut rows = row.chunks_exact(16);
        let mut invs = inv_smooth.chunks_exact(16);
        for (r, s) in (&mut rows).zip(&mut invs) {
            // Fixed-size views: no bounds checks in the lane loop.
            let (r, s): (&[f32; 16], &[f32; 16]) = (r.try_into().unwrap(), s.try_into().unwrap());
            for l in 0..16 {
                let v = r[l] * s[l];
                lo[l] = if v < lo[l] { v } else { lo[l] };
                hi[l] = if v > hi[l] { v } else { hi[l] };
            }
        }
        for (r, s) in rows.remainder().iter().zip(invs.remainder()) {
            let v = r * s;
            lo[0] = if v < lo[0] { v } else { lo[0] };
            hi[0] = if v > hi[0] { v } else { hi[0] };
        }
        let lo = lo.iter().fold(0f32, |a, &b| if b < a { b } else { a });
        let hi = hi.iter().fold(0f32, |a, &b| if b > a { b } else { a });
        let s = (hi - lo) / 255.0;
        if s == 0.0 || !s.is_finite() {
            return (0.0, 0);
        }
        let z = (-lo / s).round().clamp(0.0, 255.0);
        // `+ 0.5` then truncation rounds (the values are >= 0 after the clamp): unlike
        // `f32::round`, which is a libm call per element on baseline x86-64, this vectorises.
        let (inv, z5) = (1.0 / s, z + 0.5);
        for ((o, v), k) in out.iter_mut().zip(row).zip(inv_smooth) {
            *o = (v * k * inv + z5).clamp(0.0, 255.0) as i32 as u8;
        }
        (s, z as i32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic pseudo-random matrix with a few large values, as activations have.
    fn matrix(rows: usize, cols: usize, seed: u64) -> Vec<f32> {
        let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
        (0..rows * cols)
            .map(|i| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let v = ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0;
                if i % 97 == 0 { v * 4.0 } else { v }
            })
            .collect()
    }

    fn naive(x: &[f32], w: &[f32], rows: usize, input: usize, output: usize) -> Vec<f32> {
        let mut y = vec![0f32; rows * output];
        for i in 0..rows {
            for k in 0..input {
                for j in 0..output {
                    y[i * output + j] += x[i * input + k] * w[k * output + j];
                }
            }
        }
        y
    }

    #[test]
    fn the_kernel_equals_the_reference_bit_for_bit_on_every_tile_shape() {
        if !supported() {
            eprintln!("no AVX-512 VNNI here: the kernel is not run");
            return;
        }
        // 13 rows: two full tiles and a tail of one; 80 columns: a 64-wide block and one group.
        for (rows, input, output) in [(13, 36, 80), (1, 4, 16), (100, 384, 1152), (7, 8, 48)] {
            for outliers in [&[][..], &[0, input - 1][..]] {
                let smooth = (0..input).map(|c| 0.5 + (c % 5) as f32 * 0.25).collect();
                let w = QLinear::new(
                    &matrix(input, output, 1),
                    input,
                    output,
                    Some(smooth),
                    outliers,
                )
                .unwrap();
                let x = matrix(rows, input, 2);
                let base = matrix(rows, output, 3);
                let (mut fast, mut slow) = (base.clone(), base.clone());
                w.forward(&x, rows, &mut fast);
                w.forward_reference(&x, rows, &mut slow);
                assert_eq!(fast, slow, "{rows}x{input}x{output}, outliers {outliers:?}");
            }
        }
    }

    #[test]
    fn the_product_is_close_to_the_f32_product() {
        let (rows, input, output) = (20, 384, 64);
        let (w, x) = (matrix(input, output, 4), matrix(rows, input, 5));
        let err = relative_error(&x, &w, (rows, input, output), &[]);
        assert!(err < 0.02, "relative error {err}");
    }

    /// Relative error of `QLinear` with `outliers` against the exact product.
    fn relative_error(
        x: &[f32],
        w: &[f32],
        shape: (usize, usize, usize),
        outliers: &[usize],
    ) -> f32 {
        let (rows, input, output) = shape;
        let exact = naive(x, w, rows, input, output);
        let mut y = vec![0f32; rows * output];
        QLinear::new(w, input, output, None, outliers)
            .unwrap()
            .forward(x, rows, &mut y);
        let norm = exact.iter().map(|v| v * v).sum::<f32>().sqrt();
        let err = exact
            .iter()
            .zip(&y)
            .map(|(a, b)| (a - b) * (a - b))
            .sum::<f32>();
        err.sqrt() / norm
    }

    #[test]
    fn a_channel_far_above_the_rest_is_taken_out_of_the_int8_product() {
        // One input channel 200x the others, as BERT's residual stream has: quantised with the
        // row, it leaves the other channels a handful of levels; added in f32, the rest of the
        // row gets all 256.
        let (rows, input, output) = (16, 64, 32);
        let w = matrix(input, output, 7);
        let mut x = matrix(rows, input, 8);
        for row in x.chunks_exact_mut(input) {
            row[9] *= 200.0;
        }
        let with = relative_error(&x, &w, (rows, input, output), &[9]);
        let without = relative_error(&x, &w, (rows, input, output), &[]);
        assert!(with < without / 10.0, "with {with}, without {without}");
        // The channel alone is exact: a row that is zero elsewhere gives its f32 product.
        let mut x = vec![0f32; rows * input];
        x[9] = 1234.5;
        assert_eq!(relative_error(&x, &w, (rows, input, output), &[9]), 0.0);
    }

    #[test]
    fn shapes_the_kernel_cannot_take_stay_f32_and_zero_rows_add_nothing() {
        assert!(QLinear::new(&[0.0; 30], 3, 10, None, &[]).is_none());
        assert!(QLinear::new(&[0.0; 40], 4, 10, None, &[]).is_none());
        let w = QLinear::new(&matrix(8, 16, 6), 8, 16, None, &[]).unwrap();
        let mut y = vec![1.5f32; 2 * 16];
        w.forward(&[0.0; 16], 2, &mut y);
        assert!(y.iter().all(|&v| v == 1.5));
    }
}
