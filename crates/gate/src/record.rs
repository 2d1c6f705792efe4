//! Every record plangate writes per line, declared once. A record ([`Record`]) names its
//! fields in order to a [`Sink`], and each form a record takes is a sink: the JSON line
//! (`Json`, here) that `score`, `eval` and `merge` write, and the Python objects the
//! package returns (its pickle writer), so the forms cannot drift apart. The JSON sink
//! writes what `serde_json` would (strings escaped as it escapes them, floats through
//! the formatter it uses, `null` for a float that is not finite), by hand, which costs
//! measurably fewer instructions than a generic serializer.

use std::sync::OnceLock;

use crate::decide::{
    Agreement, Decision, DivergentPath, MalformedSample, PlanStep, SchemaViolation, StepAgreement,
};
use crate::invented::{InventedReference, Text};
use crate::jcs::write_string;
use crate::seed::SeedOutcome;
use crate::task::TaskError;

/// Where a record's fields go, in the order the record names them: a value follows each
/// key; a list's items follow [`Sink::list`] until [`Sink::end_list`].
pub trait Sink {
    /// Opens an object.
    fn object(&mut self);
    /// Closes the object opened last.
    fn end_object(&mut self);
    /// Opens a list.
    fn list(&mut self);
    /// Closes the list opened last.
    fn end_list(&mut self);
    /// A member's key; its value follows. Keys are the records' own names.
    fn key(&mut self, key: &'static str);
    /// A string.
    fn str(&mut self, s: &str);
    /// A count or an index.
    fn usize(&mut self, n: usize);
    /// A float (`null` when it is not finite, as JSON has no such number).
    fn f64(&mut self, f: f64);
    /// `null`.
    fn null(&mut self);
    /// A checked JSON text (canonical arguments), as the value it is.
    fn json(&mut self, text: &str);
    /// An agreement: a sink may print the agreements of few samples from a table.
    fn agreement(&mut self, a: &Agreement) {
        a.emit(self);
    }
    /// A decision's `invented_references` member, key and list: a sink may write the
    /// list most decisions have (empty) and its entries from fixed text.
    fn invented_references(&mut self, refs: &[InventedReference]) {
        self.key("invented_references");
        list(self, refs, |s, r| r.emit(s));
    }
}

/// A record: what it writes, field by field, to any [`Sink`].
pub trait Record {
    /// Names this record's fields and values to `s`.
    fn emit<S: Sink + ?Sized>(&self, s: &mut S);
}

/// `record` as its JSON text, appended to `out`.
pub fn write_json<R: Record + ?Sized>(record: &R, out: &mut String) {
    record.emit(&mut Json::new(out));
}

/// `record` as its JSON text.
pub fn json<R: Record + ?Sized>(record: &R) -> String {
    let mut out = String::with_capacity(1024);
    write_json(record, &mut out);
    out
}

/// A sink that writes JSON text, without spaces, as `serde_json::to_string` does.
#[derive(Debug)]
pub struct Json<'o> {
    out: &'o mut String,
    /// Nothing written yet in the object or list open last: no comma before the next.
    first: bool,
    /// A key was written last: its value takes no comma.
    after_key: bool,
}

impl<'o> Json<'o> {
    /// A sink appending to `out`.
    pub fn new(out: &'o mut String) -> Self {
        Json {
            out,
            first: true,
            after_key: false,
        }
    }

    /// Before a value: a comma unless it is the first item or a member's value.
    fn value(&mut self) {
        if self.after_key {
            self.after_key = false;
        } else if !self.first {
            self.out.push(',');
        }
        self.first = false;
    }
}

impl Sink for Json<'_> {
    fn object(&mut self) {
        self.value();
        self.out.push('{');
        self.first = true;
    }

    fn end_object(&mut self) {
        self.out.push('}');
        self.first = false;
    }

    fn list(&mut self) {
        self.value();
        self.out.push('[');
        self.first = true;
    }

    fn end_list(&mut self) {
        self.out.push(']');
        self.first = false;
    }

    // In line: each call site's key is a constant, and its copy a few stores.
    #[inline(always)]
    fn key(&mut self, key: &'static str) {
        if !self.first {
            self.out.push(',');
        }
        self.first = false;
        // The records' keys are plain ASCII names: nothing to escape.
        self.out.push('"');
        self.out.push_str(key);
        self.out.push_str("\":");
        self.after_key = true;
    }

    fn str(&mut self, s: &str) {
        self.value();
        write_string(s, self.out);
    }

    fn usize(&mut self, n: usize) {
        self.value();
        crate::jcs::write_usize(n, self.out);
    }

    fn f64(&mut self, f: f64) {
        self.value();
        write_f64(self.out, f);
    }

    fn null(&mut self) {
        self.value();
        self.out.push_str("null");
    }

    fn json(&mut self, text: &str) {
        self.value();
        self.out.push_str(text);
    }

    fn agreement(&mut self, a: &Agreement) {
        self.value();
        match printed(a) {
            Some(text) => self.out.push_str(text),
            None => {
                // Written as a value already placed: no comma again.
                self.after_key = true;
                a.emit(self);
            }
        }
    }

    fn invented_references(&mut self, refs: &[InventedReference]) {
        // The member's key and the entries' keys as one text each: what `key`, `list`
        // and the entries' `emit` write, without a call per key.
        let out = &mut *self.out;
        out.push_str(if self.first {
            "\"invented_references\":["
        } else {
            ",\"invented_references\":["
        });
        // Where each text of the entry before was written: a task's references share
        // their texts, and one this entry shares is copied, not escaped again.
        let mut written: [Option<(&Text, std::ops::Range<usize>)>; 4] = Default::default();
        for (k, r) in refs.iter().enumerate() {
            if k > 0 {
                out.push(',');
            }
            out.push_str("{\"sample\":");
            crate::jcs::write_usize(r.sample, out);
            out.push_str(",\"turn\":");
            crate::jcs::write_usize(r.turn, out);
            out.push_str(",\"call\":");
            crate::jcs::write_usize(r.call, out);
            // One call per key, each key a constant the compiler copies in place.
            let [tool, parameter, value, error] = &mut written;
            shared_text(out, ",\"tool\":", &r.tool, tool);
            shared_text(out, ",\"parameter\":", &r.parameter, parameter);
            shared_text(out, ",\"value\":", &r.value, value);
            shared_text(out, ",\"error\":", &r.error, error);
            out.push('}');
        }
        out.push(']');
        self.first = false;
        self.after_key = false;
    }
}

/// Writes `key` and `text`, copying the text from where `before` says the same part was
/// written last, else escaping it and noting where.
#[inline(always)]
fn shared_text<'t>(
    out: &mut String,
    key: &'static str,
    text: &'t Text,
    before: &mut Option<(&'t Text, std::ops::Range<usize>)>,
) {
    out.push_str(key);
    match before {
        Some((t, at)) if t.same_part(text) => out.extend_from_within(at.clone()),
        _ => {
            let from = out.len();
            write_string(text, out);
            *before = Some((text, from..out.len()));
        }
    }
}

/// A float as serde_json writes one: its shortest form by the same formatter, `null`
/// when it is not finite.
fn write_f64(o: &mut String, f: f64) {
    if f.is_finite() {
        o.push_str(zmij::Buffer::new().format_finite(f));
    } else {
        o.push_str("null");
    }
}

/// Writes a list of `items`, each by `item`.
pub fn list<S: Sink + ?Sized, T>(s: &mut S, items: &[T], mut item: impl FnMut(&mut S, &T)) {
    s.list();
    for x in items {
        item(s, x);
    }
    s.end_list();
}

/// Writes a list of strings.
pub fn strings<S: Sink + ?Sized>(s: &mut S, items: &[String]) {
    list(s, items, |s, x| s.str(x));
}

/// Writes an optional value: the value, or `null`.
pub fn opt<S: Sink + ?Sized, T>(s: &mut S, v: Option<T>, write: impl FnOnce(&mut S, T)) {
    match v {
        Some(v) => write(s, v),
        None => s.null(),
    }
}

impl Record for Decision {
    fn emit<S: Sink + ?Sized>(&self, s: &mut S) {
        s.object();
        self.emit_fields(s);
        s.end_object();
    }
}

impl Decision {
    /// The decision's members without the braces around them: a record that adds its
    /// own (`plangate eval`'s, with its epoch) writes these first.
    pub fn emit_fields<S: Sink + ?Sized>(&self, s: &mut S) {
        s.key("task_id");
        s.str(&self.task_id);
        s.key("decision");
        s.str(self.verdict.as_str());
        s.key("reasons");
        list(s, &self.reasons, |s, r| s.str(r.as_str()));
        s.key("explanation");
        strings(s, &self.explanation);
        s.key("n");
        s.usize(self.n);
        s.key("arg_agreement");
        s.agreement(&self.arg_agreement);
        s.key("result_agreement");
        opt(s, self.result_agreement.as_ref(), |s, a| s.agreement(a));
        s.key("modal_plan");
        opt(s, self.modal_plan.as_deref(), |s, plan| {
            list(s, plan, |s, p| p.emit(s))
        });
        s.key("divergent_paths");
        list(s, &self.divergent_paths, |s, p| p.emit(s));
        s.key("steps");
        list(s, &self.steps, |s, a| a.emit(s));
        s.key("first_divergent_step");
        opt(s, self.first_divergent_step, |s, i| s.usize(i));
        s.key("tools");
        strings(s, &self.tools);
        s.key("suspect_tools");
        strings(s, &self.suspect_tools);
        s.key("malformed");
        list(s, &self.malformed, |s, m| m.emit(s));
        s.key("schema_violations");
        list(s, &self.schema_violations, |s, v| v.emit(s));
        s.key("warnings");
        strings(s, &self.warnings);
        s.invented_references(&self.invented_references);
        s.key("label");
        opt(s, self.label, |s, l| s.str(l.as_str()));
        // Absent, not empty, when no sample has an outcome: most inputs have none.
        if !self.outcomes.is_empty() {
            s.key("outcomes");
            list(s, &self.outcomes, |s, o| opt(s, *o, |s, x| s.f64(x)));
        }
    }
}

impl Record for InventedReference {
    fn emit<S: Sink + ?Sized>(&self, s: &mut S) {
        s.object();
        s.key("sample");
        s.usize(self.sample);
        s.key("turn");
        s.usize(self.turn);
        s.key("call");
        s.usize(self.call);
        s.key("tool");
        s.str(&self.tool);
        s.key("parameter");
        s.str(&self.parameter);
        s.key("value");
        s.str(&self.value);
        s.key("error");
        s.str(&self.error);
        s.end_object();
    }
}

impl Record for Agreement {
    fn emit<S: Sink + ?Sized>(&self, s: &mut S) {
        s.object();
        s.key("count");
        s.usize(self.count);
        s.key("n");
        s.usize(self.n);
        s.key("value");
        s.f64(self.value);
        s.key("interval");
        s.list();
        s.f64(self.interval.0);
        s.f64(self.interval.1);
        s.end_list();
        s.end_object();
    }
}

impl Record for PlanStep {
    fn emit<S: Sink + ?Sized>(&self, s: &mut S) {
        s.object();
        s.key("tool");
        s.str(&self.tool);
        s.key("arguments");
        s.json(&self.arguments);
        s.end_object();
    }
}

impl Record for DivergentPath {
    fn emit<S: Sink + ?Sized>(&self, s: &mut S) {
        s.object();
        s.key("path");
        s.str(&self.path);
        s.key("distinct");
        s.usize(self.distinct);
        s.key("agreement");
        s.agreement(&self.agreement);
        s.end_object();
    }
}

impl Record for StepAgreement {
    fn emit<S: Sink + ?Sized>(&self, s: &mut S) {
        s.object();
        s.key("step");
        s.usize(self.step);
        s.key("tool");
        opt(s, self.tool.as_deref(), |s, t| s.str(t));
        s.key("agreement");
        s.agreement(&self.agreement);
        s.end_object();
    }
}

impl Record for MalformedSample {
    fn emit<S: Sink + ?Sized>(&self, s: &mut S) {
        s.object();
        s.key("sample");
        s.usize(self.sample);
        s.key("step");
        opt(s, self.step, |s, i| s.usize(i));
        s.key("place");
        opt(s, self.place.as_deref(), |s, p| s.str(p));
        s.key("problems");
        strings(s, &self.problems);
        s.end_object();
    }
}

impl Record for SchemaViolation {
    fn emit<S: Sink + ?Sized>(&self, s: &mut S) {
        s.object();
        s.key("step");
        s.usize(self.step);
        s.key("tool");
        s.str(&self.tool);
        s.key("path");
        s.str(&self.path);
        s.key("keyword");
        s.str(&self.keyword);
        s.key("message");
        s.str(&self.message);
        s.key("samples");
        list(s, &self.samples, |s, i| s.usize(*i));
        s.end_object();
    }
}

/// The `--seed-compat` record of one task: the seed's verdict and agreements, or its
/// refusal, its keys sorted as the seed's own output sorts them.
#[derive(Debug, Clone, Copy)]
pub struct SeedRecord<'a> {
    /// The task's ID.
    pub task_id: &'a str,
    /// What the seed's gate made of it.
    pub outcome: &'a SeedOutcome,
}

impl Record for SeedRecord<'_> {
    fn emit<S: Sink + ?Sized>(&self, s: &mut S) {
        s.object();
        match self.outcome {
            SeedOutcome::Decided { decision, samples } => {
                s.key("arg_agreement");
                s.f64(decision.arg_agreement);
                s.key("decision");
                s.str(decision.decision.as_str());
                s.key("mode");
                s.str("seed_compat");
                s.key("n");
                s.usize(*samples);
                s.key("result_agreement");
                s.f64(decision.res_agreement);
            }
            SeedOutcome::Refused { kind, message } => {
                s.key("error");
                s.object();
                s.key("kind");
                s.str(kind.as_str());
                s.key("message");
                s.str(message);
                s.end_object();
                s.key("mode");
                s.str("seed_compat");
            }
        }
        s.key("task_id");
        s.str(self.task_id);
        s.end_object();
    }
}

/// The record written in place of an input line that is not a task: its number, the
/// task's ID when it could be read, and the error with the field at fault.
#[derive(Debug, Clone, Copy)]
pub struct BadLine<'a> {
    /// The input line (1-based).
    pub line: usize,
    /// Why it is not a task.
    pub error: &'a TaskError,
}

impl Record for BadLine<'_> {
    fn emit<S: Sink + ?Sized>(&self, s: &mut S) {
        s.object();
        s.key("error");
        s.object();
        s.key("field");
        s.str(&self.error.field);
        s.key("kind");
        s.str("input");
        s.key("message");
        s.str(&self.error.message);
        s.end_object();
        s.key("line");
        s.usize(self.line);
        s.key("task_id");
        opt(s, self.error.task_id.as_deref(), |s, t| s.str(t));
        s.end_object();
    }
}

/// The agreements of one `n`, each with its printed text, by count.
type PrintedRow = Box<[(Agreement, Box<str>)]>;

/// Agreements of up to this many samples print from [`PRINTED`].
const PRINTED_N: usize = 64;

/// Each `Agreement::new(count, n)` for `n <= PRINTED_N`, printed once per run and
/// process: a record holds several agreements, nearly all of few samples, and printing
/// their three floats for every record would be a measurable share of writing it. A row
/// is printed when an agreement of its `n` is first written.
static PRINTED: [OnceLock<PrintedRow>; PRINTED_N + 1] = [const { OnceLock::new() }; PRINTED_N + 1];

/// `a`'s text from [`PRINTED`], when the table holds it.
fn printed(a: &Agreement) -> Option<&'static str> {
    let row = PRINTED.get(a.n)?.get_or_init(|| {
        (0..=a.n)
            .map(|count| {
                let a = Agreement::new(count, a.n);
                (a, json(&a).into_boxed_str())
            })
            .collect()
    });
    // The row's text stands for `a` only when every float is the same double, bit for
    // bit (an `Agreement` built by hand may hold others).
    let (known, text) = row.get(a.count)?;
    let bits = |a: &Agreement| [a.value, a.interval.0, a.interval.1].map(f64::to_bits);
    (bits(known) == bits(a)).then_some(&**text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn by_serde(a: &Agreement) -> String {
        serde_json::to_string(a).unwrap()
    }

    fn printed_by_sink(a: &Agreement) -> String {
        let mut o = String::new();
        Json::new(&mut o).agreement(a);
        o
    }

    /// The JSON sink's own text for the invented references is what the entries'
    /// records write through the sink's calls, and what serde_json writes of them.
    #[test]
    fn invented_references_print_as_their_records_do() {
        // Entries share their tool and parameter, as a task's do: the second copies
        // what the first wrote.
        let (tool, parameter): (Text, Text) = ("get_user".into(), "pay[0][\"odd key\"]".into());
        let r = |sample, value: &str| InventedReference {
            sample,
            turn: sample + 10,
            call: 3,
            tool: tool.clone(),
            parameter: parameter.clone(),
            value: value.into(),
            error: "no \"user\"\n\u{7f} é".into(),
        };
        for refs in [vec![], vec![r(0, "u_9")], vec![r(1, ""), r(12, "\u{1}\\")]] {
            // The field written first in its object or after another, by the sink's own
            // text (`by_sink`) or through its calls one by one.
            let written = |first: bool, by_sink: bool| {
                let mut o = String::new();
                let mut s = Json::new(&mut o);
                s.object();
                if !first {
                    s.key("n");
                    s.usize(1);
                }
                if by_sink {
                    s.invented_references(&refs);
                } else {
                    s.key("invented_references");
                    list(&mut s, &refs, |s, r| r.emit(s));
                }
                s.key("label");
                s.null();
                s.end_object();
                o
            };
            let by_sink = |first: bool| written(first, true);
            for first in [true, false] {
                assert_eq!(by_sink(first), written(first, false));
            }
            let serde = serde_json::to_string(&refs).unwrap();
            assert_eq!(
                by_sink(true),
                format!(r#"{{"invented_references":{serde},"label":null}}"#)
            );
        }
    }

    #[test]
    fn every_small_agreement_prints_as_serde_json_prints_it() {
        for n in 0..=PRINTED_N + 3 {
            for count in 0..=n + 1 {
                let a = Agreement::new(count, n);
                assert_eq!(printed_by_sink(&a), by_serde(&a), "{count}/{n}");
            }
        }
        for (count, n) in [(1, 1000), (999, 1000), (7, 1 << 40)] {
            let a = Agreement::new(count, n);
            assert_eq!(printed_by_sink(&a), by_serde(&a), "{count}/{n}");
        }
    }

    #[test]
    fn an_agreement_holding_other_floats_prints_its_own() {
        let table = Agreement::new(1, 5);
        let others = [
            Agreement {
                value: 0.25,
                ..table
            },
            Agreement {
                value: -0.0,
                ..Agreement::new(0, 5)
            },
            Agreement {
                interval: (table.interval.0, 1.0),
                ..table
            },
            Agreement {
                interval: (f64::NAN, table.interval.1),
                ..table
            },
        ];
        for a in others {
            assert_eq!(printed_by_sink(&a), by_serde(&a), "{a:?}");
            assert_ne!(
                printed_by_sink(&a),
                printed_by_sink(&Agreement::new(a.count, a.n))
            );
        }
    }

    /// Commas go between items and members, never after a key or at an opening, in
    /// nested lists and objects and after a printed agreement.
    #[test]
    fn the_json_sink_places_commas() {
        let mut o = String::new();
        let mut s = Json::new(&mut o);
        s.object();
        s.key("a");
        s.list();
        s.list();
        s.end_list();
        s.usize(1);
        s.object();
        s.end_object();
        s.end_list();
        s.key("b");
        s.agreement(&Agreement::new(1, 2));
        s.key("c");
        s.agreement(&Agreement {
            value: 0.3,
            ..Agreement::new(1, 2)
        });
        s.key("d");
        s.null();
        s.end_object();
        let v: serde_json::Value = serde_json::from_str(&o).expect(&o);
        assert_eq!(v["a"], serde_json::json!([[], 1, {}]));
        assert_eq!(v["c"]["value"], serde_json::json!(0.3));
        assert!(v["d"].is_null());
    }
}
