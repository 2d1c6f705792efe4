//! What a sandbox call means to the gate: a [`CallRecord`] becomes the
//! [`Observed`] that result agreement compares, following the tool ABI of docs/design.md
//! "The sandbox epoch" (JSON on stdout with exit 0; `{"error":{...}}` with exit 1).

use plangate_gate::errors::{ErrorConvention, kind_named};
use plangate_gate::json::{Duplicates, Value, parse_with};
use plangate_gate::task::Observed;
use plangate_sandbox::{CallRecord, Outcome};

/// Maps one call record to what the gate observes:
/// - exit 0 with JSON stdout: `Result(value)`; exit 0 with anything else: `Bytes`;
/// - exit 1 with `{"error":{"kind":..,"message":..}}`: `Error{kind, message}`;
/// - any other end (another exit code, exit 1 without the envelope, `out_of_fuel`,
///   `timeout`, `trap`, `memory_limit`, `output_limit`): `Error` whose kind is the
///   outcome's name.
pub fn observed(r: &CallRecord) -> Observed {
    match r.outcome {
        Outcome::Exit { code: 0 } => match parse_with(&r.stdout, Duplicates::Refuse) {
            Ok(v) => Observed::Result(v.into()),
            Err(_) => Observed::Bytes(r.stdout.clone()),
        },
        Outcome::Exit { code } => {
            if code == 1
                && let Some(e) = error_envelope(&r.stdout)
            {
                return e;
            }
            Observed::Error {
                kind: "exit".into(),
                message: format!(
                    "exit status {code}: {}",
                    excerpt(if r.stdout.is_empty() {
                        &r.stderr
                    } else {
                        &r.stdout
                    })
                ),
            }
        }
        Outcome::Trap { kind } => Observed::Error {
            kind: "trap".into(),
            message: match &r.detail {
                Some(d) => format!("{}: {d}", kind.as_str()),
                None => kind.as_str().into(),
            },
        },
        other => Observed::Error {
            kind: other.as_str().into(),
            // No wall time or fuel in the message: it is part of the result key, and
            // those numbers would split otherwise equal outcomes.
            message: format!("the call ended with {}", other.as_str()),
        },
    }
}

/// [`observed`], read by the tool's catalog `errors` rules when it has them: a result
/// the tool writes as its error is the call's error, as `score` reads it from a samples
/// line ([`ErrorConvention::recognise`]).
pub(crate) fn observed_by(r: &CallRecord, errors: Option<&ErrorConvention>) -> Observed {
    let o = observed(r);
    match errors.and_then(|c| c.recognise(&o)) {
        Some(error) => error,
        None => o,
    }
}

fn error_envelope(stdout: &[u8]) -> Option<Observed> {
    let v = parse_with(stdout, Duplicates::Refuse).ok()?;
    let e = v.as_object()?.get("error")?.as_object()?;
    // A typed export's `err` case and a catalog rule's kind are one vocabulary:
    // `not-found` is `not_found`.
    let kind = kind_named(e.get("kind")?.as_str()?);
    let message = e
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    Some(Observed::Error { kind, message })
}

/// The first 200 bytes of `b`, as text, for messages.
fn excerpt(b: &[u8]) -> String {
    let cut = &b[..b.len().min(200)];
    String::from_utf8_lossy(cut).trim().to_string()
}

/// A call record as the tests of this crate need one: the outcome and stdout set, the
/// rest plain.
#[cfg(test)]
pub(crate) fn test_record(outcome: Outcome, stdout: &str) -> CallRecord {
    CallRecord {
        outcome,
        exit_code: match outcome {
            Outcome::Exit { code } => Some(code),
            _ => None,
        },
        stdout: stdout.as_bytes().to_vec(),
        stderr: Vec::new(),
        fuel_used: 7,
        wall: std::time::Duration::from_millis(3),
        detail: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use plangate_sandbox::TrapKind;

    use test_record as rec;

    #[test]
    fn records_map_to_observations() {
        let ok = observed(&rec(Outcome::Exit { code: 0 }, r#"{"a":1}"#));
        assert!(matches!(&ok, Observed::Result(p) if matches!(*p.value(), Value::Object(_))));
        let bytes = observed(&rec(Outcome::Exit { code: 0 }, "plain text"));
        assert_eq!(bytes, Observed::Bytes(b"plain text".to_vec()));
        let typed = observed(&rec(
            Outcome::Exit { code: 1 },
            r#"{"error":{"kind":"not_found","message":"no user"}}"#,
        ));
        assert_eq!(
            typed,
            Observed::Error {
                kind: "not_found".into(),
                message: "no user".into()
            }
        );
        let bare = observed(&rec(Outcome::Exit { code: 1 }, "oops"));
        assert!(matches!(bare, Observed::Error { ref kind, .. } if kind == "exit"));
        let seven = observed(&rec(Outcome::Exit { code: 7 }, ""));
        assert!(matches!(seven, Observed::Error { ref message, .. } if message.contains("7")));
        for (o, k) in [
            (Outcome::OutOfFuel, "out_of_fuel"),
            (Outcome::Timeout, "timeout"),
            (Outcome::MemoryLimit, "memory_limit"),
            (Outcome::OutputLimit, "output_limit"),
            (
                Outcome::Trap {
                    kind: TrapKind::Unreachable,
                },
                "trap",
            ),
        ] {
            assert!(
                matches!(observed(&rec(o, "")), Observed::Error { ref kind, .. } if kind == k),
                "{o:?}"
            );
        }
    }

    /// A tool that writes its error as a result, under its catalog rules, and a typed
    /// export's `not-found` envelope: both are the call's `not_found`.
    #[test]
    fn errors_as_the_tool_writes_them() {
        let rules = plangate_gate::json::parse(
            r#"[{"pattern":"^Error: .*not found","kind":"not_found"},{"pattern":"^Error: "}]"#,
        )
        .unwrap();
        let catalog = plangate_gate::catalog::Catalog::from_value(
            &plangate_gate::json::parse(&format!(
                r#"{{"tools":[{{"name":"t","deterministic":true,"errors":{}}}]}}"#,
                plangate_gate::jcs::to_string(&rules)
            ))
            .unwrap(),
        )
        .unwrap();
        let errors = catalog.get("t").unwrap().errors.as_ref();
        let text = rec(Outcome::Exit { code: 0 }, r#""Error: user u_9 not found""#);
        assert_eq!(
            observed_by(&text, errors),
            Observed::Error {
                kind: "not_found".into(),
                message: "Error: user u_9 not found".into()
            }
        );
        // Without the rules the same answer is a result.
        assert!(matches!(observed_by(&text, None), Observed::Result(_)));
        let seats = rec(Outcome::Exit { code: 0 }, r#""Error: no seats""#);
        assert!(
            matches!(observed_by(&seats, errors), Observed::Error { ref kind, .. } if kind == "tool_error")
        );
        let typed = rec(
            Outcome::Exit { code: 1 },
            r#"{"error":{"kind":"not-found","message":"u_9"}}"#,
        );
        assert!(
            matches!(observed(&typed), Observed::Error { ref kind, .. } if kind == "not_found")
        );
    }
}
