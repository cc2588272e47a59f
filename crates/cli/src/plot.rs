//! Charts from arena output: an Elo ladder with error bars and a pairwise score matrix from a
//! results file (`--json`), score distributions from a records file (`--records`); and
//! learning curves from a training run's `metrics.jsonl`.

use anyhow::{Context, Result, anyhow, bail};
use clap::{Args, ValueEnum};
use meeple_arena::files::commit_temporary;
use meeple_arena::{AgentSummary, MatchSummary, PlayedGame, records};
use meeple_game::limits;
use meeple_learn::metrics::Event;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Args, Debug)]
pub struct PlotArgs {
    /// A results file (`meeple arena --json`), a records file (`--records`) or a training run's
    /// `metrics.jsonl` (`meeple train`); a records file or metrics log kept gzip-compressed is
    /// read as it is.
    file: PathBuf,
    /// Output path prefix (default: the input path without its extension).
    #[arg(long, value_name = "PREFIX")]
    out: Option<PathBuf>,
    /// Image format(s) to write.
    #[arg(long, value_enum, default_value_t = Format::Both)]
    format: Format,
    /// A training run's curves against wall-clock minutes, or against its progress (episodes;
    /// generations for `train az`, epochs for `train vae`).
    #[arg(long, value_enum, default_value_t = Axis::Minutes)]
    x: Axis,
    /// A training run's loss and figure curves as a trailing mean of this many points, drawn
    /// over the raw points in a faint line (default: a fiftieth of the longest series, so a
    /// long run's per-generation noise does not hide its trend; 1 draws the raw points alone).
    #[arg(long, value_name = "N")]
    smooth: Option<usize>,
}

#[derive(Clone, Copy, Debug, PartialEq, ValueEnum)]
enum Axis {
    Minutes,
    Progress,
}

#[derive(Clone, Copy, Debug, PartialEq, ValueEnum)]
enum Format {
    Png,
    Svg,
    Both,
}

const SIZE: (u32, u32) = (960, 600);

pub fn run(args: &PlotArgs) -> Result<()> {
    plotters::style::register_font("sans-serif", FontStyle::Normal, dejavu::sans::regular())
        .map_err(|_| anyhow!("the embedded font did not load"))?;
    let prefix = args.out.clone().unwrap_or_else(|| args.file.with_extension(""));
    // Charts are written beside the prefix: its directory must exist before any drawing.
    let dir = prefix.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if !dir.is_dir() {
        bail!("cannot write charts to '{}-*': no directory '{}'", prefix.display(), dir.display());
    }
    let size = std::fs::metadata(&args.file).with_context(|| format!("cannot read '{}'", args.file.display()))?.len();
    // A results file is one JSON document; anything larger than a text file, or compressed,
    // is a records file or a metrics log.
    let compressed = limits::is_gzip(&args.file);
    let text = if size <= limits::MAX_TEXT_FILE && !compressed {
        limits::read_text(&args.file, limits::MAX_TEXT_FILE, "results file")?
    } else {
        String::new()
    };
    let mut written = Vec::new();
    if let Some(n) = args.smooth.filter(|n| !(1..=MAX_SMOOTH).contains(n)) {
        bail!("--smooth {n}: give 1 (raw points) to {MAX_SMOOTH} points");
    }
    if is_metrics(&args.file)? {
        let mut run = read_metrics(&args.file, args.x)?;
        let longest = run.losses.values().chain(run.figures.values()).map(Vec::len).max().unwrap_or(0);
        run.smooth = args.smooth.unwrap_or((longest / 50).max(1));
        written.extend(draw(&prefix, "learning", args.format, &Chart::Learning(&run))?);
    } else if let Ok(summary) = serde_json::from_str::<MatchSummary>(&text) {
        check_summary(&summary).with_context(|| format!("'{}' cannot be plotted", args.file.display()))?;
        if summary.agents.iter().any(|a| a.elo.is_some()) {
            written.extend(draw(&prefix, "elo", args.format, &Chart::Elo(&summary))?);
        }
        if !summary.pairwise.is_empty() {
            written.extend(draw(&prefix, "pairwise", args.format, &Chart::Pairwise(&summary))?);
        }
        if written.is_empty() {
            bail!("'{}' has no Elo ratings or pairwise results to plot", args.file.display());
        }
    } else if size > limits::MAX_TEXT_FILE
        || compressed
        || (text.trim_start().starts_with('{') && !text.trim_start().starts_with("{\n"))
    {
        let mut games = Vec::new();
        records::visit(&args.file, records::ReadOptions::arena(limits::MAX_GAMES), &mut |entry| {
            if let records::Entry::Played(g) = entry {
                games.push(*g);
            }
        })?;
        if let Some(g) = games.iter().find(|g| g.record.scores.iter().any(|x| !x.is_finite())) {
            bail!("'{}': game {} has a score that is not a finite number", args.file.display(), g.index);
        }
        written.extend(draw(&prefix, "scores", args.format, &Chart::Scores(&games))?);
    } else {
        let e = serde_json::from_str::<MatchSummary>(&text).err().map(|e| e.to_string()).unwrap_or_default();
        bail!("'{}' is not a results file from `meeple arena --json`: {e}", args.file.display());
    }
    for w in written {
        println!("{}", w.display());
    }
    Ok(())
}

/// The longest trailing mean `--smooth` takes.
const MAX_SMOOTH: usize = 100_000;

/// Each point's y replaced by the mean of it and the up to `n - 1` points before it.
fn trailing_mean(points: &[(f64, f64)], n: usize) -> Vec<(f64, f64)> {
    let n = n.max(1);
    let mut sum = 0.0;
    points
        .iter()
        .enumerate()
        .map(|(i, &(x, y))| {
            sum += y;
            if i >= n {
                sum -= points[i - n].1;
            }
            (x, sum / (i + 1).min(n) as f64)
        })
        .collect()
}

/// One chart, drawable on any plotters backend.
enum Chart<'a> {
    Elo(&'a MatchSummary),
    Pairwise(&'a MatchSummary),
    Scores(&'a [PlayedGame]),
    Learning(&'a Metrics),
}

impl Chart<'_> {
    fn render<DB: DrawingBackend>(&self, root: DrawingArea<DB, Shift>) -> Result<()> {
        match self {
            Chart::Elo(s) => elo_ladder(root, s),
            Chart::Pairwise(s) => pairwise(root, s),
            Chart::Scores(g) => scores(root, g),
            Chart::Learning(m) => learning(root, m),
        }
    }
}

/// The most an Elo interval is drawn beyond its point: wider intervals (an agent that won or
/// lost every game) run off the chart instead of squeezing every other bar to nothing.
const ELO_BAR_LIMIT: f64 = 1500.0;

/// Checks what a results file would put on a chart: finite ratings and scores in [0, 1].
fn check_summary(s: &MatchSummary) -> Result<()> {
    for a in &s.agents {
        let name = if a.name.is_empty() { &a.spec } else { &a.name };
        if let Some(e) = a.elo
            && !(e.is_finite() && e.abs() <= 100_000.0)
        {
            bail!("agent '{name}' has Elo {e}, not a rating meeple writes");
        }
        if !(0.0..=1.0).contains(&a.score) {
            bail!("agent '{name}' has score {}, outside 0-1", a.score);
        }
    }
    if let Some(p) = s.pairwise.iter().find(|p| !(0.0..=1.0).contains(&p.score)) {
        bail!("pairing {} vs {} has score {}, outside 0-1", p.a, p.b, p.score);
    }
    Ok(())
}

fn draw(prefix: &Path, name: &str, format: Format, chart: &Chart<'_>) -> Result<Vec<PathBuf>> {
    let stem = format!("{}-{name}", prefix.display());
    let mut out = Vec::new();
    for (ext, wanted) in [("png", format != Format::Svg), ("svg", format != Format::Png)] {
        if !wanted {
            continue;
        }
        let path = PathBuf::from(format!("{stem}.{ext}"));
        // Drawn to a temporary file with the same extension (the backend picks the format from
        // it), then renamed: an interrupted run never leaves half a chart.
        let file = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let tmp = path.with_file_name(format!(".{file}.{}.tmp.{ext}", std::process::id()));
        let drawn = if ext == "png" {
            chart.render(BitMapBackend::new(&tmp, SIZE).into_drawing_area())
        } else {
            chart.render(SVGBackend::new(&tmp, SIZE).into_drawing_area())
        };
        if let Err(e) = drawn {
            let _ = std::fs::remove_file(&tmp);
            return Err(e.context(format!("cannot draw '{}'", path.display())));
        }
        commit_temporary(&tmp, &path).with_context(|| format!("cannot write '{}'", path.display()))?;
        out.push(path);
    }
    Ok(out)
}

/// An agent's name in the match (its spec, `#k` added for repeats); files from before names
/// existed have only the spec.
fn label(a: &AgentSummary) -> &str {
    if a.name.is_empty() { &a.spec } else { &a.name }
}

fn err<E: std::fmt::Debug>(e: E) -> anyhow::Error {
    anyhow!("{e:?}")
}

/// Agents from weakest to strongest, each a point at its Elo with its interval as an error bar.
fn elo_ladder<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, s: &MatchSummary) -> Result<()> {
    root.fill(&WHITE).map_err(err)?;
    let mut agents: Vec<_> = s
        .agents
        .iter()
        .filter_map(|a| {
            let (e, [lo, hi]) = (a.elo?, a.elo_ci?);
            let clip = |x: f64| if x.is_nan() { e } else { x.clamp(e - ELO_BAR_LIMIT, e + ELO_BAR_LIMIT) };
            Some((a, e, [clip(lo), clip(hi)]))
        })
        .collect();
    agents.sort_by(|x, y| x.1.total_cmp(&y.1));
    let lo = agents.iter().map(|a| a.2[0]).filter(|x| x.is_finite()).fold(f64::MAX, f64::min);
    let hi = agents.iter().map(|a| a.2[1]).filter(|x| x.is_finite()).fold(f64::MIN, f64::max);
    let pad = ((hi - lo) * 0.08).max(20.0);
    let n = agents.len();
    let title = format!(
        "Elo ({:.0}% intervals, anchor {}) — {}",
        100.0 * s.confidence,
        s.anchor.as_deref().unwrap_or("-"),
        s.game
    );
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(20)
        .x_label_area_size(40)
        .y_label_area_size(10)
        .build_cartesian_2d((lo - pad)..(hi + pad), -0.7f64..(n as f64 - 0.3))
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(0)
        .x_desc("Elo")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .draw()
        .map_err(err)?;
    let colour = |i: usize| Palette99::pick(i).to_rgba();
    chart
        .draw_series(agents.iter().enumerate().map(|(i, a)| {
            ErrorBar::new_horizontal(
                i as f64,
                a.2[0].max(lo - pad),
                a.1,
                a.2[1].min(hi + pad),
                colour(i).stroke_width(3),
                12,
            )
        }))
        .map_err(err)?;
    chart
        .draw_series(agents.iter().enumerate().map(|(i, a)| Circle::new((a.1, i as f64), 6, colour(i).filled())))
        .map_err(err)?;
    chart
        .draw_series(agents.iter().enumerate().map(|(i, a)| {
            Text::new(format!("{}  {:.0}", label(a.0), a.1), (a.1, i as f64 + 0.25), ("sans-serif", 16).into_font())
        }))
        .map_err(err)?;
    root.present().map_err(err)
}

/// Score of each row agent against each column agent, green for winning, red for losing.
fn pairwise<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, s: &MatchSummary) -> Result<()> {
    root.fill(&WHITE).map_err(err)?;
    let names: Vec<&str> = s.agents.iter().map(label).collect();
    let n = names.len();
    let mut m = vec![vec![None; n]; n];
    for p in &s.pairwise {
        let (Some(i), Some(j)) = (names.iter().position(|x| *x == p.a), names.iter().position(|x| *x == p.b)) else {
            continue;
        };
        m[i][j] = Some(p.score);
        m[j][i] = Some(1.0 - p.score);
    }
    let (w, h) = (SIZE.0 as i32, SIZE.1 as i32);
    root.draw(&Text::new(
        format!("Pairwise score (row vs column) — {}", s.game),
        (20, 12),
        ("sans-serif", 22).into_font(),
    ))
    .map_err(err)?;
    let left = 220;
    let top = 80;
    let cell = ((w - left - 20) / n as i32).min((h - top - 20) / n as i32).max(10);
    for (i, name) in names.iter().enumerate() {
        let y = top + i as i32 * cell + cell / 2 - 8;
        root.draw(&Text::new(name.to_string(), (10, y), ("sans-serif", 15).into_font())).map_err(err)?;
        let label: String = name.chars().take((cell / 8).max(3) as usize).collect();
        root.draw(&Text::new(label, (left + i as i32 * cell + 4, top - 22), ("sans-serif", 13).into_font()))
            .map_err(err)?;
    }
    for (i, row) in m.iter().enumerate() {
        for (j, v) in row.iter().enumerate() {
            let (x0, y0) = (left + j as i32 * cell, top + i as i32 * cell);
            let colour = match v {
                None => RGBColor(235, 235, 235),
                Some(v) => {
                    let t = (v - 0.5) * 2.0;
                    if t >= 0.0 {
                        RGBColor((255.0 * (1.0 - t)) as u8, 255, (255.0 * (1.0 - t)) as u8)
                    } else {
                        RGBColor(255, (255.0 * (1.0 + t)) as u8, (255.0 * (1.0 + t)) as u8)
                    }
                }
            };
            root.draw(&Rectangle::new([(x0, y0), (x0 + cell - 2, y0 + cell - 2)], colour.filled())).map_err(err)?;
            if let Some(v) = v {
                root.draw(&Text::new(
                    format!("{:.0}%", 100.0 * v),
                    (x0 + cell / 2 - 16, y0 + cell / 2 - 8),
                    ("sans-serif", 15).into_font(),
                ))
                .map_err(err)?;
            }
        }
    }
    root.present().map_err(err)
}

/// For each agent, how often each final score occurred (the game's own scores).
fn scores<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, games: &[PlayedGame]) -> Result<()> {
    root.fill(&WHITE).map_err(err)?;
    let mut agents: Vec<String> = Vec::new();
    let mut values: Vec<Vec<f64>> = Vec::new();
    for g in games {
        // Agents by their names in the match, so two seats of the same spec stay apart.
        let names = g.settings.as_ref().map(|s| meeple_arena::agent_labels(&s.agents));
        for (seat, spec) in g.record.agents.iter().enumerate() {
            let Some(&v) = g.record.scores.get(seat) else { continue };
            let spec = names.as_ref().and_then(|n| n.get(*g.seating.get(seat)?)).unwrap_or(spec);
            let k = match agents.iter().position(|a| a == spec) {
                Some(k) => k,
                None => {
                    agents.push(spec.clone());
                    values.push(Vec::new());
                    agents.len() - 1
                }
            };
            values[k].push(v);
        }
    }
    if values.iter().all(|v| v.is_empty()) {
        bail!("the records hold no scores to plot");
    }
    let lo = values.iter().flatten().copied().fold(f64::MAX, f64::min);
    let hi = values.iter().flatten().copied().fold(f64::MIN, f64::max);
    if !(hi - lo).is_finite() || hi - lo > 1e12 {
        bail!("the scores span {lo} to {hi}: too wide to draw");
    }
    let bins = 20usize;
    let width = ((hi - lo) / bins as f64).max(1e-9);
    let hist: Vec<Vec<f64>> = values
        .iter()
        .map(|v| {
            let mut h = vec![0.0; bins + 1];
            for &x in v {
                h[(((x - lo) / width).floor() as usize).min(bins)] += 1.0 / v.len() as f64;
            }
            h
        })
        .collect();
    let top = hist.iter().flatten().copied().fold(0.0, f64::max) * 1.1;
    let game = games.first().map(|g| g.record.game.clone()).unwrap_or_default();
    let mut chart = ChartBuilder::on(&root)
        .caption(format!("Final scores per agent — {game} ({} games)", games.len()), ("sans-serif", 22))
        .margin(20)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(lo..(hi + width), 0.0..top.max(0.01))
        .map_err(err)?;
    chart.configure_mesh().x_desc("score").y_desc("share of games").draw().map_err(err)?;
    for (k, h) in hist.iter().enumerate() {
        let colour = Palette99::pick(k).to_rgba();
        chart
            .draw_series(LineSeries::new(
                h.iter().enumerate().map(|(b, &y)| (lo + (b as f64 + 0.5) * width, y)),
                colour.stroke_width(3),
            ))
            .map_err(err)?
            .label(agents[k].clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(3)));
    }
    chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw().map_err(err)?;
    root.present().map_err(err)
}

/// A training run's metrics log as curves against wall minutes: every named loss and figure the
/// trainer logged, and the ladder's scores and Elo.
#[derive(Default)]
struct Metrics {
    /// Each loss's (minutes, value) points, by name.
    losses: BTreeMap<String, Vec<(f64, f64)>>,
    /// Each other figure's points, by name.
    figures: BTreeMap<String, Vec<(f64, f64)>>,
    /// Opponent names in order of first appearance.
    opponents: Vec<String>,
    /// (minutes, opponent index, score, interval low, interval high)
    scores: Vec<(f64, usize, f64, f64, f64)>,
    /// (minutes, Elo, low, high) against the anchor.
    elo: Vec<(f64, f64, f64, f64)>,
    anchor: Option<String>,
    /// The ladder's own ratings, by opponent index, when the run recorded them.
    ladder: Vec<(usize, f64)>,
    /// What the x axis counts.
    x_label: String,
    /// Points in the trailing mean of the loss and figure curves (1: raw).
    smooth: usize,
}

/// Whether the file's first non-blank line is a training metrics line (`{"event": ...}`).
fn is_metrics(path: &Path) -> Result<bool> {
    use std::io::{BufRead, Read};
    let mut reader = limits::open_text(path, "file")?.take(limits::MAX_RECORD_LINE);
    let mut line = String::new();
    while reader.read_line(&mut line).unwrap_or(0) > 0 {
        if !line.trim().is_empty() {
            return Ok(serde_json::from_str::<serde_json::Value>(line.trim())
                .is_ok_and(|v| v.get("event").and_then(|e| e.as_str()).is_some()));
        }
        line.clear();
    }
    Ok(false)
}

fn read_metrics(path: &Path, axis: Axis) -> Result<Metrics> {
    let mut m = Metrics { x_label: "minutes".into(), smooth: 1, ..Metrics::default() };
    for line in meeple_learn::metrics::read(path)? {
        // Every line (an evaluation's too) carries the run's progress in `generation`: episodes
        // for the model-free and TD learners, generations for AlphaZero, epochs for the VAE.
        let minutes = match axis {
            Axis::Minutes => line.wall_seconds / 60.0,
            Axis::Progress => {
                m.x_label = match line.trainer.as_str() {
                    "az" => "generations",
                    "vae" => "epochs",
                    _ => "episodes",
                }
                .into();
                line.generation as f64
            }
        };
        match line.event {
            // A generation cut short before it trained logs zero losses: no point of the curves.
            Event::Generation if !line.trained => {}
            Event::Generation => {
                for (name, v) in &line.losses {
                    m.losses.entry(name.clone()).or_default().push((minutes, *v));
                }
                for (name, v) in &line.figures {
                    m.figures.entry(name.clone()).or_default().push((minutes, *v));
                }
            }
            Event::Evaluation => {
                let Some(e) = line.evaluation else { continue };
                for r in &e.opponents {
                    if !r.score.is_finite() {
                        bail!("'{}': an evaluation score that is not a finite number", path.display());
                    }
                    let k = match m.opponents.iter().position(|n| *n == r.opponent) {
                        Some(k) => k,
                        None => {
                            m.opponents.push(r.opponent.clone());
                            m.opponents.len() - 1
                        }
                    };
                    let unit = |x: f64| if x.is_finite() { x.clamp(0.0, 1.0) } else { r.score.clamp(0.0, 1.0) };
                    m.scores.push((minutes, k, unit(r.score), unit(r.ci[0]), unit(r.ci[1])));
                }
                if let Some(elo) = e.elo.filter(|e| e.is_finite() && e.abs() <= 100_000.0) {
                    let bound = |i: usize| e.elo_ci.map(|c| c[i]).filter(|x| x.is_finite()).unwrap_or(elo);
                    let lim = |x: f64| x.clamp(elo - ELO_BAR_LIMIT, elo + ELO_BAR_LIMIT);
                    m.elo.push((minutes, elo, lim(bound(0)), lim(bound(1))));
                }
                if !e.anchor.is_empty() {
                    m.anchor = Some(e.anchor.clone());
                }
                if let Some(ladder) = &e.ladder {
                    m.ladder = e
                        .opponents
                        .iter()
                        .zip(ladder)
                        .filter(|(_, x)| x.is_finite() && x.abs() <= 100_000.0)
                        .filter_map(|(r, &x)| Some((m.opponents.iter().position(|o| *o == r.opponent)?, x)))
                        .collect();
                }
            }
        }
    }
    if m.losses.is_empty() && m.figures.is_empty() {
        bail!("'{}' holds no trained generation lines to plot", path.display());
    }
    Ok(m)
}

/// Four panels over wall-clock minutes: losses, policy entropy, evaluation scores per ladder
/// opponent with intervals, and Elo against the ladder's anchor.
fn learning<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, m: &Metrics) -> Result<()> {
    root.fill(&WHITE).map_err(err)?;
    let panels = root.split_evenly((2, 2));
    let points = m.losses.values().chain(m.figures.values()).flatten();
    let end = points.map(|p| p.0).chain(m.scores.iter().map(|s| s.0)).fold(0.0, f64::max).max(0.1);
    let span = |values: &mut dyn Iterator<Item = f64>| {
        let (lo, hi) = values.fold((f64::MAX, f64::MIN), |(lo, hi), v| (lo.min(v), hi.max(v)));
        if lo > hi {
            (0.0, 1.0)
        } else if hi - lo < 1e-9 {
            (lo - 0.5, hi + 0.5)
        } else {
            (lo, hi + 0.05 * (hi - lo))
        }
    };
    // Every named loss, then every other named figure (policy entropy for AlphaZero).
    let names = |series: &BTreeMap<String, Vec<(f64, f64)>>| series.keys().cloned().collect::<Vec<_>>().join(", ");
    for (panel, series, caption) in [
        (&panels[0], &m.losses, "training losses".to_string()),
        (
            &panels[1],
            &m.figures,
            if m.figures.contains_key("entropy") && m.figures.len() == 1 {
                "policy entropy (nats)".to_string()
            } else {
                names(&m.figures)
            },
        ),
    ] {
        let (lo, hi) = span(&mut series.values().flatten().map(|p| p.1));
        let mut chart = minutes_panel(panel, caption, (end, &m.x_label), lo.min(0.0)..hi)?;
        for (k, (name, points)) in series.iter().enumerate() {
            let colour = Palette99::pick(k).to_rgba();
            let (line, label) = if m.smooth > 1 {
                chart
                    .draw_series(LineSeries::new(points.iter().copied(), colour.mix(0.25).stroke_width(1)))
                    .map_err(err)?;
                (trailing_mean(points, m.smooth), format!("{name} (mean of {})", m.smooth))
            } else {
                (points.clone(), name.clone())
            };
            chart
                .draw_series(LineSeries::new(line, colour.stroke_width(2)))
                .map_err(err)?
                .label(label)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2)));
        }
        if !series.is_empty() {
            chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw().map_err(err)?;
        }
    }
    // Evaluation scores.
    {
        let mut chart =
            minutes_panel(&panels[2], "score against the ladder (95% interval)", (end, &m.x_label), 0.0..1.0)?;
        for (k, name) in m.opponents.iter().enumerate() {
            let colour = Palette99::pick(k).to_rgba();
            let points: Vec<_> = m.scores.iter().filter(|s| s.1 == k).collect();
            chart
                .draw_series(LineSeries::new(points.iter().map(|s| (s.0, s.2)), colour.stroke_width(2)))
                .map_err(err)?
                .label(name.clone())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2)));
            chart
                .draw_series(points.iter().map(|s| ErrorBar::new_vertical(s.0, s.3, s.2, s.4, colour.filled(), 6)))
                .map_err(err)?;
        }
        if !m.opponents.is_empty() {
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::LowerRight)
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK)
                .draw()
                .map_err(err)?;
        }
    }
    // Elo.
    {
        let (lo, hi) = span(&mut m.elo.iter().flat_map(|e| [e.2, e.3]).chain(m.ladder.iter().map(|l| l.1)));
        let anchor = m.anchor.as_deref().unwrap_or("the anchor");
        // Evaluations without Elo (more than two players: each rung is a table of one opponent)
        // leave the panel empty; its title says why rather than showing a blank scale.
        let title = if m.elo.is_empty() && !m.opponents.is_empty() {
            "Elo (none: rated in two-player games only)".to_string()
        } else {
            format!("Elo ({anchor} = 0)")
        };
        let mut chart = minutes_panel(&panels[3], title, (end, &m.x_label), lo.min(0.0)..hi)?;
        // The ladder's own ratings as level lines in the colours of the score panel.
        for &(k, e) in &m.ladder {
            let colour = Palette99::pick(k).to_rgba();
            chart.draw_series(LineSeries::new([(0.0, e), (end, e)], colour.stroke_width(1))).map_err(err)?;
        }
        chart.draw_series(LineSeries::new(m.elo.iter().map(|e| (e.0, e.1)), BLACK.stroke_width(2))).map_err(err)?;
        chart
            .draw_series(m.elo.iter().map(|e| ErrorBar::new_vertical(e.0, e.2, e.1, e.3, BLACK.filled(), 6)))
            .map_err(err)?;
    }
    root.present().map_err(err)
}

/// One panel of the learning curves: a caption, minutes (or the run's progress) along x, a mesh.
fn minutes_panel<'a, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, Shift>,
    caption: impl AsRef<str>,
    (end, x_label): (f64, &str),
    y: std::ops::Range<f64>,
) -> Result<
    ChartContext<'a, DB, Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>>,
> {
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 18))
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(50)
        .build_cartesian_2d(0.0..end, y)
        .map_err(err)?;
    chart.configure_mesh().x_desc(x_label).draw().map_err(err)?;
    Ok(chart)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generation_that_did_not_train_is_no_point_of_the_curves() {
        // Lines of both schemas: the flat one older runs wrote, and the typed one. A generation
        // that did not train has no losses in the typed line and zeros in the flat one.
        let line = |generation: u64, samples_per_second: f64, loss: f64| {
            let minutes = 60.0 * generation as f64;
            if generation % 2 == 1 {
                format!(
                    r#"{{"event":"generation","generation":{generation},"steps":0,"games":0,"positions":0,"window":0,"selfplay_seconds":0.0,"positions_per_second":0.0,"evaluations_per_second":0.0,"mean_batch":0.0,"mean_game_length":0.0,"train_seconds":0.0,"samples_per_second":{samples_per_second},"policy_loss":{loss},"value_loss":{},"entropy":0.0,"lr":0.0,"wall_seconds":{minutes}}}"#,
                    loss / 10.0
                )
            } else {
                let trained = samples_per_second > 0.0;
                let mut m = meeple_learn::metrics::Metrics {
                    schema: meeple_learn::metrics::SCHEMA,
                    generation,
                    wall_seconds: minutes,
                    trained,
                    ..Default::default()
                };
                if trained {
                    m.losses.insert("policy".into(), loss);
                    m.losses.insert("value".into(), loss / 10.0);
                }
                m.figures.insert("entropy".into(), 0.0);
                m.to_line()
            }
        };
        let path = std::env::temp_dir().join(format!("meeple-plot-{}-metrics.jsonl", std::process::id()));
        let lines = [line(1, 900.0, 2.0), line(2, 0.0, 0.0), line(3, 800.0, 1.5), line(4, 700.0, 1.25)];
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        let m = read_metrics(&path, Axis::Minutes).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(m.losses["policy"], [(1.0, 2.0), (3.0, 1.5), (4.0, 1.25)]);
        assert_eq!(m.losses["value"].len(), 3);
        assert_eq!(m.figures.keys().collect::<Vec<_>>(), ["entropy"]);
    }

    #[test]
    fn a_trailing_mean_averages_each_point_with_those_before_it() {
        let points = [(0.0, 1.0), (1.0, 3.0), (2.0, 5.0), (3.0, 7.0)];
        assert_eq!(trailing_mean(&points, 2), [(0.0, 1.0), (1.0, 2.0), (2.0, 4.0), (3.0, 6.0)]);
        assert_eq!(trailing_mean(&points, 3), [(0.0, 1.0), (1.0, 2.0), (2.0, 3.0), (3.0, 5.0)]);
        assert_eq!(trailing_mean(&points, 1), points);
        assert_eq!(trailing_mean(&points, 10)[3], (3.0, 4.0));
    }

    /// A learner's curves against its episodes: x is each line's progress, labelled by trainer.
    #[test]
    fn curves_follow_the_runs_progress_when_asked() {
        let line = |episodes: u64, seconds: f64, q: f64| {
            format!(
                r#"{{"schema":1,"event":"generation","trainer":"dqn","generation":{episodes},"episodes":{episodes},"wall_seconds":{seconds},"trained":true,"losses":{{"q":{q}}}}}"#
            )
        };
        let path = std::env::temp_dir().join(format!("meeple-plot-{}-progress.jsonl", std::process::id()));
        std::fs::write(&path, [line(10, 30.0, 0.5), line(20, 90.0, 0.25)].join("\n") + "\n").unwrap();
        let by_time = read_metrics(&path, Axis::Minutes).unwrap();
        let by_progress = read_metrics(&path, Axis::Progress).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!((by_time.losses["q"].clone(), by_time.x_label.as_str()), (vec![(0.5, 0.5), (1.5, 0.25)], "minutes"));
        assert_eq!(
            (by_progress.losses["q"].clone(), by_progress.x_label.as_str()),
            (vec![(10.0, 0.5), (20.0, 0.25)], "episodes")
        );
    }
}
