//! `--html FILE` on `score`, `eval` and `merge`: the run's page (plangate-report's
//! `run` page) from what the command counted and found; the run's output plan writes it.

use std::time::Duration;

use plangate_report::digest::RunDigest;
use plangate_report::html::escape;
use plangate_report::run::{Counts, Fact, RunPage};

use crate::tally::Tally;

/// The line counts the page heads with, as the summary has them.
pub(crate) fn counts(tally: &Tally) -> Counts {
    Counts {
        lines: tally.lines as u64,
        blank: tally.blank as u64,
        skipped: tally.skipped as u64,
        accept: tally.accept as u64,
        reject: tally.reject as u64,
        defer: tally.defer as u64,
        refused: tally.refused as u64,
        other_shards: tally.other_shards as u64,
    }
}

/// A row of the run's facts, its cell text escaped.
pub(crate) fn fact(key: &str, name: &str, text: &str) -> Fact {
    Fact {
        key: key.into(),
        name: name.into(),
        html: escape(text),
    }
}

/// A row of the run's facts whose cell is code (an epoch id, a command).
pub(crate) fn code_fact(key: &str, name: &str, text: &str) -> Fact {
    Fact {
        key: key.into(),
        name: name.into(),
        html: format!("<code>{}</code>", escape(text)),
    }
}

/// The run's wall time, as a fact.
pub(crate) fn elapsed_fact(elapsed: Duration) -> Fact {
    fact(
        "elapsed",
        "wall time",
        &format!("{:.2} s", elapsed.as_secs_f64()),
    )
}

/// The page's common parts: the command's title over the batch it read, the counts and
/// the digest; the caller adds what its command found.
pub(crate) fn page<'a>(
    command: &str,
    source: &str,
    tally: &Tally,
    digest: &'a RunDigest,
) -> RunPage<'a> {
    RunPage {
        title: format!("plangate {command}: {source}"),
        counts: counts(tally),
        baseline: tally.baseline.line(),
        digest,
        partial: None,
        health: None,
        retry: None,
        facts: vec![code_fact(
            "command",
            "command",
            &format!("plangate {command}"),
        )],
        calibration: None,
    }
}
