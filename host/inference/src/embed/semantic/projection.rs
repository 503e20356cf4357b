//! The fixed map from the model's 384 dimensions to the host's 1024 that keeps every cosine
//! similarity (see [`Projection`]).

use std::fmt;
use std::sync::OnceLock;

use super::SOURCE_DIMENSIONS;
use crate::embed::DIMENSIONS;

/// The seed of the projection matrix: the bytes of `atrium-1`. Changing it changes every
/// vector the semantic embedder makes.
pub const PROJECTION_SEED: u64 = 0x6174_7269_756d_2d31;

// A matrix with orthonormal columns needs at least as many rows as columns.
const _: () = assert!(DIMENSIONS >= SOURCE_DIMENSIONS);

/// SplitMix64 (Steele, Lea and Flood, 2014): a tiny, well-studied generator, so that the
/// projection depends on nothing but this file.
struct SplitMix64(u64);

impl SplitMix64 {
    /// The next 64 random bits.
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform number in [0, 1): the top 53 bits, exactly.
    fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// An approximately standard normal number: the sum of 12 uniforms, minus 6 (mean 0,
    /// variance 1). Only additions and exact multiplications, where Box-Muller would need
    /// `ln` and `cos`, which come from the platform's maths library and may differ in the last
    /// bit between platforms; this way the matrix is the same, bit for bit, everywhere.
    fn normal(&mut self) -> f64 {
        let mut sum = 0.0;
        for _ in 0..12 {
            sum += self.uniform();
        }
        sum - 6.0
    }
}

/// The dot product of two vectors, summed left to right.
fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// The fixed [`DIMENSIONS`] × [`SOURCE_DIMENSIONS`] matrix `Q` with orthonormal columns
/// (`QᵀQ = I`) that maps the model's vectors to the host's dimension without changing a dot
/// product, a norm or a cosine similarity (the module documentation says why not zero padding).
///
/// It is made once per process ([`Projection::get`]) from [`PROJECTION_SEED`]: 384 columns of
/// 1024 approximately normal numbers (SplitMix64, sums of 12 uniforms; column after column, top to
/// bottom), orthonormalised by modified Gram-Schmidt in `f64`, then rounded to `f32`. A
/// Gaussian matrix of this shape is well conditioned (condition number about
/// (√1024 + √384) / (√1024 − √384) ≈ 4), so one Gram-Schmidt pass leaves `QᵀQ` within about
/// 1e-15 of the identity before the rounding, and within 1e-8 after it. The matrix takes
/// 1.5 MB; making it is about 1.5e8 multiply-adds.
pub struct Projection {
    /// Row-major: row `i` (output dimension `i`) is `matrix[i * 384 .. (i + 1) * 384]`.
    matrix: Vec<f32>,
}

impl fmt::Debug for Projection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Projection")
            .field("rows", &DIMENSIONS)
            .field("columns", &SOURCE_DIMENSIONS)
            .finish_non_exhaustive()
    }
}

impl Projection {
    /// The projection, made on first use.
    pub fn get() -> &'static Projection {
        static PROJECTION: OnceLock<Projection> = OnceLock::new();
        PROJECTION.get_or_init(Projection::generate)
    }

    /// Makes the matrix from [`PROJECTION_SEED`] (see the type's documentation).
    fn generate() -> Projection {
        let mut rng = SplitMix64(PROJECTION_SEED);
        let mut columns: Vec<Vec<f64>> = Vec::with_capacity(SOURCE_DIMENSIONS);
        for _ in 0..SOURCE_DIMENSIONS {
            let mut v: Vec<f64> = (0..DIMENSIONS).map(|_| rng.normal()).collect();
            // Modified Gram-Schmidt: remove each earlier direction from the updated `v`.
            for q in &columns {
                let r = dot(q, &v);
                for (vi, qi) in v.iter_mut().zip(q) {
                    *vi -= r * qi;
                }
            }
            // Never zero: 384 random vectors in 1024 dimensions are independent (the tests
            // check the result).
            let norm = dot(&v, &v).sqrt();
            for vi in &mut v {
                *vi /= norm;
            }
            columns.push(v);
        }
        let mut matrix = vec![0.0f32; DIMENSIONS * SOURCE_DIMENSIONS];
        for (j, column) in columns.iter().enumerate() {
            for (i, x) in column.iter().enumerate() {
                matrix[i * SOURCE_DIMENSIONS + j] = *x as f32;
            }
        }
        Projection { matrix }
    }

    /// `Q x`: the [`DIMENSIONS`] numbers of `x`, with the same norm and the same dot product
    /// with any other projected vector (summed in `f64`, rounded once to `f32`).
    pub fn apply(&self, x: &[f32; SOURCE_DIMENSIONS]) -> Vec<f32> {
        self.matrix
            .chunks_exact(SOURCE_DIMENSIONS)
            .map(|row| {
                row.iter()
                    .zip(x)
                    .map(|(q, v)| f64::from(*q) * f64::from(*v))
                    .sum::<f64>() as f32
            })
            .collect()
    }

    /// The entry at output dimension `row`, model dimension `column`.
    #[cfg(test)]
    fn entry(&self, row: usize, column: usize) -> f32 {
        self.matrix[row * SOURCE_DIMENSIONS + column]
    }
}

#[cfg(test)]
mod tests {
    use super::super::{MODEL, PROVIDER, cosine};
    use super::*;
    use crate::embed::checked;

    fn norm(a: &[f32]) -> f64 {
        a.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt()
    }

    /// A random vector of 384 numbers (not unit length), from its own generator.
    fn random_vector(rng: &mut SplitMix64) -> [f32; SOURCE_DIMENSIONS] {
        let mut v = [0.0f32; SOURCE_DIMENSIONS];
        for x in &mut v {
            *x = rng.normal() as f32;
        }
        v
    }

    fn unit(v: [f32; SOURCE_DIMENSIONS]) -> [f32; SOURCE_DIMENSIONS] {
        let n = norm(&v);
        v.map(|x| (f64::from(x) / n) as f32)
    }

    #[test]
    fn projection_has_orthonormal_columns() {
        let p = Projection::get();
        let mut worst = 0.0f64;
        for a in 0..SOURCE_DIMENSIONS {
            for b in a..SOURCE_DIMENSIONS {
                let g: f64 = (0..DIMENSIONS)
                    .map(|i| f64::from(p.entry(i, a)) * f64::from(p.entry(i, b)))
                    .sum();
                let want = if a == b { 1.0 } else { 0.0 };
                worst = worst.max((g - want).abs());
            }
        }
        assert!(worst < 1e-6, "QᵀQ is {worst} away from the identity");
    }

    #[test]
    fn projection_preserves_norms_and_cosines_of_random_vectors() {
        let p = Projection::get();
        let mut rng = SplitMix64(42);
        for _ in 0..50 {
            let x = random_vector(&mut rng);
            let y = random_vector(&mut rng);
            let (px, py) = (p.apply(&x), p.apply(&y));
            assert_eq!(px.len(), DIMENSIONS);
            assert!((norm(&px) / norm(&x) - 1.0).abs() < 1e-5);
            let before = cosine(&x, &y);
            let after = cosine(&px, &py);
            assert!((before - after).abs() < 1e-5, "{before} became {after}");
        }
        // Near neighbours stay near, in the same order.
        let x = unit(random_vector(&mut rng));
        let noise = random_vector(&mut rng);
        let close = unit(std::array::from_fn(|i| x[i] + 0.1 * noise[i]));
        let far = unit(std::array::from_fn(|i| x[i] + 0.5 * noise[i]));
        let (px, pclose, pfar) = (p.apply(&x), p.apply(&close), p.apply(&far));
        assert!(cosine(&px, &pclose) > cosine(&px, &pfar));
    }

    #[test]
    fn projection_is_deterministic_and_pinned() {
        let again = Projection::generate();
        assert!(again.matrix == Projection::get().matrix, "two runs differ");
        // Entries computed independently (a Python transcription of `generate`, the same
        // operations in the same order in IEEE doubles). If this fails, the seed or the
        // algorithm changed: every stored vector of this embedder changed meaning with it.
        let pinned = [
            ((0, 0), -0.025_084_082_037_210_464),
            ((0, 1), -0.026_527_617_126_703_262),
            ((1, 0), 0.044_927_712_529_897_69),
            ((511, 200), -0.065_305_307_507_514_95),
            ((0, 383), -0.040_368_404_239_416_12),
            ((1023, 0), -0.026_646_589_860_320_09),
            ((1023, 383), 0.006_373_095_326_125_622),
        ];
        for ((row, column), want) in pinned {
            let got = f64::from(again.entry(row, column));
            assert!(
                (got - want).abs() < 1e-6,
                "entry ({row}, {column}) is {got}, pinned {want}"
            );
        }
    }

    #[test]
    fn every_output_dimension_carries_signal() {
        // Each row of Q holds about 384/1024 of the energy: no dimension is dead, none
        // dominates (the reference run has 0.310 to 0.446).
        let p = Projection::get();
        for row in p.matrix.chunks_exact(SOURCE_DIMENSIONS) {
            let energy: f64 = row.iter().map(|q| f64::from(*q).powi(2)).sum();
            assert!((0.25..0.5).contains(&energy), "a row has {energy}");
        }
    }

    #[test]
    fn a_unit_vector_becomes_1024_numbers_of_unit_length() {
        let mut rng = SplitMix64(7);
        let x = unit(random_vector(&mut rng));
        let projected = checked(PROVIDER, MODEL, Projection::get().apply(&x)).unwrap();
        assert_eq!(projected.len(), DIMENSIONS);
        assert!((norm(&projected) - 1.0).abs() < 1e-5);
        assert!(projected.iter().all(|v| v.is_finite()));
    }
}
