//! `plangate demo --html`: the demo's results as one self-contained HTML page (inline CSS
//! and SVG drawn here, no scripts, nothing fetched), so a reader can see *why* the naive
//! scorer and the gate disagree, not only that they do.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::results::{COLUMNS, DemoReport, table_rows};

/// What the plots need of one task, beyond the report's counts.
#[derive(Debug, Clone)]
pub(crate) struct TaskPoint {
    /// The tool (or `a>b` chain) the plan was drawn for.
    pub(crate) tool: &'static str,
    pub(crate) hallucinated: bool,
    /// Samples whose arguments equal the modal plan's.
    pub(crate) arg_count: usize,
    /// Samples in all.
    pub(crate) arg_n: usize,
    /// Result agreement, when some step's tool is declared deterministic.
    pub(crate) result_agreement: Option<f64>,
}

/// Escapes text for HTML element content and double- or single-quoted attributes, which
/// is all SVG embedded in HTML needs too.
pub(crate) fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Argument-agreement histogram: `samples + 1` bins (one per possible count when every
/// task has `samples` samples), counts of correct and hallucinated tasks in each.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Histogram {
    pub(crate) correct: Vec<usize>,
    pub(crate) hallucinated: Vec<usize>,
}

pub(crate) fn histogram(samples: usize, points: &[TaskPoint]) -> Histogram {
    let bins = samples + 1;
    let mut h = Histogram {
        correct: vec![0; bins],
        hallucinated: vec![0; bins],
    };
    for p in points {
        // A task with another sample count (a generator change, a malformed line) still
        // lands in the bin nearest its agreement, so the bins always add up to the tasks.
        let bin = (p.arg_count * samples + p.arg_n / 2)
            .checked_div(p.arg_n)
            .unwrap_or(0)
            .min(samples);
        if p.hallucinated {
            h.hallucinated[bin] += 1;
        } else {
            h.correct[bin] += 1;
        }
    }
    h
}

/// One row of the per-tool result-agreement plot. Correct and hallucinated plans are
/// kept apart: a made-up argument gives a different result per sample, so a mean over
/// both would mostly measure the share of hallucinations, not the tool.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ToolResults {
    pub(crate) tool: String,
    pub(crate) tasks: usize,
    /// Result agreements of the correct plans' tasks that have one.
    pub(crate) correct: Vec<f64>,
    /// The same for hallucinated plans.
    pub(crate) hallucinated: Vec<f64>,
    pub(crate) quarantined: bool,
}

fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

fn min(v: &[f64]) -> Option<f64> {
    v.iter().copied().reduce(f64::min)
}

pub(crate) fn tool_results(quarantined: &[String], points: &[TaskPoint]) -> Vec<ToolResults> {
    let mut by: BTreeMap<&str, ToolResults> = BTreeMap::new();
    for p in points {
        let row = by.entry(p.tool).or_insert_with(|| ToolResults {
            tool: p.tool.to_string(),
            tasks: 0,
            correct: Vec::new(),
            hallucinated: Vec::new(),
            // A chain is marked when any of its tools is: its results carry that tool's drift.
            quarantined: p
                .tool
                .split('>')
                .any(|t| quarantined.iter().any(|q| q == t)),
        });
        row.tasks += 1;
        // NaN would poison the mean and the axis; a count ratio never gives one, but a
        // plot is no place to find out.
        if let Some(v) = p.result_agreement.filter(|v| v.is_finite()) {
            if p.hallucinated {
                row.hallucinated.push(v);
            } else {
                row.correct.push(v);
            }
        }
    }
    by.into_values().collect()
}

const CORRECT: &str = "#2f7ed8";
const HALLUCINATED: &str = "#e4572e";
const QUARANTINED: &str = "#c0392b";
const QUARANTINED_BAND: &str = "#fbe4e1";

const CSS: &str = "\
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,'DejaVu Sans',sans-serif;\
margin:2rem auto;max-width:1100px;padding:0 1rem;color:#1d2430;background:#fff;line-height:1.4}\
h1{font-size:1.6rem;margin-bottom:.2rem}h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #ddd;padding-bottom:.2rem}\
p.lede{color:#555;margin-top:0}\
table{border-collapse:collapse;margin:.5rem 0}th,td{padding:.25rem .8rem;border-bottom:1px solid #e5e5e5;text-align:left}\
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}\
tr.sub th{padding-left:1.8rem;font-weight:normal;color:#444}\
thead th{border-bottom:2px solid #999}\
table.facts th{font-weight:normal;color:#555;white-space:nowrap;vertical-align:top}\
.q{color:#c0392b;font-weight:600}\
svg{display:block;margin:.5rem 0;max-width:100%;height:auto}\
svg text{font-family:inherit;font-size:12px;fill:#1d2430}\
svg .axis{stroke:#888;stroke-width:1}svg .grid{stroke:#eee;stroke-width:1}\
svg .title{font-size:15px;font-weight:600}svg .muted{fill:#777}\
";

/// The whole page.
pub(crate) fn render(r: &DemoReport, points: &[TaskPoint]) -> String {
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n\
         <title>plangate demo: {} tasks, seed {}</title>\n<style>{CSS}</style>\n</head>\n<body>\n",
        r.tasks, r.seed
    );
    let _ = writeln!(h, "<h1>plangate demo</h1>");
    let _ = writeln!(
        h,
        "<p class=\"lede\">{} tasks &times; {} samples over the seed world (seed {}), {} of them hallucinated. \
         The naive scorer and the gate judge the same executions.</p>",
        r.tasks, r.samples, r.seed, r.hallucinated_tasks
    );
    decisions_table(&mut h, r);
    facts(&mut h, r);

    let _ = writeln!(h, "<h2>Argument agreement by label</h2>");
    let _ = writeln!(
        h,
        "<p>Share of a task&#39;s samples whose arguments equal the most common plan&#39;s. \
         Correct plans should sit near 1.0 (a sample that slips an argument costs one bin) and \
         hallucinated ones far below, where each sample made up its own argument.</p>"
    );
    h.push_str(&histogram_svg(r.samples, &histogram(r.samples, points)));

    let _ = writeln!(h, "<h2>Result agreement per tool</h2>");
    let _ = writeln!(
        h,
        "<p>Mean share of samples whose deterministic steps returned the modal result, over \
         the tasks whose plans were drawn for the tool, correct and hallucinated plans apart \
         (a made-up argument changes the result too). Quarantined tools are declared \
         deterministic but drifted with live state, so their results are not trusted.</p>"
    );
    h.push_str(&tools_svg(&tool_results(&r.quarantined, points)));

    retry_table(&mut h, r);
    reasons_table(&mut h, r);
    by_tool_table(&mut h, r);
    h.push_str("</body>\n</html>\n");
    h
}

fn decisions_table(h: &mut String, r: &DemoReport) {
    h.push_str("<h2>Decisions</h2>\n<table id=\"decisions\">\n<thead><tr><th></th>");
    for (_, head) in COLUMNS {
        let _ = write!(h, "<th class=\"n\">{}</th>", escape(head));
    }
    h.push_str("</tr></thead>\n<tbody>\n");
    for row in table_rows(r) {
        let _ = write!(
            h,
            "<tr{}><th>{}</th>",
            if row.sub { " class=\"sub\"" } else { "" },
            escape(row.name)
        );
        for ((id, _), cell) in COLUMNS.iter().zip(&row.cells) {
            let _ = write!(
                h,
                "<td class=\"n\" id=\"{id}-{}\">{}</td>",
                row.key,
                escape(cell)
            );
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</tbody>\n</table>\n");
}

fn facts(h: &mut String, r: &DemoReport) {
    let quarantined = if r.quarantined.is_empty() {
        "none".to_string()
    } else {
        r.quarantined
            .iter()
            .map(|t| {
                let n = r
                    .quarantine_evidence
                    .get(t)
                    .and_then(serde_json::Value::as_array)
                    .map_or(0, Vec::len);
                format!(
                    "<span class=\"q\">{}</span> ({n} piece{} of evidence)",
                    escape(t),
                    if n == 1 { "" } else { "s" }
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let list = |v: &[String], empty: &str| {
        if v.is_empty() {
            escape(empty)
        } else {
            v.iter()
                .map(|s| escape(s))
                .collect::<Vec<_>>()
                .join("<br/>")
        }
    };
    let rows: [(&str, &str, String); 10] = [
        ("tasks", "tasks", r.tasks.to_string()),
        ("samples", "samples per task", r.samples.to_string()),
        ("seed", "seed", r.seed.to_string()),
        ("quarantined", "mis-declared tools found", quarantined),
        (
            "changed",
            "live sources that changed",
            list(&r.changed_live_mounts, "none"),
        ),
        ("driver", "world driver", list(&r.driver_actions, "off")),
        (
            "epoch",
            "epoch",
            format!("<code>{}</code>", escape(&r.epoch_id)),
        ),
        ("calls", "calls executed", r.calls.to_string()),
        ("elapsed", "wall time", format!("{:.2} s", r.elapsed_s)),
        ("rate", "calls per second", format!("{:.0}", r.calls_per_s)),
    ];
    h.push_str("<h2>Run</h2>\n<table class=\"facts\" id=\"facts\">\n<tbody>\n");
    for (key, name, html) in rows {
        let _ = writeln!(
            h,
            "<tr><th>{name}</th><td id=\"fact-{key}\">{html}</td></tr>"
        );
    }
    h.push_str("</tbody>\n</table>\n");
}

/// The defer path: how the deferrals it retried ended, by the reason each was first
/// deferred for, and what the retry epochs cost.
fn retry_table(h: &mut String, r: &DemoReport) {
    let x = &r.retry;
    let _ = write!(
        h,
        "<h2>Defer path</h2>\n<p>{} deferred tasks executed again in {} fresh epoch(s) with every source pinned, for {} more calls executed and {} reused (repeats of a call that ran twice alike): {:.1}% more calls than the first epoch, for {:.1}% more wall time.</p>\n\
         <table id=\"retry\">\n<thead><tr><th>first deferred for</th><th class=\"n\">accept</th><th class=\"n\">reject</th><th class=\"n\">defer</th></tr></thead>\n<tbody>\n",
        x.tasks_retried,
        x.rounds.len(),
        x.calls,
        x.reused,
        r.retry_price.calls_share * 100.0,
        r.retry_price.wall_share * 100.0,
    );
    for (reason, verdicts) in &x.resolved {
        let _ = write!(h, "<tr><th><code>{}</code></th>", escape(reason));
        for v in ["accept", "reject", "defer"] {
            let _ = write!(
                h,
                "<td class=\"n\">{}</td>",
                verdicts.get(v).copied().unwrap_or(0)
            );
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</tbody>\n</table>\n");
}

fn reasons_table(h: &mut String, r: &DemoReport) {
    h.push_str(
        "<h2>Gate reason codes</h2>\n<p>A decision carries every reason that applied, so these add up to more than the tasks.</p>\n\
         <table id=\"reasons\">\n<thead><tr><th>reason</th><th class=\"n\">tasks</th></tr></thead>\n<tbody>\n",
    );
    let mut rows: Vec<(&String, &usize)> = r.gate_reasons.iter().collect();
    rows.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    for (code, n) in rows {
        let _ = writeln!(
            h,
            "<tr><th><code>{}</code></th><td class=\"n\">{n}</td></tr>",
            escape(code)
        );
    }
    h.push_str("</tbody>\n</table>\n");
}

fn by_tool_table(h: &mut String, r: &DemoReport) {
    let verdicts = ["accept", "defer", "reject"];
    h.push_str("<h2>Gate verdicts per tool</h2>\n<table id=\"by-tool\">\n<thead><tr><th>tool</th>");
    for v in verdicts {
        let _ = write!(h, "<th class=\"n\">{v}</th>");
    }
    h.push_str("</tr></thead>\n<tbody>\n");
    for (tool, counts) in &r.gate_by_tool {
        let q = tool
            .split('>')
            .any(|t| r.quarantined.iter().any(|q| q == t));
        let _ = write!(
            h,
            "<tr><th><code>{}</code>{}</th>",
            escape(tool),
            if q {
                " <span class=\"q\">quarantined</span>"
            } else {
                ""
            }
        );
        for v in verdicts {
            let _ = write!(
                h,
                "<td class=\"n\">{}</td>",
                counts.get(v).copied().unwrap_or(0)
            );
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</tbody>\n</table>\n");
}

/// A tick label with as few decimals as it needs (0, 0.1, 0.33, 1).
fn tick(x: f64) -> String {
    let s = format!("{x:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

/// Round numbers for a count axis up to `max`: 1, 2 or 5 times a power of ten apart.
fn count_ticks(max: usize) -> (usize, Vec<usize>) {
    let max = max.max(1);
    let raw = max as f64 / 5.0;
    let pow = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * pow)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * pow)
        .max(1.0) as usize;
    let top = max.div_ceil(step) * step;
    (top, (0..=top).step_by(step).collect())
}

/// Opens an `<svg>` of `w` by `ht` whose accessible name is `title`.
fn svg_open(s: &mut String, id: &str, title: &str, w: f64, ht: f64) {
    let _ = writeln!(
        s,
        "<svg id=\"{id}\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {w} {ht}\" width=\"{w}\" height=\"{ht}\" role=\"img\" aria-labelledby=\"{id}-title\">"
    );
    let _ = writeln!(s, "<title id=\"{id}-title\">{title}</title>");
}

/// Where the histogram's parts go: the plot area inside the picture, the count scale,
/// and the width of a bin's slot and of each of its two bars.
struct HistLayout {
    samples: usize,
    ht: f64,
    left: f64,
    top: f64,
    pw: f64,
    ph: f64,
    ymax: usize,
    slot: f64,
    bar: f64,
}

impl HistLayout {
    fn y(&self, v: usize) -> f64 {
        self.top + self.ph - self.ph * v as f64 / self.ymax as f64
    }
}

fn histogram_svg(samples: usize, hist: &Histogram) -> String {
    let (w, ht) = (1000.0, 380.0);
    let (left, right, top, bottom) = (60.0, 20.0, 50.0, 60.0);
    let (pw, ph) = (w - left - right, ht - top - bottom);
    let bins = hist.correct.len();
    let max = hist
        .correct
        .iter()
        .chain(&hist.hallucinated)
        .copied()
        .max()
        .unwrap_or(0);
    let (ymax, yticks) = count_ticks(max);
    let slot = pw / bins as f64;
    let l = HistLayout {
        samples,
        ht,
        left,
        top,
        pw,
        ph,
        ymax,
        slot,
        bar: slot * 0.38,
    };

    let mut s = String::new();
    svg_open(&mut s, "arg-hist", "Argument agreement by label", w, ht);
    let _ = writeln!(
        s,
        "<text class=\"title\" x=\"{left}\" y=\"22\">Argument agreement by label</text>"
    );
    legend(
        &mut s,
        w - right - 260.0,
        14.0,
        &[
            (CORRECT, "correct plans", hist.correct.iter().sum()),
            (
                HALLUCINATED,
                "hallucinated plans",
                hist.hallucinated.iter().sum(),
            ),
        ],
    );
    for t in &yticks {
        let yy = l.y(*t);
        let _ = writeln!(
            s,
            "<line class=\"grid\" x1=\"{left}\" y1=\"{yy:.1}\" x2=\"{:.1}\" y2=\"{yy:.1}\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{t}</text>",
            left + pw,
            left - 6.0,
            yy + 4.0
        );
    }
    // Count labels over the bars only while they fit side by side.
    let labelled = bins <= 21;
    let every = bins.div_ceil(11).max(1);
    for b in 0..bins {
        histogram_bars(
            &mut s,
            &l,
            b,
            [hist.correct[b], hist.hallucinated[b]],
            labelled,
        );
        if b % every == 0 || b + 1 == bins {
            agreement_tick(&mut s, &l, b);
        }
    }
    histogram_axes(&mut s, &l);
    s.push_str("</svg>\n");
    s
}

/// Bin `b`'s two bars, correct then hallucinated, each with its count above it when
/// `labelled`.
fn histogram_bars(s: &mut String, l: &HistLayout, b: usize, counts: [usize; 2], labelled: bool) {
    let (samples, bar) = (l.samples, l.bar);
    let x0 = l.left + l.slot * b as f64 + l.slot * 0.12;
    for (i, (v, color, label)) in [
        (counts[0], CORRECT, "correct"),
        (counts[1], HALLUCINATED, "hallucinated"),
    ]
    .into_iter()
    .enumerate()
    {
        let x = x0 + bar * i as f64;
        let yy = l.y(v);
        let _ = writeln!(
            s,
            "<rect x=\"{x:.1}\" y=\"{yy:.1}\" width=\"{bar:.1}\" height=\"{:.1}\" fill=\"{color}\"><title>{label}, agreement {}/{samples}: {v} tasks</title></rect>",
            l.top + l.ph - yy,
            b
        );
        if labelled && v > 0 {
            let _ = writeln!(
                s,
                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-size=\"10\">{v}</text>",
                x + bar / 2.0,
                yy - 3.0
            );
        }
    }
}

/// The agreement under bin `b`: its count of agreeing samples over all of them.
fn agreement_tick(s: &mut String, l: &HistLayout, b: usize) {
    let agreement = if l.samples == 0 {
        0.0
    } else {
        b as f64 / l.samples as f64
    };
    let _ = writeln!(
        s,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
        l.left + l.slot * (b as f64 + 0.5),
        l.top + l.ph + 18.0,
        tick(agreement)
    );
}

fn histogram_axes(s: &mut String, l: &HistLayout) {
    let (left, top, pw, ph, samples) = (l.left, l.top, l.pw, l.ph, l.samples);
    let _ = writeln!(
        s,
        "<line class=\"axis\" x1=\"{left}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\"/><line class=\"axis\" x1=\"{left}\" y1=\"{top}\" x2=\"{left}\" y2=\"{:.1}\"/>",
        top + ph,
        left + pw,
        top + ph,
        top + ph
    );
    let _ = writeln!(
        s,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">argument agreement (samples equal to the modal plan, of {samples})</text>",
        left + pw / 2.0,
        l.ht - 14.0
    );
    let _ = writeln!(
        s,
        "<text x=\"16\" y=\"{:.1}\" text-anchor=\"middle\" transform=\"rotate(-90 16 {:.1})\">tasks</text>",
        top + ph / 2.0,
        top + ph / 2.0
    );
}

fn legend(s: &mut String, x: f64, y: f64, items: &[(&str, &str, usize)]) {
    for (i, (color, name, n)) in items.iter().enumerate() {
        let yy = y + 18.0 * i as f64;
        let _ = writeln!(
            s,
            "<rect x=\"{x:.1}\" y=\"{yy:.1}\" width=\"12\" height=\"12\" fill=\"{color}\"/><text x=\"{:.1}\" y=\"{:.1}\">{} ({n})</text>",
            x + 18.0,
            yy + 10.5,
            escape(name)
        );
    }
}

/// Where the per-tool plot's parts go: a row per tool, two bars per row (correct and
/// hallucinated plans) on a 0..1 scale across the plot area.
struct ToolsLayout {
    ht: f64,
    left: f64,
    pw: f64,
    row_h: f64,
    bar_h: f64,
    /// Where the rows end and the axis runs.
    bottom_y: f64,
}

impl ToolsLayout {
    fn x(&self, v: f64) -> f64 {
        self.left + self.pw * v.clamp(0.0, 1.0)
    }
}

fn tools_svg(rows: &[ToolResults]) -> String {
    let row_h = 36.0;
    let (left, right, top, bottom) = (230.0, 270.0, 64.0, 50.0);
    let w = 1000.0;
    let l = ToolsLayout {
        ht: top + bottom + row_h * rows.len().max(1) as f64,
        left,
        pw: w - left - right,
        row_h,
        bar_h: 12.0,
        bottom_y: top + row_h * rows.len() as f64,
    };

    let mut s = String::new();
    svg_open(&mut s, "tool-results", "Result agreement per tool", w, l.ht);
    let _ = writeln!(
        s,
        "<text class=\"title\" x=\"16\" y=\"22\">Result agreement per tool</text>"
    );
    tools_legend(&mut s, &l, rows);
    for (i, r) in rows.iter().enumerate() {
        if r.quarantined {
            let _ = writeln!(
                s,
                "<rect x=\"8\" y=\"{:.1}\" width=\"{:.1}\" height=\"{row_h}\" fill=\"{QUARANTINED_BAND}\"/>",
                top + row_h * i as f64,
                w - 16.0
            );
        }
    }
    let bottom_y = l.bottom_y;
    for i in 0..=10 {
        let v = i as f64 / 10.0;
        let xx = l.x(v);
        let _ = writeln!(
            s,
            "<line class=\"grid\" x1=\"{xx:.1}\" y1=\"{top}\" x2=\"{xx:.1}\" y2=\"{bottom_y:.1}\"/><text x=\"{xx:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            bottom_y + 16.0,
            tick(v)
        );
    }
    for (i, r) in rows.iter().enumerate() {
        tool_row(&mut s, &l, top + row_h * i as f64, r);
    }
    let _ = writeln!(
        s,
        "<line class=\"axis\" x1=\"{left}\" y1=\"{bottom_y:.1}\" x2=\"{:.1}\" y2=\"{bottom_y:.1}\"/>",
        left + l.pw
    );
    let _ = writeln!(
        s,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">mean result agreement (share of samples with the modal result)</text>",
        left + l.pw / 2.0,
        l.ht - 12.0
    );
    s.push_str("</svg>\n");
    s
}

/// The swatches over the per-tool plot, each with how many tasks (or tools) it covers.
fn tools_legend(s: &mut String, l: &ToolsLayout, rows: &[ToolResults]) {
    let left = l.left;
    let count = |f: fn(&ToolResults) -> &Vec<f64>| rows.iter().map(|r| f(r).len()).sum();
    legend(
        s,
        left,
        34.0,
        &[(CORRECT, "correct plans", count(|r| &r.correct))],
    );
    legend(
        s,
        left + 200.0,
        34.0,
        &[(
            HALLUCINATED,
            "hallucinated plans",
            count(|r| &r.hallucinated),
        )],
    );
    let _ = writeln!(
        s,
        "<rect x=\"{:.1}\" y=\"34\" width=\"12\" height=\"12\" fill=\"{QUARANTINED_BAND}\" stroke=\"{QUARANTINED}\"/><text x=\"{:.1}\" y=\"44.5\">quarantined tool ({})</text>",
        left + 420.0,
        left + 438.0,
        rows.iter().filter(|r| r.quarantined).count()
    );
}

/// One tool's row, from `y0` down: its name, then a bar per label with its mean, or a
/// note that none of its tasks had a deterministic step to compare.
fn tool_row(s: &mut String, l: &ToolsLayout, y0: f64, r: &ToolResults) {
    let (left, row_h, bar_h) = (l.left, l.row_h, l.bar_h);
    let _ = writeln!(
        s,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\"{}>{}{}</text>",
        left - 8.0,
        y0 + row_h / 2.0 + 4.0,
        if r.quarantined {
            " font-weight=\"600\" fill=\"#c0392b\""
        } else {
            ""
        },
        escape(&r.tool),
        if r.quarantined { " (quarantined)" } else { "" }
    );
    if r.correct.is_empty() && r.hallucinated.is_empty() {
        let _ = writeln!(
            s,
            "<text class=\"muted\" x=\"{:.1}\" y=\"{:.1}\">no deterministic step in any of its {} tasks</text>",
            left + 8.0,
            y0 + row_h / 2.0 + 4.0,
            r.tasks
        );
        return;
    }
    for (j, (values, color, label)) in [
        (&r.correct, CORRECT, "correct"),
        (&r.hallucinated, HALLUCINATED, "hallucinated"),
    ]
    .into_iter()
    .enumerate()
    {
        let by = y0 + 5.0 + (bar_h + 2.0) * j as f64;
        let note = match (mean(values), min(values)) {
            (Some(m), Some(lo)) => {
                let _ = writeln!(
                    s,
                    "<rect x=\"{left}\" y=\"{by:.1}\" width=\"{:.1}\" height=\"{bar_h}\" fill=\"{color}\"><title>{}, {label} plans: mean {m:.3}, min {lo:.3}, over {} tasks</title></rect>",
                    l.x(m) - left,
                    escape(&r.tool),
                    values.len()
                );
                format!("{m:.3}, min {}, {} tasks", tick(lo), values.len())
            }
            _ => "no tasks".to_string(),
        };
        let _ = writeln!(
            s,
            "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" fill=\"{color}\">{label}: {note}</text>",
            left + l.pw + 10.0,
            by + bar_h - 2.0
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::Column;

    fn point(tool: &'static str, hallucinated: bool, count: usize, r: Option<f64>) -> TaskPoint {
        TaskPoint {
            tool,
            hallucinated,
            arg_count: count,
            arg_n: 10,
            result_agreement: r,
        }
    }

    fn report() -> DemoReport {
        DemoReport {
            tasks: 5,
            samples: 10,
            seed: 7,
            hallucinated_tasks: 2,
            consistent_fabrications: 1,
            naive: Column {
                rejected: 3,
                rejected_correct: 2,
                false_positive_rate: 2.0 / 3.0,
                deferred: 0,
                accepted: 2,
                hallucinations_caught: 1,
                accepted_hallucinated: 1,
                consistent_accepted: 1,
                ..Column::default()
            },
            seed_rule: Column {
                rejected: 1,
                accepted: 3,
                hallucinations_caught: 1,
                accepted_hallucinated: 1,
                consistent_accepted: 1,
                ..Column::default()
            },
            gate_one_epoch: Column {
                rejected: 1,
                deferred: 2,
                accepted: 2,
                hallucinations_caught: 1,
                ..Column::default()
            },
            retry: plangate_harness::RetryReport::default(),
            retry_price: crate::results::RetryPrice::default(),
            gate: Column {
                rejected: 2,
                rejected_correct: 0,
                false_positive_rate: 0.0,
                deferred: 1,
                accepted: 2,
                hallucinations_caught: 2,
                accepted_hallucinated: 0,
                consistent_caught_by_referential_miss: 1,
                ..Column::default()
            },
            quarantined: vec!["search<index>".into()],
            quarantine_evidence: [(
                "search<index>".to_string(),
                serde_json::json!([{"kind": "drift"}, {"kind": "witness"}]),
            )]
            .into_iter()
            .collect(),
            changed_live_mounts: vec!["/live/index & \"more\"".into()],
            driver_actions: vec!["append-segment at 15% of tasks".into()],
            epoch_id: "ep<1>".into(),
            calls: 60,
            elapsed_s: 1.5,
            calls_per_s: 40.0,
            gate_reasons: [("fabricated_arguments".to_string(), 2)]
                .into_iter()
                .collect(),
            gate_by_tool: [(
                "get_user>get_order".to_string(),
                [("accept", 2), ("reject", 1)].into_iter().collect(),
            )]
            .into_iter()
            .collect(),
        }
    }

    fn points() -> Vec<TaskPoint> {
        vec![
            point("get_user>get_order", false, 10, Some(1.0)),
            point("get_user>get_order", false, 10, Some(0.9)),
            point("search<index>", false, 9, None),
            point("search<index>", true, 3, Some(0.4)),
            TaskPoint {
                arg_n: 7,
                ..point("read_file", true, 5, None)
            },
        ]
    }

    #[test]
    fn escape_covers_markup_and_quotes() {
        assert_eq!(
            escape(r#"<a href="x">'&'</a>"#),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
        assert_eq!(escape("plain ü"), "plain ü");
    }

    #[test]
    fn bins_add_up_to_the_tasks_and_split_by_label() {
        let h = histogram(10, &points());
        assert_eq!(h.correct.len(), 11);
        assert_eq!(h.hallucinated.len(), 11);
        assert_eq!(
            h.correct.iter().sum::<usize>() + h.hallucinated.iter().sum::<usize>(),
            5
        );
        assert_eq!(h.correct[10], 2);
        assert_eq!(h.correct[9], 1);
        assert_eq!(h.hallucinated[3], 1);
        // 5 of 7 is 0.714, nearest bin 7 of 10.
        assert_eq!(h.hallucinated[7], 1);
        let empty = histogram(0, &[point("x", false, 0, None)]);
        assert_eq!(empty.correct, vec![1]);
    }

    #[test]
    fn tool_rows_skip_null_results_and_mark_quarantined_chains() {
        let rows = tool_results(&["get_order".to_string()], &points());
        let chain = rows
            .iter()
            .find(|r| r.tool == "get_user>get_order")
            .unwrap();
        assert!(chain.quarantined);
        assert_eq!(chain.tasks, 2);
        assert!((mean(&chain.correct).unwrap() - 0.95).abs() < 1e-9);
        assert_eq!(min(&chain.correct), Some(0.9));
        let search = rows.iter().find(|r| r.tool == "search<index>").unwrap();
        assert!(!search.quarantined);
        assert_eq!(
            (search.tasks, &search.correct, &search.hallucinated),
            (2, &vec![], &vec![0.4])
        );
        let read = rows.iter().find(|r| r.tool == "read_file").unwrap();
        assert_eq!(mean(&read.hallucinated), None);
    }

    #[test]
    fn page_is_escaped_and_has_both_plots() {
        let html = render(&report(), &points());
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert!(html.ends_with("</html>\n"));
        assert_balanced(html.trim_start_matches("<!DOCTYPE html>"));
        // Every angle bracket of user text is escaped: the raw names never appear.
        assert!(!html.contains("search<index>"));
        assert!(html.contains("search&lt;index&gt;"));
        assert!(html.contains("ep&lt;1&gt;"));
        assert!(html.contains("/live/index &amp; &quot;more&quot;"));
        assert!(html.contains("(2 pieces of evidence)"));
        assert!(html.contains("<td class=\"n\" id=\"naive-false_positive_rate\">66.7%</td>"));
        assert!(html.contains("<td class=\"n\" id=\"gate-hallucinations_caught\">2 of 2</td>"));
        assert!(html.contains("<td class=\"n\" id=\"seed-consistent_accepted\">1</td>"));
        assert!(
            html.contains(
                "<td class=\"n\" id=\"gate-consistent_caught_by_referential_miss\">1</td>"
            )
        );
        // Nothing is fetched: no scripts, no external references.
        assert!(!html.contains("<script"));
        assert!(!html.contains("src="));
        assert!(!html.contains("href="));
        assert_eq!(html.matches("<svg ").count(), 2);
        assert_eq!(html.matches("</svg>").count(), 2);
        assert!(html.contains("<title id=\"arg-hist-title\">Argument agreement by label</title>"));
        assert!(
            html.contains("<title id=\"tool-results-title\">Result agreement per tool</title>")
        );
    }

    /// Checks that every element is closed in order, as an XML parser would.
    fn assert_balanced(svg: &str) {
        let mut stack: Vec<&str> = Vec::new();
        let mut rest = svg;
        while let Some(i) = rest.find('<') {
            let tag = &rest[i + 1..];
            let end = tag.find('>').expect("unterminated tag");
            let body = &tag[..end];
            if let Some(name) = body.strip_prefix('/') {
                assert_eq!(stack.pop(), Some(name), "mismatched </{name}> in {svg}");
            } else if !body.ends_with('/') {
                stack.push(body.split_whitespace().next().unwrap());
            }
            rest = &tag[end + 1..];
        }
        assert!(stack.is_empty(), "unclosed {stack:?} in {svg}");
    }

    #[test]
    fn svg_is_balanced_and_its_numbers_are_finite() {
        let h = histogram(10, &points());
        let rows = tool_results(&["get_order".to_string()], &points());
        for svg in [histogram_svg(10, &h), tools_svg(&rows), tools_svg(&[])] {
            assert!(svg.starts_with("<svg "), "{svg}");
            assert_balanced(&svg);
            assert!(!svg.contains("NaN") && !svg.contains("inf"), "{svg}");
            for part in svg.split(" height=\"").skip(1) {
                let v: f64 = part.split('"').next().unwrap().parse().unwrap();
                assert!(v >= 0.0, "{svg}");
            }
        }
        // One bar per bin and label (11 bins, 2 labels), plus the legend's two swatches.
        assert_eq!(histogram_svg(10, &h).matches("<rect").count(), 22 + 2);
        // A quarantined tool's name is marked in the plot.
        assert!(tools_svg(&rows).contains("get_user&gt;get_order (quarantined)"));
    }

    #[test]
    fn count_ticks_cover_the_maximum_with_round_steps() {
        assert_eq!(count_ticks(0), (1, vec![0, 1]));
        assert_eq!(count_ticks(7), (8, vec![0, 2, 4, 6, 8]));
        let (top, ticks) = count_ticks(2613);
        assert!(top >= 2613 && ticks.len() <= 7, "{top} {ticks:?}");
        assert_eq!(tick(0.5), "0.5");
        assert_eq!(tick(1.0), "1");
        assert_eq!(tick(1.0 / 3.0), "0.33");
    }
}
