//! The convolution family's host side: its safe launch, and the f64 check of every output pixel.

use super::elementwise::check_shape;
use super::{
    Bound, Case, Cli, FamilyDemo, GUARD, KernelChoice, Outputs, Plan, Size, Sizes, Work, check_guard, check_len,
    guarded_inputs, substream,
};
use kernels::Source;
use kernels::conv2d::{Conv2d, FAMILY};
use ptxkit::{AnyFamily, Kernel, Occupancy};
use ptxkit_runtime::Backend;
use ptxkit_runtime::Result;
use ptxkit_runtime::array::{Array, Buffer};

/// `output = image ⋆ filter` with `kernel`, any convolution kernel: checks that the image and
/// output hold height × width pixels and the filter (2r+1)² weights, then launches.
pub fn launch(
    backend: &Backend,
    kernel: &Kernel<Conv2d>,
    source: Source,
    problem: &Conv2d,
    (image, filter): (&impl Array<f32>, &impl Array<f32>),
    output: &mut impl Array<f32>,
) -> Result<()> {
    check_len("image", image.len(), problem.len())?;
    check_len("filter", filter.len(), problem.side() * problem.side())?;
    check_len("output", output.len(), problem.len())?;
    let args = (
        image.view(backend)?.head(problem.len()),
        filter.view(backend)?.head(problem.side() * problem.side()),
        output.view_mut(backend)?.head(problem.len()),
        problem.height,
        problem.width,
        problem.radius,
    );
    // SAFETY: each view is its array's on this backend, borrowed for the launch: what every
    // convolution kernel reads or writes for this problem.
    unsafe { backend.launch_from(source.module(), kernel, problem, args, &[image, filter, &*output]) }
}

/// The host side of the convolution family.
pub struct Conv2dDemo;

/// Multiply-adds of f64 reference above which the check samples pixels.
const FULL_CHECK_MAX_TAPS: u64 = 1 << 28;

/// Images smaller than the filter, single rows and columns, tile edges, primes, every filter size,
/// a grid of hundreds of tiles, and rows wider than a block of rolling warps.
const EDGE_SHAPES: [[usize; 3]; 16] = [
    [1, 1, 3],
    [1, 1, 7],
    [2, 3, 5],
    [1, 37, 3],
    [37, 1, 5],
    [31, 33, 3],
    [33, 31, 5],
    [32, 32, 7],
    [64, 64, 5],
    [61, 127, 3],
    [67, 45, 7],
    [100, 100, 5],
    [257, 509, 5],
    [520, 300, 7],
    // Rolling rows: several blocks across (512 columns each) on the 16-byte path and off it, halos
    // between blocks, bands of 64 rows and a short last one.
    [140, 1032, 5],
    [70, 1030, 7],
];

impl FamilyDemo for Conv2dDemo {
    fn family(&self) -> &'static dyn AnyFamily {
        &FAMILY
    }

    fn extents(&self) -> &'static [&'static str] {
        &["height", "width", "filter"]
    }

    fn label(&self, size: Size) -> String {
        let [height, width, filter] = size.0;
        format!("{height}x{width}, {filter}x{filter}")
    }

    fn plan(&self, size: Size) -> Result<Plan> {
        let [height, width, filter] = size.0;
        let problem = Conv2d::new(height, width, filter)?;
        for kernel in FAMILY.kernels {
            check_shape(kernel, &problem)?;
        }
        let pixels = problem.len() as u64;
        let array = 4 * (pixels + GUARD as u64);
        let taps = (problem.side() * problem.side()) as f64;
        Ok(Plan {
            work: Work {
                bytes: 8.0 * pixels as f64,
                flops: 2.0 * taps * pixels as f64,
                bound: Bound::Memory,
            },
            x: pixels as f64,
            // The image, the read-back output and its poison.
            host_bytes: 3 * array,
            device_bytes: 2 * array + 4 * 64,
        })
    }

    fn prepare<'a>(&self, backend: &'a Backend, size: Size, rng: u64, sets: usize) -> Result<Box<dyn Case + 'a>> {
        let [height, width, filter] = size.0;
        let problem = Conv2d::new(height, width, filter)?;
        let image = guarded_inputs(substream(rng, 9), problem.len());
        let weights = guarded_inputs(substream(rng, 10), problem.side() * problem.side());
        let inputs = (0..sets.max(1))
            .map(|_| Ok((Buffer::upload(backend, &image)?, Buffer::upload(backend, &weights)?)))
            .collect::<Result<Vec<_>>>()?;
        let outputs = Outputs::new(backend, problem.len(), GUARD, f32::NAN, sets)?;
        Ok(Box::new(Conv2dCase {
            backend,
            problem,
            image,
            weights,
            inputs,
            outputs,
        }))
    }

    fn cli(&self) -> Cli {
        Cli {
            about: "2D convolution (cross-correlation) with a 3×3, 5×5 or 7×7 filter, zero padding: direct, halo tiles, register blocking",
            default: Size([8192, 8192, 5]),
            emulator_cap: Size([1024, 1024, 7]),
        }
    }

    fn sizes(&self) -> Sizes {
        Sizes {
            edge: EDGE_SHAPES.iter().map(|&s| Size(s)).collect(),
            large: vec![Size([8192, 8192, 5]), Size([8191, 4097, 7])],
            bench: vec![
                Size([4096, 4096, 5]),
                Size([8192, 8192, 3]),
                Size([8192, 8192, 5]),
                Size([8192, 8192, 7]),
            ],
            smoke: Size([67, 45, 5]),
        }
    }

    fn choice(&self) -> &dyn KernelChoice {
        self
    }
}

impl KernelChoice for Conv2dDemo {
    /// The fastest algorithm's two widths: rolling rows with 4 or 8 outputs per lane. (The
    /// blocked kernels' V = 4 and V = 8 were the choice until the faster rolling rows landed:
    /// docs/perf-log.md, changes 8 and 33.)
    fn configurations(&self) -> &'static [&'static str] {
        const WIDTHS: [&str; 2] = [
            kernels::conv2d::rolling::KERNEL_V4.entry(),
            kernels::conv2d::rolling::KERNEL_V8.entry(),
        ];
        &WIDTHS
    }

    fn launch_blocks(&self, size: Size, kernel: usize) -> Result<u64> {
        let [height, width, filter] = size.0;
        let problem = Conv2d::new(height, width, filter)?;
        // The convolutions' grids do not depend on the device.
        Ok(FAMILY.kernels[kernel]
            .launch_shape(&problem, Occupancy::UNLIMITED)
            .grid
            .volume())
    }
}

struct Conv2dCase<'a> {
    backend: &'a Backend,
    problem: Conv2d,
    /// The image and filter on the host, guards included, for the reference.
    image: Vec<f32>,
    weights: Vec<f32>,
    inputs: Vec<(Buffer<f32>, Buffer<f32>)>,
    outputs: Outputs<f32>,
}

impl Case for Conv2dCase<'_> {
    fn launch(&mut self, kernel: usize, source: Source, set: usize) -> Result<()> {
        let (image, filter) = &self.inputs[set];
        launch(
            self.backend,
            &FAMILY.kernels[kernel],
            source,
            &self.problem,
            (image, filter),
            self.outputs.get_mut(set),
        )
    }

    fn poison(&mut self) -> Result<()> {
        self.outputs.poison(self.backend)
    }

    /// Every pixel up to [`FULL_CHECK_MAX_TAPS`] multiply-adds of reference; beyond, every pixel
    /// within the filter's reach of an edge (where the zero padding matters), every 16th pixel of
    /// the rest, and a scan of all of them for unwritten NaNs.
    fn check(&self, set: usize) -> std::result::Result<String, String> {
        let p = &self.problem;
        let len = p.len();
        let out = self.outputs.read(self.backend, set)?;
        let (height, width, radius) = (p.height as usize, p.width as usize, p.radius as usize);
        let (image, weights) = (&self.image[..len], &self.weights[..p.side() * p.side()]);
        let reference = |i: usize| kernels::reference::conv2d_at(image, weights, (height, width, radius), i);
        check_guard(&out, len)?;
        if (len * p.side() * p.side()) as u64 <= FULL_CHECK_MAX_TAPS {
            kernels::reference::check_each(&out[..len], reference).map_err(|m| m.to_string())?;
            return Ok(format!("{len} pixels within tolerance of the f64 reference"));
        }
        if let Some(i) = out[..len].iter().position(|v| v.is_nan()) {
            return Err(format!("pixel ({}, {}) is NaN: never written", i / width, i % width));
        }
        let near_edge = |i: usize| {
            let (y, x) = (i / width, i % width);
            y < radius || x < radius || y + radius >= height || x + radius >= width
        };
        let sampled: Vec<usize> = (0..len).filter(|&i| near_edge(i) || i % 16 == 0).collect();
        let values: Vec<f32> = sampled.iter().map(|&i| out[i]).collect();
        kernels::reference::check_each(&values, |j| reference(sampled[j])).map_err(|m| m.to_string())?;
        Ok(format!(
            "{} sampled pixels (every edge pixel, every 16th of the rest) within tolerance of the f64 reference, none NaN",
            sampled.len()
        ))
    }
}

#[cfg(test)]
mod configuration_tests {
    use super::*;

    #[test]
    fn both_rolling_widths_are_configurations_at_every_filter() {
        let (v4, v8) = (
            kernels::conv2d::rolling::KERNEL_V4.entry(),
            kernels::conv2d::rolling::KERNEL_V8.entry(),
        );
        for filter in [3, 5, 7] {
            assert_eq!(
                Conv2dDemo.choice().configurations_at(Size([64, 64, filter])),
                vec![v4, v8]
            );
        }
    }
}
