//! A timeline of GPU work, one lane per stream: each move to the GPU, kernel and move back to the
//! host is a bar from the CUDA event recorded before it on its stream to the one after it, in ms
//! since an event at the start. From the same bars, the share of kernel time that ran while a
//! transfer was in flight (how much of the compute the transfers hide), and how busy each lane was.
//! Drawn with plotters as SVG (PNG when the file name ends in `.png`), text in the embedded DejaVu
//! Sans, so no system fonts are needed.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use ptxkit_runtime::{Error, Result};
use std::path::Path;
use std::sync::OnceLock;

/// Which stream's work a bar is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lane {
    /// Moves to the GPU (prefetches or copies).
    ToGpu,
    /// Kernels.
    Kernel,
    /// Moves back to the host.
    ToHost,
}

impl Lane {
    /// Top to bottom, as drawn.
    pub const ALL: [Lane; 3] = [Lane::ToGpu, Lane::Kernel, Lane::ToHost];

    /// The row from the top.
    fn row(self) -> usize {
        match self {
            Lane::ToGpu => 0,
            Lane::Kernel => 1,
            Lane::ToHost => 2,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Lane::ToGpu => "to the GPU",
            Lane::Kernel => "kernels",
            Lane::ToHost => "to the host",
        }
    }

    /// Tableau colours; every other chunk lighter, so that neighbouring bars stay apart.
    fn color(self, chunk: usize) -> RGBColor {
        let RGBColor(r, g, b) = match self {
            Lane::ToGpu => RGBColor(31, 119, 180),
            Lane::Kernel => RGBColor(255, 127, 14),
            Lane::ToHost => RGBColor(44, 160, 44),
        };
        if chunk.is_multiple_of(2) {
            RGBColor(r, g, b)
        } else {
            let lighter = |c: u8| c + (255 - c) / 2;
            RGBColor(lighter(r), lighter(g), lighter(b))
        }
    }
}

/// One piece of work: its lane, the chunk it worked on, and when it ran, in ms since the start.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Span {
    pub lane: Lane,
    pub chunk: usize,
    pub start_ms: f64,
    pub end_ms: f64,
}

impl Span {
    /// From the times of the events around the work: clamped to start no earlier than 0 and to end
    /// no earlier than it starts (event times have half-microsecond resolution).
    pub fn new(lane: Lane, chunk: usize, start_ms: f64, end_ms: f64) -> Span {
        let start_ms = start_ms.max(0.0);
        Span {
            lane,
            chunk,
            start_ms,
            end_ms: end_ms.max(start_ms),
        }
    }

    pub fn ms(&self) -> f64 {
        self.end_ms - self.start_ms
    }
}

/// A run's spans, end to end time, and how to title and label it.
#[derive(Clone, Debug)]
pub struct Timeline {
    pub title: String,
    /// The lanes' names, top to bottom (`Lane::ALL`'s order).
    pub lanes: [String; 3],
    pub spans: Vec<Span>,
    pub total_ms: f64,
}

/// The union of `intervals`, as disjoint intervals in increasing order.
pub fn merged(mut intervals: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
    intervals.retain(|(start, end)| end > start);
    intervals.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut union: Vec<(f64, f64)> = Vec::with_capacity(intervals.len());
    for (start, end) in intervals {
        match union.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => union.push((start, end)),
        }
    }
    union
}

/// How much of `interval` lies inside `union` (disjoint intervals).
fn covered(interval: (f64, f64), union: &[(f64, f64)]) -> f64 {
    union
        .iter()
        .map(|&(start, end)| (end.min(interval.1) - start.max(interval.0)).max(0.0))
        .sum()
}

/// The share of kernel time that ran while any transfer (either direction) was in flight: kernel
/// time overlapping the union of the transfers over all kernel time. `None` without kernel time.
pub fn hidden_fraction(spans: &[Span]) -> Option<f64> {
    let transfers = merged(
        spans
            .iter()
            .filter(|s| s.lane != Lane::Kernel)
            .map(|s| (s.start_ms, s.end_ms))
            .collect(),
    );
    let kernels = spans.iter().filter(|s| s.lane == Lane::Kernel);
    let total: f64 = kernels.clone().map(Span::ms).sum();
    if total <= 0.0 {
        return None;
    }
    let hidden: f64 = kernels.map(|s| covered((s.start_ms, s.end_ms), &transfers)).sum();
    Some(hidden / total)
}

/// The time `lane` had work in flight (overlapping spans counted once).
pub fn busy_ms(spans: &[Span], lane: Lane) -> f64 {
    merged(
        spans
            .iter()
            .filter(|s| s.lane == lane)
            .map(|s| (s.start_ms, s.end_ms))
            .collect(),
    )
    .iter()
    // A fold from +0: an empty sum of floats is -0, which prints as "-0".
    .fold(0.0, |sum, (start, end)| sum + (end - start))
}

/// The sum of `lane`'s spans.
pub fn lane_ms(spans: &[Span], lane: Lane) -> f64 {
    spans.iter().filter(|s| s.lane == lane).fold(0.0, |sum, s| sum + s.ms())
}

/// One line for a report: the kernel time hidden under transfers and each lane's share of the
/// end-to-end time.
pub fn summary(spans: &[Span], total_ms: f64) -> String {
    let hidden = match hidden_fraction(spans) {
        Some(fraction) => format!(
            "kernels under transfers: {:.1} % of {:.2} ms of kernel time",
            100.0 * fraction,
            lane_ms(spans, Lane::Kernel)
        ),
        None => "no kernel time".into(),
    };
    let busy: Vec<String> = Lane::ALL
        .iter()
        .map(|&lane| {
            format!(
                "{} {:.0} %",
                lane.name(),
                100.0 * busy_ms(spans, lane) / total_ms.max(1e-9)
            )
        })
        .collect();
    format!("{hidden}; busy: {} of {total_ms:.1} ms", busy.join(", "))
}

/// A lane's bars lie between these heights; lane 0 (the top) is at [2, 3].
const BAR_MARGIN: f64 = 0.15;

/// The bar of `span`: x from its start to its end in ms, widened to at least `min_width_ms` (a
/// kernel of a few microseconds stays visible on an axis of hundreds of ms); y inside its lane's
/// row, the first lane at the top of the range 0..3.
pub fn bar(span: &Span, min_width_ms: f64) -> [(f64, f64); 2] {
    let bottom = (Lane::ALL.len() - 1 - span.lane.row()) as f64;
    let end = span.end_ms.max(span.start_ms + min_width_ms);
    [(span.start_ms, bottom + BAR_MARGIN), (end, bottom + 1.0 - BAR_MARGIN)]
}

const WIDTH: u32 = 1400;
const PANEL_HEIGHT: u32 = 300;
/// Room left of each chart for the lane names.
const LABEL_WIDTH: u32 = 250;
const FONT: &str = "sans-serif";

/// Draws `timelines` one above the other on a common time axis into `path`: PNG when its name ends
/// in `.png`, SVG otherwise.
pub fn write(path: &Path, timelines: &[Timeline]) -> Result<()> {
    let failed = |reason: String| Error::Output {
        path: path.to_path_buf(),
        source: std::io::Error::other(reason),
    };
    embed_font().map_err(failed)?;
    let size = (WIDTH, PANEL_HEIGHT * timelines.len().max(1) as u32);
    let png = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("png"));
    if png {
        let root = BitMapBackend::new(path, size).into_drawing_area();
        draw(&root, timelines).map_err(failed)?;
        root.present().map_err(|e| failed(e.to_string()))
    } else {
        let root = SVGBackend::new(path, size).into_drawing_area();
        draw(&root, timelines).map_err(failed)?;
        root.present().map_err(|e| failed(e.to_string()))
    }
}

/// The embedded font, registered once under [`FONT`].
fn embed_font() -> std::result::Result<(), String> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok = *REGISTERED
        .get_or_init(|| plotters::style::register_font(FONT, FontStyle::Normal, dejavu::sans::regular()).is_ok());
    if ok {
        Ok(())
    } else {
        Err("the embedded DejaVu Sans font did not load".into())
    }
}

fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, timelines: &[Timeline]) -> std::result::Result<(), String> {
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| format!("cannot draw the timeline: {e}");
    root.fill(&WHITE).map_err(err)?;
    let max_ms = timelines.iter().map(|t| t.total_ms).fold(0.0, f64::max).max(1e-3);
    let label_style = TextStyle::from((FONT, 15).into_font()).pos(Pos::new(HPos::Right, VPos::Center));
    for (panel, timeline) in root.split_evenly((timelines.len().max(1), 1)).iter().zip(timelines) {
        let mut chart = ChartBuilder::on(panel)
            .caption(&timeline.title, (FONT, 17))
            .margin(12)
            .margin_right(30)
            .x_label_area_size(48)
            .y_label_area_size(LABEL_WIDTH)
            .build_cartesian_2d(0.0..max_ms * 1.01, 0.0..Lane::ALL.len() as f64)
            .map_err(err)?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            // The lane names are drawn below, one per lane.
            .y_labels(0)
            .x_desc("ms since the start (CUDA events)")
            .label_style((FONT, 14))
            .axis_desc_style((FONT, 15))
            .max_light_lines(0)
            .bold_line_style(RGBColor(225, 225, 225))
            .draw()
            .map_err(err)?;
        for (lane, name) in Lane::ALL.iter().zip(&timeline.lanes) {
            let center = (Lane::ALL.len() - 1 - lane.row()) as f64 + 0.5;
            let (x, y) = chart.backend_coord(&(0.0, center));
            root.draw(&Text::new(name.clone(), (x - 8, y), label_style.clone()))
                .map_err(err)?;
        }
        // Two pixels at least: short kernels stay visible.
        let min_width_ms = 2.0 * max_ms / chart.plotting_area().dim_in_pixel().0.max(1) as f64;
        chart
            .draw_series(
                timeline
                    .spans
                    .iter()
                    .map(|span| Rectangle::new(bar(span, min_width_ms), span.lane.color(span.chunk).filled())),
            )
            .map_err(err)?;
        // The end to end time: where the last event on the GPU's stream was recorded.
        chart
            .draw_series(LineSeries::new(
                [(timeline.total_ms, 0.0), (timeline.total_ms, Lane::ALL.len() as f64)],
                BLACK.stroke_width(2),
            ))
            .map_err(err)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(lane: Lane, start_ms: f64, end_ms: f64) -> Span {
        Span::new(lane, 0, start_ms, end_ms)
    }

    #[test]
    fn spans_from_event_times_never_run_backwards_or_before_the_start() {
        assert_eq!(span(Lane::Kernel, 1.0, 0.9999), span(Lane::Kernel, 1.0, 1.0));
        assert_eq!(span(Lane::Kernel, -0.0005, 2.0).start_ms, 0.0);
        assert_eq!(span(Lane::ToGpu, 1.0, 3.5).ms(), 2.5);
    }

    #[test]
    fn merged_intervals_are_disjoint_sorted_and_cover_the_same_time() {
        let union = merged(vec![(5.0, 6.0), (0.0, 2.0), (1.0, 3.0), (3.0, 4.0), (7.0, 7.0)]);
        assert_eq!(union, vec![(0.0, 4.0), (5.0, 6.0)]);
        assert!(merged(Vec::new()).is_empty());
    }

    #[test]
    fn kernels_wholly_under_a_transfer_are_all_hidden() {
        let spans = [
            span(Lane::ToGpu, 0.0, 10.0),
            span(Lane::Kernel, 2.0, 3.0),
            span(Lane::Kernel, 5.0, 8.0),
        ];
        assert_eq!(hidden_fraction(&spans), Some(1.0));
    }

    #[test]
    fn kernels_after_the_transfers_are_not_hidden() {
        let spans = [
            span(Lane::ToGpu, 0.0, 10.0),
            span(Lane::Kernel, 10.0, 12.0),
            span(Lane::ToHost, 12.0, 20.0),
        ];
        assert_eq!(hidden_fraction(&spans), Some(0.0));
    }

    #[test]
    fn a_kernel_partly_under_transfers_of_both_directions_counts_each_instant_once() {
        // Kernel 0..4: 1..2 under the move up, 1.5..3 under the move down; the union 1..3 is 2 ms.
        let spans = [
            span(Lane::Kernel, 0.0, 4.0),
            span(Lane::ToGpu, 1.0, 2.0),
            span(Lane::ToHost, 1.5, 3.0),
        ];
        assert_eq!(hidden_fraction(&spans), Some(0.5));
    }

    #[test]
    fn without_kernel_time_nothing_is_hidden_or_exposed() {
        assert_eq!(hidden_fraction(&[span(Lane::ToGpu, 0.0, 1.0)]), None);
        assert_eq!(hidden_fraction(&[span(Lane::Kernel, 1.0, 1.0)]), None);
    }

    #[test]
    fn a_lane_is_busy_for_the_union_of_its_spans() {
        let spans = [
            span(Lane::ToGpu, 0.0, 2.0),
            span(Lane::ToGpu, 1.0, 3.0),
            span(Lane::ToGpu, 5.0, 6.0),
            span(Lane::Kernel, 0.0, 100.0),
        ];
        assert_eq!(busy_ms(&spans, Lane::ToGpu), 4.0);
        assert_eq!(lane_ms(&spans, Lane::ToGpu), 4.0 + 1.0);
        assert_eq!(busy_ms(&spans, Lane::ToHost), 0.0);
    }

    #[test]
    fn bars_sit_in_their_own_lane_top_to_bottom_and_span_their_times() {
        let up = bar(&span(Lane::ToGpu, 1.0, 2.0), 0.0);
        let kernel = bar(&span(Lane::Kernel, 1.0, 2.0), 0.0);
        let down = bar(&span(Lane::ToHost, 1.0, 2.0), 0.0);
        assert_eq!((up[0].0, up[1].0), (1.0, 2.0));
        // Each inside its row of height 1, the lanes apart, the first on top.
        for [low, high] in [up, kernel, down] {
            assert!(low.1 < high.1 && high.1 - low.1 < 1.0);
            assert_eq!(low.1.floor(), (high.1 - 1e-9).floor());
        }
        assert!(down[1].1 < kernel[0].1 && kernel[1].1 < up[0].1);
        assert_eq!(up[1].1, 3.0 - BAR_MARGIN);
    }

    #[test]
    fn short_bars_are_widened_to_the_minimum_width_and_long_ones_kept() {
        assert_eq!(bar(&span(Lane::Kernel, 5.0, 5.001), 0.25)[1].0, 5.25);
        assert_eq!(bar(&span(Lane::Kernel, 5.0, 9.0), 0.25)[1].0, 9.0);
    }

    #[test]
    fn the_summary_names_the_hidden_share_and_each_lane() {
        let spans = [span(Lane::ToGpu, 0.0, 10.0), span(Lane::Kernel, 2.0, 4.0)];
        let text = summary(&spans, 10.0);
        assert!(text.contains("100.0 % of 2.00 ms"), "{text}");
        assert!(
            text.contains("to the GPU 100 %") && text.contains("kernels 20 %") && text.contains("to the host 0 %"),
            "{text}"
        );
    }

    #[test]
    fn a_timeline_is_written_as_svg_with_its_title_and_lanes() {
        let path = std::env::temp_dir().join(format!("host-timeline-{}.svg", std::process::id()));
        let timeline = Timeline {
            title: "a test timeline".into(),
            lanes: ["up".into(), "kernel".into(), "down".into()],
            spans: vec![span(Lane::ToGpu, 0.0, 1.0), Span::new(Lane::Kernel, 1, 1.0, 1.5)],
            total_ms: 2.0,
        };
        write(&path, &[timeline.clone(), timeline]).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("a test timeline") && svg.contains("kernel"));
        assert!(svg.matches("<rect").count() >= 3, "{svg}");
    }
}
