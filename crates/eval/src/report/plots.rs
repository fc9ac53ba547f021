//! The SVG plots of a run (plotters).

use super::*;

/// Writes the SVG plots of a run into `dir`: F1 by question type, the rounds histogram
/// and the latency distribution. Returns the file names.
pub fn plots(record: &RunRecord, dir: &Path, stem: &str) -> Result<Vec<PathBuf>> {
    use plotters::prelude::*;
    std::fs::create_dir_all(dir).map_err(|e| Error::Io {
        path: dir.to_path_buf(),
        source: e,
    })?;
    let plot_err = |path: &Path, e: String| Error::Record {
        path: path.to_path_buf(),
        line: 0,
        reason: format!("plot: {e}"),
    };
    let palette = [
        RGBColor(0x4c, 0x72, 0xb0),
        RGBColor(0xdd, 0x84, 0x52),
        RGBColor(0x55, 0xa8, 0x68),
        RGBColor(0xc4, 0x4e, 0x52),
        RGBColor(0x81, 0x72, 0xb3),
    ];
    let mut written = Vec::new();

    // F1 by type, grouped bars per strategy.
    let types: Vec<String> = {
        let mut t: Vec<String> = record
            .summary
            .iter()
            .flat_map(|s| s.by_type.keys().cloned())
            .collect();
        t.sort();
        t.dedup();
        t
    };
    let path = dir.join(format!("{stem}-f1-by-type.svg"));
    {
        let root = SVGBackend::new(&path, (720, 400)).into_drawing_area();
        root.fill(&WHITE)
            .map_err(|e| plot_err(&path, e.to_string()))?;
        let groups = types.len().max(1);
        let k = record.summary.len().max(1);
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!(
                    "F1 by question type: {} ({})",
                    record.config.dataset,
                    record.config.protocol.as_str()
                ),
                ("sans-serif", 18),
            )
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(44)
            .build_cartesian_2d(0f64..groups as f64, 0f64..100f64)
            .map_err(|e| plot_err(&path, e.to_string()))?;
        let labels = types.clone();
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(groups * 2 + 1)
            .x_label_formatter(&|x| {
                let i = x.floor() as usize;
                if (x - i as f64 - 0.5).abs() < 0.01 {
                    labels.get(i).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .y_desc("F1 (%)")
            .draw()
            .map_err(|e| plot_err(&path, e.to_string()))?;
        for (si, s) in record.summary.iter().enumerate() {
            let color = palette[si % palette.len()];
            let width = 0.8 / k as f64;
            let bars: Vec<Rectangle<(f64, f64)>> = types
                .iter()
                .enumerate()
                .filter_map(|(ti, t)| s.by_type.get(t).map(|g| (ti, g)))
                .map(|(ti, g)| {
                    let x0 = ti as f64 + 0.1 + si as f64 * width;
                    Rectangle::new(
                        [(x0, 0.0), (x0 + width * 0.95, g.f1 * 100.0)],
                        color.filled(),
                    )
                })
                .collect();
            chart
                .draw_series(bars)
                .map_err(|e| plot_err(&path, e.to_string()))?
                .label(s.strategy.clone())
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled())
                });
        }
        chart
            .configure_series_labels()
            .border_style(BLACK)
            .background_style(WHITE.mix(0.8))
            .draw()
            .map_err(|e| plot_err(&path, e.to_string()))?;
        root.present().map_err(|e| plot_err(&path, e.to_string()))?;
    }
    written.push(path);

    // Rounds histogram of the metacognitive strategy.
    if let Some(s) = record.summary.iter().find(|s| gated(record, &s.strategy)) {
        let path = dir.join(format!("{stem}-rounds.svg"));
        let r = s.rounds;
        let bars = [
            ("no remediation", r.none),
            ("stopped early", r.early),
            ("hit max rounds", r.hit_max),
            ("budget", r.budget),
        ];
        let top = bars.iter().map(|b| b.1).max().unwrap_or(1).max(1) as f64 * 1.15;
        let root = SVGBackend::new(&path, (560, 360)).into_drawing_area();
        root.fill(&WHITE)
            .map_err(|e| plot_err(&path, e.to_string()))?;
        let mut chart = ChartBuilder::on(&root)
            .caption("MetaRAG: how the loop ended", ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(44)
            .build_cartesian_2d(0f64..bars.len() as f64, 0f64..top)
            .map_err(|e| plot_err(&path, e.to_string()))?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(bars.len() * 2 + 1)
            .x_label_formatter(&|x| {
                let i = x.floor() as usize;
                if (x - i as f64 - 0.5).abs() < 0.01 {
                    bars.get(i).map(|b| b.0.to_string()).unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .y_desc("questions")
            .draw()
            .map_err(|e| plot_err(&path, e.to_string()))?;
        chart
            .draw_series(bars.iter().enumerate().map(|(i, b)| {
                Rectangle::new(
                    [(i as f64 + 0.15, 0.0), (i as f64 + 0.85, b.1 as f64)],
                    palette[0].filled(),
                )
            }))
            .map_err(|e| plot_err(&path, e.to_string()))?;
        root.present().map_err(|e| plot_err(&path, e.to_string()))?;
        drop(chart);
        drop(root);
        written.push(path);
    }

    // Latency: per strategy, the sorted seconds per question (a quantile plot).
    let path = dir.join(format!("{stem}-latency.svg"));
    {
        let series: Vec<(String, Vec<f64>)> = record
            .summary
            .iter()
            .map(|s| {
                let mut v: Vec<f64> = record
                    .results
                    .iter()
                    .filter(|r| r.strategy == s.strategy.as_str())
                    .filter_map(compute_seconds)
                    .collect();
                v.sort_by(f64::total_cmp);
                (s.strategy.clone(), v)
            })
            .collect();
        let top = series
            .iter()
            .flat_map(|s| s.1.iter().copied())
            .fold(1.0, f64::max)
            * 1.05;
        let root = SVGBackend::new(&path, (640, 380)).into_drawing_area();
        root.fill(&WHITE)
            .map_err(|e| plot_err(&path, e.to_string()))?;
        let mut chart = ChartBuilder::on(&root)
            .caption("Seconds per question (sorted)", ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(44)
            .build_cartesian_2d(0f64..100f64, 0f64..top)
            .map_err(|e| plot_err(&path, e.to_string()))?;
        chart
            .configure_mesh()
            .x_desc("percent of questions")
            .y_desc("seconds")
            .draw()
            .map_err(|e| plot_err(&path, e.to_string()))?;
        for (si, (name, v)) in series.iter().enumerate() {
            let color = palette[si % palette.len()];
            let n = v.len().max(1) as f64;
            chart
                .draw_series(LineSeries::new(
                    v.iter()
                        .enumerate()
                        .map(|(i, s)| ((i as f64 + 1.0) / n * 100.0, *s)),
                    color.stroke_width(2),
                ))
                .map_err(|e| plot_err(&path, e.to_string()))?
                .label(name.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 14, y)], color.stroke_width(2))
                });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .border_style(BLACK)
            .background_style(WHITE.mix(0.8))
            .draw()
            .map_err(|e| plot_err(&path, e.to_string()))?;
        root.present().map_err(|e| plot_err(&path, e.to_string()))?;
    }
    written.push(path);
    Ok(written)
}
