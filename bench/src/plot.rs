//! The `--plot` SVG (plotters, SVG backend, no font files needed): one panel per workload,
//! throughput (median Mops/s) against threads with one line per peer, or throughput over
//! time for time-series workloads (`news`), or one dot per peer where there is a single
//! thread count. Panels are laid out in a grid under one legend: a peer has the same colour
//! in every panel.

use std::path::Path;

use plotters::prelude::*;

use crate::stats::Summary;

const PANEL_W: u32 = 520;
const PANEL_H: u32 = 360;

fn colour(i: usize) -> RGBColor {
    const PALETTE: [RGBColor; 10] = [
        RGBColor(214, 39, 40),
        RGBColor(31, 119, 180),
        RGBColor(44, 160, 44),
        RGBColor(255, 127, 14),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(127, 127, 127),
        RGBColor(188, 189, 34),
        RGBColor(23, 190, 207),
    ];
    PALETTE[i % PALETTE.len()]
}

/// Draws `summaries` into an SVG file at `path`.
pub fn write_svg(path: &Path, summaries: &[Summary], title: &str) -> Result<(), String> {
    let mut workloads: Vec<&str> = Vec::new();
    let mut peers: Vec<&str> = Vec::new();
    for s in summaries {
        if !workloads.contains(&s.workload.as_str()) {
            workloads.push(&s.workload);
        }
        if !peers.contains(&s.peer.as_str()) {
            peers.push(&s.peer);
        }
    }
    if workloads.is_empty() {
        return Err("nothing to plot".into());
    }
    let cols = workloads.len().min(3);
    let rows = workloads.len().div_ceil(cols);
    let size = (PANEL_W * cols as u32, PANEL_H * rows as u32 + 70);
    let root = SVGBackend::new(path, size).into_drawing_area();
    let err = |e: &dyn std::fmt::Display| format!("cannot draw {}: {e}", path.display());
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let root = root
        .titled(title, ("sans-serif", 22))
        .map_err(|e| err(&e))?;
    // One legend for the whole figure: a peer has the same colour in every panel.
    let (legend, body) = root.split_vertically(30);
    for (i, peer) in peers.iter().enumerate() {
        let x = 20 + i as i32 * 130;
        let c = colour(i);
        legend
            .draw(&PathElement::new(
                vec![(x, 15), (x + 24, 15)],
                c.stroke_width(3),
            ))
            .map_err(|e| err(&e))?;
        legend
            .draw(&Text::new(
                peer.to_string(),
                (x + 30, 8),
                ("sans-serif", 14),
            ))
            .map_err(|e| err(&e))?;
    }
    let panels = body.split_evenly((rows, cols));
    for (panel, w) in panels.iter().zip(&workloads) {
        let rows: Vec<&Summary> = summaries.iter().filter(|s| s.workload == *w).collect();
        let series = rows.iter().any(|s| s.series.is_some());
        let result = if series {
            draw_time_series(panel, w, &rows, &peers)
        } else {
            draw_threads(panel, w, &rows, &peers)
        };
        result.map_err(|e| err(&e))?;
    }
    root.present().map_err(|e| err(&e))
}

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;
type DrawResult = Result<(), DrawingAreaErrorKind<std::io::Error>>;

fn draw_threads(area: &Area, workload: &str, rows: &[&Summary], peers: &[&str]) -> DrawResult {
    let mut threads: Vec<usize> = rows.iter().map(|s| s.threads).collect();
    threads.sort_unstable();
    threads.dedup();
    if threads.len() == 1 {
        return draw_by_peer(area, workload, rows, peers, threads[0]);
    }
    let y_max = rows.iter().map(|s| s.mops).fold(0.0, f64::max).max(1e-3) * 1.15;
    // Thread counts are placed at evenly spaced positions (they are usually powers of two).
    let x_of = |t: usize| threads.iter().position(|&x| x == t).unwrap_or(0) as f64;
    let x_max = (threads.len().max(2) - 1) as f64;
    let mut chart = ChartBuilder::on(area)
        .caption(format!("{workload}: Mops/s vs threads"), ("sans-serif", 16))
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(50)
        .build_cartesian_2d(-0.3..x_max + 0.3, 0.0..y_max)?;
    let labels = threads.clone();
    chart
        .configure_mesh()
        .x_labels(threads.len().max(2))
        .x_label_formatter(&|x| {
            let i = x.round();
            if (x - i).abs() < 0.01 && i >= 0.0 {
                labels
                    .get(i as usize)
                    .map(|t| t.to_string())
                    .unwrap_or_default()
            } else {
                String::new()
            }
        })
        .x_desc("threads")
        .y_desc("Mops/s")
        .draw()?;
    for (i, peer) in peers.iter().enumerate() {
        let mut pts: Vec<(f64, f64)> = rows
            .iter()
            .filter(|s| s.peer == *peer)
            .map(|s| (x_of(s.threads), s.mops))
            .collect();
        if pts.is_empty() {
            continue;
        }
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        let c = colour(i);
        chart.draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))?;
        chart.draw_series(pts.into_iter().map(|p| Circle::new(p, 3, c.filled())))?;
    }
    Ok(())
}

/// One thread count only (`load` in `compare`): one dot per peer, peers along the x axis.
fn draw_by_peer(
    area: &Area,
    workload: &str,
    rows: &[&Summary],
    peers: &[&str],
    threads: usize,
) -> DrawResult {
    let y_max = rows.iter().map(|s| s.mops).fold(0.0, f64::max).max(1e-3) * 1.15;
    let x_max = (peers.len().max(2) - 1) as f64;
    let mut chart = ChartBuilder::on(area)
        .caption(
            format!("{workload}: Mops/s, {threads} thread(s)"),
            ("sans-serif", 16),
        )
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(50)
        .build_cartesian_2d(-0.5..x_max + 0.5, 0.0..y_max)?;
    let names: Vec<String> = peers.iter().map(|p| p.to_string()).collect();
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(peers.len().max(2))
        .x_label_formatter(&|x| {
            let i = x.round();
            if (x - i).abs() < 0.01 && i >= 0.0 {
                names.get(i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .y_desc("Mops/s")
        .draw()?;
    for (i, peer) in peers.iter().enumerate() {
        if let Some(s) = rows.iter().find(|s| s.peer == *peer) {
            let c = colour(i);
            let x = i as f64;
            chart.draw_series(std::iter::once(PathElement::new(
                vec![(x, 0.0), (x, s.mops)],
                c.stroke_width(6),
            )))?;
            chart.draw_series(std::iter::once(Circle::new((x, s.mops), 4, c.filled())))?;
        }
    }
    Ok(())
}

fn draw_time_series(area: &Area, workload: &str, rows: &[&Summary], peers: &[&str]) -> DrawResult {
    let max_threads = rows.iter().map(|s| s.threads).max().unwrap_or(1);
    let rows: Vec<&&Summary> = rows.iter().filter(|s| s.threads == max_threads).collect();
    let x_max = rows
        .iter()
        .filter_map(|s| s.series.as_ref().map(Vec::len))
        .max()
        .unwrap_or(1)
        .max(2) as f64;
    let y_max = rows
        .iter()
        .filter_map(|s| s.series.as_ref())
        .flatten()
        .fold(0.0f64, |a, &b| a.max(b))
        .max(1e-3)
        * 1.15;
    let mut chart = ChartBuilder::on(area)
        .caption(
            format!("{workload}: Mops/s per second, {max_threads} threads"),
            ("sans-serif", 16),
        )
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(50)
        .build_cartesian_2d(0.0..x_max, 0.0..y_max)?;
    chart
        .configure_mesh()
        .x_desc("seconds")
        .y_desc("Mops/s")
        .draw()?;
    for (i, peer) in peers.iter().enumerate() {
        let Some(series) = rows
            .iter()
            .find(|s| s.peer == *peer)
            .and_then(|s| s.series.as_ref())
        else {
            continue;
        };
        let c = colour(i);
        let pts: Vec<(f64, f64)> = series
            .iter()
            .enumerate()
            .map(|(sec, &m)| (sec as f64 + 0.5, m))
            .collect();
        chart.draw_series(LineSeries::new(pts, c.stroke_width(2)))?;
    }
    Ok(())
}
