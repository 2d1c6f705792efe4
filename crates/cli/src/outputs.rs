//! What a run leaves beside its verdicts, made alike by `eval` and by `merge` (which
//! decides a sharded batch as one `eval` would): the decisions file with the lines that
//! were not tasks in their place, JUnit, tool health, the summary and the page, handed
//! to the run's output plan (plangate-report's `plan`) to write.

use std::collections::BTreeMap;
use std::io::Write;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use plangate_gate::decide::Verdict;
use plangate_gate::task::TaskError;
use plangate_harness::{EvalRecord, LineOutcome, PreparedBatch, Retried, RetryReport};
use plangate_report::digest::RunDigest;
use plangate_report::junit::Junit;
use plangate_report::plan::{Evidence, Made, OutputPlan};
use plangate_report::run::RunPage;
use serde_json::json;

use crate::files::{Output, open_out};
use crate::lines::skip_line;
use crate::page::{code_fact, elapsed_fact, fact, page};
use crate::tally::Tally;

/// When the run started, and when each of its phases ended, from that start.
pub(crate) struct Timings {
    pub(crate) started: Instant,
    pub(crate) setup: Duration,
    pub(crate) probed: Duration,
    pub(crate) executed: Duration,
    pub(crate) retried: Duration,
    pub(crate) decided: Duration,
}

/// What the run found, for the reports: its first epoch and the defer path's rounds.
pub(crate) struct RunOutcome<'a> {
    /// The command (`eval`, `merge`), as the page names it.
    pub(crate) command: &'static str,
    /// The epoch's manifest (None: results recorded in the input, from `score`).
    pub(crate) epoch: Option<&'a plangate_sandbox::EpochManifest>,
    pub(crate) finished: &'a PreparedBatch,
    pub(crate) retry: Option<&'a RetryReport>,
    /// What `merge` adds to the summary: its shards, and what it cannot see.
    pub(crate) merged: Option<serde_json::Value>,
    /// The epoch's manifest as the run left it, when it differs from `epoch` (a pinned
    /// network's exchanges recorded): `--write-epoch` is written again.
    pub(crate) epoch_again: Option<&'a plangate_sandbox::EpochManifest>,
}

/// Where phase two writes each line's outcome: the decisions file and, when asked, the
/// JUnit suite; it also counts verdicts by label for the summary.
pub(crate) struct Outputs<'a> {
    out: Output,
    source: &'a str,
    /// The model that wrote the samples, when the input names it.
    model: Option<&'a str>,
    junit: Option<Junit>,
    /// Verdict counts per label, indexed by `Verdict as usize`.
    labels: BTreeMap<String, [usize; 3]>,
    /// The page's digest of every decision written, when the page is asked for.
    digest: Option<RunDigest>,
}

impl<'a> Outputs<'a> {
    pub(crate) fn open(plan: &OutputPlan, source: &'a str, model: Option<&'a str>) -> Result<Self> {
        Ok(Outputs {
            out: open_out(plan.decisions.as_deref())?,
            source,
            model,
            junit: plan.junit.is_some().then(Junit::new),
            labels: BTreeMap::new(),
            digest: plan.page.is_some().then(RunDigest::default),
        })
    }

    /// Writes every decision, with the lines that were not tasks in their input place.
    /// With `calibrate` (the run writes a summary), the labelled tasks are also decided
    /// on the run's calibration grid and counted in the tally's calibration.
    pub(crate) fn write_all(
        &mut self,
        finished: &PreparedBatch,
        retried: &BTreeMap<usize, Retried>,
        tally: &mut Tally,
        calibrate: bool,
    ) -> Result<()> {
        let lines: Box<dyn Iterator<Item = _>> = if calibrate {
            Box::new(finished.calibrated_lines())
        } else {
            Box::new(finished.lines())
        };
        for line in lines {
            if crate::interrupt::stopping() {
                return Err(crate::interrupt::Interrupted.into());
            }
            let d = match line? {
                LineOutcome::Task(d) => *d,
                LineOutcome::Bad(line, e) => {
                    self.skipped(line, &e, tally)?;
                    continue;
                }
            };
            if let Some(o) = &d.calibration {
                tally.calibration.add(finished.grid(), o);
            }
            let record = EvalRecord::of(&d, &finished.epoch_id, retried);
            if let Some(digest) = self.digest.as_mut() {
                digest.add(d.line, record.decision);
            }
            self.decided(&record, d.naive, tally)?;
        }
        Ok(())
    }

    fn decided(
        &mut self,
        record: &EvalRecord<'_>,
        naive: Option<Verdict>,
        tally: &mut Tally,
    ) -> Result<()> {
        let dec = record.decision;
        tally.decided(dec, self.model);
        if let Some(naive) = naive {
            tally.baseline.count(dec.verdict, naive, dec.label);
        }
        if let Some(label) = dec.label {
            let key = serde_json::to_value(label)?
                .as_str()
                .unwrap_or_default()
                .to_string();
            self.labels.entry(key).or_default()[dec.verdict as usize] += 1;
        }
        let mut line = plangate_gate::record::json(record);
        line.push('\n');
        self.out
            .write_all(line.as_bytes())
            .context("failed to write decisions")?;
        if let Some(j) = self.junit.as_mut() {
            j.decided(dec, record.history);
        }
        Ok(())
    }

    fn skipped(&mut self, line: usize, e: &TaskError, tally: &mut Tally) -> Result<()> {
        skip_line(&mut self.out, self.source, line, e, tally)?;
        if let Some(j) = self.junit.as_mut() {
            j.bad_line(line, e);
        }
        Ok(())
    }
}

/// Makes the reports the plan asks for beside the decisions (tool health, JUnit, the
/// summary, the page) and carries the plan out: the decisions last, so a run that fails
/// on the way leaves the earlier decisions file as it was.
pub(crate) fn write_reports(
    plan: &OutputPlan,
    ran: &RunOutcome<'_>,
    outputs: Outputs<'_>,
    tally: &Tally,
    timings: &Timings,
    evidence: Option<Evidence<'_>>,
) -> Result<()> {
    let Outputs {
        mut out,
        mut junit,
        labels,
        digest,
        source,
        model: _,
    } = outputs;
    if let (Some(j), Some(r)) = (junit.as_mut(), ran.retry) {
        j.retry(r);
    }
    let calibration = tally.calibration.report();
    let page = digest.as_ref().map(|digest| {
        let mut page = run_page(ran, source, tally, digest, timings);
        page.calibration = calibration.as_ref();
        page
    });
    let made = Made {
        evidence,
        epoch: ran.epoch_again,
        tool_health: Some(&ran.finished.health),
        junit,
        summary: plan
            .summary
            .is_some()
            .then(|| summary(ran, tally, &labels, timings)),
        page,
    };
    plan.carry_out(made, || out.finish())
}

/// The run's page: the counts and digest, tool health when the run executed its
/// calls (an epoch; recorded results have no probe), the defer path, and the run's
/// facts.
fn run_page<'a>(
    ran: &RunOutcome<'a>,
    source: &str,
    tally: &Tally,
    digest: &'a RunDigest,
    t: &Timings,
) -> RunPage<'a> {
    let mut page = page(ran.command, source, tally, digest);
    let finished = ran.finished;
    page.retry = ran.retry;
    if ran.epoch.is_some() {
        page.health = Some(&finished.health);
        let s = &finished.stats;
        page.facts.extend([
            code_fact("epoch", "epoch", &finished.epoch_id),
            fact("calls", "calls executed", &s.calls_executed.to_string()),
            fact("reused", "calls reused", &s.calls_reused.to_string()),
            fact("probe_calls", "probe calls", &s.probe_calls.to_string()),
            fact(
                "witnesses",
                "determinism witnesses",
                &s.witnesses.to_string(),
            ),
        ]);
        let changed = finished.changed_live_mounts();
        let changed = if changed.is_empty() {
            "none".to_string()
        } else {
            changed.join(", ")
        };
        page.facts
            .push(fact("changed", "live sources that changed", &changed));
    }
    if let Some(shards) = ran.merged.as_ref().and_then(|m| m["shards"].as_array()) {
        let names: Vec<String> = shards
            .iter()
            .map(|s| {
                format!(
                    "{} ({})",
                    s["shard"].as_str().unwrap_or(""),
                    s["evidence"].as_str().unwrap_or("")
                )
            })
            .collect();
        page.facts
            .push(fact("shards", "shards merged", &names.join(", ")));
    }
    page.facts.push(elapsed_fact(t.started.elapsed()));
    page
}

/// `score --summary-json`: line counts, counts by label, the naive comparison and the
/// calibration, with the exit code (`score` executes nothing: no epoch, tool health or
/// phases). Counts by label are the calibration's row at the run's own thresholds,
/// which counts every labelled task as decided; `--seed-compat` calibrates nothing.
pub(crate) fn score_summary(tally: &Tally) -> serde_json::Value {
    let calibration = tally.calibration.report();
    let own = (calibration.iter())
        .flat_map(|c| &c.sweep)
        .find(|row| row.run);
    let by_label: serde_json::Map<String, serde_json::Value> = own
        .map(|row| {
            [("correct", row.correct), ("hallucinated", row.hallucinated)]
                .into_iter()
                .filter(|(_, v)| v.accept + v.defer + v.reject > 0)
                .map(|(label, v)| (label.to_string(), json!(v)))
                .collect()
        })
        .unwrap_or_default();
    let mut counts = lines(tally);
    if tally.refused > 0 {
        counts["refused"] = json!(tally.refused);
    }
    json!({
        "lines": counts,
        "by_label": by_label,
        "baseline": tally.baseline.line().map(|_| &tally.baseline),
        "by_outcome": (!tally.by_outcome.is_empty()).then_some(&tally.by_outcome),
        "accepted_all_failed": tally.accepted_all_failed(),
        "invented_references": &tally.invented,
        "calibration": calibration,
        "exit_code": tally.exit_code(),
    })
}

/// The summary's `lines`: what happened to every input line.
fn lines(tally: &Tally) -> serde_json::Value {
    json!({
        "total": tally.lines, "blank": tally.blank, "skipped": tally.skipped,
        "accept": tally.accept, "reject": tally.reject, "defer": tally.defer,
    })
}

/// The `--summary-json` document: counts, tool health, the epoch, and how long each
/// phase took (the total up to now).
fn summary(
    ran: &RunOutcome<'_>,
    tally: &Tally,
    labels: &BTreeMap<String, [usize; 3]>,
    t: &Timings,
) -> serde_json::Value {
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let finished = ran.finished;
    let mut summary = json!({
        "epoch_id": finished.epoch_id,
        "epoch": ran.epoch,
        "lines": lines(tally),
        "by_label": labels.iter().map(|(l, c)| (l.clone(), json!({
            "accept": c[Verdict::Accept as usize],
            "defer": c[Verdict::Defer as usize],
            "reject": c[Verdict::Reject as usize],
        }))).collect::<serde_json::Map<_, _>>(),
        "baseline": tally.baseline.line().map(|_| &tally.baseline),
        "by_outcome": (!tally.by_outcome.is_empty()).then_some(&tally.by_outcome),
        "accepted_all_failed": tally.accepted_all_failed(),
        "invented_references": &tally.invented,
        "calibration": tally.calibration.report(),
        "stats": finished.stats,
        "tools": finished.health.tools,
        "quarantined": finished.quarantined(),
        "live_mounts": finished.live.iter().map(|c| json!({
            "guest": c.guest, "at_start": c.at_start, "at_end": c.now, "changed": c.changed(),
        })).collect::<Vec<_>>(),
        "retry": ran.retry,
        "timings_ms": {
            "setup": ms(t.setup),
            "probe": ms(t.probed - t.setup),
            "execute": ms(t.executed - t.probed),
            "retry": ms(t.retried - t.executed),
            "classify_and_write": ms(t.decided - t.retried),
            "total": ms(t.started.elapsed()),
        },
        "exit_code": tally.exit_code(),
    });
    if let Some(merged) = &ran.merged {
        summary["merge"] = merged.clone();
    }
    summary
}
