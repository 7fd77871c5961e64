//! The bench report's plot of the model-shape suite: each product's speed against PyTorch (its
//! time over ours) against the product's size in GFLOP, a colour per dtype, with parity and the
//! issue's 0.85× floor drawn across.

use crate::plots::{CEILING, FONT, PALETTE, err};
use kernels::bench_results::ModelsRun;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use std::path::Path;

const SIZE: (u32, u32) = (1100, 640);
/// The floor the matrix-product issue sets for every shape.
pub const FLOOR: f64 = 0.85;

/// The dtypes in the order the suite runs them, with their colours.
fn dtypes(run: &ModelsRun) -> Vec<(&str, RGBColor)> {
    let mut names: Vec<&str> = Vec::new();
    for product in &run.products {
        if !names.contains(&product.dtype.as_str()) {
            names.push(&product.dtype);
        }
    }
    names
        .into_iter()
        .enumerate()
        .map(|(i, name)| (name, PALETTE[i % PALETTE.len()]))
        .collect()
}

pub fn write_svg(run: &ModelsRun, path: &Path) -> Result<(), String> {
    crate::plots::write_svg(path, SIZE, |root| draw(run, root))
}

pub fn write_png(run: &ModelsRun, path: &Path) -> Result<(), String> {
    crate::plots::write_png(path, SIZE, |root| draw(run, root))
}

fn gflop(m: u64, n: u64, k: u64) -> f64 {
    2.0 * m as f64 * n as f64 * k as f64 * 1e-9
}

fn draw<DB: DrawingBackend>(run: &ModelsRun, root: &DrawingArea<DB, plotters::coord::Shift>) -> Result<(), String> {
    root.fill(&WHITE).map_err(err)?;
    let sizes = run.products.iter().map(|p| gflop(p.m, p.n, p.k));
    let lo = sizes.clone().fold(f64::INFINITY, f64::min).max(1e-6);
    let hi = sizes.fold(0.0, f64::max).max(lo * 10.0);
    let top = run.products.iter().map(|p| p.speed).fold(1.2, f64::max) * 1.08;
    let mut chart = ChartBuilder::on(root)
        .caption(
            format!("Model-shape products: speed against PyTorch ({})", run.device),
            (FONT, 24),
        )
        .margin(20)
        .x_label_area_size(50)
        .y_label_area_size(70)
        .build_cartesian_2d((lo / 1.5..hi * 1.5).log_scale(), 0.0..top)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("the product's size, GFLOP (2·m·n·k), log scale")
        .y_desc("PyTorch's time / ours (above 1: ours is faster)")
        .label_style((FONT, 15))
        .axis_desc_style((FONT, 17))
        .draw()
        .map_err(err)?;
    crate::plots::draw_parity(&mut chart, (lo / 1.5, hi * 1.5))?;
    chart
        .draw_series(std::iter::once(DashedPathElement::new(
            [(lo / 1.5, FLOOR), (hi * 1.5, FLOOR)],
            6,
            4,
            CEILING.stroke_width(1),
        )))
        .map_err(err)?
        .label(format!("{FLOOR}× (the issue's floor)"))
        .legend(|(x, y)| DashedPathElement::new([(x, y), (x + 20, y)], 4, 3, CEILING.stroke_width(1)));
    for (dtype, color) in dtypes(run) {
        let points = run
            .products
            .iter()
            .filter(|p| p.dtype == dtype)
            .map(|p| Circle::new((gflop(p.m, p.n, p.k), p.speed), 4, color.filled()));
        let label = match run.summary.get(dtype) {
            Some(s) => format!("{dtype}: geomean {:.3}×", s.geomean_speed),
            None => dtype.to_string(),
        };
        chart
            .draw_series(points)
            .map_err(err)?
            .label(label)
            .legend(move |(x, y)| Circle::new((x + 10, y), 4, color.filled()));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.9))
        .border_style(CEILING)
        .label_font((FONT, 15))
        .draw()
        .map_err(err)?;
    Ok(())
}
