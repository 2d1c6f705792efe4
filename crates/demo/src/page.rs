//! `plangate demo --html`: the demo's results as one self-contained page, on the shell
//! and plots of plangate-report, so a reader can see *why* the naive scorer and the gate
//! disagree, not only that they do.

use std::fmt::Write as _;

use plangate_report::agreement::Plots;
use plangate_report::html::{Page, count_table, escape};
use plangate_report::plot::{histogram_svg, histogram_title, tools_svg};
use plangate_report::run::{TOOL_ROWS, retry_tables};

use crate::results::{COLUMNS, DemoReport, table_rows};

/// The whole page.
pub(crate) fn render(r: &DemoReport, plots: &Plots) -> String {
    let mut h = Page::new(&format!(
        "plangate demo: {} tasks, seed {}",
        r.tasks, r.seed
    ));
    h.h1("plangate demo");
    let _ = writeln!(
        h,
        "<p class=\"lede\">{} tasks &times; {} samples over the seed world (seed {}), {} of them hallucinated. \
         The naive scorer and the gate judge the same executions.</p>",
        r.tasks, r.samples, r.seed, r.hallucinated_tasks
    );
    decisions_table(&mut h, r);
    facts(&mut h, r);

    let hist = plots.histogram();
    h.h2(histogram_title(&hist));
    let _ = writeln!(
        h,
        "<p>Share of a task&#39;s samples whose arguments equal the most common plan&#39;s. \
         Correct plans should sit near 1.0 (a sample that slips an argument costs one bin) and \
         hallucinated ones far below, where each sample made up its own argument.</p>"
    );
    h.push_html(&histogram_svg(&hist));

    h.h2("Result agreement per tool");
    let _ = writeln!(
        h,
        "<p>Mean share of samples whose deterministic steps returned the modal result, over \
         the tasks whose plans were drawn for the tool, correct and hallucinated plans apart \
         (a made-up argument changes the result too). Quarantined tools are declared \
         deterministic but drifted with live state, so their results are not trusted.</p>"
    );
    h.push_html(&tools_svg(
        &plots.tool_rows(&r.quarantined, TOOL_ROWS),
        &hist.series(),
    ));

    retry_table(&mut h, r);
    reasons_table(&mut h, r);
    by_tool_table(&mut h, r);
    h.finish()
}

fn decisions_table(h: &mut Page, r: &DemoReport) {
    h.h2("Decisions");
    h.push_html("<table id=\"decisions\">\n<thead><tr><th></th>");
    for (_, head) in COLUMNS {
        let _ = write!(h, "<th class=\"n\">{}</th>", escape(head));
    }
    h.push_html("</tr></thead>\n<tbody>\n");
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
        h.push_html("</tr>\n");
    }
    h.push_html("</tbody>\n</table>\n");
}

fn facts(h: &mut Page, r: &DemoReport) {
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
    h.h2("Run");
    h.facts("facts", &rows);
}

/// The defer path: its rounds, how the deferrals it retried ended, by the reason each
/// was first deferred for, and what the retry epochs cost.
fn retry_table(h: &mut Page, r: &DemoReport) {
    let x = &r.retry;
    h.h2("Defer path");
    let _ = writeln!(
        h,
        "<p>{} deferred tasks executed again in {} fresh epoch(s) with every source pinned, for {} more calls executed and {} reused (repeats of a call that ran twice alike): {:.1}% more calls than the first epoch, for {:.1}% more wall time.</p>",
        x.tasks_retried,
        x.rounds.len(),
        x.calls,
        x.reused,
        r.retry_price.calls_share * 100.0,
        r.retry_price.wall_share * 100.0,
    );
    h.push_html(&retry_tables(x));
}

fn reasons_table(h: &mut Page, r: &DemoReport) {
    h.h2("Gate reason codes");
    h.push_html(
        "<p>A decision carries every reason that applied, so these add up to more than the tasks.</p>\n",
    );
    let mut rows: Vec<(&String, &usize)> = r.gate_reasons.iter().collect();
    rows.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let rows: Vec<(String, Vec<u64>)> = rows
        .into_iter()
        .map(|(code, n)| (format!("<code>{}</code>", escape(code)), vec![*n as u64]))
        .collect();
    h.push_html(&count_table("reasons", &["reason", "tasks"], &rows));
}

fn by_tool_table(h: &mut Page, r: &DemoReport) {
    let verdicts = ["accept", "defer", "reject"];
    h.h2("Gate verdicts per tool");
    h.push_html("<table id=\"by-tool\">\n<thead><tr><th>tool</th>");
    for v in verdicts {
        let _ = write!(h, "<th class=\"n\">{v}</th>");
    }
    h.push_html("</tr></thead>\n<tbody>\n");
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
        h.push_html("</tr>\n");
    }
    h.push_html("</tbody>\n</table>\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{Column, RetryPrice};
    use plangate_report::agreement::Series;

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
            retry_price: RetryPrice::default(),
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

    fn plots() -> Plots {
        let mut p = Plots::default();
        let (c, h) = (Series::Correct, Series::Hallucinated);
        p.add(c, (10, 10), Some((10, 10)), ["get_user>get_order"]);
        p.add(c, (10, 10), Some((9, 10)), ["get_user>get_order"]);
        p.add(c, (9, 10), None, ["search<index>"]);
        p.add(h, (3, 10), Some((4, 10)), ["search<index>"]);
        p.add(h, (5, 7), None, ["read_file"]);
        p
    }

    #[test]
    fn page_is_escaped_and_has_both_plots() {
        let html = render(&report(), &plots());
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
}
