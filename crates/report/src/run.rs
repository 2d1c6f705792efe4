//! The page of a run (`score`, `eval` and `merge` with `--html FILE`): one
//! self-contained document that shows what the run decided and why, from the run's
//! counts, its [`RunDigest`], its tool health and its defer path. It is a list of
//! sections, each a function of the run's data ([`SECTIONS`]), so a section is added
//! in one place, and a section with nothing to show (tool health for `score`) is left
//! out rather than drawn empty.

use std::fmt::Write as _;

use plangate_gate::calibration::Report;
use plangate_gate::decide::Verdict;
use plangate_harness::{Evidence, FirstDifference, HealthReport, RetryReport, ToolHealth};

use crate::agreement::Series;
use crate::digest::RunDigest;
use crate::html::{Page, count_table, cut, escape, facts_table};
use crate::notable::{Bounded, LIST_LEN};
use crate::plot::{histogram_svg, histogram_title, roc_svg, tools_svg};
use crate::svg::tick;

/// Rows of the per-tool plot; the other tools are added up in one row after them.
pub const TOOL_ROWS: usize = 40;
/// Rows of the tool-health table; the other tools are counted under it.
pub const HEALTH_ROWS: usize = 100;
/// Pieces of evidence shown per tool.
const EVIDENCE_SHOWN: usize = 3;

/// What happened to every input line, as the run's summary counts it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Lines read, blank ones included.
    pub lines: u64,
    /// Blank lines.
    pub blank: u64,
    /// Lines that could not be read as a task.
    pub skipped: u64,
    /// Tasks accepted.
    pub accept: u64,
    /// Tasks rejected.
    pub reject: u64,
    /// Tasks deferred.
    pub defer: u64,
    /// Tasks the seed's gate refused (`--seed-compat`).
    pub refused: u64,
    /// Lines another shard decides.
    pub other_shards: u64,
}

/// A fact about the run, for the run's table: a key (`id="fact-KEY"`), its name and
/// its cell (trusted HTML).
#[derive(Debug, Clone)]
pub struct Fact {
    /// The cell's id, after `fact-`.
    pub key: String,
    /// The row's label.
    pub name: String,
    /// The cell, as HTML.
    pub html: String,
}

/// Everything a run's page is drawn from.
#[derive(Debug, Clone)]
pub struct RunPage<'a> {
    /// The page's title and heading (`plangate eval: samples.jsonl`).
    pub title: String,
    /// What happened to every input line.
    pub counts: Counts,
    /// The naive scorer's comparison, as the summary says it, when tasks were compared.
    pub baseline: Option<String>,
    /// The decisions, digested.
    pub digest: &'a RunDigest,
    /// When the digest covers only part of the tasks (a resumed run whose earlier part
    /// kept none), what it covers.
    pub partial: Option<String>,
    /// Tool health (an executing run's; None for recorded results).
    pub health: Option<&'a HealthReport>,
    /// The defer path, when it ran.
    pub retry: Option<&'a RetryReport>,
    /// The run's own facts: command, inputs, epoch, timings.
    pub facts: Vec<Fact>,
    /// The labelled tasks' calibration (docs/design.md, "Calibration"), when the run
    /// had labelled tasks.
    pub calibration: Option<&'a Report>,
}

/// One section of the page: its id (`<section id>`), heading and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// The section's id, for tests and scripts.
    pub id: &'static str,
    /// Its heading.
    pub title: String,
    /// Its body, as HTML.
    pub body: String,
}

/// A section of the page, from the run's data; None when the run has nothing for it.
pub type SectionFn = fn(&RunPage<'_>) -> Option<Section>;

/// The page's sections, in order: a new section is one more function here.
pub const SECTIONS: &[SectionFn] = &[
    lines_section,
    reasons_section,
    agreement_section,
    calibration_section,
    results_section,
    health_section,
    retry_section,
    notable_section,
    invented_section,
    agreed_failing_section,
    run_section,
];

/// The sections the run has, in order.
pub fn sections(run: &RunPage<'_>) -> Vec<Section> {
    SECTIONS.iter().filter_map(|f| f(run)).collect()
}

/// The whole page.
pub fn render(run: &RunPage<'_>) -> String {
    let mut page = Page::new(&run.title);
    page.h1(&run.title);
    let _ = writeln!(
        page,
        "<p class=\"lede\">{} tasks decided from {} input lines: {} accepted, {} rejected, {} deferred.</p>",
        run.counts.accept + run.counts.reject + run.counts.defer,
        run.counts.lines,
        run.counts.accept,
        run.counts.reject,
        run.counts.defer
    );
    for s in sections(run) {
        page.section(s.id, &s.title);
        page.push_html(&s.body);
        page.end_section();
    }
    page.finish()
}

const VERDICTS: [Verdict; 3] = [Verdict::Accept, Verdict::Defer, Verdict::Reject];

fn lines_section(run: &RunPage<'_>) -> Option<Section> {
    let c = &run.counts;
    let mut rows = vec![
        ("lines", "input lines", c.lines),
        ("accept", "accepted", c.accept),
        ("reject", "rejected", c.reject),
        ("defer", "deferred", c.defer),
        ("skipped", "skipped (bad input)", c.skipped),
        ("blank", "blank", c.blank),
    ];
    if c.refused > 0 {
        rows.push(("refused", "refused by the seed's gate", c.refused));
    }
    if c.other_shards > 0 {
        rows.push(("other_shards", "in other shards", c.other_shards));
    }
    let mut body = String::from("<div class=\"row\">\n<table id=\"counts\">\n<tbody>\n");
    for (key, name, n) in rows {
        let _ = writeln!(
            body,
            "<tr><th>{name}</th><td class=\"n\" id=\"count-{key}\">{n}</td></tr>"
        );
    }
    body.push_str("</tbody>\n</table>\n");
    let d = run.digest;
    let labelled: Vec<Series> = [Series::Correct, Series::Hallucinated, Series::Unlabelled]
        .into_iter()
        .filter(|s| VERDICTS.iter().any(|v| d.verdicts(*s, *v) > 0))
        .collect();
    if labelled.iter().any(|s| *s != Series::Unlabelled) {
        let rows: Vec<(String, Vec<u64>)> = labelled
            .iter()
            .map(|s| {
                let by = VERDICTS.map(|v| d.verdicts(*s, v));
                (s.legend().to_string(), by.to_vec())
            })
            .collect();
        body.push_str(&count_table(
            "by-label",
            &["label", "accept", "defer", "reject"],
            &rows,
        ));
    }
    body.push_str("</div>\n");
    if let Some(b) = &run.baseline {
        let _ = writeln!(
            body,
            "<p id=\"baseline\">Naive baseline: {}.</p>",
            escape(b)
        );
    }
    if let Some(p) = &run.partial {
        let _ = writeln!(body, "<p id=\"partial\" class=\"q\">{}</p>", escape(p));
    }
    Some(Section {
        id: "lines",
        title: "Lines".into(),
        body,
    })
}

fn reasons_section(run: &RunPage<'_>) -> Option<Section> {
    let mut rows: Vec<(&String, &[u64; 3])> = run.digest.reasons().iter().collect();
    rows.sort_by(|a, b| {
        let total = |x: &[u64; 3]| x.iter().sum::<u64>();
        total(b.1).cmp(&total(a.1)).then(a.0.cmp(b.0))
    });
    let rows: Vec<(String, Vec<u64>)> = rows
        .into_iter()
        .map(|(code, by)| (format!("<code>{}</code>", escape(code)), by.to_vec()))
        .collect();
    let mut body = String::from(
        "<p>Tasks per reason code, by verdict. A decision carries every reason that applied, so a column adds up to more than its tasks.</p>\n",
    );
    body.push_str(&count_table(
        "reason-counts",
        &["reason", "accept", "defer", "reject"],
        &rows,
    ));
    Some(Section {
        id: "reasons",
        title: "Decisions by reason".into(),
        body,
    })
}

fn agreement_section(run: &RunPage<'_>) -> Option<Section> {
    let hist = run.digest.plots().histogram();
    let mut body = String::from(
        "<p>Share of a task&#39;s samples whose arguments equal the most common plan&#39;s, \
         in bins of the most common sample count (a task with another count lands in the \
         nearest bin). Plans the samples agree on sit near 1.0; made-up arguments, where \
         each sample invents its own, far below.</p>\n",
    );
    body.push_str(&histogram_svg(&hist));
    Some(Section {
        id: "agreement",
        title: histogram_title(&hist).into(),
        body,
    })
}

/// How well argument agreement tells the labels apart, and what other thresholds would
/// have decided: the ROC curves and the sweep, from the summary's `calibration`.
fn calibration_section(run: &RunPage<'_>) -> Option<Section> {
    let c = run.calibration?;
    let auc = |a: Option<f64>| a.map_or_else(|| "n/a".to_string(), |a| format!("{a:.3}"));
    let mut body = String::new();
    let _ = writeln!(
        body,
        "<p>{} tasks labelled correct and {} hallucinated. AUROC of argument agreement: <b id=\"auroc\">{}</b> (the naive scorer&#39;s: <span id=\"naive-auroc\">{}</span>); 1 tells every hallucinated task from every correct one, 0.5 is a coin.</p>",
        c.tasks.correct,
        c.tasks.hallucinated,
        auc(c.auroc),
        auc(c.naive_auroc)
    );
    body.push_str(&roc_svg(c));
    body.push_str(
        "<p>What the rule would have decided at other thresholds, on the same prepared \
         tasks (one threshold moved, the other as the run had it; the run&#39;s own \
         thresholds marked <b>run</b>):</p>\n<table id=\"sweep\"><thead><tr><th>arg_reject</th><th>arg_accept</th>\
         <th>rejected</th><th>of them correct</th><th>false-positive share</th>\
         <th>hallucinations caught</th><th>hallucinations accepted</th></tr></thead><tbody>\n",
    );
    let share =
        |x: Option<f64>| x.map_or_else(|| "-".to_string(), |x| format!("{:.1}%", 100.0 * x));
    for row in &c.sweep {
        let _ = writeln!(
            body,
            "<tr><td{}>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            if row.run { " class=\"run\"" } else { "" },
            if row.run {
                format!("{} <b>run</b>", tick(row.arg_reject))
            } else {
                tick(row.arg_reject)
            },
            tick(row.arg_accept),
            row.rejected,
            row.rejected_correct,
            share(row.false_positive_share),
            share(row.caught),
            row.accepted_hallucinated
        );
    }
    body.push_str("</tbody></table>\n");
    Some(Section {
        id: "calibration",
        title: "Calibration".into(),
        body,
    })
}

fn results_section(run: &RunPage<'_>) -> Option<Section> {
    let quarantined: Vec<String> = run
        .health
        .map(|h| h.quarantined().map(str::to_string).collect())
        .unwrap_or_default();
    let plots = run.digest.plots();
    let rows = plots.tool_rows(&quarantined, TOOL_ROWS);
    if rows.is_empty() {
        return None;
    }
    let mut body = format!(
        "<p>Mean share of samples whose deterministic steps returned the modal result, over \
         the tasks whose modal plan calls the tool (the {TOOL_ROWS} tools with the most tasks; \
         the rest added up in one row), each label apart (a made-up argument changes the \
         result too). A quarantined tool was declared deterministic but its answers \
         drifted, so its results are not trusted.</p>\n"
    );
    body.push_str(&tools_svg(&rows, &plots.histogram().series()));
    Some(Section {
        id: "results",
        title: "Result agreement per tool".into(),
        body,
    })
}

/// How a tool's probe went.
fn probe_status(t: &ToolHealth) -> &'static str {
    let drift = t
        .evidence
        .iter()
        .any(|e| matches!(e, Evidence::ProbeDrift { .. }));
    match (t.declared_deterministic, t.probed, drift) {
        (false, _, _) => "not declared",
        (true, false, _) => "not probed",
        (true, true, true) => "drift",
        (true, true, false) if t.verified => "verified",
        (true, true, false) => "not verified",
    }
}

/// Where two outputs differed, in words.
fn at(d: &FirstDifference) -> String {
    match (&d.json_path, d.byte_offset) {
        (Some(p), _) => format!("at {}", cut(p, 80)),
        (None, Some(b)) => format!("at byte {b}"),
        (None, None) => "in outcome".into(),
    }
}

/// One piece of evidence, in words (escaped).
fn evidence_line(e: &Evidence) -> String {
    let args = |a: &str| format!("<code>{}</code>", escape(&cut(a, 120)));
    match e {
        Evidence::ProbeDrift {
            arguments,
            runs,
            difference,
            ..
        } => format!(
            "probe drift: runs {} and {} of {} differ {}",
            runs.0,
            runs.1,
            args(arguments),
            escape(&at(difference))
        ),
        Evidence::Witness {
            arguments,
            upstream_steps,
            difference,
            ..
        } => format!(
            "witness: two calls with {} after the same {upstream_steps} upstream steps answered differently {}",
            args(arguments),
            escape(&at(difference))
        ),
        Evidence::EpochSensitive {
            arguments,
            difference,
            ..
        } => format!(
            "epoch-sensitive: {} differs across epochs {}",
            args(arguments),
            escape(&at(difference))
        ),
        Evidence::EarlierRun { file, .. } => {
            format!(
                "quarantined by an earlier run ({})",
                escape(&cut(file, 120))
            )
        }
    }
}

fn health_row(body: &mut String, t: &ToolHealth) {
    let witnesses = t
        .evidence
        .iter()
        .filter(|e| matches!(e, Evidence::Witness { .. }))
        .count();
    let mut evidence: Vec<String> = t
        .evidence
        .iter()
        .take(EVIDENCE_SHOWN)
        .map(evidence_line)
        .collect();
    if t.evidence.len() > EVIDENCE_SHOWN {
        evidence.push(format!(
            "and {} more (tool-health.json has them all)",
            t.evidence.len() - EVIDENCE_SHOWN
        ));
    }
    let _ = writeln!(
        body,
        "<tr><th><code>{}</code></th><td>{}</td><td>{}</td><td class=\"n\">{witnesses}</td><td>{}</td><td>{}</td></tr>",
        escape(&cut(&t.name, 120)),
        if t.declared_deterministic {
            "yes"
        } else {
            "no"
        },
        probe_status(t),
        if t.quarantined {
            "<span class=\"q\">quarantined</span>"
        } else {
            "no"
        },
        evidence.join("<br/>")
    );
}

fn health_section(run: &RunPage<'_>) -> Option<Section> {
    let health = run.health?;
    // Quarantined tools first, then the other declared-deterministic ones, each in
    // catalog order: past the bound, only tools nothing was found against are left out.
    let mut tools: Vec<&ToolHealth> = health.tools.iter().collect();
    tools.sort_by_key(|t| (!t.quarantined, !t.declared_deterministic));
    let shown = tools.len().min(HEALTH_ROWS);
    let mut body = format!(
        "<p>{} tools, {} declared deterministic, {} verified by the probe, {} quarantined. \
         A probe calls each declared-deterministic tool twice in fresh instances; a \
         determinism witness is two calls in the batch with the same input and upstream \
         steps that answered differently.</p>\n",
        health.tools.len(),
        health
            .tools
            .iter()
            .filter(|t| t.declared_deterministic)
            .count(),
        health.tools.iter().filter(|t| t.verified).count(),
        health.tools.iter().filter(|t| t.quarantined).count(),
    );
    body.push_str(
        "<table id=\"health-table\">\n<thead><tr><th>tool</th><th>declared deterministic</th><th>probe</th><th class=\"n\">witnesses</th><th>quarantined</th><th>evidence</th></tr></thead>\n<tbody>\n",
    );
    for t in &tools[..shown] {
        health_row(&mut body, t);
    }
    body.push_str("</tbody>\n</table>\n");
    if tools.len() > shown {
        let _ = writeln!(
            body,
            "<p>And {} more tools, none quarantined (tool-health.json lists every tool).</p>",
            tools.len() - shown
        );
    }
    Some(Section {
        id: "health",
        title: "Tool health".into(),
        body,
    })
}

/// The defer path's tables: each round (its epoch, tasks, calls, reused calls, tools
/// quarantined in it), and how the retried deferrals ended, by the reason each was
/// first deferred for. The demo's page shows them too.
pub fn retry_tables(r: &RetryReport) -> String {
    let mut s = String::from(
        "<table id=\"retry-rounds\">\n<thead><tr><th>round</th><th>epoch</th><th class=\"n\">tasks</th><th class=\"n\">calls</th><th class=\"n\">reused</th><th>quarantined in it</th></tr></thead>\n<tbody>\n",
    );
    for (i, round) in r.rounds.iter().enumerate() {
        let q: Vec<String> = round
            .quarantined
            .iter()
            .map(|t| format!("<span class=\"q\">{}</span>", escape(t)))
            .collect();
        let _ = writeln!(
            s,
            "<tr><th>{}</th><td><code>{}</code></td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td></tr>",
            i + 1,
            escape(&cut(&round.epoch_id, 12)),
            round.tasks,
            round.calls,
            round.reused,
            if q.is_empty() {
                "none".to_string()
            } else {
                q.join(", ")
            }
        );
    }
    s.push_str("</tbody>\n</table>\n");
    let rows: Vec<(String, Vec<u64>)> = r
        .resolved
        .iter()
        .map(|(reason, by)| {
            let n = |v: &str| by.get(v).copied().unwrap_or(0) as u64;
            (
                format!("<code>{}</code>", escape(reason)),
                vec![n("accept"), n("reject"), n("defer")],
            )
        })
        .collect();
    s.push_str(&count_table(
        "retry-resolved",
        &["first deferred for", "accept", "reject", "defer"],
        &rows,
    ));
    s
}

fn retry_section(run: &RunPage<'_>) -> Option<Section> {
    let r = run.retry?;
    if r.rounds.is_empty() {
        return Some(Section {
            id: "retry",
            title: "Defer path".into(),
            body: "<p>No deferral was one a fresh epoch can settle (a changed live source, a quarantined or suspect tool, results that disagree): nothing was executed again.</p>\n".into(),
        });
    }
    let mut body = format!(
        "<p>{} deferred tasks executed again in {} fresh epoch(s) with every source pinned: {} calls executed (probes included) and {} reused from two runs that answered alike. A task keeps its last decision; its record keeps the earlier ones.</p>\n",
        r.tasks_retried,
        r.rounds.len(),
        r.calls,
        r.reused
    );
    body.push_str(&retry_tables(r));
    Some(Section {
        id: "retry",
        title: "Defer path".into(),
        body,
    })
}

/// One list of tasks worth a look, under its own heading.
fn notable_list(body: &mut String, id: &str, title: &str, order: &str, list: &Bounded) {
    let _ = writeln!(body, "<h3>{}</h3>", escape(title));
    let kept = list.entries().len();
    let _ = writeln!(
        body,
        "<p>{} tasks{}.</p>",
        list.tasks,
        if list.tasks as usize > kept {
            format!("; the first {LIST_LEN} {order}")
        } else if kept > 1 {
            format!(", {order}")
        } else {
            String::new()
        }
    );
    let _ = write!(
        body,
        "<table id=\"{id}\" class=\"tasks\">\n<thead><tr><th class=\"n\">line</th><th>task</th><th>verdict</th><th>label</th><th>what</th><th>explanation</th></tr></thead>\n<tbody>\n"
    );
    for e in list.entries() {
        let _ = writeln!(
            body,
            "<tr><td class=\"n\">{}</td><td><code>{}</code></td><td>{}<br/><small>{}</small></td><td>{}</td><td><code>{}</code></td><td>{}</td></tr>",
            e.rank.line,
            escape(&e.task_id),
            e.verdict.as_str(),
            escape(&e.reasons.join(", ")),
            e.label.map_or("", |l| l.as_str()),
            escape(&e.detail),
            e.explanation
                .iter()
                .map(|s| escape(s))
                .collect::<Vec<_>>()
                .join("<br/>")
        );
    }
    body.push_str("</tbody>\n</table>\n");
}

fn notable_section(run: &RunPage<'_>) -> Option<Section> {
    let n = run.digest.notable();
    let mut body =
        String::from("<p>Each list is bounded; the decisions file has every task.</p>\n");
    notable_list(
        &mut body,
        "notable-scattered",
        "Most scattered argument paths",
        "by the agreement of their least agreeing path, lowest first",
        &n.scattered,
    );
    notable_list(
        &mut body,
        "notable-referential",
        "Referential misses",
        "rejections first, then by line",
        &n.referential,
    );
    notable_list(
        &mut body,
        "notable-schema",
        "Schema mismatches",
        "rejections first, then by line",
        &n.schema,
    );
    Some(Section {
        id: "notable",
        title: "Tasks worth a look".into(),
        body,
    })
}

/// The tasks whose samples invented a reference: a call answered not found for a value
/// nothing before it supplied. Shown only when there are some.
fn invented_section(run: &RunPage<'_>) -> Option<Section> {
    let n = run.digest.notable();
    if n.invented.tasks == 0 {
        return None;
    }
    let mut body = String::from(
        "<p>A call answered <em>not found</em> whose value appears nowhere in the \
         conversation before it (docs/design.md, \"Invented references\"). These do not \
         change a verdict: the rule decides the trajectory as a whole.</p>\n",
    );
    notable_list(
        &mut body,
        "invented-references",
        "Invented references",
        "the most references first, then by line",
        &n.invented,
    );
    Some(Section {
        id: "invented",
        title: "Invented references".into(),
        body,
    })
}

/// The tasks accepted while every sample failed where it ran: accept says the samples
/// agree, not that the plan is right. Shown only when there are some.
fn agreed_failing_section(run: &RunPage<'_>) -> Option<Section> {
    let n = run.digest.notable();
    if n.agreed_failing.tasks == 0 {
        return None;
    }
    let mut body = String::from(
        "<p>Accepted, yet every sample with an outcome failed: agreement is not success. \
         The model made the same plan each time, so its arguments were not made up, but \
         the plan itself was wrong.</p>\n",
    );
    notable_list(
        &mut body,
        "agreed-failing",
        "Agreement without success: a consistent plan, not a hallucinated one",
        "by line",
        &n.agreed_failing,
    );
    Some(Section {
        id: "agreed-failing",
        title: "Agreement without success".into(),
        body,
    })
}

fn run_section(run: &RunPage<'_>) -> Option<Section> {
    let rows: Vec<(&str, &str, String)> = run
        .facts
        .iter()
        .map(|f| (f.key.as_str(), f.name.as_str(), f.html.clone()))
        .collect();
    Some(Section {
        id: "run",
        title: "Run".into(),
        body: facts_table("facts", &rows),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::digest::tests::decision;
    use crate::plot::tests::assert_balanced;
    use plangate_harness::{Output, RetryRound};

    fn digest(tasks: usize) -> RunDigest {
        let mut d = RunDigest::default();
        for i in 0..tasks {
            d.add(i + 1, &decision(i));
        }
        d
    }

    fn health() -> HealthReport {
        let out = Output {
            outcome: "exit".into(),
            exit_code: Some(0),
            stdout: "{}".into(),
            stdout_bytes: 2,
        };
        let witness = Evidence::Witness {
            arguments: "{\"q\":\"<x>\"}".into(),
            upstream_steps: 0,
            difference: FirstDifference {
                byte_offset: Some(3),
                json_path: Some("$.hits[0]".into()),
            },
            outputs: vec![out.clone(), out],
        };
        let tool =
            |name: &str, declared: bool, quarantined: bool, evidence: Vec<Evidence>| ToolHealth {
                name: name.into(),
                declared_deterministic: declared,
                verified: declared && !quarantined,
                quarantined,
                probed: declared,
                evidence,
                annotations: None,
            };
        HealthReport {
            epoch_id: Some("e".into()),
            tools: vec![
                tool("clock", false, false, vec![]),
                tool("get_user", true, false, vec![]),
                tool("search<index>", true, true, vec![witness; 5]),
            ],
        }
    }

    fn page<'a>(
        d: &'a RunDigest,
        h: Option<&'a HealthReport>,
        r: Option<&'a RetryReport>,
    ) -> RunPage<'a> {
        RunPage {
            title: "plangate eval: <samples>.jsonl".into(),
            counts: Counts {
                lines: d.tasks() + 2,
                blank: 1,
                skipped: 1,
                accept: d.tasks(),
                ..Counts::default()
            },
            baseline: Some("3 tasks (3 labelled): gate rejected 1".into()),
            digest: d,
            partial: None,
            health: h,
            retry: r,
            facts: vec![Fact {
                key: "command".into(),
                name: "command".into(),
                html: "<code>eval</code>".into(),
            }],
            calibration: None,
        }
    }

    fn ids(html: &str) -> Vec<&str> {
        html.split("<section id=\"")
            .skip(1)
            .map(|s| &s[..s.find('"').unwrap()])
            .collect()
    }

    #[test]
    fn an_eval_page_has_every_section_and_escapes_run_text() {
        let d = digest(120);
        let h = health();
        let r = RetryReport {
            rounds: vec![RetryRound {
                epoch_id: "abcdef0123456789".into(),
                tasks: 4,
                calls: 40,
                reused: 12,
                quarantined: vec!["search<index>".into()],
            }],
            tasks_retried: 4,
            calls: 40,
            reused: 12,
            resolved: [(
                "tool_quarantined".to_string(),
                [("accept", 3), ("defer", 1)].into_iter().collect(),
            )]
            .into_iter()
            .collect(),
        };
        let html = render(&page(&d, Some(&h), Some(&r)));
        assert_balanced(html.trim_start_matches("<!DOCTYPE html>"));
        assert_eq!(
            ids(&html),
            [
                "lines",
                "reasons",
                "agreement",
                "results",
                "health",
                "retry",
                "notable",
                "run"
            ]
        );
        for gone in [
            "<samples>",
            "search<index>",
            "<&>",
            "<x>",
            "<script",
            "href=",
            "src=",
        ] {
            assert!(!html.contains(gone), "{gone}");
        }
        assert!(html.contains("<title>plangate eval: &lt;samples&gt;.jsonl</title>"));
        assert!(html.contains("<td class=\"n\" id=\"count-accept\">120</td>"));
        assert!(html.contains("<table id=\"by-label\">"));
        // The quarantined tool leads the health table, with its witnesses counted and
        // three of its five pieces of evidence shown.
        let table = &html[html.find("<table id=\"health-table\">").unwrap()..];
        let first = &table[table.find("<tbody>").unwrap()..];
        assert!(first[..200].contains("search&lt;index&gt;"), "{first}");
        assert!(first.contains("<td class=\"n\">5</td>"));
        assert!(first.contains("and 2 more"));
        assert_eq!(first.matches("witness: two calls").count(), 3);
        assert!(html.contains("<table id=\"retry-rounds\">") && html.contains("abcdef012345"));
        for id in ["notable-scattered", "notable-referential", "notable-schema"] {
            assert!(
                html.contains(&format!("<table id=\"{id}\" class=\"tasks\">")),
                "{id}"
            );
        }
        assert!(html.contains("<svg id=\"arg-hist\"") && html.contains("<svg id=\"tool-results\""));
    }

    #[test]
    fn a_score_page_leaves_out_what_the_run_has_not() {
        let d = digest(30);
        let html = render(&page(&d, None, None));
        assert_eq!(
            ids(&html),
            ["lines", "reasons", "agreement", "results", "notable", "run"]
        );
        // No tasks at all: still a page, with empty plots and lists.
        let empty = RunDigest::default();
        let html = render(&page(&empty, None, None));
        assert_balanced(html.trim_start_matches("<!DOCTYPE html>"));
        assert_eq!(
            ids(&html),
            ["lines", "reasons", "agreement", "notable", "run"]
        );
        assert!(html.contains("<p>0 tasks.</p>"));
    }

    /// Long run text is cut and lists are bounded: a page's size does not follow its
    /// batch or its longest line.
    #[test]
    fn a_page_stays_small_whatever_the_run() {
        let mut d = RunDigest::default();
        for i in 0..3000 {
            let mut dec = decision(i);
            dec.task_id = "i".repeat(100_000);
            dec.explanation = vec!["e".repeat(100_000); 50];
            for s in dec.modal_plan.iter_mut().flatten() {
                s.tool = format!("tool-{i}-{}", "t".repeat(100));
            }
            d.add(i + 1, &dec);
        }
        let html = render(&page(&d, Some(&health()), None));
        assert!(html.len() < 600_000, "{} bytes", html.len());
        assert!(html.contains("other tools"));
    }

    /// A run whose tasks invented references, or were accepted with every sample
    /// failed, has a section for each, listing those tasks; a run with none has neither.
    #[test]
    fn invented_references_and_agreement_without_success_have_their_sections() {
        let mut d = RunDigest::default();
        let mut invented = crate::digest::tests::decision(1);
        invented.invented_references = (0..5)
            .map(|k| plangate_gate::invented::InventedReference {
                sample: k,
                turn: 0,
                call: 1,
                tool: "get_user".into(),
                parameter: "user_id".into(),
                value: format!("mei_<{k}>").into(),
                error: "Error: user not found".into(),
            })
            .collect();
        let mut agreed = crate::digest::tests::decision(0);
        agreed.verdict = plangate_gate::decide::Verdict::Accept;
        agreed.outcomes = vec![Some(0.0); agreed.n];
        let mut passed = crate::digest::tests::decision(3);
        passed.verdict = plangate_gate::decide::Verdict::Accept;
        passed.outcomes = vec![Some(1.0), Some(0.0)];
        d.add(1, &invented);
        d.add(2, &agreed);
        d.add(3, &passed);
        let html = render(&page(&d, None, None));
        assert_balanced(html.trim_start_matches("<!DOCTYPE html>"));
        let found = ids(&html);
        assert!(
            found.contains(&"invented") && found.contains(&"agreed-failing"),
            "{found:?}"
        );
        assert!(
            html.contains("mei_&lt;0&gt;") && html.contains("; 2 more"),
            "{html}"
        );
        assert!(html.contains("a consistent plan, not a hallucinated one"));
        let n = d.notable();
        assert_eq!((n.invented.tasks, n.agreed_failing.tasks), (1, 1));
        assert_eq!(n.agreed_failing.entries()[0].rank.line, 2);
        let plain = digest(10);
        let found = ids(&render(&page(&plain, None, None))).join(",");
        assert!(
            !found.contains("invented") && !found.contains("agreed"),
            "{found}"
        );
    }
}
