//! The plots of `cargo xtask bench-report`. Each is drawn twice from the same code: SVG for the
//! docs (sharp at any zoom), PNG for viewers that do not render SVG.

use kernels::bench_results::{BankReading, BenchCase, BenchRun, Bound, Source};
use plotters::chart::MeshStyle;
use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::Path;
use std::sync::OnceLock;

/// Tableau 10, less its gray: colours that stay apart for most colour vision.
pub(crate) const PALETTE: [RGBColor; 9] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];
/// Ceilings (cuBLAS, the copy bandwidth, parity) are near-black so that no kernel is mistaken for one.
pub(crate) const CEILING: RGBColor = RGBColor(30, 30, 30);
/// The libraries of one plot, in the order the run measured them: black, then greys.
const LIBRARIES: [RGBColor; 3] = [CEILING, RGBColor(120, 120, 120), RGBColor(175, 175, 175)];
const WIDTH: u32 = 1100;
const HEIGHT: u32 = 640;
/// Room right of the chart for the legend, so that it never covers a line.
const LEGEND_WIDTH: u32 = 290;
/// Legend rows that fit beside a chart of HEIGHT; more are summarised in one last row.
const MAX_LEGEND_ROWS: usize = 22;
/// Bars the ratio plot draws at most (its height grows with them): about 3.8k pixels.
const MAX_BARS: usize = 120;
pub(crate) const FONT: &str = "sans-serif";

/// A drawing area in pixels, e.g. the whole image.
type Area<DB> = DrawingArea<DB, Shift>;

/// One of the report's plots.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Plot {
    /// One compute-bound family: TFLOP/s against the matrix side, square shapes, the library as the
    /// ceiling.
    Compute(String),
    /// One memory-bound family: GB/s against elements (against the filter side, at the largest
    /// image, for a family with filters), the copy bandwidth as the ceiling.
    Memory(String),
    /// The bank-conflict study: the conflict degree predicted and measured against the stride.
    Banks,
    /// Rust over CUDA C rate for every kernel and size measured both ways.
    Ratios,
    /// One compute-bound family's kernels as a ladder, top to bottom in the run's order: each
    /// kernel's Rust rate as a percentage of the library's on the same shape, a marker per shape.
    Ladder(String),
}

impl Plot {
    /// The plots this run has something to draw for.
    pub fn all(run: &BenchRun) -> Vec<Plot> {
        let candidates = crate::run_view::families(run, Bound::Compute)
            .into_iter()
            .map(Plot::Compute)
            .chain(
                crate::run_view::families(run, Bound::Compute)
                    .into_iter()
                    .map(Plot::Ladder),
            )
            .chain(
                crate::run_view::families(run, Bound::Memory)
                    .into_iter()
                    .map(Plot::Memory),
            )
            .chain([Plot::Banks, Plot::Ratios]);
        candidates.filter(|plot| plot.missing(run).is_none()).collect()
    }

    /// The file name without extension; the README links `<stem>.svg`.
    pub fn stem(&self) -> String {
        match self {
            Plot::Compute(family) | Plot::Memory(family) => file_stem(family),
            Plot::Ladder(family) => format!("{}-ladder", file_stem(family)),
            Plot::Banks => "banks".into(),
            Plot::Ratios => "ratios".into(),
        }
    }

    /// Alt text for the README's image link.
    pub fn alt(&self, run: &BenchRun) -> String {
        match self {
            Plot::Compute(family) => format!(
                "{} TFLOP/s against {}, with the library as the ceiling",
                crate::run_view::text(family),
                if square(run, family).next().is_some() {
                    "matrix side"
                } else {
                    "sequence length"
                }
            ),
            Plot::Memory(family) => format!(
                "{} GB/s against {}, with the copy bandwidth as the ceiling",
                crate::run_view::text(family),
                if memory_cases(run, family).any(|c| filter_side(&c.size).is_some()) {
                    "the filter side"
                } else {
                    "elements"
                }
            ),
            Plot::Banks => "bank conflict degree, predicted and measured, against the stride, per access width".into(),
            Plot::Ratios => "Rust over CUDA C rate per kernel and size".into(),
            Plot::Ladder(family) => format!(
                "{} kernels as a ladder: each one's Rust rate as a percentage of the library's, per shape",
                crate::run_view::text(family)
            ),
        }
    }

    /// Why this run has nothing to draw, or `None` when it has.
    pub fn missing(&self, run: &BenchRun) -> Option<&'static str> {
        match self {
            Plot::Compute(family) => compute_cases(run, family)
                .is_empty()
                .then_some("no cases of this family to plot"),
            Plot::Memory(family) => memory_cases(run, family)
                .next()
                .is_none()
                .then_some("no cases of this family to plot"),
            Plot::Banks => run
                .banks
                .is_empty()
                .then_some("the run did not include the bank-conflict study"),
            Plot::Ratios => ratio_bars(run)
                .is_empty()
                .then_some("no kernel measured both in Rust and in CUDA C"),
            Plot::Ladder(family) => {
                (ladder_rungs(run, family).len() < 2).then_some("fewer than two kernels rated against a library")
            }
        }
    }

    pub fn write_svg(&self, run: &BenchRun, path: &Path) -> Result<(), String> {
        write_svg(path, self.size(run), |root| self.draw(run, root))
    }

    pub fn write_png(&self, run: &BenchRun, path: &Path) -> Result<(), String> {
        write_png(path, self.size(run), |root| self.draw(run, root))
    }

    fn size(&self, run: &BenchRun) -> (u32, u32) {
        match self {
            // One row per bar: the height grows with the bars so the labels stay readable.
            Plot::Ratios => (WIDTH, 170 + 30 * ratio_bars(run).len() as u32),
            Plot::Ladder(family) => (WIDTH, 170 + 30 * ladder_rungs(run, family).len() as u32),
            _ => (WIDTH, HEIGHT),
        }
    }

    fn draw<DB: DrawingBackend>(&self, run: &BenchRun, root: &Area<DB>) -> Result<(), String> {
        root.fill(&WHITE).map_err(err)?;
        match self {
            Plot::Compute(family) => draw_compute(run, family, root),
            Plot::Memory(family) => draw_memory(run, family, root),
            Plot::Banks => draw_banks(run, root),
            Plot::Ratios => draw_ratios(run, root),
            Plot::Ladder(family) => draw_ladder(run, family, root),
        }
    }
}

/// The mesh every plot shares: labels of `size` px (axis descriptions 2 px larger), one light
/// grey line per tick and none between.
fn house_style<'m, 'a, 'b, X: Ranged, Y: Ranged, DB: DrawingBackend>(
    mesh: &'m mut MeshStyle<'a, 'b, X, Y, DB>,
    size: u32,
) -> &'m mut MeshStyle<'a, 'b, X, Y, DB> {
    mesh.label_style((FONT, size))
        .axis_desc_style((FONT, size + 2))
        .max_light_lines(0)
        .bold_line_style(RGBColor(215, 215, 215))
}

/// A family's name as a file name: letters, digits and '-' kept, the rest '_'.
fn file_stem(family: &str) -> String {
    family
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' })
        .collect()
}

/// `draw` on an SVG of `size` pixels written to `path`.
pub(crate) fn write_svg(
    path: &Path,
    size: (u32, u32),
    draw: impl FnOnce(&DrawingArea<SVGBackend, Shift>) -> Result<(), String>,
) -> Result<(), String> {
    embed_font()?;
    let root = SVGBackend::new(path, size).into_drawing_area();
    draw(&root)?;
    root.present()
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// `draw` on a PNG of `size` pixels written to `path`.
pub(crate) fn write_png(
    path: &Path,
    size: (u32, u32),
    draw: impl FnOnce(&DrawingArea<BitMapBackend, Shift>) -> Result<(), String>,
) -> Result<(), String> {
    embed_font()?;
    let root = BitMapBackend::new(path, size).into_drawing_area();
    draw(&root)?;
    root.present()
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// The line of parity (a speed of 1 against the baseline) across `x`, with its legend entry: the
/// speed plots' reference.
pub(crate) fn draw_parity<DB: DrawingBackend, X: Ranged<ValueType = f64>>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<X, plotters::coord::types::RangedCoordf64>>,
    (from, to): (f64, f64),
) -> Result<(), String> {
    chart
        .draw_series(LineSeries::new([(from, 1.0), (to, 1.0)], CEILING.stroke_width(2)))
        .map_err(err)?
        .label("parity")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 20, y)], CEILING.stroke_width(2)));
    Ok(())
}

/// plotters' text needs a font; the embedded DejaVu Sans spares CI system fonts and fontconfig.
pub(crate) fn embed_font() -> Result<(), String> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok = *REGISTERED
        .get_or_init(|| plotters::style::register_font(FONT, FontStyle::Normal, dejavu::sans::regular()).is_ok());
    if ok {
        Ok(())
    } else {
        Err("the embedded DejaVu Sans font did not load".into())
    }
}

pub(crate) fn err(error: impl std::fmt::Display) -> String {
    format!("cannot draw the plot: {error}")
}

fn of_bound(run: &BenchRun, bound: Bound) -> impl Iterator<Item = &BenchCase> {
    run.cases.iter().filter(move |c| c.bound == bound)
}

/// The side of an "m x n x k" shape when m = n = k.
fn square_side(size: &str) -> Option<u64> {
    let sides: Vec<u64> = size.split('x').map(|s| s.trim().parse().ok()).collect::<Option<_>>()?;
    match sides[..] {
        [m, n, k] if m == n && n == k => Some(m),
        _ => None,
    }
}

/// A memory-bound family's cases.
fn memory_cases<'a>(run: &'a BenchRun, family: &'a str) -> impl Iterator<Item = &'a BenchCase> {
    of_bound(run, Bound::Memory).filter(move |c| c.family == family)
}

/// The filter side of a convolution's size, "8192x8192, 5x5" → 5.
fn filter_side(size: &str) -> Option<u64> {
    let (_, filter) = size.split_once(", ")?;
    let (side, other) = filter.split_once('x')?;
    (side == other).then(|| side.parse().ok()).flatten()
}

/// What a size says of its data besides its extent, "n=16777216, 50% one value" → "50% one value";
/// `None` for sizes that are only extents, and for filters.
fn data_kind(size: &str) -> Option<&str> {
    let (_, kind) = size.split_once(", ")?;
    filter_side(size).is_none().then_some(kind)
}

/// The sides of a 2-D size, "8191x4097" → (8191, 4097).
fn matrix_sides(size: &str) -> Option<(u64, u64)> {
    let (rows, cols) = size.split_once('x')?;
    Some((rows.trim().parse().ok()?, cols.trim().parse().ok()?))
}

/// A compute-bound family's square shapes.
fn square<'a>(run: &'a BenchRun, family: &'a str) -> impl Iterator<Item = &'a BenchCase> {
    of_bound(run, Bound::Compute).filter(move |c| c.family == family && square_side(&c.size).is_some())
}

/// What a compute-bound family's plot draws: its square shapes against the side where it has
/// any (matmuls), else every case against its `x` (attention: the sequence length).
fn compute_cases<'a>(run: &'a BenchRun, family: &'a str) -> Vec<&'a BenchCase> {
    let square: Vec<&BenchCase> = square(run, family).collect();
    if !square.is_empty() {
        return square;
    }
    of_bound(run, Bound::Compute).filter(|c| c.family == family).collect()
}

/// "2²⁰" for powers of two, else the number: elements read better as exponents.
pub fn power_of_two(x: f64) -> Option<String> {
    const SUPERSCRIPT: [char; 10] = ['⁰', '¹', '²', '³', '⁴', '⁵', '⁶', '⁷', '⁸', '⁹'];
    if !(x >= 1.0 && x < 2f64.powi(63) && x.fract() == 0.0) || !(x as u64).is_power_of_two() {
        return None;
    }
    let exponent = (x as u64).trailing_zeros().to_string();
    Some(format!(
        "2{}",
        exponent
            .chars()
            .map(|d| SUPERSCRIPT[d.to_digit(10).unwrap_or(0) as usize])
            .collect::<String>()
    ))
}

/// "Rust", "CUDA C", or "library" for a baseline.
pub fn source_label(source: Option<Source>) -> &'static str {
    match source {
        Some(Source::Rust) => "Rust",
        Some(Source::CudaC) => "CUDA C",
        None => "library",
    }
}

/// How one line is drawn, in the chart and in the legend alike.
#[derive(Clone, Copy)]
struct Look {
    color: RGBColor,
    width: u32,
    dashed: bool,
    /// Filled circles for Rust, hollow for CUDA C, none for a ceiling.
    marker: Option<bool>,
}

impl Look {
    /// Colour by kernel, line and marker by source, so Rust and CUDA C of one kernel pair up.
    fn of(color: RGBColor, source: Option<Source>) -> Look {
        match source {
            None => Look {
                color,
                width: 3,
                dashed: false,
                marker: Some(true),
            },
            Some(source) => Look {
                color,
                width: 2,
                dashed: source == Source::CudaC,
                marker: Some(source == Source::Rust),
            },
        }
    }

    /// Hollow circles are larger than filled ones, so that where Rust and CUDA C coincide both show.
    fn marker(&self) -> Option<(u32, ShapeStyle)> {
        self.marker.map(|filled| {
            if filled {
                (4, self.color.filled())
            } else {
                (6, self.color.stroke_width(2))
            }
        })
    }

    fn ceiling() -> Look {
        Look {
            color: CEILING,
            width: 2,
            dashed: true,
            marker: None,
        }
    }
}

/// A kernel from one source: its points, sorted by x, without non-finite or non-positive values
/// (the x axes are logarithmic).
struct Line {
    label: String,
    source: Option<Source>,
    look: Look,
    points: Vec<(f64, f64)>,
}

/// One line per (kernel, source) in the order the run measured them, the library (the ceiling) first.
fn lines<'a>(run: &BenchRun, cases: impl Iterator<Item = &'a BenchCase>) -> Vec<Line> {
    let mut keys: Vec<(&str, Option<Source>)> = Vec::new();
    let mut points: Vec<Vec<(f64, f64)>> = Vec::new();
    for case in cases {
        if !(case.x.is_finite() && case.x > 0.0 && case.rate.is_finite()) {
            continue;
        }
        let key = (case.kernel.as_str(), case.source);
        let index = keys.iter().position(|k| *k == key).unwrap_or_else(|| {
            keys.push(key);
            points.push(Vec::new());
            keys.len() - 1
        });
        points[index].push((case.x, case.rate));
    }
    let mut libraries = 0;
    let mut out: Vec<Line> = keys
        .iter()
        .zip(points)
        .map(|(&(kernel, source), mut points)| {
            let color = match source {
                None => {
                    libraries += 1;
                    LIBRARIES[(libraries - 1) % LIBRARIES.len()]
                }
                Some(_) => kernel_color(run, kernel),
            };
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            let label = match source {
                None => format!("{} (library)", library_name(kernel)),
                Some(_) => format!("{kernel} ({})", source_label(source)),
            };
            Line {
                label,
                source,
                look: Look::of(color, source),
                points,
            }
        })
        .collect();
    out.sort_by_key(|line| line.source.is_some());
    out
}

/// One colour per kernel across all plots, in the order the run first measured each.
fn kernel_color(run: &BenchRun, kernel: &str) -> RGBColor {
    let mut seen: Vec<&str> = Vec::new();
    for case in run.cases.iter().filter(|c| c.source.is_some()) {
        if case.kernel == kernel {
            break;
        }
        if !seen.contains(&case.kernel.as_str()) {
            seen.push(&case.kernel);
        }
    }
    PALETTE[seen.len() % PALETTE.len()]
}

/// The name readers know a library call by.
fn library_name(kernel: &str) -> &str {
    match kernel {
        "cublas_sgemm" => "cuBLAS SGEMM",
        "cublas_tf32" => "cuBLAS TF32 (GemmEx)",
        "cublas_bf16" => "cuBLAS BF16 (GemmEx)",
        "torch_transpose" => "PyTorch t().contiguous()",
        "torch_conv2d" => "PyTorch conv2d (cuDNN)",
        "cub_reduce_sum" => "CUB DeviceReduce::Sum",
        "torch_sum" => "PyTorch sum",
        "cub_reduce_max" => "CUB DeviceReduce::Max",
        "torch_max" => "PyTorch max",
        "cub_histogram_u8" => "CUB DeviceHistogram",
        "torch_bincount" => "PyTorch bincount",
        "cub_inclusive_sum" => "CUB DeviceScan::InclusiveSum",
        "torch_cumsum" => "PyTorch cumsum",
        "torch_softmax" => "PyTorch softmax",
        "torch_sum_rows" => "PyTorch sum(dim=1)",
        "torch_amax_rows" => "PyTorch amax(dim=1)",
        other => other,
    }
}

/// Distinct x values, ascending: the tick marks of the line plots.
fn distinct_x(lines: &[Line]) -> Vec<f64> {
    let mut xs: Vec<f64> = lines.iter().flat_map(|l| l.points.iter().map(|p| p.0)).collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    xs
}

/// The y axis' top: a tenth above the highest point or the ceiling, whichever is higher.
fn max_y(lines: &[Line], floor: f64) -> f64 {
    let top = lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.1))
        .fold(floor, f64::max);
    if top.is_finite() && top > 0.0 { top * 1.1 } else { 1.0 }
}

/// The title across the top, then the chart area and, right of it, the legend's column.
fn layout<DB: DrawingBackend>(root: &Area<DB>, title: &str) -> Result<(Area<DB>, Area<DB>), String> {
    let body = root.titled(title, (FONT, 24)).map_err(err)?;
    let width = body.dim_in_pixel().0;
    Ok(body.split_horizontally(width.saturating_sub(LEGEND_WIDTH)))
}

fn draw_line<DB, X, Y>(chart: &mut ChartContext<DB, Cartesian2d<X, Y>>, line: &Line) -> Result<(), String>
where
    DB: DrawingBackend,
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    let style = line.look.color.stroke_width(line.look.width);
    let points = line.points.iter().copied();
    if line.look.width == 0 {
        // Markers only.
    } else if line.look.dashed {
        chart
            .draw_series(DashedLineSeries::new(points, 10, 6, style))
            .map_err(err)?;
    } else {
        chart.draw_series(LineSeries::new(points, style)).map_err(err)?;
    }
    if let Some((radius, style)) = line.look.marker() {
        chart
            .draw_series(line.points.iter().map(|&p| Circle::new(p, radius, style)))
            .map_err(err)?;
    }
    Ok(())
}

/// Legend entries drawn by hand in their own column: plotters' built-in legend sits inside the chart.
fn draw_legend<DB: DrawingBackend>(area: &Area<DB>, entries: &[(String, Look)]) -> Result<(), String> {
    let text = TextStyle::from((FONT, 15).into_font()).pos(Pos::new(HPos::Left, VPos::Center));
    // Rows past what fits become one "… and N more" row.
    let shown = if entries.len() > MAX_LEGEND_ROWS {
        MAX_LEGEND_ROWS - 1
    } else {
        entries.len()
    };
    if shown < entries.len() {
        let more = format!("… and {} more lines", entries.len() - shown);
        area.draw(&Text::new(more, (8, 40 + 26 * shown as i32), text.clone()))
            .map_err(err)?;
    }
    for (i, (label, look)) in entries.iter().take(shown).enumerate() {
        let y = 40 + 26 * i as i32;
        let style = look.color.stroke_width(look.width);
        let ends = [(8, y), (48, y)];
        if look.width == 0 {
            // Markers only.
        } else if look.dashed {
            area.draw(&DashedPathElement::new(ends, 8, 5, style)).map_err(err)?;
        } else {
            area.draw(&PathElement::new(ends.to_vec(), style)).map_err(err)?;
        }
        if let Some((radius, style)) = look.marker() {
            area.draw(&Circle::new((28, y), radius, style)).map_err(err)?;
        }
        area.draw(&Text::new(label.clone(), (58, y), text.clone()))
            .map_err(err)?;
    }
    Ok(())
}

/// What a line chart shows besides its lines.
struct Axes<'a> {
    x_desc: &'a str,
    y_desc: &'a str,
    x_label: &'a dyn Fn(&f64) -> String,
    /// A horizontal ceiling drawn under the lines, e.g. the copy bandwidth.
    ceiling: Option<f64>,
}

/// A line chart over a logarithmic x axis with a tick at every measured x, y from 0.
fn line_chart<DB: DrawingBackend>(area: &Area<DB>, lines: &[Line], axes: &Axes) -> Result<(), String> {
    let xs = distinct_x(lines);
    let (lo, hi) = (xs.first().copied().unwrap_or(1.0), xs.last().copied().unwrap_or(2.0));
    let y_top = max_y(lines, axes.ceiling.unwrap_or(0.0));
    // Some room either side so that the end markers are not cut by the axes.
    let x_range = (lo / 1.25..hi * 1.25).log_scale().with_key_points(xs);
    let mut chart = ChartBuilder::on(area)
        .margin(16)
        .x_label_area_size(56)
        .y_label_area_size(72)
        .build_cartesian_2d(x_range, 0.0..y_top)
        .map_err(err)?;
    let mut mesh = chart.configure_mesh();
    mesh.x_desc(axes.x_desc)
        .y_desc(axes.y_desc)
        .x_label_formatter(axes.x_label)
        .y_label_formatter(&|y| format!("{y}"));
    house_style(&mut mesh, 15).draw().map_err(err)?;
    if let Some(ceiling) = axes.ceiling {
        let look = Look::ceiling();
        let ends = [(lo / 1.25, ceiling), (hi * 1.25, ceiling)];
        chart
            .draw_series(DashedLineSeries::new(ends, 10, 6, look.color.stroke_width(look.width)))
            .map_err(err)?;
    }
    for line in lines {
        draw_line(&mut chart, line)?;
    }
    Ok(())
}

fn draw_compute<DB: DrawingBackend>(run: &BenchRun, family: &str, root: &Area<DB>) -> Result<(), String> {
    let matrices = square(run, family).next().is_some();
    let lines = lines(run, compute_cases(run, family).into_iter());
    let (title, x_desc) = if matrices {
        (
            format!("{family}: throughput, square matrices"),
            "matrix side n (C = A·B, all n × n)",
        )
    } else {
        (
            format!("{family}: throughput"),
            "sequence length (sizes: heads × seq × dim)",
        )
    };
    let (chart, legend) = layout(root, &title)?;
    let axes = Axes {
        x_desc,
        y_desc: "TFLOP/s",
        x_label: &|x| format!("{}", x.round()),
        ceiling: None,
    };
    line_chart(&chart, &lines, &axes)?;
    let entries: Vec<(String, Look)> = lines.iter().map(|l| (l.label.clone(), l.look)).collect();
    draw_legend(&legend, &entries)
}

/// GB/s against elements; for a family with filters, against the filter side at the largest
/// image (the smaller images are in the table).
fn draw_memory<DB: DrawingBackend>(run: &BenchRun, family: &str, root: &Area<DB>) -> Result<(), String> {
    let by_filter = memory_cases(run, family).any(|c| filter_side(&c.size).is_some());
    let (lines, title, x_desc) = if by_filter {
        let largest = memory_cases(run, family).map(|c| c.x).fold(0.0, f64::max);
        let at_largest: Vec<BenchCase> = memory_cases(run, family)
            .filter(|c| c.x == largest)
            .filter_map(|c| {
                let side = filter_side(&c.size)?;
                Some(BenchCase {
                    x: side as f64,
                    ..c.clone()
                })
            })
            .collect();
        let image = at_largest
            .first()
            .map_or("", |c| c.size.split(", ").next().unwrap_or(""));
        (
            lines(run, at_largest.iter()),
            format!("{family}: throughput on a {image} image"),
            "filter side (odd square filter)",
        )
    } else if memory_cases(run, family).any(|c| matrix_sides(&c.size).is_some_and(|(r, c)| r != c)) {
        // One line through square and awkward shapes would zigzag between unlike problems.
        let square = memory_cases(run, family).filter(|c| matrix_sides(&c.size).is_some_and(|(r, c)| r == c));
        (
            lines(run, square),
            format!("{family}: throughput, square matrices (other shapes in the table)"),
            "elements (f32)",
        )
    } else if let Some(data) = memory_cases(run, family).filter_map(|c| data_kind(&c.size)).last() {
        // Sizes that differ in their data (a histogram's skew): one line per kernel through one
        // kind, the last the run measured; the others are in the table.
        let of_kind = memory_cases(run, family).filter(move |c| data_kind(&c.size) == Some(data));
        (
            lines(run, of_kind),
            format!("{family}: throughput, {data} (other data in the table)"),
            "elements",
        )
    } else if memory_cases(run, family).any(|c| c.size.contains(" rows of ")) {
        // Row operations (softmax): x is the row's length, the matrix the same size throughout.
        (
            lines(run, memory_cases(run, family)),
            format!("{family}: throughput against the row length"),
            "row length (f32 elements)",
        )
    } else {
        (
            lines(run, memory_cases(run, family)),
            format!("{family}: throughput"),
            "elements (f32)",
        )
    };
    let (chart, legend) = layout(root, &title)?;
    let ceiling = (run.copy_gbs.is_finite() && run.copy_gbs > 0.0).then_some(run.copy_gbs);
    let axes = Axes {
        x_desc,
        y_desc: "GB/s (inputs read once, outputs written once)",
        x_label: &|x| {
            power_of_two(*x)
                .filter(|_| !by_filter)
                .unwrap_or_else(|| format!("{x:.0}"))
        },
        ceiling,
    };
    line_chart(&chart, &lines, &axes)?;
    let mut entries: Vec<(String, Look)> = Vec::new();
    if let Some(copy) = ceiling {
        entries.push((format!("copy ceiling ({copy:.0} GB/s)"), Look::ceiling()));
    }
    entries.extend(lines.iter().map(|l| (l.label.clone(), l.look)));
    draw_legend(&legend, &entries)
}

/// The bank study: one panel per access width, the predicted degree as a dashed line and the
/// measured one as dots, against the stride (linear: the pattern repeats with the powers of two in
/// it). Panels, not one chart: the widths agree at most strides and would hide one another.
fn draw_banks<DB: DrawingBackend>(run: &BenchRun, root: &Area<DB>) -> Result<(), String> {
    let mut widths: Vec<u32> = run.banks.iter().map(|b| b.width).collect();
    widths.sort_unstable();
    widths.dedup();
    let (area, legend) = layout(root, "Shared-memory bank conflicts: the bank rule against the hardware")?;
    let strides = run.banks.iter().map(|b| f64::from(b.stride)).fold(1.0, f64::max);
    let panels = area.split_evenly((widths.len().max(1), 1));
    let mut entries: Vec<(String, Look)> = Vec::new();
    for (i, (width, panel)) in widths.iter().zip(&panels).enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let mut readings: Vec<_> = run.banks.iter().filter(|b| b.width == *width).collect();
        readings.sort_by_key(|b| b.stride);
        let series = |value: fn(&BankReading) -> f64| {
            readings
                .iter()
                .map(|b| (f64::from(b.stride), value(b)))
                .filter(|p| p.1.is_finite())
                .collect::<Vec<_>>()
        };
        let predicted = Line {
            label: format!("{width}-byte reads: predicted"),
            source: None,
            look: Look {
                color,
                width: 2,
                dashed: true,
                marker: None,
            },
            points: series(|b| b.predicted),
        };
        let measured = Line {
            label: format!("{width}-byte reads: measured"),
            source: None,
            look: Look {
                color,
                width: 0,
                dashed: false,
                marker: Some(true),
            },
            points: series(|b| b.measured),
        };
        let lines = [predicted, measured];
        let last = i + 1 == widths.len();
        let mut chart = ChartBuilder::on(panel)
            .margin(10)
            .caption(format!("{width}-byte reads"), (FONT, 17))
            .x_label_area_size(if last { 48 } else { 20 })
            .y_label_area_size(72)
            .build_cartesian_2d(0.0..strides + 1.0, 0.0..max_y(&lines, 1.0))
            .map_err(err)?;
        let mut mesh = chart.configure_mesh();
        mesh.x_desc(if last {
            "stride between neighbouring lanes (elements)"
        } else {
            ""
        })
        .y_desc("degree")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| format!("{y}"));
        house_style(&mut mesh, 14).draw().map_err(err)?;
        for line in &lines {
            draw_line(&mut chart, line)?;
        }
        entries.extend(lines.iter().map(|l| (l.label.clone(), l.look)));
    }
    draw_legend(&legend, &entries)
}

/// One bar of the ratio plot.
struct Bar {
    label: String,
    kernel: String,
    ratio: f64,
}

/// Every kernel and size measured both ways, in the README table's order.
fn ratio_bars(run: &BenchRun) -> Vec<Bar> {
    crate::run_view::ratios(run)
        .into_iter()
        .filter(|(_, ratio)| ratio.is_finite())
        .take(MAX_BARS)
        .map(|(case, ratio)| Bar {
            label: format!("{} {}", case.kernel, short_size(case)),
            kernel: case.kernel.clone(),
            ratio,
        })
        .collect()
}

/// "4096³" for square matmuls, "n=2²⁰" for powers of two, else the size as the run wrote it.
fn short_size(case: &BenchCase) -> String {
    if let Some(side) = square_side(&case.size) {
        return format!("{side}³");
    }
    if case.size.starts_with("n=")
        && let Some(power) = power_of_two(case.x)
    {
        return format!("n={power}");
    }
    case.size.clone()
}

/// A chart of labelled rows across an x range, the first row at the top: the plots that give
/// each kernel a row (the ratios, the ladder).
struct Rows<'a> {
    labels: &'a [&'a str],
    x_range: std::ops::Range<f64>,
    x_desc: &'a str,
    margin_right: u32,
}

impl Rows<'_> {
    /// The chart on `body` (an area of `root`) with its mesh, and the row labels left of it at
    /// [`row_y`].
    fn chart<'b, DB: DrawingBackend>(&self, root: &Area<DB>, body: &'b Area<DB>) -> Result<RowChart<'b, DB>, String> {
        let label_style = TextStyle::from((FONT, 15).into_font());
        let mut label_width = 0;
        for label in self.labels {
            label_width = label_width.max(body.estimate_text_size(label, &label_style).map_err(err)?.0);
        }
        let n = self.labels.len();
        let mut chart = ChartBuilder::on(body)
            .margin(16)
            .margin_right(self.margin_right)
            .x_label_area_size(56)
            .y_label_area_size(label_width + 24)
            .build_cartesian_2d(self.x_range.clone(), -0.6..n as f64 - 0.4)
            .map_err(err)?;
        let mut mesh = chart.configure_mesh();
        mesh.disable_y_mesh()
            // The row labels are drawn below, one per row: plotters would pick its own y ticks.
            .y_labels(0)
            .x_desc(self.x_desc);
        house_style(&mut mesh, 15).draw().map_err(err)?;
        let left = self.x_range.start;
        let anchor = label_style.pos(Pos::new(HPos::Right, VPos::Center));
        for (i, label) in self.labels.iter().enumerate() {
            // backend_coord is in the whole image's pixels: drawn on the root, not the chart's area.
            let (x, y) = chart.backend_coord(&(left, row_y(n, i)));
            root.draw(&Text::new(label.to_string(), (x - 8, y), anchor.clone()))
                .map_err(err)?;
        }
        Ok(chart)
    }
}

/// A [`Rows`] chart: rows along y, values along x.
type RowChart<'b, DB> =
    ChartContext<'b, DB, Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>>;

/// Where row `i` of `rows` sits on the y axis: row 0 at the top, so that the first kernel reads first.
fn row_y(rows: usize, i: usize) -> f64 {
    (rows - 1 - i) as f64
}

/// Bars start at parity (1.0) and go right where Rust is faster, left where it is slower: the
/// differences are a few percent, invisible on bars drawn from zero.
fn draw_ratios<DB: DrawingBackend>(run: &BenchRun, root: &Area<DB>) -> Result<(), String> {
    let bars = ratio_bars(run);
    let body = root
        .titled("Rust / CUDA C rate, per kernel and size", (FONT, 24))
        .map_err(err)?;
    let lo = bars.iter().map(|b| b.ratio).fold(1.0, f64::min);
    let hi = bars.iter().map(|b| b.ratio).fold(1.0, f64::max);
    // Room past the longest bars for their value labels.
    let pad = (hi - lo).max(0.02) * 0.18;
    let labels: Vec<&str> = bars.iter().map(|b| b.label.as_str()).collect();
    let rows = Rows {
        labels: &labels,
        x_range: (lo - pad).max(0.0)..hi + pad,
        x_desc: "Rust rate / CUDA C rate (1.0: parity; right of it, Rust is faster)",
        margin_right: 40,
    };
    let mut chart = rows.chart(root, &body)?;
    let n = bars.len();
    let row = |i: usize| row_y(n, i);
    let y_range = -0.6..n as f64 - 0.4;
    let label_style = TextStyle::from((FONT, 15).into_font());
    for (i, bar) in bars.iter().enumerate() {
        let color = kernel_color(run, &bar.kernel);
        let y = row(i);
        chart
            .draw_series(std::iter::once(Rectangle::new(
                [(1.0, y - 0.32), (bar.ratio, y + 0.32)],
                color.filled(),
            )))
            .map_err(err)?;
        let (anchor, offset) = if bar.ratio >= 1.0 {
            (HPos::Left, 6)
        } else {
            (HPos::Right, -6)
        };
        let value = Text::new(
            format!("{:.3}", bar.ratio),
            (offset, 0),
            label_style.pos(Pos::new(anchor, VPos::Center)),
        );
        chart
            .draw_series(std::iter::once(EmptyElement::at((bar.ratio, y)) + value))
            .map_err(err)?;
    }
    chart
        .draw_series(LineSeries::new(
            [(1.0, y_range.start), (1.0, y_range.end)],
            CEILING.stroke_width(2),
        ))
        .map_err(err)?;
    Ok(())
}

/// One kernel of the ladder plot: its name and, per shape (an index into [`ladder_shapes`]), its
/// Rust rate as a percentage of the library's.
struct Rung {
    kernel: String,
    points: Vec<(usize, f64)>,
}

/// The shapes a family's Rust kernels were rated on against its library, in the run's order.
fn ladder_shapes(run: &BenchRun, family: &str) -> Vec<String> {
    let mut shapes: Vec<String> = Vec::new();
    for (case, _) in rated_rust(run, family) {
        if !shapes.contains(&case.size) {
            shapes.push(case.size.clone());
        }
    }
    shapes
}

/// A family's Rust cases with their percentage of the library on the same shape.
fn rated_rust<'a>(run: &'a BenchRun, family: &'a str) -> impl Iterator<Item = (&'a BenchCase, f64)> {
    let libraries = crate::run_view::library_rates(run);
    of_bound(run, Bound::Compute)
        .filter(move |c| c.family == family && c.source == Some(Source::Rust))
        .filter_map(move |c| {
            let percent = c
                .percent_of_ceiling
                .or_else(|| crate::run_view::of_library(&libraries, c))?;
            percent.is_finite().then_some((c, percent))
        })
}

/// The family's kernels in the run's order, each with its points.
fn ladder_rungs(run: &BenchRun, family: &str) -> Vec<Rung> {
    let shapes = ladder_shapes(run, family);
    let mut rungs: Vec<Rung> = Vec::new();
    for (case, percent) in rated_rust(run, family) {
        let shape = shapes.iter().position(|s| *s == case.size).unwrap_or(0);
        match rungs.iter_mut().find(|r| r.kernel == case.kernel) {
            Some(rung) => rung.points.push((shape, percent)),
            None => rungs.push(Rung {
                kernel: case.kernel.clone(),
                points: vec![(shape, percent)],
            }),
        }
    }
    rungs
}

/// The library a family's percentages are of: the one rated 100 % of itself.
fn ceiling_library(run: &BenchRun, family: &str) -> String {
    of_bound(run, Bound::Compute)
        .find(|c| {
            c.family == family && c.source.is_none() && c.percent_of_ceiling.is_some_and(|p| (p - 100.0).abs() < 1e-6)
        })
        .map_or_else(|| "the library".to_string(), |c| library_name(&c.kernel).to_string())
}

/// The shape markers' looks: a colour each, filled, then hollow once the palette is used up.
fn shape_look(index: usize) -> Look {
    let source = if index < PALETTE.len() {
        Source::Rust
    } else {
        Source::CudaC
    };
    Look {
        width: 0,
        ..Look::of(PALETTE[index % PALETTE.len()], Some(source))
    }
}

/// Kernels top to bottom, the percentage of the library across: where each rung of a ladder
/// lands on every shape, and how far the best is from the library (the dashed line at 100).
fn draw_ladder<DB: DrawingBackend>(run: &BenchRun, family: &str, root: &Area<DB>) -> Result<(), String> {
    let shapes = ladder_shapes(run, family);
    let rungs = ladder_rungs(run, family);
    let library = ceiling_library(run, family);
    let (body, legend) = layout(root, &format!("{family}: each kernel against {library}, per shape"))?;
    let top = rungs
        .iter()
        .flat_map(|r| r.points.iter().map(|p| p.1))
        .fold(100.0, f64::max)
        * 1.05;
    let labels: Vec<&str> = rungs.iter().map(|r| r.kernel.as_str()).collect();
    let x_desc = format!("% of {library}'s TFLOP/s on the same shape, same run (Rust)");
    let rows = Rows {
        labels: &labels,
        x_range: 0.0..top,
        x_desc: &x_desc,
        margin_right: 16,
    };
    let mut chart = rows.chart(root, &body)?;
    let n = rungs.len();
    let row = |i: usize| row_y(n, i);
    let y_range = -0.6..n as f64 - 0.4;
    for (i, rung) in rungs.iter().enumerate() {
        // A faint rail from the rung's slowest shape to its fastest, so that its spread reads.
        let (lo, hi) = rung
            .points
            .iter()
            .fold((f64::INFINITY, 0.0_f64), |(lo, hi), p| (lo.min(p.1), hi.max(p.1)));
        chart
            .draw_series(LineSeries::new(
                [(lo, row(i)), (hi, row(i))],
                RGBColor(200, 200, 200).stroke_width(2),
            ))
            .map_err(err)?;
    }
    let look = Look::ceiling();
    chart
        .draw_series(DashedLineSeries::new(
            [(100.0, y_range.start), (100.0, y_range.end)],
            10,
            6,
            look.color.stroke_width(look.width),
        ))
        .map_err(err)?;
    for (s, _) in shapes.iter().enumerate() {
        let Some((radius, style)) = shape_look(s).marker() else {
            continue;
        };
        let points = rungs
            .iter()
            .enumerate()
            .flat_map(|(i, rung)| rung.points.iter().filter(move |p| p.0 == s).map(move |p| (p.1, row(i))));
        chart
            .draw_series(points.map(|p| Circle::new(p, radius, style)))
            .map_err(err)?;
    }
    let mut entries: Vec<(String, Look)> = vec![(format!("{library} (100 %)"), Look::ceiling())];
    entries.extend(
        shapes
            .iter()
            .enumerate()
            .map(|(s, shape)| (shape.clone(), shape_look(s))),
    );
    draw_legend(&legend, &entries)
}
