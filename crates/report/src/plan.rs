//! A run's outputs as one plan: the command turns its flags into an [`OutputPlan`] (which
//! files the run writes: decisions, epoch, tool health, JUnit, summary, page, and what
//! it keeps beside `--out` for `--resume` and for `merge`), checks it before any work
//! ([`OutputPlan::files`]), and at the end hands what it made to
//! [`OutputPlan::carry_out`], which writes every file in one order. `score`, `eval` and
//! `merge` share it, so a new output is added in one place and every command writes it
//! alike.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use plangate_harness::shard::EvidenceHeader;
use plangate_harness::{EpochManifest, HealthReport};

use crate::files::{OutputError, write_file, write_json, write_manifest, write_with};
use crate::junit::Junit;
use crate::run::{RunPage, render};

/// Every file a run writes, by what it holds. None: not asked for (the decisions go to
/// standard output).
#[derive(Debug, Clone, Default)]
pub struct OutputPlan {
    /// `--out`: the decisions.
    pub decisions: Option<PathBuf>,
    /// `--write-epoch`: the epoch's manifest.
    pub epoch: Option<PathBuf>,
    /// `--tool-health`.
    pub tool_health: Option<PathBuf>,
    /// `--junit`.
    pub junit: Option<PathBuf>,
    /// `--summary-json`.
    pub summary: Option<PathBuf>,
    /// `--html`: the run's page.
    pub page: Option<PathBuf>,
    /// Beside `--out`: the journal an interrupted run resumes from.
    pub journal: Option<PathBuf>,
    /// Beside `--out`: the decisions an interrupted `score` kept.
    pub partial: Option<PathBuf>,
    /// Beside `--out`: a shard's evidence for `merge`.
    pub evidence: Option<PathBuf>,
}

/// What a run made for its outputs, each written where its plan says.
#[derive(Default)]
pub struct Made<'a> {
    /// A shard's evidence.
    pub evidence: Option<Evidence<'a>>,
    /// The epoch's manifest again, when the run added to it (a pinned network's
    /// exchanges).
    pub epoch: Option<&'a EpochManifest>,
    /// What the run learned of each tool.
    pub tool_health: Option<&'a HealthReport>,
    /// One test case per task.
    pub junit: Option<Junit>,
    /// The summary document.
    pub summary: Option<serde_json::Value>,
    /// The run's page.
    pub page: Option<RunPage<'a>>,
}

/// Writes a shard's entries, in input order, and says how many bytes.
pub type EntriesWriter<'a> = Box<dyn FnOnce(&mut dyn Write) -> io::Result<u64> + 'a>;

/// A shard's evidence: its header, and the entries `body` writes.
pub struct Evidence<'a> {
    /// The first line.
    pub header: EvidenceHeader,
    /// The entries.
    pub body: EntriesWriter<'a>,
}

impl OutputPlan {
    /// Every file the plan names, with the flag that names it, for the checks made before
    /// any work (no output overwrites an input or another output).
    pub fn files(&self) -> Vec<(&'static str, &Path)> {
        [
            ("--write-epoch", &self.epoch),
            ("--tool-health", &self.tool_health),
            ("--junit", &self.junit),
            ("--summary-json", &self.summary),
            ("--html", &self.page),
            ("--out", &self.decisions),
            ("--out's journal", &self.journal),
            ("--out's partial decisions", &self.partial),
            ("--out's shard evidence", &self.evidence),
        ]
        .into_iter()
        .filter_map(|(flag, p)| p.as_deref().map(|p| (flag, p)))
        .collect()
    }

    /// Whether the run's labelled tasks are decided on the calibration grid too: only
    /// the summary and the page show it.
    pub fn calibrates(&self) -> bool {
        self.summary.is_some() || self.page.is_some()
    }

    /// Writes the epoch's manifest (`--write-epoch`), when asked for.
    pub fn write_epoch(&self, manifest: &EpochManifest) -> Result<(), OutputError> {
        match &self.epoch {
            Some(file) => write_manifest(file, manifest),
            None => Ok(()),
        }
    }

    /// Writes what the run made, each where the plan says, in one order: the evidence
    /// first (a shard whose decisions are in place has its evidence too), then the epoch,
    /// tool health, JUnit, summary and page, and the decisions last (`decisions` puts
    /// them in place), so a run that fails on the way leaves the earlier decisions file
    /// as it was.
    pub fn carry_out<E: From<OutputError>>(
        &self,
        made: Made<'_>,
        decisions: impl FnOnce() -> Result<(), E>,
    ) -> Result<(), E> {
        if let (Some(file), Some(ev)) = (&self.evidence, made.evidence) {
            write_with(file, |w| {
                plangate_harness::shard::write_evidence(&ev.header, ev.body, w)
            })?;
        }
        if let (Some(file), Some(manifest)) = (&self.epoch, made.epoch) {
            write_manifest(file, manifest)?;
        }
        if let (Some(file), Some(health)) = (&self.tool_health, made.tool_health) {
            write_json(file, health)?;
        }
        if let (Some(file), Some(junit)) = (&self.junit, made.junit) {
            let xml = junit.to_xml().map_err(|source| OutputError::Junit {
                path: file.clone(),
                source,
            })?;
            write_file(file, &xml)?;
        }
        if let (Some(file), Some(summary)) = (&self.summary, &made.summary) {
            write_json(file, summary)?;
        }
        if let (Some(file), Some(page)) = (&self.page, &made.page) {
            write_file(file, render(page).as_bytes())?;
        }
        decisions()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_name_each_output_once_with_its_flag() {
        let plan = OutputPlan {
            decisions: Some("d.jsonl".into()),
            summary: Some("s.json".into()),
            journal: Some("d.jsonl.journal".into()),
            ..OutputPlan::default()
        };
        let flags: Vec<&str> = plan.files().iter().map(|(f, _)| *f).collect();
        assert_eq!(flags, ["--summary-json", "--out", "--out's journal"]);
        assert!(plan.calibrates());
        assert!(!OutputPlan::default().calibrates());
    }

    #[test]
    fn a_failed_output_leaves_the_decisions_unplaced() {
        let dir = tempfile::tempdir().unwrap();
        let plan = OutputPlan {
            // A folder that is not there: the summary cannot be written.
            summary: Some(dir.path().join("gone/s.json")),
            page: Some(dir.path().join("p.html")),
            ..OutputPlan::default()
        };
        let made = Made {
            summary: Some(serde_json::json!({})),
            ..Made::default()
        };
        let mut placed = false;
        let r: Result<(), OutputError> = plan.carry_out(made, || {
            placed = true;
            Ok(())
        });
        assert!(r.unwrap_err().to_string().contains("gone"));
        assert!(
            !placed,
            "the decisions are put in place only after every report"
        );
    }

    #[test]
    fn each_made_output_is_written_where_the_plan_says() {
        let dir = tempfile::tempdir().unwrap();
        let plan = OutputPlan {
            summary: Some(dir.path().join("s.json")),
            junit: Some(dir.path().join("j.xml")),
            ..OutputPlan::default()
        };
        let made = Made {
            summary: Some(serde_json::json!({"exit_code": 0})),
            junit: Some(Junit::new()),
            ..Made::default()
        };
        plan.carry_out::<OutputError>(made, || Ok(())).unwrap();
        let summary = std::fs::read_to_string(dir.path().join("s.json")).unwrap();
        assert_eq!(summary, "{\n  \"exit_code\": 0\n}\n");
        let xml = std::fs::read_to_string(dir.path().join("j.xml")).unwrap();
        assert!(xml.contains("<testsuites"), "{xml}");
    }
}
