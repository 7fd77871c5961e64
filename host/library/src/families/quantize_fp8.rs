//! The host side of the FP8 quantisation family: its safe launch, inputs with special values in
//! some groups (NaN, ±infinity, all zeros, subnormals, near f32's largest, -0.0), and an exact
//! check of every code and scale against a reference written from the definitions (each group's
//! largest magnitude, the scale `amax / 448`, each code `x · (448 / amax)` to the nearest e4m3,
//! clamped).

use super::auto::{Rung, Target};
use super::{
    Bound, Case, Cli, FamilyDemo, GUARD, KernelChoice, Outputs, Plan, Size, Sizes, Work, check_len, guarded_inputs,
    substream,
};
use kernels::Source;
use kernels::quantize_fp8::{AMAX_FLOOR, FAMILY, LARGEST, QuantizeFp8, block, warp};
use ptxkit::device::fp8::E4M3;
use ptxkit::{AnyFamily, Kernel};
use ptxkit_runtime::array::{Array, Buffer};
use ptxkit_runtime::{Backend, Result};

/// The codes and scales of `input` (rows × cols) with `kernel`: checks the arrays' lengths and that
/// they live where `backend` can reach them, then launches.
pub fn launch(
    backend: &Backend,
    kernel: &Kernel<QuantizeFp8>,
    source: Source,
    problem: &QuantizeFp8,
    input: &impl Array<f32>,
    codes: &mut impl Array<u8>,
    scales: &mut impl Array<f32>,
) -> Result<()> {
    let (len, groups) = (problem.elements(), problem.scales_len());
    check_len("input", input.len(), len)?;
    check_len("codes", codes.len(), len)?;
    check_len("scales", scales.len(), groups)?;
    let args = (
        input.view(backend)?.head(len),
        codes.view_mut(backend)?.head(len),
        scales.view_mut(backend)?.head(groups),
        problem.rows,
        problem.cols,
        problem.group,
    );
    // SAFETY: each view is its array's on this backend, borrowed for the launch: the rows × cols
    // elements the kernels read, as many codes and one scale per group they write.
    unsafe { backend.launch_from(source.module(), kernel, problem, args, &[input, &*codes, &*scales]) }
}

/// The host side of the FP8 quantisation family.
pub struct QuantizeFp8Demo;

/// Groups longer than this go a block per group in `auto`: a warp's 32 lanes would each walk more
/// than 32 elements.
const WARP_MAX_GROUP: usize = 1024;

/// Codes' poison: a NaN code; a group with no NaN in it has none.
const CODE_POISON: u8 = 0x7f;

/// `group`'s expected codes and scale, from the definitions: the largest magnitude (NaN if any
/// element is), floored at [`AMAX_FLOOR`]; the scale `amax / 448`; each code `x · (448 / amax)`
/// rounded to the nearest e4m3 and clamped to ±448, or e4m3's one NaN code (0x7f) where it is NaN
/// (the GPU's `inf · 0` is +NaN, x86's -NaN: the sign of a NaN is no one's to check).
fn expected(group: &[f32]) -> (Vec<u8>, f32) {
    let amax = if group.iter().any(|x| x.is_nan()) {
        f32::NAN
    } else {
        group.iter().map(|x| x.abs()).fold(AMAX_FLOOR, f32::max)
    };
    let factor = LARGEST / amax;
    let code = |scaled: f32| match scaled.is_nan() {
        true => E4M3::NAN.0,
        false => E4M3::from_f32_saturating(scaled).0,
    };
    let codes = group.iter().map(|&x| code(x * factor)).collect();
    (codes, amax / LARGEST)
}

/// What a special-value row does to its first group.
type Special = dyn Fn(&mut [f32]);

/// Random values of magnitudes from 2^-30 to 2^30 (a factor per row), then special values in the
/// first rows' first groups: a NaN, an infinity of each sign, a group of zeros, subnormals, values
/// near f32's largest and -0.0.
fn inputs(rng: u64, problem: &QuantizeFp8) -> Vec<f32> {
    let (rows, cols, group) = (problem.rows as usize, problem.cols as usize, problem.group as usize);
    let mut values = guarded_inputs(rng, rows * cols);
    for (r, row) in values[..rows * cols].chunks_mut(cols).enumerate() {
        let magnitude = 2f32.powi((r as i32 * 7) % 61 - 30);
        row.iter_mut().for_each(|x| *x *= magnitude);
    }
    let specials: [&Special; 6] = [
        &|g| g[g.len() / 2] = f32::NAN,
        &|g| g[0] = f32::INFINITY,
        &|g| g[g.len() - 1] = f32::NEG_INFINITY,
        &|g| g.fill(0.0),
        &|g| g.iter_mut().for_each(|x| *x *= 1e-39),
        &|g| {
            g.iter_mut().for_each(|x| *x = x.signum() * 3e38);
            g[0] = -0.0;
        },
    ];
    for (r, special) in specials.iter().enumerate().take(rows) {
        let start = r * cols;
        special(&mut values[start..start + group.min(cols)]);
    }
    values
}

struct QuantizeCase<'a> {
    backend: &'a Backend,
    problem: QuantizeFp8,
    input: Vec<f32>,
    inputs: Vec<Buffer<f32>>,
    codes: Outputs<u8>,
    scales: Outputs<f32>,
}

impl Case for QuantizeCase<'_> {
    fn launch(&mut self, kernel: usize, source: Source, set: usize) -> Result<()> {
        launch(
            self.backend,
            &FAMILY.kernels[kernel],
            source,
            &self.problem,
            &self.inputs[set],
            self.codes.get_mut(set),
            self.scales.get_mut(set),
        )
    }

    fn poison(&mut self) -> Result<()> {
        self.codes.poison(self.backend)?;
        self.scales.poison(self.backend)
    }

    fn check(&self, set: usize) -> std::result::Result<String, String> {
        let p = self.problem;
        let codes = self.codes.read(self.backend, set)?;
        let scales = self.scales.read(self.backend, set)?;
        for g in 0..p.groups() {
            let (row, first, end) = p.group_span(g);
            let at = (row * p.cols) as usize;
            let span = at + first as usize..at + end as usize;
            let (want_codes, want_scale) = expected(&self.input[span.clone()]);
            let got_scale = scales[g as usize];
            if got_scale.to_bits() != want_scale.to_bits() && !(got_scale.is_nan() && want_scale.is_nan()) {
                return Err(format!(
                    "group {g} (row {row}, columns {first}..{end}): scale {got_scale:e}, expected {want_scale:e}"
                ));
            }
            if let Some(i) = (0..want_codes.len()).find(|&i| codes[span.start + i] != want_codes[i]) {
                let col = first as usize + i;
                return Err(format!(
                    "element ({row}, {col}) = {:e}: code {:#04x} ({}), expected {:#04x} ({})",
                    self.input[span.start + i],
                    codes[span.start + i],
                    E4M3(codes[span.start + i]).to_f32(),
                    want_codes[i],
                    E4M3(want_codes[i]).to_f32()
                ));
            }
        }
        if let Some(i) = codes[p.elements()..].iter().position(|&c| c != CODE_POISON) {
            return Err(format!("wrote a code past the end, at index {}", p.elements() + i));
        }
        if let Some(i) = scales[p.scales_len()..].iter().position(|s| !s.is_nan()) {
            return Err(format!("wrote a scale past the end, at index {}", p.scales_len() + i));
        }
        Ok(format!(
            "{} codes and {} scales as the reference",
            p.elements(),
            p.scales_len()
        ))
    }
}

impl FamilyDemo for QuantizeFp8Demo {
    fn family(&self) -> &'static dyn AnyFamily {
        &FAMILY
    }

    fn extents(&self) -> &'static [&'static str] {
        &["rows", "cols", "group"]
    }

    fn plan(&self, size: Size) -> Result<Plan> {
        let [rows, cols, group] = size.0;
        let problem = QuantizeFp8::new(rows, cols, group)?;
        let (len, groups) = (problem.elements(), problem.scales_len());
        let device_bytes = (5 * (len + GUARD) + 4 * (groups + GUARD)) as u64;
        Ok(Plan {
            work: Work {
                bytes: (5 * len + 4 * groups) as f64,
                flops: 0.0,
                bound: Bound::Memory,
            },
            x: len as f64,
            // The input, the read-back codes and scales and their poison, the expected codes.
            host_bytes: 3 * device_bytes,
            device_bytes,
        })
    }

    fn prepare<'a>(&self, backend: &'a Backend, size: Size, rng: u64, sets: usize) -> Result<Box<dyn Case + 'a>> {
        let [rows, cols, group] = size.0;
        let problem = QuantizeFp8::new(rows, cols, group)?;
        let input = inputs(substream(rng, 1), &problem);
        let inputs = (0..sets.max(1))
            .map(|_| Buffer::upload(backend, &input))
            .collect::<Result<Vec<_>>>()?;
        Ok(Box::new(QuantizeCase {
            backend,
            problem,
            input,
            inputs,
            codes: Outputs::new(backend, problem.elements(), GUARD, CODE_POISON, sets)?,
            scales: Outputs::new(backend, problem.scales_len(), GUARD, f32::NAN, sets)?,
        }))
    }

    fn cli(&self) -> Cli {
        Cli {
            about: "FP8 quantisation: a rows × cols f32 matrix into e4m3 codes and a scale (amax / 448) per group of `group` elements of each row (128: blockwise; cols: per row)",
            default: Size([8192, 7168, 128]),
            emulator_cap: Size([64, 4096, 4096]),
        }
    }

    fn sizes(&self) -> Sizes {
        Sizes {
            // One element; groups of one; a short last group; groups longer than a warp's and a
            // block's stride; a scale per row of a prime length; every special value's row.
            edge: [
                [1, 1, 1],
                [3, 5, 1],
                [7, 300, 128],
                [6, 129, 128],
                [9, 1000, 1000],
                [2, 4099, 4099],
                [17, 255, 32],
                [33, 515, 128],
            ]
            .map(Size)
            .to_vec(),
            large: vec![
                Size([4096, 7168, 128]),
                Size([8192, 4096, 4096]),
                Size([16384, 2048, 128]),
            ],
            bench: vec![
                Size([8192, 7168, 128]),
                Size([8192, 4096, 4096]),
                Size([32768, 4096, 128]),
            ],
            smoke: Size([33, 515, 128]),
        }
    }

    fn choice(&self) -> &dyn KernelChoice {
        self
    }
}

impl KernelChoice for QuantizeFp8Demo {
    fn fastest_rung(&self, _target: Target, size: Size) -> Option<Rung> {
        let [_, cols, group] = size.0;
        Some(if group.min(cols) <= WARP_MAX_GROUP {
            Rung {
                entry: warp::KERNEL.entry(),
                why: "a warp per group: groups of up to 1024 elements, 32 or fewer a lane",
            }
        } else {
            Rung {
                entry: block::KERNEL.entry(),
                why: "a block per group: longer groups need more threads than a warp's",
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference by hand: the largest magnitude's code is ±448, the scale its value over 448,
    /// a NaN spoils the whole group, an infinity its finite neighbours (to zero).
    #[test]
    fn the_reference_follows_the_definitions() {
        let (codes, scale) = expected(&[1.0, -3.5, 0.5]);
        assert_eq!(scale, 3.5 / 448.0);
        assert_eq!(
            codes.iter().map(|&c| E4M3(c).to_f32()).collect::<Vec<_>>(),
            [128.0, -448.0, 64.0]
        );
        let (codes, scale) = expected(&[1.0, f32::NAN]);
        assert!(scale.is_nan() && codes.iter().all(|&c| E4M3(c).is_nan()));
        let (codes, scale) = expected(&[2.0, f32::INFINITY]);
        assert_eq!(scale, f32::INFINITY);
        assert_eq!(codes, [0x00, E4M3::NAN.0]);
        let (codes, scale) = expected(&[0.0, -0.0]);
        assert_eq!((codes, scale), (vec![0x00, 0x80], AMAX_FLOOR / 448.0));
    }
}
