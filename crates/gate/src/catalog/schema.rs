//! A tool's argument schema: foreign types mapped to JSON Schema, defaults mended, and
//! the schema compiled twice (for serde_json values and for ours) after the checks that
//! keep a hostile schema from costing the compiler time and memory.

use super::{CatalogError, CatalogWarning, Problems, err};
use crate::hints::Hints;
use crate::json::{Object, Value};
use crate::serde_bridge::GateJson;

/// The entry's argument schema (foreign types mapped, defaults mended), compiled, and
/// its hints; an entry without one takes `{"type": "object"}`.
pub(super) fn parse_schema(
    given: Option<(&Value, &str)>,
    body_field: &str,
    warnings: &mut Vec<CatalogWarning>,
    p: &mut Problems,
) -> Option<(Value, Compiled, Hints)> {
    let (schema, f) = match given {
        Some((v @ Value::Object(_), f)) => {
            let mut schema = v.clone();
            map_foreign_types(&mut schema, f, warnings);
            (schema, f.to_string())
        }
        Some((_, f)) => return p.take(Err(err(f, "expected a JSON Schema object"))),
        None => (
            Value::Object(Object::from_iter([(
                "type".to_string(),
                Value::String("object".into()),
            )])),
            body_field.to_string(),
        ),
    };
    let mut bad_hints = Vec::new();
    let hints = Hints::compile(&schema, &f, &mut bad_hints);
    p.0.extend(
        bad_hints
            .into_iter()
            .map(|(field, message)| err(field, message)),
    );
    p.take_all(compile(&schema, &f))
        .map(|validator| (schema, validator, hints))
}

/// A schema's validator for `serde_json` values, and for ours when it compiles for them.
pub(super) type Compiled = (
    jsonschema::Validator,
    Option<jsonschema::Validator<GateJson>>,
);

/// Compiles a schema, or names every place it breaks the meta-schema (as a JSON Pointer
/// after the schema's field).
fn compile(schema: &Value, field: &str) -> Result<Compiled, Vec<CatalogError>> {
    let mut long = Vec::new();
    long_patterns(schema, field, &mut String::new(), &mut long);
    if !long.is_empty() {
        return Err(long);
    }
    let s = crate::serde_bridge::to_serde(schema);
    if let Ok(meta) = jsonschema::meta::validator_for(&s) {
        let mut problems: Vec<CatalogError> = Vec::new();
        for e in meta.iter_errors(&s) {
            let at = e.instance_path().as_str().to_string();
            let message = if at.ends_with("/type") {
                format!("{} is not a JSON Schema type", e.instance())
            } else if let Some(why) = too_big(e.instance()) {
                why
            } else {
                e.to_string()
            };
            let problem = err(format!("{field}{at}"), message);
            if !problems.contains(&problem) {
                problems.push(problem);
            }
        }
        if !problems.is_empty() {
            return Err(problems);
        }
    }
    let validator = jsonschema::validator_for(&s).map_err(|e| {
        let message = too_big(e.instance()).unwrap_or_else(|| format!("invalid JSON Schema: {e}"));
        vec![err(format!("{field}{}", e.schema_path().as_str()), message)]
    })?;
    let mut left = IN_PLACE_NODES;
    let in_place = small(schema, &mut left)
        .then(|| jsonschema::options_for::<GateJson>().build(&s).ok())
        .flatten();
    Ok((validator, in_place))
}

/// Longest `pattern` (or `patternProperties` key) compiled: real schemas' patterns are
/// a few hundred bytes, and compiling one of megabytes costs time and memory out of all
/// proportion before the regex engine's own size limit refuses it.
const PATTERN_MAX: usize = 16 << 10;

/// Why a pattern the schema library calls "not a regex" is refused, when the reason is
/// its size once compiled (`(a{1000}){1000}`), which that message does not say.
fn too_big(pattern: &serde_json::Value) -> Option<String> {
    match regex::Regex::new(pattern.as_str()?) {
        Err(regex::Error::CompiledTooBig(limit)) => Some(format!(
            "the pattern is over the regex engine's size limit once compiled ({limit} bytes); write it with fewer or smaller repetitions"
        )),
        _ => None,
    }
}

/// Every `pattern` string and `patternProperties` key in `schema` over [`PATTERN_MAX`],
/// as problems at their JSON Pointers under `field`.
fn long_patterns(schema: &Value, field: &str, at: &mut String, problems: &mut Vec<CatalogError>) {
    let too_long = |what: &str, len: usize| {
        format!(
            "{what} is {len} bytes, over the limit of {PATTERN_MAX} bytes for a regex in a schema"
        )
    };
    match schema {
        Value::Object(o) => {
            for (k, v) in o.iter() {
                let len = at.len();
                at.push('/');
                at.push_str(&k.replace('~', "~0").replace('/', "~1"));
                match (k.as_str(), v) {
                    ("pattern", Value::String(p)) if p.len() > PATTERN_MAX => {
                        problems.push(err(
                            format!("{field}{at}"),
                            too_long("the pattern", p.len()),
                        ));
                    }
                    ("patternProperties", Value::Object(props)) => {
                        for (key, _) in props.iter().filter(|(key, _)| key.len() > PATTERN_MAX) {
                            problems
                                .push(err(format!("{field}{at}"), too_long("a key", key.len())));
                        }
                        long_patterns(v, field, at, problems);
                    }
                    _ => long_patterns(v, field, at, problems),
                }
                at.truncate(len);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                let len = at.len();
                at.push_str(&format!("/{i}"));
                long_patterns(v, field, at, problems);
                at.truncate(len);
            }
        }
        _ => {}
    }
}

/// Schemas of up to this many values also compile for checking arguments in place. A
/// larger one (a catalog of 100,000 properties) is checked by converting the
/// arguments: a second compiled copy of it costs much memory, and the time to zero that
/// memory, for a conversion that costs far less.
const IN_PLACE_NODES: usize = 10_000;

/// Whether `v` holds at most `*left` values (counting down as it looks).
fn small(v: &Value, left: &mut usize) -> bool {
    if *left == 0 {
        return false;
    }
    *left -= 1;
    match v {
        Value::Array(items) => items.iter().all(|v| small(v, left)),
        Value::Object(o) => o.iter().all(|(_, v)| small(v, left)),
        _ => true,
    }
}

/// The types BFCL/Gorilla function docs use that JSON Schema does not have, and the
/// JSON Schema type each means (None: any value, so the keyword goes).
fn foreign_type(t: &str) -> Option<Option<&'static str>> {
    Some(match t {
        "dict" => Some("object"),
        "float" | "double" => Some("number"),
        "int" | "long" => Some("integer"),
        "tuple" | "list" => Some("array"),
        "bool" => Some("boolean"),
        "str" => Some("string"),
        "any" => None,
        _ => return None,
    })
}

/// Maps BFCL/Gorilla types to JSON Schema in place, warning once per place changed.
fn map_foreign_types(schema: &mut Value, field: &str, warnings: &mut Vec<CatalogWarning>) {
    fn walk(v: &mut Value, at: &mut String, field: &str, warnings: &mut Vec<CatalogWarning>) {
        let Value::Object(o) = v else { return };
        let mapped = match o.get("type") {
            Some(Value::String(t)) => foreign_type(t).map(|to| (t.clone(), to)),
            _ => None,
        };
        if let Some((from, to)) = mapped {
            let message = match to {
                Some(to) => {
                    o.insert("type", Value::String(to.into()));
                    format!("BFCL type {from:?} read as JSON Schema {to:?}")
                }
                None => {
                    o.remove("type");
                    format!("BFCL type {from:?} read as any value (no `type`)")
                }
            };
            warnings.push(err(format!("{field}{at}/type"), message));
        }
        mend_default(o, &format!("{field}{at}/default"), warnings);
        for (k, sub) in o.iter_mut() {
            let len = at.len();
            at.push('/');
            at.push_str(&k.replace('~', "~0").replace('/', "~1"));
            match k.as_str() {
                // Keywords whose value is a schema or a list of schemas.
                "items"
                | "additionalProperties"
                | "not"
                | "contains"
                | "propertyNames"
                | "additionalItems"
                | "if"
                | "then"
                | "else"
                | "anyOf"
                | "oneOf"
                | "allOf"
                | "prefixItems" => {
                    if let Value::Array(list) = sub {
                        for (i, s) in list.iter_mut().enumerate() {
                            let l = at.len();
                            at.push_str(&format!("/{i}"));
                            walk(s, at, field, warnings);
                            at.truncate(l);
                        }
                    } else {
                        walk(sub, at, field, warnings);
                    }
                }
                "properties" | "patternProperties" | "$defs" | "definitions" => {
                    if let Value::Object(m) = sub {
                        for (name, s) in m.iter_mut() {
                            let l = at.len();
                            at.push('/');
                            at.push_str(&name.replace('~', "~0").replace('/', "~1"));
                            walk(s, at, field, warnings);
                            at.truncate(l);
                        }
                    }
                }
                _ => {}
            }
            at.truncate(len);
        }
    }
    walk(schema, &mut String::new(), field, warnings);
}

/// A `default` that its own `type` does not admit would be filled into every call that
/// leaves the parameter out and then disagree with the calls that give it (BFCL writes
/// `"default": "false"` on booleans). A string that reads as the type is read so; any
/// other mismatch is dropped. Both with a warning.
fn mend_default(o: &mut Object, field: &str, warnings: &mut Vec<CatalogWarning>) {
    let (Some(Value::String(t)), Some(d)) = (o.get("type"), o.get("default")) else {
        return;
    };
    let (t, d) = (t.clone(), d.clone());
    let d = &d;
    let fits = match (t.as_str(), d) {
        ("string", Value::String(_))
        | ("number", Value::Number(_))
        | ("boolean", Value::Bool(_))
        | ("array", Value::Array(_))
        | ("object", Value::Object(_))
        | ("null", Value::Null) => true,
        ("integer", Value::Number(n)) => n.as_f64().fract() == 0.0,
        ("string" | "number" | "integer" | "boolean" | "array" | "object" | "null", _) => false,
        // Not a JSON Schema type: the meta-schema check names it.
        _ => true,
    };
    if fits {
        return;
    }
    let read = match (t.as_str(), d) {
        ("boolean", Value::String(s)) => match s.to_ascii_lowercase().as_str() {
            "true" => Some(Value::Bool(true)),
            "false" => Some(Value::Bool(false)),
            _ => None,
        },
        ("number" | "integer", Value::String(s)) => {
            crate::json::parse(s.trim()).ok().filter(|v| match v {
                Value::Number(n) => t == "number" || n.as_f64().fract() == 0.0,
                _ => false,
            })
        }
        _ => None,
    };
    let shown = crate::jcs::to_string(d);
    let message = match read {
        Some(v) => {
            let m = format!(
                "default {shown} read as {} for type {t:?}",
                crate::jcs::to_string(&v)
            );
            o.insert("default", v);
            m
        }
        None => {
            o.remove("default");
            format!("default {shown} does not fit type {t:?}: not applied")
        }
    };
    warnings.push(err(field, message));
}

#[cfg(test)]
mod tests {
    use crate::catalog::tests::{cat, fields};

    /// A pattern too long to compile cheaply is refused by its length, before the regex
    /// engine sees it; one that compiles past the engine's size limit says so; neither
    /// message quotes megabytes.
    #[test]
    fn oversized_patterns_are_refused_by_size_without_echoing_them() {
        let schema = |pattern: &str| {
            format!(
                r#"{{"tools":[{{"name":"a","deterministic":true,"parameters":{{"type":"object",
                   "properties":{{"q":{{"type":"string","pattern":"{pattern}"}}}}}}}}]}}"#
            )
        };
        let e = cat(&schema(&"(a|b)".repeat(2_000_000))).unwrap_err();
        assert_eq!(fields(&e), ["tools[0].parameters/properties/q/pattern"]);
        assert_eq!(
            e.first().message,
            "the pattern is 10000000 bytes, over the limit of 16384 bytes for a regex in a schema"
        );
        let e = cat(&schema("(a{1000}){1000}")).unwrap_err();
        assert!(
            e.first()
                .message
                .contains("over the regex engine's size limit once compiled"),
            "{e}"
        );
        let key = "k".repeat(20_000);
        let e = cat(&format!(
            r#"{{"tools":[{{"name":"a","deterministic":true,"parameters":{{"type":"object",
               "patternProperties":{{"{key}":{{}}}}}}}}]}}"#
        ))
        .unwrap_err();
        assert_eq!(fields(&e), ["tools[0].parameters/patternProperties"]);
        assert!(e.to_string().len() < 1_000, "{e}");
    }

    #[test]
    fn bfcl_types_are_mapped_with_a_warning_each() {
        let c = cat(r#"[{"name":"f","parameters":{"type":"dict","properties":{
                "interval":{"type":"array","items":{"type":"float"}},
                "pair":{"type":"tuple","items":{"type":"integer"}},
                "anything":{"type":"any"},
                "n":{"type":"integer"}},"required":["interval"]}}]"#)
        .unwrap();
        let t = c.get("f").unwrap();
        assert_eq!(
            crate::jcs::to_string(&t.parameters),
            r#"{"properties":{"anything":{},"interval":{"items":{"type":"number"},"type":"array"},"n":{"type":"integer"},"pair":{"items":{"type":"integer"},"type":"array"}},"required":["interval"],"type":"object"}"#
        );
        let w: Vec<String> = c.warnings().iter().map(ToString::to_string).collect();
        assert_eq!(
            w[..4],
            [
                r#"[0].parameters/type: BFCL type "dict" read as JSON Schema "object""#,
                r#"[0].parameters/properties/interval/items/type: BFCL type "float" read as JSON Schema "number""#,
                r#"[0].parameters/properties/pair/type: BFCL type "tuple" read as JSON Schema "array""#,
                r#"[0].parameters/properties/anything/type: BFCL type "any" read as any value (no `type`)"#,
            ],
            "{w:#?}"
        );
        assert_eq!(w.len(), 5, "and the undeclared-tools warning: {w:#?}");
    }

    #[test]
    fn defaults_that_do_not_fit_their_type_are_read_or_dropped() {
        let c = cat(r#"[{"name":"f","parameters":{"type":"dict","properties":{
                "flag":{"type":"boolean","default":"false"},
                "n":{"type":"integer","default":"5"},
                "x":{"type":"float","default":"fast"},
                "ok":{"type":"string","default":"a"}}}}]"#)
        .unwrap();
        let t = c.get("f").unwrap();
        assert_eq!(
            crate::jcs::to_string(&t.parameters),
            r#"{"properties":{"flag":{"default":false,"type":"boolean"},"n":{"default":5,"type":"integer"},"ok":{"default":"a","type":"string"},"x":{"type":"number"}},"type":"object"}"#
        );
        let w: Vec<String> = c.warnings().iter().map(ToString::to_string).collect();
        assert!(w.contains(&r#"[0].parameters/properties/flag/default: default "false" read as false for type "boolean""#.to_string()), "{w:#?}");
        assert!(w.contains(&r#"[0].parameters/properties/x/default: default "fast" does not fit type "number": not applied"#.to_string()), "{w:#?}");
    }
}
