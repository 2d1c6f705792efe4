//! The agreement plots every run that decides labelled tasks can show: argument
//! agreement by label (a histogram) and result agreement per tool (a bar per label), so
//! a reader sees *why* plans were accepted or not, from one point per task.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::html::escape;
use crate::svg::{count_ticks, legend, open as svg_open, tick};

/// What the plots need of one task, beyond a run's counts.
#[derive(Debug, Clone)]
pub struct TaskPoint<'a> {
    /// The tool (or `a>b` chain) the plan was drawn for: the per-tool plot's row.
    pub tool: &'a str,
    /// Labelled hallucinated (else correct): which of the two series it is counted in.
    pub hallucinated: bool,
    /// Samples whose arguments equal the modal plan's.
    pub arg_count: usize,
    /// Samples in all.
    pub arg_n: usize,
    /// Result agreement, when some step's tool is declared deterministic.
    pub result_agreement: Option<f64>,
}

/// Argument-agreement histogram: `samples + 1` bins (one per possible count when every
/// task has `samples` samples), counts of correct and hallucinated tasks in each.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Histogram {
    /// Correct tasks per bin.
    pub correct: Vec<usize>,
    /// Hallucinated tasks per bin.
    pub hallucinated: Vec<usize>,
}

/// Counts each task into the bin of its argument agreement, out of `samples`.
pub fn histogram(samples: usize, points: &[TaskPoint<'_>]) -> Histogram {
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
pub struct ToolResults {
    /// The tool (or chain).
    pub tool: String,
    /// Its tasks, with or without a result agreement.
    pub tasks: usize,
    /// Result agreements of the correct plans' tasks that have one.
    pub correct: Vec<f64>,
    /// The same for hallucinated plans.
    pub hallucinated: Vec<f64>,
    /// Whether the run quarantined it (for a chain, any of its tools).
    pub quarantined: bool,
}

fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

fn min(v: &[f64]) -> Option<f64> {
    v.iter().copied().reduce(f64::min)
}

/// The per-tool plot's rows, by tool name, given the tools the run quarantined.
pub fn tool_results(quarantined: &[String], points: &[TaskPoint<'_>]) -> Vec<ToolResults> {
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

/// The correct plans' color, in every plot.
pub const CORRECT: &str = "#2f7ed8";
/// The hallucinated plans' color.
pub const HALLUCINATED: &str = "#e4572e";
/// A quarantined tool's mark.
pub const QUARANTINED: &str = "#c0392b";
/// The band behind a quarantined tool's row.
pub const QUARANTINED_BAND: &str = "#fbe4e1";

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

/// The argument-agreement histogram (`<svg id="arg-hist">`): two bars per bin,
/// correct and hallucinated tasks.
pub fn histogram_svg(samples: usize, hist: &Histogram) -> String {
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

/// The result-agreement plot (`<svg id="tool-results">`): a row per tool, a bar per
/// label at its mean, quarantined tools banded.
pub fn tools_svg(rows: &[ToolResults]) -> String {
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

    fn point(
        tool: &'static str,
        hallucinated: bool,
        count: usize,
        r: Option<f64>,
    ) -> TaskPoint<'static> {
        TaskPoint {
            tool,
            hallucinated,
            arg_count: count,
            arg_n: 10,
            result_agreement: r,
        }
    }

    fn points() -> Vec<TaskPoint<'static>> {
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
}
