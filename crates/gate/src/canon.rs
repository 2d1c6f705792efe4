//! Schema-aware canonical arguments (docs/design.md, "Canonical arguments"): what makes two spellings of
//! one call agree (defaults, paths, IDs, sets, case, blanks, free text) and what keeps
//! two different calls apart (exact integers, unresolved IDs, malformed samples).
//!
//! Hints sit in a parameter's schema: `"x-plangate": {"canon": ["path", "trim",
//! "casefold", "unordered", "prose", {"id": {"resolve": "resolve_user"}}], "base": "/world"}`.
//! `base` is the working directory relative paths are read against (default `/`).

use crate::catalog::ToolSpec;
use crate::hints::{Hint, Hints};
use crate::jcs;
use crate::json::{Object, Value};
use crate::serde_bridge::to_serde;
use std::sync::Arc;

/// Looks an ID up through a resolver tool in the run's epoch. The harness implements it
/// by calling the tool; `plangate score` has none and compares IDs as written.
pub trait Resolver {
    /// The canonical value for `value` per `tool`, or `None` when it does not resolve.
    fn resolve(&mut self, tool: &str, value: &Value) -> Option<Value>;
}

/// Lexically normalizes `path` against `base`: `.` and empty segments dropped, `..`
/// taken back (never above `/`), no trailing `/`. It never touches a filesystem, so it
/// cannot tell a symlink; two paths it merges name one file on any sane tree.
pub fn normalize_path(path: &str, base: &str) -> String {
    // Built in one string, segment by segment: `..` cuts back to the last `/`.
    let mut out = String::with_capacity(base.len() + path.len() + 1);
    let base = if path.starts_with('/') { "" } else { base };
    for seg in base.split('/').chain(path.split('/')) {
        match seg {
            "" | "." => {}
            ".." => out.truncate(out.rfind('/').unwrap_or(0)),
            s => {
                out.push('/');
                out.push_str(s);
            }
        }
    }
    if out.is_empty() {
        out.push('/');
    }
    out
}

/// Is this value a `{"$from": {"step": N, "pointer": "/..."}}` reference?
pub fn as_from_ref(v: &Value) -> Option<&Value> {
    match v {
        Value::Object(o) if o.len() == 1 => o.get("$from"),
        _ => None,
    }
}

/// Checks a `$from` reference made at step `step`; Err says why it is malformed.
fn check_from(r: &Value, step: usize) -> Result<(), String> {
    let o = r
        .as_object()
        .ok_or("$from: expected {\"step\": N, \"pointer\": \"/...\"}")?;
    for k in o.keys() {
        if !matches!(k.as_str(), "step" | "pointer") {
            return Err(format!("$from.{k}: unknown field (expected step, pointer)"));
        }
    }
    let from = o
        .get("step")
        .and_then(Value::as_u64)
        .ok_or("$from.step: expected a step number")?;
    if from >= step as u64 {
        return Err(format!(
            "$from.step: {from} is not an earlier step than {step}"
        ));
    }
    match o.get("pointer") {
        Some(Value::String(p)) if p.is_empty() || p.starts_with('/') => Ok(()),
        _ => Err("$from.pointer: expected a JSON Pointer (RFC 6901) such as \"/id\"".into()),
    }
}

/// Where arguments break their tool's schema: the instance path (a JSON Pointer into the
/// arguments), the schema keyword that failed, and the validator's words.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct Violation {
    /// JSON Pointer into the arguments (`""` for the arguments as a whole).
    pub path: String,
    /// The schema keyword that failed (`required`, `type`, `enum`, ...).
    pub keyword: String,
    /// What the validator said.
    pub message: String,
}

/// Arguments that have no canonical form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Invalid {
    /// They cannot be read as arguments at all (duplicate keys, a broken `$from`): such a
    /// sample agrees with nothing.
    Unreadable(Vec<String>),
    /// They read, but break the schema, so the schema's defaults and hints do not
    /// describe them: such a sample is keyed by its RFC 8785 form, and identical
    /// violations agree.
    Violates(Vec<Violation>),
}

/// Canonical arguments of one call at plan step `step`, or why there are none.
pub fn canonicalize_arguments(
    tool: &ToolSpec,
    args: &Value,
    step: usize,
    resolver: Option<&mut (dyn Resolver + '_)>,
) -> Result<Value, Invalid> {
    canonical(tool, args, step, resolver).map(|c| c.unwrap_or_else(|| args.clone()))
}

/// [`canonicalize_arguments`] of arguments held shared: arguments the hints leave as
/// written (most of them) are their own canonical form, shared instead of copied.
pub fn canonicalize_shared(
    tool: &ToolSpec,
    args: &Arc<Value>,
    step: usize,
    resolver: Option<&mut (dyn Resolver + '_)>,
) -> Result<Arc<Value>, Invalid> {
    canonical(tool, args, step, resolver).map(|c| c.map_or_else(|| Arc::clone(args), Arc::new))
}

/// The canonical form of `args`, None when it is `args` as written, or why there is none.
fn canonical(
    tool: &ToolSpec,
    args: &Value,
    step: usize,
    resolver: Option<&mut (dyn Resolver + '_)>,
) -> Result<Option<Value>, Invalid> {
    let Value::Object(_) = args else {
        return Err(Invalid::Violates(vec![Violation {
            path: String::new(),
            keyword: "type".into(),
            message: format!("arguments: expected an object, found {}", args.kind()),
        }]));
    };
    let mut problems = Vec::new();
    let mut refs = Vec::new();
    // Scanning names each place it passes; most arguments hold nothing it looks for.
    if !plain(args) {
        scan(args, step, &mut String::new(), &mut refs, &mut problems);
    }
    if !problems.is_empty() {
        return Err(Invalid::Unreadable(problems));
    }
    // Valid arguments are the rule: asking only whether they are is cheaper than
    // walking for errors, and the errors are the same empty list. Asked of our own
    // values, converting them is left to arguments that break the schema.
    let valid = match &tool.in_place {
        Some(v) => v.is_valid(args),
        None => tool.validator.is_valid(&to_serde(args)),
    };
    let instance = (!valid).then(|| to_serde(args));
    let errors = instance.as_ref().map(|i| tool.validator.iter_errors(i));
    let mut violations = Vec::new();
    for e in errors.into_iter().flatten() {
        let at = e.instance_path().as_str().to_string();
        // A reference stands for a value the schema would check at run time; its
        // placeholder object is not a violation.
        if refs
            .iter()
            .any(|r: &String| at == *r || at.starts_with(&format!("{r}/")))
        {
            continue;
        }
        let place = if at.is_empty() {
            "arguments".to_string()
        } else {
            format!("arguments{at}")
        };
        violations.push(Violation {
            keyword: e.kind().keyword().to_string(),
            message: format!("{place}: {e}"),
            path: at,
        });
    }
    if !violations.is_empty() {
        return Err(Invalid::Violates(violations));
    }
    let mut resolver = resolver;
    Ok(apply(&tool.hints, args, &mut resolver))
}

/// Whether `v` holds no `$from` reference and no duplicate key, so [`scan`] would find
/// nothing.
fn plain(v: &Value) -> bool {
    match v {
        Value::Object(o) => {
            o.duplicate_key().is_none()
                && as_from_ref(v).is_none()
                && o.iter().all(|(_, x)| plain(x))
        }
        Value::Array(items) => items.iter().all(plain),
        _ => true,
    }
}

/// Finds `$from` references (checking each) and duplicate keys, recording where.
fn scan(
    v: &Value,
    step: usize,
    at: &mut String,
    refs: &mut Vec<String>,
    problems: &mut Vec<String>,
) {
    if let Some(r) = as_from_ref(v) {
        if let Err(e) = check_from(r, step) {
            problems.push(format!("arguments{at}: {e}"));
        }
        refs.push(at.clone());
        return;
    }
    match v {
        Value::Object(o) => {
            if let Some(k) = o.duplicate_key() {
                problems.push(format!("arguments{at}: duplicate key {k:?}"));
            }
            for (k, sub) in o.iter() {
                let len = at.len();
                at.push('/');
                at.push_str(&k.replace('~', "~0").replace('/', "~1"));
                scan(sub, step, at, refs, problems);
                at.truncate(len);
            }
        }
        Value::Array(items) => {
            for (i, sub) in items.iter().enumerate() {
                let len = at.len();
                at.push_str(&format!("/{i}"));
                scan(sub, step, at, refs, problems);
                at.truncate(len);
            }
        }
        _ => {}
    }
}

/// `v` in canonical form, None when it already is. A part is copied only where a hint
/// or a default changes it: most arguments are canonical as written, and copying every
/// one of them would be a measurable share of `score`'s time.
fn apply(
    hints: &Hints,
    v: &Value,
    resolver: &mut Option<&mut (dyn Resolver + '_)>,
) -> Option<Value> {
    // A reference is symbolic on purpose: an upstream result, flaky or not, never
    // reaches the argument signal through one. Where the schema has no hint and no
    // default at or below this place, the value is its own canonical form (it holds no
    // duplicate key: those are unreadable first).
    if as_from_ref(v).is_some() || hints.is_empty() {
        return None;
    }
    let mut changed = match v {
        Value::Object(o) => {
            let room = hints.properties().len();
            let members = changed_parts(o.members(), room, |(k, sub)| {
                apply(hints.property(k), sub, resolver).map(|new| (k.clone(), new))
            });
            // One object's keys, each once.
            let mut out = members.map(Object::of_distinct);
            for (k, sub) in hints.properties() {
                let Some(d) = sub.default() else { continue };
                if o.contains_key(k) {
                    continue;
                }
                // A default goes through its own hints, so `"default": "./a"` agrees
                // with an explicit "/a".
                let d = apply(sub, d, resolver).unwrap_or_else(|| d.clone());
                out.get_or_insert_with(|| {
                    let mut all = Vec::with_capacity(o.len() + room);
                    all.extend_from_slice(o.members());
                    Object::of_distinct(all)
                })
                .push_new(k.clone(), d);
            }
            out.map(Value::Object)
        }
        Value::Array(items) => {
            changed_parts(items, 0, |item| apply(hints.items(), item, resolver)).map(Value::Array)
        }
        _ => None,
    };
    for hint in hints.hints() {
        let now = changed.as_ref().unwrap_or(v);
        let new = match (hint, now) {
            (Hint::Trim, Value::String(t)) => {
                let kept = t.trim();
                (kept.len() != t.len()).then(|| Value::String(kept.to_string()))
            }
            // ASCII lowercases alike either way.
            (Hint::Casefold, Value::String(t)) if t.is_ascii() => (t.bytes())
                .any(|b| b.is_ascii_uppercase())
                .then(|| Value::String(t.to_ascii_lowercase())),
            (Hint::Casefold, Value::String(t)) => {
                let lower = t.to_lowercase();
                (lower != *t).then_some(Value::String(lower))
            }
            (Hint::Path { base }, Value::String(p)) => {
                let normal = normalize_path(p, base);
                (normal != *p).then_some(Value::String(normal))
            }
            (Hint::Id { resolve }, val) => resolver.as_mut().map(|r| {
                match r.resolve(resolve, val) {
                    Some(id) => id,
                    // Kept apart from every resolved value: a fabricated ID that
                    // happens to look canonical must not agree with a resolved one.
                    None => Value::Object(Object::from_iter([(
                        "$unresolved".to_string(),
                        val.clone(),
                    )])),
                }
            }),
            (Hint::Unordered, Value::Array(items)) => as_set(items).map(Value::Array),
            (Hint::Prose, val) => prose_form(val),
            _ => None,
        };
        if new.is_some() {
            changed = new;
        }
    }
    changed
}

/// The member a prose value's canonical form holds: `{"$prose": "text"}` or
/// `{"$prose": "blank"}`.
const PROSE: &str = "$prose";

/// The canonical form of a value marked prose: whether it holds any text (a character
/// that is not white space), and nothing of which words. A string, or an array of
/// strings (an empty one holds no text); anything else is compared as written (None).
/// An object, so it never equals a string a model wrote, whatever the words.
fn prose_form(v: &Value) -> Option<Value> {
    let text = |s: &str| s.chars().any(|c| !c.is_whitespace());
    let said = match v {
        Value::String(s) => text(s),
        Value::Array(items) if items.iter().all(|i| matches!(i, Value::String(_))) => {
            items.iter().any(|i| i.as_str().is_some_and(text))
        }
        _ => return None,
    };
    let presence = if said { "text" } else { "blank" };
    Some(Value::Object(Object::from_iter([(
        PROSE.to_string(),
        Value::String(presence.into()),
    )])))
}

/// Whether `v` is the canonical form of a prose value: where samples differ only in
/// such values, no path is listed, since the words decide nothing.
pub fn is_prose_form(v: &Value) -> bool {
    match v {
        Value::Object(o) if o.len() == 1 => {
            matches!(o.get(PROSE), Some(Value::String(s)) if s == "text" || s == "blank")
        }
        _ => false,
    }
}

/// `args` with every value marked prose in its canonical form and nothing else changed,
/// None when it holds none: arguments that break the schema are keyed as written (their
/// defaults and other hints do not describe them), but their words still say nothing,
/// so two such samples that differ only in them agree as valid ones would.
pub fn prose_masked(tool: &ToolSpec, args: &Value) -> Option<Value> {
    fn mask(hints: &Hints, v: &Value) -> Option<Value> {
        if as_from_ref(v).is_some() || hints.is_empty() {
            return None;
        }
        if let Some(form) = hints.prose().then(|| prose_form(v)).flatten() {
            return Some(form);
        }
        match v {
            Value::Object(o) => changed_parts(o.members(), 0, |(k, sub)| {
                mask(hints.property(k), sub).map(|new| (k.clone(), new))
            })
            .map(|members| Value::Object(Object::of_distinct(members))),
            Value::Array(items) => {
                changed_parts(items, 0, |item| mask(hints.items(), item)).map(Value::Array)
            }
            _ => None,
        }
    }
    mask(&tool.hints, args)
}

/// `parts` with `change` applied to each, None when it changes none of them. Built from
/// the first part that changes: the parts before it copied, those after it copied or
/// changed, so no part is copied to be replaced; `room` more parts fit without growing.
fn changed_parts<T: Clone>(
    parts: &[T],
    room: usize,
    mut change: impl FnMut(&T) -> Option<T>,
) -> Option<Vec<T>> {
    let mut out: Option<Vec<T>> = None;
    for (i, part) in parts.iter().enumerate() {
        match (&mut out, change(part)) {
            (None, None) => {}
            (None, Some(new)) => {
                let mut copy = Vec::with_capacity(parts.len() + room);
                copy.extend_from_slice(&parts[..i]);
                copy.push(new);
                out = Some(copy);
            }
            (Some(copy), new) => copy.push(new.unwrap_or_else(|| part.clone())),
        }
    }
    out
}

/// `items` sorted by their RFC 8785 forms with repeats dropped, None when they are
/// already so. Strings of bytes past `"` other than the backslash print as themselves
/// between quotes, and the closing quote sorts before any of those bytes, so a list of
/// only such strings sorts alike by its text, without printing each item.
fn as_set(items: &[Value]) -> Option<Vec<Value>> {
    let bare = |i: &Value| {
        i.as_str()
            .is_some_and(|s| s.bytes().all(|b| b > b'"' && b != b'\\'))
    };
    if items.iter().all(bare) {
        // Strictly increasing: sorted, and no repeats.
        if items.windows(2).all(|w| w[0].as_str() < w[1].as_str()) {
            return None;
        }
        let mut items = items.to_vec();
        items.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
        items.dedup();
        return Some(items);
    }
    let mut keyed: Vec<(String, &Value)> = items.iter().map(|i| (jcs::to_string(i), i)).collect();
    if keyed.windows(2).all(|w| w[0].0 < w[1].0) {
        return None;
    }
    keyed.sort_by(|a, b| a.0.cmp(&b.0));
    keyed.dedup_by(|a, b| a.0 == b.0);
    Some(keyed.into_iter().map(|(_, i)| i.clone()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;
    use crate::json::parse;

    fn tool(params: &str) -> ToolSpec {
        let doc =
            format!(r#"{{"tools":[{{"name":"t","deterministic":true,"parameters":{params}}}]}}"#);
        Catalog::from_value(&parse(&doc).unwrap())
            .unwrap()
            .get("t")
            .unwrap()
            .clone()
    }

    fn canon(t: &ToolSpec, args: &str) -> Result<String, Vec<String>> {
        let v = crate::json::parse_with(args.as_bytes(), crate::json::Duplicates::Flag).unwrap();
        canonicalize_arguments(t, &v, 1, None)
            .map(|v| jcs::to_string(&v))
            .map_err(|e| match e {
                Invalid::Unreadable(p) => p,
                Invalid::Violates(v) => v.into_iter().map(|v| v.message).collect(),
            })
    }

    #[test]
    fn paths_normalize_lexically() {
        assert_eq!(normalize_path("./a/../b//c/", "/world"), "/world/b/c");
        assert_eq!(normalize_path("/../../etc", "/world"), "/etc");
        assert_eq!(normalize_path("", "/world"), "/world");
        for (path, base, normal) in [
            ("..", "/", "/"),
            ("a/../../b", "/w/", "/b"),
            ("/a/b/..", "/w", "/a"),
            ("a//b/.", "/w//x", "/w/x/a/b"),
            ("/", "/w", "/"),
            ("...", "/w", "/w/..."),
        ] {
            assert_eq!(normalize_path(path, base), normal, "{path} against {base}");
        }
    }

    /// Strings sorted by their own text (the quick way) come out as when sorted by their
    /// RFC 8785 forms; lists with strings that print escaped, or that hold a byte
    /// sorting before the closing quote, still sort by the forms.
    #[test]
    fn sets_sort_by_their_printed_forms() {
        let by_forms = |items: &[Value]| {
            let mut keyed: Vec<String> = items.iter().map(jcs::to_string).collect();
            keyed.sort();
            keyed.dedup();
            keyed
        };
        let words = [
            "a", "ab", "ab!", "ab ", "ab#", "a\"b", "a\\", "a\n", "é", "Z", "~", "ab",
        ];
        for i in 0..words.len() {
            for j in 0..words.len() {
                for k in 0..words.len() {
                    let items: Vec<Value> = [words[i], words[j], words[k], "ab"]
                        .iter()
                        .map(|w| Value::String(w.to_string()))
                        .collect();
                    let want = by_forms(&items);
                    let set = as_set(&items);
                    let got: Vec<String> = set
                        .as_ref()
                        .unwrap_or(&items)
                        .iter()
                        .map(jcs::to_string)
                        .collect();
                    assert_eq!(got, want, "{:?}", [words[i], words[j], words[k]]);
                    // Nothing to change is said as None, and only then.
                    assert_eq!(
                        set.is_none(),
                        by_forms(&items) == items.iter().map(jcs::to_string).collect::<Vec<_>>()
                    );
                }
            }
        }
        let mixed = vec![
            Value::String("b".into()),
            Value::Null,
            Value::String("a".into()),
        ];
        let set = as_set(&mixed).expect("not a set yet");
        assert_eq!(jcs::to_string(&Value::Array(set)), r#"["a","b",null]"#);
        let sorted = [Value::String("a".into()), Value::Null];
        assert_eq!(as_set(&sorted), None);
    }

    #[test]
    fn hints_apply_alike_to_text_they_change_and_text_they_keep() {
        let t = tool(
            r#"{"type":"object","properties":{
              "e":{"type":"string","x-plangate":{"canon":["trim","casefold"]}},
              "o":{"type":"object","properties":{"n":{"type":"integer","default":3}}},
              "plain":{"type":"object","properties":{"x":{"type":"array"}}}}}"#,
        );
        for (args, canonical) in [
            (r#"{"e":"ada"}"#, r#"{"e":"ada"}"#),
            (r#"{"e":" AdA\t"}"#, r#"{"e":"ada"}"#),
            (r#"{"e":"ÀDA"}"#, r#"{"e":"àda"}"#),
            (r#"{"e":"ǅ"}"#, r#"{"e":"ǆ"}"#),
            (r#"{"o":{}}"#, r#"{"o":{"n":3}}"#),
            (r#"{"o":{"n":4,"m":[1.0]}}"#, r#"{"o":{"m":[1],"n":4}}"#),
            (
                r#"{"plain":{"x":[{"B":" A "}],"y":1e2}}"#,
                r#"{"plain":{"x":[{"B":" A "}],"y":100}}"#,
            ),
        ] {
            assert_eq!(canon(&t, args), Ok(canonical.to_string()), "{args}");
        }
        let hints = |name: &str| t.hints.property(name).is_empty();
        assert!(hints("plain") && hints("unnamed") && !hints("o") && !hints("e"));
    }

    /// The canonical tree keeps the written order, members and items the hints change
    /// in their places among those they keep, defaults after them: trees are compared
    /// in order (a sample's canonical arguments against the written ones, say).
    #[test]
    fn changes_keep_their_places() {
        let t = tool(
            r#"{"type":"object","properties":{
              "a":{"type":"string"},
              "b":{"type":"string","x-plangate":{"canon":["casefold"]}},
              "c":{"type":"array","items":{"type":"string","x-plangate":{"canon":["trim"]}}},
              "d":{"type":"integer","default":1},
              "e":{"type":"string"}}}"#,
        );
        let tree = |text: &str| crate::json::parse(text).unwrap();
        for (args, canonical) in [
            (
                r#"{"a":"A","b":"B","c":["x"," y","z"],"e":"E"}"#,
                r#"{"a":"A","b":"b","c":["x","y","z"],"e":"E","d":1}"#,
            ),
            (
                r#"{"e":"E","c":[" x","y"],"a":"A"}"#,
                r#"{"e":"E","c":["x","y"],"a":"A","d":1}"#,
            ),
            (r#"{"d":2,"b":"b","a":"A"}"#, r#"{"d":2,"b":"b","a":"A"}"#),
        ] {
            let got = canonicalize_arguments(&t, &tree(args), 1, None).unwrap();
            assert_eq!(got, tree(canonical), "{args}");
        }
    }

    #[test]
    fn defaults_and_hints() {
        let t = tool(
            r#"{"type":"object","properties":{
              "path":{"type":"string","x-plangate":{"canon":["path"],"base":"/world"}},
              "email":{"type":"string","x-plangate":{"canon":["trim","casefold"]}},
              "tags":{"type":"array","items":{"type":"string","x-plangate":{"canon":["casefold"]}},"x-plangate":{"canon":["unordered"]}},
              "limit":{"type":"integer","default":10}},"required":["path"]}"#,
        );
        let a = canon(
            &t,
            r#"{"path":"docs/./a.txt","email":" Ada@X.org ","tags":["B","a","b"]}"#,
        )
        .unwrap();
        let b = canon(
            &t,
            r#"{"tags":["a","b"],"limit":10.0,"email":"ada@x.org","path":"/world/docs/a.txt"}"#,
        )
        .unwrap();
        assert_eq!(a, b);
        assert_eq!(
            a,
            r#"{"email":"ada@x.org","limit":10,"path":"/world/docs/a.txt","tags":["a","b"]}"#
        );
    }

    #[test]
    fn violations_name_path_and_keyword_and_unreadable_stays_apart() {
        let t = tool(
            r#"{"type":"object","properties":{"n":{"type":"integer"},"c":{"enum":["EUR"]}},"required":["n"]}"#,
        );
        let run = |a: &str| {
            let v = crate::json::parse_with(a.as_bytes(), crate::json::Duplicates::Flag).unwrap();
            canonicalize_arguments(&t, &v, 1, None)
        };
        let Err(Invalid::Violates(v)) = run(r#"{"c":"Euro"}"#) else {
            panic!("a violation")
        };
        let got: Vec<(&str, &str)> = v
            .iter()
            .map(|v| (v.path.as_str(), v.keyword.as_str()))
            .collect();
        assert_eq!(got, [("", "required"), ("/c", "enum")]);
        assert!(matches!(
            run(r#"{"n":1,"n":2}"#),
            Err(Invalid::Unreadable(_))
        ));
        assert!(matches!(
            run(r#"{"n":{"$from":{"step":3,"pointer":"/x"}}}"#),
            Err(Invalid::Unreadable(_))
        ));
        let Err(Invalid::Violates(v)) = run("[1]") else {
            panic!("not an object is a violation of the object schema")
        };
        assert_eq!(v[0].keyword, "type");
    }

    #[test]
    fn malformed_samples_say_why() {
        let t = tool(r#"{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}"#);
        let e = canon(&t, r#"{"n":"x"}"#).unwrap_err();
        assert!(e[0].starts_with("arguments/n:"), "{e:?}");
        assert!(canon(&t, r#"{}"#).unwrap_err()[0].starts_with("arguments:"));
        assert!(canon(&t, r#"{"n":1,"n":2}"#).unwrap_err()[0].contains("duplicate key"));
        assert!(canon(&t, r#"[1]"#).is_err());
    }

    #[test]
    fn from_references_stay_symbolic_and_skip_the_schema() {
        let t = tool(
            r#"{"type":"object","properties":{"id":{"type":"string","x-plangate":{"canon":["casefold"]}}}}"#,
        );
        let a = canon(&t, r#"{"id":{"$from":{"step":0,"pointer":"/ID"}}}"#).unwrap();
        assert_eq!(a, r#"{"id":{"$from":{"pointer":"/ID","step":0}}}"#);
        assert!(canon(&t, r#"{"id":{"$from":{"step":1,"pointer":"/id"}}}"#).is_err());
        assert!(canon(&t, r#"{"id":{"$from":{"step":0,"pointer":"id"}}}"#).is_err());
    }

    struct Table;
    impl Resolver for Table {
        fn resolve(&mut self, _tool: &str, v: &Value) -> Option<Value> {
            match v.as_str()? {
                "ada@x.org" | "@ada" | "u_1" => Some(Value::String("u_1".into())),
                _ => None,
            }
        }
    }

    #[test]
    fn ids_resolve_and_unresolved_stay_distinct() {
        let t = tool(
            r#"{"type":"object","properties":{"user":{"type":"string","x-plangate":{"canon":[{"id":{"resolve":"r"}}]}}}}"#,
        );
        let run = |a: &str| {
            let v = parse(a).unwrap();
            jcs::to_string(&canonicalize_arguments(&t, &v, 0, Some(&mut Table)).unwrap())
        };
        assert_eq!(run(r#"{"user":"ada@x.org"}"#), run(r#"{"user":"@ada"}"#));
        assert_eq!(
            run(r#"{"user":"u_9"}"#),
            r#"{"user":{"$unresolved":"u_9"}}"#
        );
    }

    /// Prose is compared by presence: any text agrees with any other, blank (empty or
    /// white space, or a list of such) with blank, and neither with the other; what is
    /// not a string, or a list of them, is compared as written.
    #[test]
    fn prose_agrees_on_any_words() {
        let t = tool(
            r#"{"type":"object","properties":{
              "to":{"type":"string"},
              "summary":{"type":["string","integer"],"x-plangate":{"canon":["trim","prose"]}},
              "notes":{"type":"array","items":{"type":"string","x-plangate":{"canon":["prose"]}}},
              "lines":{"type":"array","x-plangate":{"canon":["prose"]}},
              "why":{"type":"string","default":"Because it was asked.","x-plangate":{"canon":["prose"]}}},
              "required":["to"]}"#,
        );
        let text = r#"{"$prose":"text"}"#;
        let blank = r#"{"$prose":"blank"}"#;
        for (args, canonical) in [
            (
                r#"{"to":"ada","summary":"Sent the report."}"#,
                format!(r#"{{"summary":{text},"to":"ada","why":{text}}}"#),
            ),
            (
                r#"{"to":"ada","summary":"Ada has it now, as asked.","why":"x"}"#,
                format!(r#"{{"summary":{text},"to":"ada","why":{text}}}"#),
            ),
            (
                r#"{"to":"ada","summary":" \t\n","why":""}"#,
                format!(r#"{{"summary":{blank},"to":"ada","why":{blank}}}"#),
            ),
            (
                r#"{"to":"ada","summary":7,"why":"ok"}"#,
                format!(r#"{{"summary":7,"to":"ada","why":{text}}}"#),
            ),
            (
                r#"{"to":"ada","notes":["One.",""],"lines":["a","b"],"why":"ok"}"#,
                format!(r#"{{"lines":{text},"notes":[{text},{blank}],"to":"ada","why":{text}}}"#),
            ),
            (
                r#"{"to":"ada","lines":[],"why":"ok"}"#,
                format!(r#"{{"lines":{blank},"to":"ada","why":{text}}}"#),
            ),
            (
                r#"{"to":"ada","lines":["a",1],"why":"ok"}"#,
                format!(r#"{{"lines":["a",1],"to":"ada","why":{text}}}"#),
            ),
            (
                r#"{"to":"ada","summary":{"$from":{"step":0,"pointer":"/s"}},"why":"ok"}"#,
                format!(
                    r#"{{"summary":{{"$from":{{"pointer":"/s","step":0}}}},"to":"ada","why":{text}}}"#
                ),
            ),
        ] {
            assert_eq!(canon(&t, args), Ok(canonical), "{args}");
        }
        let form = |args: &str| canonicalize_arguments(&t, &parse(args).unwrap(), 1, None).unwrap();
        let v = form(r#"{"to":"ada","summary":"Sent."}"#);
        assert!(is_prose_form(
            v.as_object().unwrap().get("summary").unwrap()
        ));
        assert!(!is_prose_form(&parse(r#"{"$prose":"words"}"#).unwrap()));
        assert!(!is_prose_form(&parse(r#""text""#).unwrap()));
        // A value marked prose that breaks the schema is a violation as before.
        assert!(canon(&t, r#"{"to":"ada","summary":true}"#).is_err());
    }

    /// Arguments that break the schema keep their violation and are otherwise as
    /// written, but their prose is masked: two samples that differ only in words agree.
    #[test]
    fn prose_is_masked_in_arguments_that_break_the_schema() {
        let t = tool(
            r#"{"type":"object","properties":{
              "to":{"type":"string","x-plangate":{"canon":["casefold"]}},
              "summary":{"type":"string","x-plangate":{"canon":["prose"]}},
              "n":{"type":"integer","default":1}},
              "required":["to","n"]}"#,
        );
        let masked = |args: &str| {
            let v = parse(args).unwrap();
            assert!(matches!(
                canonicalize_arguments(&t, &v, 1, None),
                Err(Invalid::Violates(_))
            ));
            prose_masked(&t, &v).map(|m| jcs::to_string(&m))
        };
        assert_eq!(
            masked(r#"{"to":"Ada","summary":"I wrote to Ada."}"#),
            masked(r#"{"to":"Ada","summary":"Ada has been told."}"#)
        );
        assert_eq!(
            masked(r#"{"to":"Ada","summary":"I wrote to Ada."}"#).as_deref(),
            Some(r#"{"summary":{"$prose":"text"},"to":"Ada"}"#),
            "no default, no other hint"
        );
        assert_eq!(masked(r#"{"to":"Ada"}"#), None);
        assert_eq!(masked(r#"{"to":"Ada","summary":3}"#), None);
    }

    #[test]
    fn prose_names_nothing_to_resolve_or_to_find() {
        for (ext, wrong) in [
            (r#"{"canon":["prose",{"id":{"resolve":"r"}}]}"#, "\"id\""),
            (r#"{"canon":["prose"],"must_exist":true}"#, "\"must_exist\""),
        ] {
            let doc = format!(
                r#"{{"tools":[{{"name":"t","deterministic":true,"parameters":{{"type":"object","properties":{{"p":{{"type":"string","x-plangate":{ext}}}}}}}}}]}}"#
            );
            let e = Catalog::from_value(&parse(&doc).unwrap()).unwrap_err();
            let e = e.first();
            assert_eq!(e.field, "tools[0].parameters/properties/p");
            assert!(e.message.contains(wrong), "{}", e.message);
        }
        let ok = r#"{"tools":[{"name":"t","deterministic":true,"parameters":{"type":"object","properties":{"p":{"type":"string","x-plangate":{"canon":["prose"],"must_exist":false}}}}}]}"#;
        assert!(Catalog::from_value(&parse(ok).unwrap()).is_ok());
    }

    #[test]
    fn bad_hints_fail_at_load() {
        let doc = r#"{"tools":[{"name":"t","deterministic":true,"parameters":{"type":"object","properties":{"p":{"type":"string","x-plangate":{"canon":["pth"]}}}}}]}"#;
        let e = Catalog::from_value(&parse(doc).unwrap()).unwrap_err();
        let e = e.first();
        assert_eq!(e.field, "tools[0].parameters/properties/p");
        assert!(e.message.contains("unknown hint"));
    }

    /// A schema past `catalog::IN_PLACE_NODES` values is checked by conversion alone, and still
    /// finds what arguments break: the same violations as a small schema would.
    #[test]
    fn only_small_schemas_compile_twice() {
        let tool = |n: usize| {
            let props: Vec<String> = (0..n)
                .map(|i| format!(r#""p{i}":{{"type":"string"}}"#))
                .collect();
            format!(
                r#"{{"name":"t{n}","input_schema":{{"type":"object","properties":{{{}}},"required":["p0"]}}}}"#,
                props.join(",")
            )
        };
        let c = crate::catalog::Catalog::from_value(
            &crate::json::parse(&format!("[{},{}]", tool(3), tool(6000))).unwrap(),
        )
        .unwrap();
        assert!(c.get("t3").unwrap().in_place.is_some());
        let big = c.get("t6000").unwrap();
        assert!(big.in_place.is_none());
        let args = crate::json::parse(r#"{"p1":1}"#).unwrap();
        let Err(Invalid::Violates(v)) = canonicalize_arguments(big, &args, 0, None) else {
            panic!("arguments without p0 break the schema")
        };
        assert_eq!(v.len(), 2, "{v:?}");
    }
}
