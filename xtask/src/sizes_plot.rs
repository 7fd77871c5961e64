//! The bench report's plot of the size sweep: speed against PyTorch (its time over ours) against
//! the size, one panel for the whole-array operators (against n) and one per row operator (against
//! the row width, a line per total size), with parity drawn across.

use crate::plots::{CEILING, FONT, PALETTE, err};
use kernels::bench_results::{SizePoint, SizesRun};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;

const SIZE: (u32, u32) = (1400, 1000);
/// The operators with one size (n), drawn together against it.
const WHOLE: [&str; 2] = ["sum", "cumsum"];

pub fn write_svg(run: &SizesRun, path: &Path) -> Result<(), String> {
    crate::plots::write_svg(path, SIZE, |root| draw(run, root))
}

pub fn write_png(run: &SizesRun, path: &Path) -> Result<(), String> {
    crate::plots::write_png(path, SIZE, |root| draw(run, root))
}

/// One line of a panel: its label and points (x, speed), in x order.
type Line = (String, Vec<(f64, f64)>);

/// The panels: the whole-array operators against n, then each row operator against the width, a
/// line per total size; panels without points are left out.
fn panels(run: &SizesRun) -> Vec<(String, &'static str, Vec<Line>)> {
    let line = |label: String, points: Vec<&SizePoint>, x: fn(&SizePoint) -> f64| -> Line {
        let mut xy: Vec<(f64, f64)> = points.iter().map(|p| (x(p), p.speed)).collect();
        xy.sort_by(|a, b| a.0.total_cmp(&b.0));
        (label, xy)
    };
    let mut result = Vec::new();
    let whole: Vec<Line> = WHOLE
        .iter()
        .map(|op| {
            let points = run.size_points.iter().filter(|p| p.op == *op).collect();
            line(op.to_string(), points, |p| (p.rows * p.cols) as f64)
        })
        .filter(|(_, xy)| !xy.is_empty())
        .collect();
    if !whole.is_empty() {
        result.push(("sum, cumsum".to_string(), "n, elements (log scale)", whole));
    }
    let mut row_ops: Vec<&str> = Vec::new();
    for p in &run.size_points {
        if !WHOLE.contains(&p.op.as_str()) && !row_ops.contains(&p.op.as_str()) {
            row_ops.push(&p.op);
        }
    }
    for op in row_ops {
        let mut totals: Vec<u64> = Vec::new();
        for p in run.size_points.iter().filter(|p| p.op == op) {
            let total = (p.rows * p.cols).next_power_of_two();
            if !totals.contains(&total) {
                totals.push(total);
            }
        }
        totals.sort_unstable();
        let lines = totals
            .into_iter()
            .map(|total| {
                let points = run
                    .size_points
                    .iter()
                    .filter(|p| p.op == op && (p.rows * p.cols).next_power_of_two() == total)
                    .collect();
                line(format!("2^{} elements", total.trailing_zeros()), points, |p| {
                    p.cols as f64
                })
            })
            .collect();
        result.push((op.to_string(), "row width, columns (log scale)", lines));
    }
    result
}

fn draw<DB: DrawingBackend>(run: &SizesRun, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
    root.fill(&WHITE).map_err(err)?;
    let root = root
        .titled(
            &format!(
                "Reductions, scans and row operators at every size: speed against PyTorch ({})",
                run.device
            ),
            (FONT, 24),
        )
        .map_err(err)?;
    let panels = panels(run);
    let columns = 2;
    let rows = panels.len().div_ceil(columns).max(1);
    let areas = root.split_evenly((rows, columns));
    for ((title, x_desc, lines), area) in panels.iter().zip(&areas) {
        panel(area, title, x_desc, lines)?;
    }
    Ok(())
}

fn panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    title: &str,
    x_desc: &str,
    lines: &[Line],
) -> Result<(), String> {
    let xs = lines.iter().flat_map(|(_, xy)| xy.iter().map(|p| p.0));
    let lo = xs.clone().fold(f64::INFINITY, f64::min).max(1.0);
    let hi = xs.fold(0.0, f64::max).max(lo * 4.0);
    let top = lines
        .iter()
        .flat_map(|(_, xy)| xy.iter().map(|p| p.1))
        .filter(|s| s.is_finite())
        .fold(1.2, f64::max)
        * 1.08;
    let mut chart = ChartBuilder::on(area)
        .caption(title, (FONT, 20))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(60)
        .build_cartesian_2d((lo / 1.5..hi * 1.5).log_scale().base(2.0), 0.0..top)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc("PyTorch's time / ours")
        .x_label_formatter(&|x| format!("2^{}", x.log2().round()))
        .label_style((FONT, 13))
        .axis_desc_style((FONT, 15))
        .draw()
        .map_err(err)?;
    crate::plots::draw_parity(&mut chart, (lo / 1.5, hi * 1.5))?;
    for (i, (label, xy)) in lines.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        chart
            .draw_series(LineSeries::new(xy.iter().copied(), color.stroke_width(2)))
            .map_err(err)?
            .label(label.as_str())
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], color.stroke_width(2)));
        chart
            .draw_series(xy.iter().map(|&p| Circle::new(p, 3, color.filled())))
            .map_err(err)?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.9))
        .border_style(CEILING)
        .label_font((FONT, 13))
        .draw()
        .map_err(err)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(op: &str, rows: u64, cols: u64, speed: f64) -> SizePoint {
        SizePoint {
            op: op.into(),
            rows,
            cols,
            rust_us: 1.0,
            pytorch_us: speed,
            speed,
            checked: true,
        }
    }

    #[test]
    fn the_whole_array_operators_share_a_panel_and_each_row_operator_has_a_line_per_total() {
        let run = SizesRun {
            device: "H200".into(),
            torch: "2.9".into(),
            summary: Default::default(),
            size_points: vec![
                point("sum", 1, 1 << 20, 1.1),
                point("sum", 1, 1024, 0.5),
                point("cumsum", 1, 3 * 512 + 1, 0.9),
                point("row_sum", 1 << 16, 1, 0.7),
                point("row_sum", 1, 1 << 16, 1.3),
                point("row_sum", 20, 50_257, 1.2),
                point("row_sum", 1 << 10, 1 << 10, 1.0),
            ],
        };
        let panels = panels(&run);
        let titles: Vec<&str> = panels.iter().map(|(t, _, _)| t.as_str()).collect();
        assert_eq!(titles, ["sum, cumsum", "row_sum"]);
        // sum's points in size order; cumsum's odd size on its own line.
        assert_eq!(panels[0].2[0].1, [(1024.0, 0.5), ((1 << 20) as f64, 1.1)]);
        assert_eq!(panels[0].2[1].0, "cumsum");
        // 20 × 50257 rounds up to 2^20 elements, with 2^10 × 2^10; 2^16 on its own line.
        let labels: Vec<&str> = panels[1].2.iter().map(|(l, _)| l.as_str()).collect();
        assert_eq!(labels, ["2^16 elements", "2^20 elements"]);
        assert_eq!(panels[1].2[1].1, [(1024.0, 1.0), (50_257.0, 1.2)]);
        let dir = std::env::temp_dir().join(format!("sizes-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        write_svg(&run, &dir.join("sizes.svg")).unwrap();
        assert!(
            std::fs::read_to_string(dir.join("sizes.svg"))
                .unwrap()
                .contains("row_sum")
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
