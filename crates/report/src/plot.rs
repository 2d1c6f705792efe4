//! The agreement plots every run page shows: argument agreement (a histogram, split by
//! label when tasks carry labels) and result agreement per tool (a bar per series), so
//! a reader sees *why* plans were accepted or not. They are drawn from the counts in
//! [`crate::agreement`].

use std::fmt::Write as _;

use plangate_gate::calibration::Report;

use crate::agreement::{HALLUCINATED, Histogram, Series, ToolRow};
use crate::html::escape;
use crate::svg::{count_ticks, legend, open as svg_open, tick};

/// The naive scorer's curve.
pub const NAIVE: &str = "#7f8c8d";

/// A quarantined tool's mark.
pub const QUARANTINED: &str = "#c0392b";
/// The band behind a quarantined tool's row.
pub const QUARANTINED_BAND: &str = "#fbe4e1";

/// Where the histogram's parts go: the plot area inside the picture, the count scale,
/// and the width of a bin's slot and of each of its bars.
struct HistLayout {
    samples: usize,
    ht: f64,
    left: f64,
    top: f64,
    pw: f64,
    ph: f64,
    ymax: u64,
    slot: f64,
    bar: f64,
}

impl HistLayout {
    fn y(&self, v: u64) -> f64 {
        self.top + self.ph - self.ph * v as f64 / self.ymax as f64
    }
}

/// The histogram's title: by label when its tasks carry labels.
pub fn histogram_title(hist: &Histogram) -> &'static str {
    if hist.labelled() {
        "Argument agreement by label"
    } else {
        "Argument agreement"
    }
}

/// The argument-agreement histogram (`<svg id="arg-hist">`): a bar per bin and series.
pub fn histogram_svg(hist: &Histogram) -> String {
    let (w, ht) = (1000.0, 380.0);
    let (left, right, top, bottom) = (60.0, 20.0, 50.0, 60.0);
    let (pw, ph) = (w - left - right, ht - top - bottom);
    let series = hist.series();
    let bins = hist.samples + 1;
    let max = series
        .iter()
        .flat_map(|s| hist.bins[*s as usize].iter())
        .copied()
        .max()
        .unwrap_or(0);
    let (ymax, yticks) = count_ticks(max);
    let slot = pw / bins as f64;
    let l = HistLayout {
        samples: hist.samples,
        ht,
        left,
        top,
        pw,
        ph,
        ymax,
        slot,
        bar: slot * 0.76 / series.len() as f64,
    };
    let title = histogram_title(hist);
    let mut s = String::new();
    svg_open(&mut s, "arg-hist", title, w, ht);
    let _ = writeln!(
        s,
        "<text class=\"title\" x=\"{left}\" y=\"22\">{title}</text>"
    );
    let items: Vec<(&str, &str, u64)> = series
        .iter()
        .map(|x| (x.color(), x.legend(), hist.bins[*x as usize].iter().sum()))
        .collect();
    legend(&mut s, w - right - 260.0, 14.0, &items);
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
    let labelled = bins * series.len() <= 42;
    let every = bins.div_ceil(11).max(1);
    for b in 0..bins {
        histogram_bars(&mut s, &l, b, hist, &series, labelled);
        if b % every == 0 || b + 1 == bins {
            agreement_tick(&mut s, &l, b);
        }
    }
    histogram_axes(&mut s, &l);
    s.push_str("</svg>\n");
    s
}

/// Bin `b`'s bars, a series each, each with its count above it when `labelled`.
fn histogram_bars(
    s: &mut String,
    l: &HistLayout,
    b: usize,
    hist: &Histogram,
    series: &[Series],
    labelled: bool,
) {
    let (samples, bar) = (l.samples, l.bar);
    let x0 = l.left + l.slot * b as f64 + l.slot * 0.12;
    for (i, x) in series.iter().enumerate() {
        let v = hist.bins[*x as usize][b];
        let xx = x0 + bar * i as f64;
        let yy = l.y(v);
        let _ = writeln!(
            s,
            "<rect x=\"{xx:.1}\" y=\"{yy:.1}\" width=\"{bar:.1}\" height=\"{:.1}\" fill=\"{}\"><title>{}, agreement {b}/{samples}: {v} tasks</title></rect>",
            l.top + l.ph - yy,
            x.color(),
            x.name(),
        );
        if labelled && v > 0 {
            let _ = writeln!(
                s,
                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-size=\"10\">{v}</text>",
                xx + bar / 2.0,
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

/// Where the per-tool plot's parts go: a row per tool, a bar per series in each row on
/// a 0..1 scale across the plot area.
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
/// series (`series`, the ones the run has) at its mean, quarantined tools banded.
pub fn tools_svg(rows: &[ToolRow], series: &[Series]) -> String {
    let bar_h = 12.0;
    let row_h = 12.0 + (bar_h + 2.0) * series.len().max(1) as f64;
    let (left, right, top, bottom) = (230.0, 270.0, 64.0, 50.0);
    let w = 1000.0;
    let l = ToolsLayout {
        ht: top + bottom + row_h * rows.len().max(1) as f64,
        left,
        pw: w - left - right,
        row_h,
        bar_h,
        bottom_y: top + row_h * rows.len() as f64,
    };

    let mut s = String::new();
    svg_open(&mut s, "tool-results", "Result agreement per tool", w, l.ht);
    let _ = writeln!(
        s,
        "<text class=\"title\" x=\"16\" y=\"22\">Result agreement per tool</text>"
    );
    tools_legend(&mut s, &l, rows, series);
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
        tool_row(&mut s, &l, top + row_h * i as f64, r, series);
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
fn tools_legend(s: &mut String, l: &ToolsLayout, rows: &[ToolRow], series: &[Series]) {
    let mut x = l.left;
    for sr in series {
        let n: u64 = rows
            .iter()
            .filter_map(|r| r.series[*sr as usize])
            .map(|v| v.tasks)
            .sum();
        legend(s, x, 34.0, &[(sr.color(), sr.legend(), n)]);
        x += 200.0;
    }
    let _ = writeln!(
        s,
        "<rect x=\"{:.1}\" y=\"34\" width=\"12\" height=\"12\" fill=\"{QUARANTINED_BAND}\" stroke=\"{QUARANTINED}\"/><text x=\"{:.1}\" y=\"44.5\">quarantined tool ({})</text>",
        x + 20.0,
        x + 38.0,
        rows.iter().filter(|r| r.quarantined).count()
    );
}

/// One tool's row, from `y0` down: its name, then a bar per series with its mean, or a
/// note that none of its tasks had a deterministic step to compare.
fn tool_row(s: &mut String, l: &ToolsLayout, y0: f64, r: &ToolRow, series: &[Series]) {
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
    if r.series.iter().all(Option::is_none) {
        let _ = writeln!(
            s,
            "<text class=\"muted\" x=\"{:.1}\" y=\"{:.1}\">no deterministic step in any of its {} tasks</text>",
            left + 8.0,
            y0 + row_h / 2.0 + 4.0,
            r.tasks
        );
        return;
    }
    for (j, sr) in series.iter().enumerate() {
        let (color, label) = (sr.color(), sr.name());
        let by = y0 + 6.0 + (bar_h + 2.0) * j as f64;
        let note = match r.series[*sr as usize] {
            Some(v) => {
                let _ = writeln!(
                    s,
                    "<rect x=\"{left}\" y=\"{by:.1}\" width=\"{:.1}\" height=\"{bar_h}\" fill=\"{color}\"><title>{}, {label}: mean {:.3}, min {:.3}, over {} tasks</title></rect>",
                    l.x(v.mean) - left,
                    escape(&r.tool),
                    v.mean,
                    v.min,
                    v.tasks
                );
                format!("{:.3}, min {}, {} tasks", v.mean, tick(v.min), v.tasks)
            }
            None => "no tasks".to_string(),
        };
        let _ = writeln!(
            s,
            "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" fill=\"{color}\">{label}: {note}</text>",
            left + l.pw + 10.0,
            by + bar_h - 2.0
        );
    }
}

/// The ROC curves of a labelled run (`<svg id="roc">`): the gate's argument agreement
/// and the naive scorer's agreement, each flagging as hallucinated the tasks at or below
/// a threshold, from the strictest to the loosest; the diagonal is a coin.
pub fn roc_svg(c: &Report) -> String {
    let (w, ht) = (520.0, 440.0);
    let (left, right, top, bottom) = (60.0, 180.0, 40.0, 50.0);
    let (pw, ph) = (w - left - right, ht - top - bottom);
    let x = |fpr: f64| left + pw * fpr;
    let y = |tpr: f64| top + ph - ph * tpr;
    let mut s = String::new();
    let title = "ROC of argument agreement";
    svg_open(&mut s, "roc", title, w, ht);
    let _ = writeln!(
        s,
        "<text class=\"title\" x=\"{left}\" y=\"22\">{title}</text>"
    );
    for t in [0.0, 0.25, 0.5, 0.75, 1.0] {
        let _ = writeln!(
            s,
            "<line class=\"grid\" x1=\"{left}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            y(t),
            left + pw,
            y(t),
            left - 6.0,
            y(t) + 4.0,
            tick(t),
            x(t),
            top + ph + 16.0,
            tick(t)
        );
    }
    let _ = writeln!(
        s,
        "<line class=\"axis\" x1=\"{left}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{top}\" stroke-dasharray=\"4 4\"/>",
        top + ph,
        left + pw
    );
    let _ = writeln!(
        s,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">share of correct tasks flagged</text><text x=\"16\" y=\"{:.1}\" transform=\"rotate(-90 16 {:.1})\" text-anchor=\"middle\">share of hallucinated tasks flagged</text>",
        left + pw / 2.0,
        ht - 10.0,
        top + ph / 2.0,
        top + ph / 2.0
    );
    let curves = [
        ("gate", HALLUCINATED, &c.roc, c.auroc),
        ("naive scorer", NAIVE, &c.naive_roc, c.naive_auroc),
    ];
    for (i, (name, color, points, auroc)) in curves.iter().enumerate() {
        if points.is_empty() {
            continue;
        }
        let path: Vec<String> = points
            .iter()
            .map(|p| format!("{:.1},{:.1}", x(p.fpr), y(p.tpr)))
            .collect();
        let auc = auroc.map_or_else(|| "n/a".to_string(), |a| format!("{a:.3}"));
        let _ = writeln!(
            s,
            "<polyline class=\"roc-{i}\" fill=\"none\" stroke=\"{color}\" stroke-width=\"2\" points=\"{}\"><title>{} (AUROC {auc})</title></polyline>",
            path.join(" "),
            escape(name)
        );
        let ly = top + 10.0 + 22.0 * i as f64;
        let _ = writeln!(
            s,
            "<rect x=\"{:.1}\" y=\"{ly:.1}\" width=\"12\" height=\"12\" fill=\"{color}\"/><text x=\"{:.1}\" y=\"{:.1}\">{} AUROC {auc}</text>",
            left + pw + 14.0,
            left + pw + 32.0,
            ly + 10.5,
            escape(name)
        );
    }
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::agreement::Plots;

    use crate::agreement::tests::plots;

    /// Checks that every element is closed in order, as an XML parser would.
    pub(crate) fn assert_balanced(svg: &str) {
        let mut stack: Vec<&str> = Vec::new();
        let mut rest = svg;
        while let Some(i) = rest.find('<') {
            let tag = &rest[i + 1..];
            let end = tag.find('>').expect("unterminated tag");
            let body = &tag[..end];
            if let Some(name) = body.strip_prefix('/') {
                assert_eq!(stack.pop(), Some(name), "mismatched </{name}> in {svg}");
            } else if !body.ends_with('/') && !body.starts_with('!') {
                stack.push(body.split_whitespace().next().unwrap());
            }
            rest = &tag[end + 1..];
        }
        assert!(stack.is_empty(), "unclosed {stack:?} in {svg}");
    }

    #[test]
    fn svg_is_balanced_and_its_numbers_are_finite() {
        let p = plots();
        let h = p.histogram();
        let rows = p.tool_rows(&["get_order".to_string()], 40);
        let series = h.series();
        let mut unlabelled = Plots::default();
        unlabelled.add(Series::Unlabelled, (4, 5), Some((5, 5)), ["t"]);
        let u = unlabelled.histogram();
        for svg in [
            histogram_svg(&h),
            tools_svg(&rows, &series),
            tools_svg(&[], &series),
            histogram_svg(&u),
            tools_svg(&unlabelled.tool_rows(&[], 40), &u.series()),
        ] {
            assert!(svg.starts_with("<svg "), "{svg}");
            assert_balanced(&svg);
            assert!(!svg.contains("NaN") && !svg.contains("inf"), "{svg}");
            for part in svg.split(" height=\"").skip(1) {
                let v: f64 = part.split('"').next().unwrap().parse().unwrap();
                assert!(v >= 0.0, "{svg}");
            }
        }
        // One bar per bin and label (11 bins, 2 labels), plus the legend's two swatches.
        assert_eq!(histogram_svg(&h).matches("<rect").count(), 22 + 2);
        assert!(histogram_svg(&h).contains(">Argument agreement by label</text>"));
        // Unlabelled tasks are one series, under a title that names no label.
        assert_eq!(histogram_svg(&u).matches("<rect").count(), 6 + 1);
        assert!(histogram_svg(&u).contains(">Argument agreement</text>"));
        assert!(histogram_svg(&u).contains("<title>unlabelled, agreement 4/5: 1 tasks</title>"));
        // A quarantined tool's name is marked in the plot.
        assert!(tools_svg(&rows, &series).contains("get_user&gt;get_order (quarantined)"));
    }
}
