//! JUnit XML, the format CI systems read test results in: one test case per task, so a
//! CI suite shows a reject as a failure (with its reasons), a deferral as skipped, and a
//! line that was not a task as an error.

use plangate_gate::decide::{Decision, Reason, Verdict};
use plangate_gate::task::TaskError;
use plangate_harness::{Attempt, RetryReport};
use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

/// JUnit that could not be written.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct JunitError(#[from] quick_junit::SerializeError);

/// A run's test suite, filled in input order as its lines are decided.
#[derive(Debug, Clone)]
pub struct Junit {
    suite: TestSuite,
}

impl Default for Junit {
    fn default() -> Self {
        Self::new()
    }
}

impl Junit {
    /// An empty suite, `plangate eval`: the one name CI dashboards group a run under,
    /// whichever command decided it.
    pub fn new() -> Junit {
        Junit {
            suite: TestSuite::new("plangate eval"),
        }
    }

    /// A decided task: passed (accept), failed (reject, its reason codes as the failure's
    /// type) or skipped (defer), with the epochs it was deferred in before, if any.
    pub fn decided(&mut self, d: &Decision, history: Option<&[Attempt]>) {
        self.suite.add_test_case(task_case(d, history));
    }

    /// A line that was not a task: an error of type `input`.
    pub fn bad_line(&mut self, line: usize, e: &TaskError) {
        self.suite.add_test_case(input_case(line, e));
    }

    /// The defer path's figures as the suite's properties (`plangate.retry.*`).
    pub fn retry(&mut self, r: &RetryReport) {
        for (name, n) in [
            ("plangate.retry.tasks_retried", r.tasks_retried),
            ("plangate.retry.rounds", r.rounds.len()),
            ("plangate.retry.calls", r.calls),
            ("plangate.retry.reused", r.reused),
        ] {
            self.suite.add_property((name, n.to_string().as_str()));
        }
        for (reason, verdicts) in &r.resolved {
            for (verdict, n) in verdicts {
                let name = format!("plangate.retry.resolved.{reason}.{verdict}");
                self.suite
                    .add_property((name.as_str(), n.to_string().as_str()));
            }
        }
    }

    /// The document: one `plangate` report holding the suite.
    pub fn to_xml(self) -> Result<Vec<u8>, JunitError> {
        let mut report = Report::new("plangate");
        report.add_test_suite(self.suite);
        let mut xml = Vec::new();
        report.serialize(&mut xml)?;
        Ok(xml)
    }
}

/// `s` as an XML 1.0 document can hold it. quick-junit drops control characters and
/// ANSI escapes but lets U+FFFE and U+FFFF through, and one of them makes the whole
/// file unreadable to CI: they become U+FFFD, so the name keeps its length and place.
/// Every other `char` is an XML 1.0 `Char` (a `str` holds no surrogates).
fn xml_text(s: &str) -> String {
    s.replace(['\u{FFFE}', '\u{FFFF}'], "\u{FFFD}")
}

/// A reason's code as the decision record writes it.
fn code(r: &Reason) -> Option<String> {
    serde_json::to_value(r).ok()?.as_str().map(str::to_string)
}

fn task_case(d: &Decision, history: Option<&[Attempt]>) -> TestCase {
    let reasons: Vec<String> = d
        .reasons
        .iter()
        .map(|r| code(r).unwrap_or_default())
        .collect();
    let message = xml_text(&d.explanation.join("; "));
    let mut status = match d.verdict {
        Verdict::Accept => TestCaseStatus::success(),
        Verdict::Reject => {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
            s.set_type(reasons.join(","));
            s
        }
        Verdict::Defer => TestCaseStatus::skipped(),
    };
    if d.verdict != Verdict::Accept {
        status.set_message(message.clone());
        status.set_description(format!("reasons: {}\n{message}", reasons.join(", ")));
    }
    let mut tc = TestCase::new(xml_text(&d.task_id), status);
    for (i, a) in history.unwrap_or_default().iter().enumerate() {
        let reasons: Vec<String> = a.reasons.iter().filter_map(code).collect();
        let name = format!("plangate.history.{i}");
        let value = format!(
            "{} in epoch {} ({})",
            a.decision.as_str(),
            a.epoch_id,
            reasons.join(", ")
        );
        tc.add_property((name.as_str(), xml_text(&value).as_str()));
    }
    tc.set_classname("plangate.eval");
    tc
}

fn input_case(line: usize, e: &TaskError) -> TestCase {
    let mut status = TestCaseStatus::non_success(NonSuccessKind::Error);
    status.set_type("input");
    status.set_message(xml_text(&e.to_string()));
    let name = match &e.task_id {
        Some(id) => xml_text(id),
        None => format!("line {line}"),
    };
    let mut tc = TestCase::new(name, status);
    tc.set_classname("plangate.eval");
    tc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn characters_xml_cannot_hold_are_replaced_everywhere() {
        let mut junit = Junit::new();
        let mut d = crate::digest::tests::decision(2);
        d.task_id = "a\u{FFFE}b\u{FFFF}".into();
        d.explanation = vec!["u_\u{FFFF} is not found".into()];
        junit.decided(&d, None);
        junit.bad_line(
            3,
            &TaskError {
                field: "samples".into(),
                message: "\u{FFFE} is not a list".into(),
                task_id: Some("bad\u{FFFF}".into()),
            },
        );
        let xml = String::from_utf8(junit.to_xml().unwrap()).unwrap();
        assert!(!xml.contains(['\u{FFFE}', '\u{FFFF}']), "{xml}");
        assert!(xml.contains("a\u{FFFD}b\u{FFFD}"), "{xml}");
        assert!(xml.contains("bad\u{FFFD}"), "{xml}");
        assert!(xml.contains("u_\u{FFFD} is not found"), "{xml}");
    }
}
