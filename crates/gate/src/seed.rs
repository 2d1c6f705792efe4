//! The seed's gate exactly as its Python code behaves, errors included, for users who
//! must reproduce published numbers and for the differential test against
//! `reference/seed_gate.py`. Its defects are kept on purpose (raw `json.dumps`
//! equality: `1` and `1.0` differ, no schema, no path or ID normalization; float
//! thresholds). Use [`crate::decide`] for decisions.
//!
//! [`judge`] holds the rules of `--seed-compat` too: which tasks the seed can express at
//! all, and how it refuses the rest, so the binary only writes down the outcome.

use crate::catalog::Catalog;
use crate::decide::{Verdict, modal};
use crate::jcs::{Style, print_text};
use crate::json::{Number, Value};
use crate::task::{Arguments, Form, KeyInterner, Observed, Payload, Task, per_sample};

/// `ToolSchema` of the seed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeedTool {
    /// Tool name.
    pub name: String,
    /// Declared deterministic.
    pub deterministic: bool,
    /// Determinism probed this epoch.
    pub verified: bool,
}

/// Keyword arguments of the seed's `classify_plan`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SeedOptions {
    /// `arg_accept`
    pub arg_accept: f64,
    /// `arg_reject`
    pub arg_reject: f64,
    /// `result_accept`
    pub result_accept: f64,
    /// `min_samples`
    pub min_samples: usize,
    /// `fixed_epoch`
    pub fixed_epoch: bool,
}

impl Default for SeedOptions {
    fn default() -> Self {
        SeedOptions {
            arg_accept: 0.80,
            arg_reject: 0.20,
            result_accept: 0.80,
            min_samples: 5,
            fixed_epoch: true,
        }
    }
}

impl SeedOptions {
    /// The gate's thresholds as the seed's code takes them: floats, and no suspect level.
    pub fn from_gate(opts: &crate::decide::Options) -> Self {
        SeedOptions {
            arg_accept: opts.arg_accept.as_f64(),
            arg_reject: opts.arg_reject.as_f64(),
            result_accept: opts.result_accept.as_f64(),
            min_samples: opts.min_samples,
            fixed_epoch: true,
        }
    }
}

/// What the seed's code returns.
#[derive(Debug, Clone, PartialEq)]
pub struct SeedDecision {
    /// The seed's `"accept" | "reject" | "defer"`.
    pub decision: Verdict,
    /// Argument agreement as the seed computes it.
    pub arg_agreement: f64,
    /// Result agreement as the seed computes it.
    pub res_agreement: f64,
}

/// `HallucinationGateError`, with the seed's message word for word.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct HallucinationGateError(pub String);

/// The seed's `classify_plan`. Samples are (arguments, result) pairs.
pub fn classify_plan(
    tool: &SeedTool,
    samples: &[(Value, Value)],
    opts: &SeedOptions,
) -> Result<SeedDecision, HallucinationGateError> {
    classify_counted(tool, samples.len(), || agreements(samples), opts)
}

/// [`classify_plan`] over `n` samples whose agreements `agree` computes, when the seed's
/// code gets that far.
fn classify_counted(
    tool: &SeedTool,
    n: usize,
    agree: impl FnOnce() -> (f64, f64),
    opts: &SeedOptions,
) -> Result<SeedDecision, HallucinationGateError> {
    if n < opts.min_samples {
        return Err(HallucinationGateError(format!(
            "insufficient samples: {} < {}",
            n, opts.min_samples
        )));
    }
    if !opts.fixed_epoch {
        return Err(HallucinationGateError(
            "epoch not fixed; tool nondeterminism would leak into arg signal".into(),
        ));
    }
    let (a, r) = agree();
    let decision = if a < opts.arg_reject {
        if !tool.deterministic || !tool.verified {
            Verdict::Defer
        } else {
            Verdict::Reject
        }
    } else if a >= opts.arg_accept && r < opts.result_accept {
        Verdict::Defer
    } else if a >= opts.arg_accept && r >= opts.result_accept {
        Verdict::Accept
    } else {
        Verdict::Defer
    };
    Ok(SeedDecision {
        decision,
        arg_agreement: a,
        res_agreement: r,
    })
}

/// The seed's `gate_or_raise`: refuses an unprobed deterministic tool, then classifies
/// (with `opts`; the seed always passes the defaults).
pub fn gate_or_raise(
    tool: &SeedTool,
    samples: &[(Value, Value)],
    opts: &SeedOptions,
) -> Result<SeedDecision, HallucinationGateError> {
    gate_counted(tool, samples.len(), || agreements(samples), opts)
}

/// [`gate_or_raise`] as [`classify_counted`] is to [`classify_plan`].
fn gate_counted(
    tool: &SeedTool,
    n: usize,
    agree: impl FnOnce() -> (f64, f64),
    opts: &SeedOptions,
) -> Result<SeedDecision, HallucinationGateError> {
    if tool.deterministic && !tool.verified {
        return Err(HallucinationGateError(format!(
            "tool {} declared deterministic but not probed this epoch; refusing to score",
            python_repr(&tool.name)
        )));
    }
    classify_counted(tool, n, agree, opts)
}

/// Which of the seed's two entry points a task goes through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryPoint {
    /// [`gate_or_raise`]: refuses a declared-deterministic tool that was not verified.
    GateOrRaise,
    /// [`classify_plan`]: classifies whatever the tool's state.
    ClassifyPlan,
}

/// Why the seed gave a task no verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The seed's gate cannot express the task: not one call per sample, more than one
    /// tool, or a tool the catalog does not have.
    Unsupported,
    /// The seed's own code raised [`HallucinationGateError`].
    HallucinationGateError,
}

impl Refusal {
    /// The kind as a decision record names it.
    pub fn as_str(self) -> &'static str {
        match self {
            Refusal::Unsupported => "unsupported",
            Refusal::HallucinationGateError => "HallucinationGateError",
        }
    }
}

/// What the seed makes of one task.
#[derive(Debug, Clone, PartialEq)]
pub enum SeedOutcome {
    /// The seed's code decided, over `samples` (arguments, result) pairs.
    Decided {
        /// What the seed's code returned.
        decision: SeedDecision,
        /// Samples the agreements were computed over.
        samples: usize,
    },
    /// The seed gave no verdict, with the reason in its own words.
    Refused {
        /// Whether the seed could not express the task or refused it itself.
        kind: Refusal,
        /// The message, word for word where the seed's code wrote it.
        message: String,
    },
}

impl SeedOutcome {
    /// The verdict, when the seed gave one.
    pub fn verdict(&self) -> Option<Verdict> {
        match self {
            SeedOutcome::Decided { decision, .. } => Some(decision.decision),
            SeedOutcome::Refused { .. } => None,
        }
    }
}

/// One task through the seed's code at `entry`. The seed judges one call of one tool
/// per sample; any other task is refused as [`Refusal::Unsupported`], naming the first
/// sample that breaks the shape. A task's own `epoch_fixed` overrides
/// `opts.fixed_epoch`.
pub fn judge(task: &Task, catalog: &Catalog, entry: EntryPoint, opts: &SeedOptions) -> SeedOutcome {
    let tool = match seed_shape(task, catalog) {
        Ok(tool) => tool,
        Err(message) => {
            return SeedOutcome::Refused {
                kind: Refusal::Unsupported,
                message,
            };
        }
    };
    let opts = SeedOptions {
        fixed_epoch: task.epoch_fixed.unwrap_or(opts.fixed_epoch),
        ..*opts
    };
    let n = task.samples.len();
    let agree = || task_agreements(task);
    let decided = match entry {
        EntryPoint::GateOrRaise => gate_counted(&tool, n, agree, &opts),
        EntryPoint::ClassifyPlan => classify_counted(&tool, n, agree, &opts),
    };
    match decided {
        Ok(decision) => SeedOutcome::Decided {
            decision,
            samples: n,
        },
        Err(e) => SeedOutcome::Refused {
            kind: Refusal::HallucinationGateError,
            message: e.0,
        },
    }
}

/// The seed's tool for a task of one call of one tool per sample, or why the seed
/// cannot express the task.
fn seed_shape(task: &Task, catalog: &Catalog) -> Result<SeedTool, String> {
    let mut tool_name: Option<&str> = None;
    for (i, s) in task.samples.iter().enumerate() {
        let [call] = s.calls.as_slice() else {
            return Err(format!(
                "samples[{i}] has {} calls; the seed's gate takes exactly one call per sample",
                s.calls.len()
            ));
        };
        match tool_name {
            None => tool_name = Some(&call.tool),
            Some(t) if t != call.tool => {
                return Err(format!(
                    "samples[{i}] calls {:?}, not {t:?}; the seed's gate takes one tool per task",
                    call.tool
                ));
            }
            Some(_) => {}
        }
    }
    seed_tool(tool_name, catalog)
}

/// [`agreements`] over the (arguments, result) pair of each sample of a task
/// [`seed_shape`] accepted, as the seed would receive them (text that is not JSON stays
/// a string), without copying them out: each distinct result text is printed once,
/// straight from the text.
fn task_agreements(task: &Task) -> (f64, f64) {
    let (mut args, mut results) = (KeyInterner::new(Dumps), KeyInterner::new(Dumps));
    let keys: Vec<Option<(u32, u32)>> = per_sample(
        &task.samples,
        |_| true,
        |_, s| {
            let call = s.calls.first()?;
            let a = match &call.arguments {
                Arguments::Json(v) => args.value(v),
                Arguments::Malformed(raw) => args.id(dumps_key(&Value::String(raw.clone()))),
            };
            Some((a, result_id(&mut results, &call.observed)))
        },
    );
    let keys = || keys.iter().flatten();
    shares(keys().count(), keys().map(|k| k.0), keys().map(|k| k.1))
}

/// The id of a call's result under `json.dumps` equality, printed from its text only
/// where its fingerprint meets another's.
fn result_id<'a>(results: &mut KeyInterner<'a, Dumps>, o: &'a Observed) -> u32 {
    match o {
        Observed::Result(p) => results.payload(p),
        other => results.id(other
            .error_form()
            .unwrap_or_else(|| dumps_key(&other.as_value()))),
    }
}

/// The ids the seed's agreements give the results of one task's calls, in order;
/// public only so `tests/props.rs` can hold them to the ids of `json.dumps` forms.
#[doc(hidden)]
pub fn dumps_result_ids(results: &[Observed]) -> Vec<u32> {
    let mut keys = KeyInterner::new(Dumps);
    results.iter().map(|o| result_id(&mut keys, o)).collect()
}

/// The seed's `ToolSchema` for the task's tool; a task with no samples names none, and
/// the seed then sees a nameless tool declared nondeterministic.
fn seed_tool(name: Option<&str>, catalog: &Catalog) -> Result<SeedTool, String> {
    let Some(name) = name else {
        return Ok(SeedTool {
            name: String::new(),
            deterministic: false,
            verified: false,
        });
    };
    match catalog.get(name) {
        Some(spec) => Ok(SeedTool {
            name: spec.name.clone(),
            deterministic: spec.deterministic,
            verified: spec.verified.unwrap_or(false),
        }),
        None => Err(format!("tool {name:?} is not in the catalog")),
    }
}

/// Agreements as the seed computes them (`max count / n`, as floats).
pub fn agreements(samples: &[(Value, Value)]) -> (f64, f64) {
    shares(
        samples.len(),
        samples.iter().map(|(a, _)| dumps_key(a)),
        samples.iter().map(|(_, r)| dumps_key(r)),
    )
}

/// The seed's `max(keys.count(k)) / n` for the argument keys and the result keys of
/// `n` samples (0 for no samples).
fn shares<K: Ord>(
    n: usize,
    args: impl Iterator<Item = K>,
    results: impl Iterator<Item = K>,
) -> (f64, f64) {
    if n == 0 {
        return (0.0, 0.0);
    }
    let share = |best: Option<(usize, usize)>| best.map_or(0, |(_, count)| count) as f64 / n as f64;
    (share(modal(args)), share(modal(results)))
}

/// A key equal for two values exactly when Python's
/// `json.dumps(v, sort_keys=True, separators=(",", ":"))` prints them the same: ints
/// exact, floats by their double (so `1` != `1.0`, `-0.0` != `0.0`), keys sorted.
pub fn dumps_key(v: &Value) -> String {
    let mut out = String::with_capacity(64);
    dumps(v, &mut out);
    out
}

/// The seed's `json.dumps` equality as a [`Form`], printed from a result's text when
/// it has one.
pub(crate) struct Dumps;

/// [`Dumps`] for [`print_text`]: Python sorts keys by code point (byte order in UTF-8;
/// any fixed order gives the same equality).
const DUMPS: Style = Style {
    order: |a, b| a.cmp(b),
    number: py_lexeme,
};

impl Form for Dumps {
    const FINGERPRINTS: bool = true;
    fn of_value(&self, v: &Value) -> String {
        dumps_key(v)
    }
    fn of_payload(&self, p: &Payload) -> String {
        p.text()
            .and_then(|t| print_text(t, &DUMPS))
            .map_or_else(|| dumps_key(p.value()), |(key, _)| key)
    }
}

/// [`Dumps`] of a result payload, printed from its text when it has one; public only so
/// `tests/props.rs` can hold it to [`dumps_key`] of the built value.
#[doc(hidden)]
pub fn dumps_payload(p: &Payload) -> String {
    Dumps.of_payload(p)
}

fn dumps(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => py_number(n, out),
        Value::String(s) => crate::jcs::write_string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                dumps(x, out);
            }
            out.push(']');
        }
        Value::Object(o) => {
            // Python sorts by code point; any fixed order gives the same equality.
            let mut members: Vec<_> = o.iter().collect();
            members.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (k, x)) in members.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                crate::jcs::write_string(k, out);
                out.push(':');
                dumps(x, out);
            }
            out.push('}');
        }
    }
}

fn py_number(n: &Number, out: &mut String) {
    py_lexeme(n.lexeme(), out);
}

/// [`py_number`] of a lexeme the JSON grammar accepted. The key is compared, never
/// shown, so it need not be Python's spelling, only equal exactly when Python's is.
fn py_lexeme(lex: &str, out: &mut String) {
    if Number::float_lexeme(lex) {
        // A float is its double, so the double's bits are its key: they tell -0.0 from
        // 0.0 as Python's repr does, and make every overflow one infinity. Tagged so no
        // float ever equals an int: Python prints 1.0 and 1 apart. The bits are cheaper
        // than formatting the shortest decimal.
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let bits = Number::f64_of_lexeme(lex).to_bits();
        out.push_str("f:");
        for shift in (0..16).rev() {
            out.push(char::from(HEX[((bits >> (shift * 4)) & 0xf) as usize]));
        }
    } else if lex == "-0" {
        // The only integer lexeme Python prints otherwise: the grammar allows no
        // leading zeros, and `int` has no negative zero.
        out.push('0');
    } else {
        out.push_str(lex);
    }
}

/// Python's `repr()` of a str, for the seed's error message.
pub fn python_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::new();
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::parse;

    fn k(s: &str) -> String {
        dumps_key(&parse(s).unwrap())
    }

    /// An error's key, printed without building it, is its `json.dumps` form.
    #[test]
    fn errors_dump_as_their_value() {
        for (kind, message) in [
            ("not_found", "no user 'u_1'"),
            ("k\"\\\n\u{1}", "\u{e9}\u{1F600}"),
        ] {
            let e = Observed::Error {
                kind: kind.into(),
                message: message.into(),
            };
            assert_eq!(e.error_form(), Some(dumps_key(&e.as_value())));
        }
    }

    #[test]
    fn python_equality_classes() {
        assert_ne!(k("1"), k("1.0"));
        assert_eq!(k("1.0"), k("1.00"));
        assert_eq!(k("1E2"), k("100.0"));
        assert_ne!(k("-0.0"), k("0.0"));
        assert_eq!(k("-0"), k("0"));
        assert_eq!(k("1e400"), k("2e400"));
        assert_ne!(k("9007199254740993"), k("9007199254740992"));
        assert_eq!(
            k(r#"{"b":1,"a":[true,null]}"#),
            k(r#"{"a":[true,null],"b":1}"#)
        );
    }

    /// `w` is declared deterministic and verified, `u` declared but not probed.
    fn judge_line(line: &str, entry: EntryPoint) -> SeedOutcome {
        let catalog = Catalog::from_value(
            &parse(
                r#"[{"name":"w","input_schema":{"type":"object"},
                     "x-plangate":{"deterministic":true,"verified":true}},
                    {"name":"u","input_schema":{"type":"object"},
                     "x-plangate":{"deterministic":true}}]"#,
            )
            .unwrap(),
        )
        .unwrap();
        let task = crate::task::parse_task_line(line.as_bytes()).unwrap();
        judge(&task, &catalog, entry, &SeedOptions::default())
    }

    /// A task line whose samples make these calls (each a comma-separated list).
    fn line(samples: &[&str], extra: &str) -> String {
        let samples: Vec<String> = samples
            .iter()
            .map(|calls| format!(r#"{{"calls":[{calls}]}}"#))
            .collect();
        format!(
            r#"{{"task_id":"t","samples":[{}]{extra}}}"#,
            samples.join(",")
        )
    }

    fn refused(kind: Refusal, message: &str) -> SeedOutcome {
        SeedOutcome::Refused {
            kind,
            message: message.into(),
        }
    }

    #[test]
    fn tasks_the_seed_cannot_express_are_refused_naming_the_sample() {
        let call = r#"{"tool":"w","arguments":{},"result":1}"#;
        let two = format!("{call},{call}");
        let l = line(&[&two, call, call, call, call], "");
        assert_eq!(
            judge_line(&l, EntryPoint::GateOrRaise),
            refused(
                Refusal::Unsupported,
                "samples[0] has 2 calls; the seed's gate takes exactly one call per sample"
            )
        );
        let other = r#"{"tool":"u","arguments":{},"result":1}"#;
        let l = line(&[call, call, call, call, other], "");
        assert_eq!(
            judge_line(&l, EntryPoint::ClassifyPlan),
            refused(
                Refusal::Unsupported,
                r#"samples[4] calls "u", not "w"; the seed's gate takes one tool per task"#
            )
        );
        let l = line(&[r#"{"tool":"x","arguments":{},"result":1}"#; 5], "");
        assert_eq!(
            judge_line(&l, EntryPoint::GateOrRaise),
            refused(Refusal::Unsupported, r#"tool "x" is not in the catalog"#)
        );
    }

    #[test]
    fn the_seed_refuses_or_decides_by_its_entry_point() {
        let unprobed = line(&[r#"{"tool":"u","arguments":{"a":1},"result":1}"#; 5], "");
        assert_eq!(
            judge_line(&unprobed, EntryPoint::GateOrRaise),
            refused(
                Refusal::HallucinationGateError,
                "tool 'u' declared deterministic but not probed this epoch; refusing to score"
            )
        );
        let decided = judge_line(&unprobed, EntryPoint::ClassifyPlan);
        assert_eq!(
            decided,
            SeedOutcome::Decided {
                decision: SeedDecision {
                    decision: Verdict::Accept,
                    arg_agreement: 1.0,
                    res_agreement: 1.0,
                },
                samples: 5,
            }
        );
        assert_eq!(decided.verdict(), Some(Verdict::Accept));
        let unfixed = line(
            &[r#"{"tool":"w","arguments":{},"result":1}"#; 5],
            r#","epoch_fixed":false"#,
        );
        let outcome = judge_line(&unfixed, EntryPoint::GateOrRaise);
        assert_eq!(outcome.verdict(), None);
        assert_eq!(
            outcome,
            refused(
                Refusal::HallucinationGateError,
                "epoch not fixed; tool nondeterminism would leak into arg signal"
            )
        );
    }

    #[test]
    fn errors_word_for_word() {
        let t = SeedTool {
            name: "search_index".into(),
            deterministic: true,
            verified: false,
        };
        let e = gate_or_raise(&t, &[], &SeedOptions::default()).unwrap_err();
        assert_eq!(
            e.0,
            "tool 'search_index' declared deterministic but not probed this epoch; refusing to score"
        );
        assert_eq!(python_repr("it's"), "\"it's\"");
        let e = classify_plan(&t, &[], &SeedOptions::default()).unwrap_err();
        assert_eq!(e.0, "insufficient samples: 0 < 5");
    }
}
