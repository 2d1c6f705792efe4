//! How a tool says it failed, when it says so in its result rather than in the error
//! envelope (docs/design.md, "Errors as tools write them"): a catalog's `errors` rules,
//! or a benchmark's own convention (tau-bench's `"Error: ..."` strings). A recognised
//! error is the call's error before anything reads the call, so agreement, witnesses,
//! referential misses and invented references all see the same error. The same rules
//! say which errors mean *not found*, the one kind the gate reads; a typed component's
//! `err` case `not-found` is that kind too ([`kind_named`]).

use regex::Regex;

use crate::json::Value;
use crate::task::{Observed, Payload, Task};

/// The error kind that says a referenced thing does not exist: referential misses and
/// invented references read it.
pub const NOT_FOUND: &str = "not_found";

/// The kind of an error a tool flagged without naming a kind (an MCP `isError` result,
/// tau2's error flag), and of one a rule recognises without a `kind`.
pub const TOOL_ERROR: &str = "tool_error";

/// The error kind a name stands for: a catalog rule's `kind` and a typed export's `err`
/// case are one vocabulary, spelt with `-` in WIT and `_` in records (`not-found` is
/// [`NOT_FOUND`]).
pub fn kind_named(name: &str) -> String {
    name.replace('-', "_")
}

/// How one tool (or every tool of a benchmark) writes its errors: rules tried in order,
/// the first that matches deciding.
#[derive(Debug, Clone, Default)]
pub struct ErrorConvention {
    rules: Vec<Rule>,
}

#[derive(Debug, Clone)]
struct Rule {
    test: Test,
    /// The error's kind when the rule matches.
    kind: String,
}

#[derive(Debug, Clone)]
enum Test {
    /// A string result (or a flagged error's message) that the pattern matches.
    Pattern(Regex),
    /// An object result whose member at `pointer` equals `value`.
    Field { pointer: String, value: Value },
}

/// Longest pattern a catalog may give: patterns are compiled once per catalog, but an
/// unbounded one is a cost a catalog should not be able to impose.
const MAX_PATTERN: usize = 1000;

impl ErrorConvention {
    /// tau-bench's tools answer a failure with a string starting `Error: `; one that says
    /// `not found` is a miss (`Error: payment method not found`).
    pub fn tau_bench() -> Self {
        ErrorConvention {
            rules: vec![
                Rule::pattern(r"^Error: (?s:.*)\bnot found\b", NOT_FOUND),
                Rule::pattern(r"^Error: ", TOOL_ERROR),
            ],
        }
    }

    /// tau2-bench flags a tool's error itself (read as `tool_error`); one whose message
    /// says `not found` is a miss.
    pub fn tau2() -> Self {
        ErrorConvention {
            rules: vec![Rule::pattern(r"(?i)\bnot found\b", NOT_FOUND)],
        }
    }

    /// Whether the convention has no rule.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Reads a catalog entry's `errors`: a list of `{"pattern": REGEX}` or `{"field":
    /// JSON_POINTER, "equals": VALUE}` rules, each with an optional `kind` (default
    /// `tool_error`). Problems are (place, message).
    pub(crate) fn from_catalog(v: &Value, field: &str) -> Result<Self, (String, String)> {
        let items = v.as_array().ok_or_else(|| {
            (
                field.to_string(),
                "expected a list of rules ({\"pattern\": ...} or {\"field\": ..., \"equals\": ...})"
                    .to_string(),
            )
        })?;
        let rules = (items.iter().enumerate())
            .map(|(i, r)| Rule::from_catalog(r, &format!("{field}[{i}]")))
            .collect::<Result<_, _>>()?;
        Ok(ErrorConvention { rules })
    }

    /// `observed` read by the convention: a result a rule matches becomes that error; a
    /// flagged error whose message a pattern with a kind matches takes that kind. None
    /// when nothing changes.
    pub fn recognise(&self, observed: &Observed) -> Option<Observed> {
        match observed {
            Observed::Result(p) => self.rules.iter().find_map(|r| r.on_result(p)),
            Observed::Error { kind, message } if kind == TOOL_ERROR => {
                let rule = self.rules.iter().find(|r| match &r.test {
                    Test::Pattern(re) => re.is_match(message),
                    Test::Field { .. } => false,
                })?;
                (rule.kind != *kind).then(|| Observed::Error {
                    kind: rule.kind.clone(),
                    message: message.clone(),
                })
            }
            _ => None,
        }
    }
}

impl Rule {
    fn pattern(re: &str, kind: &str) -> Self {
        Rule {
            test: Test::Pattern(Regex::new(re).expect("a fixed pattern compiles")),
            kind: kind.to_string(),
        }
    }

    fn from_catalog(v: &Value, field: &str) -> Result<Self, (String, String)> {
        let bad = |at: &str, m: &str| (format!("{field}{at}"), m.to_string());
        let o = v
            .as_object()
            .ok_or_else(|| bad("", "expected a rule object"))?;
        if let Some(k) = o
            .keys()
            .find(|k| !matches!(k.as_str(), "pattern" | "field" | "equals" | "kind"))
        {
            return Err(bad(
                &format!(".{k}"),
                "unknown field (expected pattern, field, equals, kind)",
            ));
        }
        let kind = match o.get("kind") {
            None => TOOL_ERROR.to_string(),
            Some(Value::String(k)) if !k.is_empty() => kind_named(k),
            Some(_) => return Err(bad(".kind", "expected an error kind such as not_found")),
        };
        let test = match (o.get("pattern"), o.get("field"), o.get("equals")) {
            (Some(Value::String(p)), None, None) => {
                if p.len() > MAX_PATTERN {
                    return Err(bad(".pattern", "longer than 1000 bytes"));
                }
                let re = regex::RegexBuilder::new(p)
                    .size_limit(1 << 20)
                    .build()
                    .map_err(|e| bad(".pattern", &format!("not a regular expression: {e}")))?;
                Test::Pattern(re)
            }
            (None, Some(Value::String(ptr)), Some(value))
                if ptr.is_empty() || ptr.starts_with('/') =>
            {
                Test::Field {
                    pointer: ptr.clone(),
                    value: value.clone(),
                }
            }
            (None, Some(_), Some(_)) => {
                return Err(bad(".field", "expected a JSON Pointer such as /status"));
            }
            _ => {
                return Err(bad(
                    "",
                    "expected {\"pattern\": REGEX} or {\"field\": POINTER, \"equals\": VALUE}",
                ));
            }
        };
        Ok(Rule { test, kind })
    }

    fn on_result(&self, p: &Payload) -> Option<Observed> {
        // A string result's text starts with a quote; anything else is no string, and
        // a pattern need not build its value.
        let message = match &self.test {
            Test::Pattern(re) => {
                if p.text().is_some_and(|t| !t.starts_with('"')) {
                    return None;
                }
                let s = p.value().as_str()?;
                re.is_match(s).then(|| s.to_string())?
            }
            Test::Field { pointer, value } => {
                let v = p.value();
                (pointed(v, pointer)? == value).then(|| crate::jcs::to_string(v))?
            }
        };
        Some(Observed::Error {
            kind: self.kind.clone(),
            message,
        })
    }
}

/// The member of `v` at JSON Pointer `pointer`.
fn pointed<'v>(v: &'v Value, pointer: &str) -> Option<&'v Value> {
    let mut at = v;
    for token in pointer.split('/').skip(1) {
        let token = token.replace("~1", "/").replace("~0", "~");
        at = match at {
            Value::Object(o) => o.get(&token)?,
            Value::Array(items) => items.get(token.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(at)
}

/// Rewrites the calls of `task` whose results their tool's convention (`convention_of`
/// the tool's name: its catalog `errors`, or a benchmark's) recognises as errors.
pub fn recognise_errors<'c>(
    task: &mut Task,
    convention_of: impl Fn(&str) -> Option<&'c ErrorConvention>,
) {
    for sample in &mut task.samples {
        let changes: Vec<(usize, Observed)> = (sample.calls.iter().enumerate())
            .filter_map(|(j, c)| Some((j, convention_of(&c.tool)?.recognise(&c.observed)?)))
            .collect();
        if changes.is_empty() {
            continue;
        }
        let sample = std::sync::Arc::make_mut(sample);
        for (j, observed) in changes {
            sample.calls[j].observed = observed;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(json: &str) -> Observed {
        Observed::Result(crate::json::parse(json).unwrap().into())
    }

    fn error(kind: &str, message: &str) -> Observed {
        Observed::Error {
            kind: kind.into(),
            message: message.into(),
        }
    }

    #[test]
    fn tau_bench_strings_are_errors_and_misses_are_not_found() {
        let c = ErrorConvention::tau_bench();
        assert_eq!(
            c.recognise(&result(r#""Error: user not found""#)),
            Some(error(NOT_FOUND, "Error: user not found"))
        );
        assert_eq!(
            c.recognise(&result(
                r#""Error: payment method certificate_7504069 not found""#
            )),
            Some(error(
                NOT_FOUND,
                "Error: payment method certificate_7504069 not found"
            ))
        );
        assert_eq!(
            c.recognise(&result(r#""Error: not enough seats on flight HAT290""#)),
            Some(error(
                TOOL_ERROR,
                "Error: not enough seats on flight HAT290"
            ))
        );
        // A result that merely mentions an error, and results that are not strings.
        for r in [
            r#""No Error: all fine""#,
            r#"{"error":"Error: x"}"#,
            "7",
            r#""Errors: none""#,
        ] {
            assert_eq!(c.recognise(&result(r)), None, "{r}");
        }
        // An error the tool flagged keeps its kind unless a pattern says it is a miss.
        let t2 = ErrorConvention::tau2();
        assert_eq!(
            t2.recognise(&error(TOOL_ERROR, "Error: User not found")),
            Some(error(NOT_FOUND, "Error: User not found"))
        );
        assert_eq!(t2.recognise(&error(TOOL_ERROR, "Flight is full")), None);
        assert_eq!(t2.recognise(&error("timeout", "not found")), None);
    }

    #[test]
    fn catalog_rules_read_strings_and_fields() {
        let rules = crate::json::parse(
            r#"[{"pattern":"^no such ", "kind":"not-found"},
                {"field":"/status","equals":"error"},
                {"pattern":"^ERR"}]"#,
        )
        .unwrap();
        let c = ErrorConvention::from_catalog(&rules, "tools[0].errors").unwrap();
        assert_eq!(
            c.recognise(&result(r#""no such user u_9""#)),
            Some(error(NOT_FOUND, "no such user u_9"))
        );
        assert_eq!(
            c.recognise(&result(r#"{"status":"error","why":"x"}"#)),
            Some(error(TOOL_ERROR, r#"{"status":"error","why":"x"}"#))
        );
        assert_eq!(c.recognise(&result(r#"{"status":"ok"}"#)), None);
        assert_eq!(
            c.recognise(&result(r#""ERR 5""#)),
            Some(error(TOOL_ERROR, "ERR 5"))
        );
        for (bad, at) in [
            (r#"{"pattern":"("}"#, "tools[0].errors[0].pattern"),
            (r#"[{"patern":"x"}]"#, "tools[0].errors[0].patern"),
            (
                r#"[{"field":"status","equals":1}]"#,
                "tools[0].errors[0].field",
            ),
            (r#"[{"pattern":"x","kind":3}]"#, "tools[0].errors[0].kind"),
            (r#"[{"field":"/a"}]"#, "tools[0].errors[0]"),
        ] {
            let v = crate::json::parse(bad).unwrap();
            let v = if v.as_array().is_some() {
                v
            } else {
                Value::Array(vec![v])
            };
            let (place, _) = ErrorConvention::from_catalog(&v, "tools[0].errors").unwrap_err();
            assert_eq!(place, at, "{bad}");
        }
    }

    #[test]
    fn one_vocabulary_with_typed_exports() {
        assert_eq!(kind_named("not-found"), NOT_FOUND);
        assert_eq!(kind_named("not_found"), NOT_FOUND);
    }
}
