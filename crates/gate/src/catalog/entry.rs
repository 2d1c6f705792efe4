//! One tool entry, in whichever shape a user brings it (native, MCP, OpenAI Chat or
//! Responses, Anthropic, a bare function doc): where its fields sit, and every problem
//! with them collected so one run lists them all.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::sandbox::{parse_mode, parse_mounts, parse_network};
use super::schema::parse_schema;
use super::{CatalogError, CatalogWarning, Dialect, Problems, Reference, ToolSpec, err};
use crate::errors::ErrorConvention;
use crate::hints::Hints;
use crate::json::{Object, Value};

/// Rebinds each named `Option` to its value, or returns the problems `p` collected when
/// one is `None` (its problem is among them): each field is named once, however many an
/// entry has.
macro_rules! every_taken {
    ($p:ident, $($field:ident),+ $(,)?) => {
        let ($(Some($field),)+) = ($($field,)+) else {
            return Err($p.0);
        };
    };
}

pub(super) fn parse_entry(
    entry: &Value,
    field: &str,
    warnings: &mut Vec<CatalogWarning>,
) -> Result<ToolSpec, Vec<CatalogError>> {
    let o = entry.as_object().ok_or_else(|| {
        vec![err(
            field,
            format!("expected an object, found {}", entry.kind()),
        )]
    })?;
    let (dialect, body, body_field, schema_key) = dialect_of(o, field).map_err(|e| vec![e])?;
    let mut p = Problems::default();
    let fields = gather_fields(o, body, field, &body_field, dialect, schema_key, &mut p);
    let get = |k: &str| fields.get(k).map(|(v, f)| (*v, f.as_str()));

    let name = p.take(match get("name") {
        Some((Value::String(s), _)) if !s.is_empty() => Ok(s.clone()),
        Some((_, f)) => Err(err(f, "expected a non-empty string")),
        None => Err(err(format!("{body_field}.name"), "missing")),
    });
    let declared = get("deterministic").is_some();
    let deterministic = p.take(parse_deterministic(
        get("deterministic"),
        dialect,
        &body_field,
    ));
    let verified = p.take(opt_bool(get("verified")));
    let parameters = parse_schema(get("parameters"), &body_field, warnings, &mut p);
    let module = p.take(opt_string(get("module"), "expected a path string"));
    let export = p.take(opt_string(
        get("export"),
        "expected a function name such as read-file or iface.func",
    ));
    let network = p.take(parse_network(get("network")));
    let description = p.take(opt_string(get("description"), "expected a string"));
    let probe = p.take(parse_probe(get("probe")));
    let mounts = p.take(parse_mounts(get("mounts")));
    let clock = p.take(parse_mode(get("clock")));
    let random = p.take(parse_mode(get("random")));
    let errors = p.take(parse_errors(get("errors")));
    let annotations = (dialect == Dialect::Mcp)
        .then(|| body.get("annotations").cloned())
        .flatten();
    every_taken!(
        p,
        name,
        deterministic,
        verified,
        parameters,
        module,
        export,
        network,
        description,
        probe,
        mounts,
        clock,
        random,
        errors
    );
    let (parameters, (validator, in_place), hints) = parameters;
    if !p.0.is_empty() {
        return Err(p.0);
    }
    Ok(ToolSpec {
        references: references_of(&hints),
        hints,
        shared_name: Arc::from(name.as_str()),
        name,
        module,
        export,
        network,
        deterministic,
        verified,
        parameters,
        probe,
        mounts,
        clock,
        random,
        description,
        annotations,
        errors,
        dialect,
        declared,
        validator: Arc::new(validator),
        in_place: in_place.map(Arc::new),
    })
}

/// The list of tool entries and the path that names it.
pub(super) fn entries_of(doc: &Value) -> Result<(&[Value], String), CatalogError> {
    let o = match doc {
        Value::Array(items) => return Ok((items.as_slice(), String::new())),
        Value::Object(o) => o,
        other => {
            return Err(err(
                "",
                format!(
                    "expected an object with \"tools\" or an array, found {}",
                    other.kind()
                ),
            ));
        }
    };
    // A JSON-RPC response to tools/list carries the list under `result`.
    let (o, prefix) = match o.get("result").and_then(Value::as_object) {
        Some(r) if r.contains_key("tools") => (r, "result."),
        _ => (o, ""),
    };
    // A BFCL entry (`{"id", "question", "function": [...]}`) is its own catalog.
    for key in ["tools", "function"] {
        match o.get(key) {
            Some(Value::Array(items)) => return Ok((items.as_slice(), format!("{prefix}{key}"))),
            Some(other) if key == "tools" || !o.contains_key("tools") => {
                return Err(err(
                    format!("{prefix}{key}"),
                    format!("expected an array of tools, found {}", other.kind()),
                ));
            }
            _ => {}
        }
    }
    Err(err("tools", "missing: a catalog is {\"tools\": [...]}"))
}

/// An entry's name and where it sits, when it has one.
pub(super) fn entry_name<'a>(entry: &'a Value, field: &str) -> Option<(&'a str, String)> {
    let o = entry.as_object()?;
    let (_, body, body_field, _) = dialect_of(o, field).ok()?;
    let name = body
        .get("name")
        .or_else(|| o.get("x-plangate")?.as_object()?.get("name"))?
        .as_str()?;
    Some((name, format!("{body_field}.name")))
}

const NATIVE_FIELDS: &[&str] = &[
    "name",
    "module",
    "export",
    "network",
    "deterministic",
    "verified",
    "parameters",
    "probe",
    "mounts",
    "clock",
    "random",
    "description",
    "errors",
];

/// Fields only plangate's own entries have: an entry with one of them at the top level
/// is native, and must then declare `deterministic`.
const PLANGATE_ONLY: &[&str] = &[
    "module",
    "export",
    "network",
    "deterministic",
    "verified",
    "probe",
    "mounts",
    "clock",
    "random",
    "errors",
];

/// Which shape an entry is in, its body (where name and schema sit), the body's path,
/// and the name its schema goes by there.
fn dialect_of<'a>(
    o: &'a Object,
    field: &str,
) -> Result<(Dialect, &'a Object, String, &'static str), CatalogError> {
    if let Some(f) = o.get("function") {
        return match f {
            Value::Object(f) => Ok((
                Dialect::OpenAiChat,
                f,
                format!("{field}.function"),
                "parameters",
            )),
            _ => Err(err(
                format!("{field}.function"),
                "expected an object: an OpenAI tool is {\"type\": \"function\", \"function\": {...}}",
            )),
        };
    }
    let dialect = if o.contains_key("inputSchema") {
        (Dialect::Mcp, "inputSchema")
    } else if o.contains_key("input_schema") {
        (Dialect::Anthropic, "input_schema")
    } else if o.get("type").and_then(Value::as_str) == Some("function") {
        (Dialect::OpenAiResponses, "parameters")
    } else if PLANGATE_ONLY.iter().any(|k| o.contains_key(k)) {
        (Dialect::Native, "parameters")
    } else {
        (Dialect::FunctionDoc, "parameters")
    };
    Ok((dialect.0, o, field.to_string(), dialect.1))
}

/// A tool entry's fields by name, with the path each was found at.
type Fields<'a> = BTreeMap<&'a str, (&'a Value, String)>;

/// Gathers an entry's fields wherever its shape puts them: plangate's own fields at the
/// top level of a native entry, under `x-plangate` in every foreign one.
fn gather_fields<'a>(
    o: &'a Object,
    body: &'a Object,
    field: &str,
    body_field: &str,
    dialect: Dialect,
    schema_key: &str,
    p: &mut Problems,
) -> Fields<'a> {
    let foreign = dialect != Dialect::Native;
    let unknown = |at: String| {
        err(
            at,
            format!(
                "unknown field (expected one of {})",
                NATIVE_FIELDS.join(", ")
            ),
        )
    };
    let mut fields: Fields<'a> = BTreeMap::new();
    for (k, v) in body.iter() {
        let key = match k.as_str() {
            k if k == schema_key => "parameters",
            "x-plangate" => continue,
            // A foreign shape's own name for the schema, or a native field there:
            // plangate's fields go under x-plangate in foreign shapes.
            "parameters" | "inputSchema" | "input_schema" if foreign => continue,
            k => k,
        };
        if foreign && !matches!(key, "name" | "parameters" | "description") {
            continue;
        }
        if NATIVE_FIELDS.contains(&key) {
            fields.insert(key, (v, format!("{body_field}.{k}")));
        } else {
            p.0.push(unknown(format!("{body_field}.{k}")));
        }
    }
    for (ext, ext_field) in [
        (o.get("x-plangate"), format!("{field}.x-plangate")),
        (
            body.get("x-plangate").filter(|_| !std::ptr::eq(o, body)),
            format!("{body_field}.x-plangate"),
        ),
    ] {
        let Some(ext) = ext else { continue };
        let Some(ext) = ext.as_object() else {
            p.0.push(err(&ext_field, "expected an object"));
            continue;
        };
        for (k, v) in ext.iter() {
            if NATIVE_FIELDS.contains(&k.as_str()) {
                fields.insert(k.as_str(), (v, format!("{ext_field}.{k}")));
            } else {
                p.0.push(unknown(format!("{ext_field}.{k}")));
            }
        }
    }
    fields
}

/// `deterministic`: required of a native entry; MCP and OpenAI definitions carry no
/// such field, and absent, nothing is promised, so results are not compared.
fn parse_deterministic(
    v: Option<(&Value, &str)>,
    dialect: Dialect,
    body_field: &str,
) -> Result<bool, CatalogError> {
    match v {
        Some((Value::Bool(b), _)) => Ok(*b),
        Some((_, f)) => Err(err(f, "expected true or false")),
        None if dialect != Dialect::Native => Ok(false),
        None => Err(err(
            format!("{body_field}.deterministic"),
            "missing: declare true or false",
        )),
    }
}

fn parse_probe(v: Option<(&Value, &str)>) -> Result<Vec<Value>, CatalogError> {
    match v {
        Some((Value::Array(items), f)) => items
            .iter()
            .enumerate()
            .find(|(_, p)| !matches!(p, Value::Object(_)))
            .map_or(Ok(items.clone()), |(i, _)| {
                Err(err(format!("{f}[{i}]"), "expected an arguments object"))
            }),
        Some((_, f)) => Err(err(f, "expected an array of argument objects")),
        None => Ok(Vec::new()),
    }
}

/// `errors`: how the tool writes an error in its result ([`ErrorConvention`]).
fn parse_errors(v: Option<(&Value, &str)>) -> Result<Option<ErrorConvention>, CatalogError> {
    match v {
        None => Ok(None),
        Some((v, f)) => ErrorConvention::from_catalog(v, f)
            .map(Some)
            .map_err(|(field, message)| err(field, message)),
    }
}

fn opt_bool(v: Option<(&Value, &str)>) -> Result<Option<bool>, CatalogError> {
    match v {
        Some((Value::Bool(b), _)) => Ok(Some(*b)),
        Some((_, f)) => Err(err(f, "expected true or false")),
        None => Ok(None),
    }
}

fn opt_string(v: Option<(&Value, &str)>, expected: &str) -> Result<Option<String>, CatalogError> {
    match v {
        Some((Value::String(s), _)) => Ok(Some(s.clone())),
        Some((_, f)) => Err(err(f, expected)),
        None => Ok(None),
    }
}

/// The reference parameters of a tool's hints.
fn references_of(hints: &Hints) -> Vec<Reference> {
    hints
        .properties()
        .filter_map(|(name, sub)| {
            let resolver = sub.resolver().map(str::to_string);
            (sub.must_exist() || resolver.is_some()).then(|| Reference {
                param: name.clone(),
                must_exist: sub.must_exist(),
                resolver,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::tests::cat;
    use crate::json::parse;

    #[test]
    fn mcp_and_openai_catalogs() {
        let mcp = cat(
            r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"get_user","title":"x",
            "inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true},
            "x-plangate":{"deterministic":true,"module":"g.wasm"}}]}}"#,
        )
        .unwrap();
        let t = mcp.get("get_user").unwrap();
        assert!(t.deterministic);
        assert_eq!(t.dialect, Dialect::Mcp);
        assert_eq!(
            t.annotations,
            Some(parse(r#"{"readOnlyHint":true}"#).unwrap())
        );
        let oai = cat(
            r#"[{"type":"function","function":{"name":"get_user","strict":true,
            "parameters":{"type":"object"}},"x-plangate":{"deterministic":true}}]"#,
        )
        .unwrap();
        assert!(oai.get("get_user").unwrap().deterministic);
        let undeclared = cat(r#"[{"type":"function","function":{"name":"t"}}]"#).unwrap();
        assert!(!undeclared.get("t").unwrap().deterministic);
        assert!(
            undeclared.warnings()[0]
                .message
                .contains("1 of 1 tools declare no `deterministic`"),
            "{:?}",
            undeclared.warnings()
        );
    }

    /// The same tool in every shape users bring reads as the same tool.
    #[test]
    fn every_dialect_reads_the_same_tool() {
        let schema =
            r#"{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}"#;
        let ext = r#""x-plangate":{"deterministic":true,"verified":true}"#;
        let shapes = [
            (
                format!(
                    r#"{{"tools":[{{"name":"w","deterministic":true,"verified":true,"parameters":{schema}}}]}}"#
                ),
                Dialect::Native,
            ),
            (
                format!(r#"{{"tools":[{{"name":"w","inputSchema":{schema},{ext}}}]}}"#),
                Dialect::Mcp,
            ),
            (
                format!(
                    r#"[{{"type":"function","function":{{"name":"w","parameters":{schema}}},{ext}}}]"#
                ),
                Dialect::OpenAiChat,
            ),
            (
                format!(
                    r#"[{{"type":"function","name":"w","parameters":{schema},"strict":false,{ext}}}]"#
                ),
                Dialect::OpenAiResponses,
            ),
            (
                format!(
                    r#"{{"tools":[{{"type":"function","name":"w","parameters":{schema},{ext}}}]}}"#
                ),
                Dialect::OpenAiResponses,
            ),
            (
                format!(r#"[{{"name":"w","description":"d","input_schema":{schema},{ext}}}]"#),
                Dialect::Anthropic,
            ),
            (
                format!(
                    r#"{{"tools":[{{"name":"w","input_schema":{schema},"cache_control":{{"type":"ephemeral"}},{ext}}}]}}"#
                ),
                Dialect::Anthropic,
            ),
            (
                format!(r#"[{{"name":"w","description":"d","parameters":{schema},{ext}}}]"#),
                Dialect::FunctionDoc,
            ),
            (
                format!(
                    r#"{{"id":"simple_1","question":[],"function":[{{"name":"w","parameters":{schema},{ext}}}]}}"#
                ),
                Dialect::FunctionDoc,
            ),
        ];
        for (doc, dialect) in shapes {
            let c = cat(&doc).unwrap_or_else(|e| panic!("{doc}: {e}"));
            let t = c.get("w").unwrap();
            assert_eq!(t.dialect, dialect, "{doc}");
            assert!(t.deterministic && t.verified == Some(true), "{doc}");
            assert_eq!(
                crate::jcs::to_string(&t.parameters),
                crate::jcs::to_string(&parse(schema).unwrap())
            );
            assert!(c.warnings().is_empty(), "{doc}: {:?}", c.warnings());
        }
        // plangate's fields outside x-plangate in a foreign shape are not read as declarations.
        let e = cat(r#"[{"type":"function","name":"w","deterministic":true}]"#).unwrap();
        assert!(!e.get("w").unwrap().deterministic);
    }

    /// A parameter's hints sit under `x-plangate` in its own schema in every shape: the
    /// `prose` hint read from MCP, OpenAI, Anthropic and function docs alike.
    #[test]
    fn every_dialect_reads_the_prose_hint() {
        let schema = r#"{"type":"object","properties":{"to":{"type":"string"},
            "summary":{"type":"string","x-plangate":{"canon":["prose"]}}},"required":["to"]}"#;
        let ext = r#""x-plangate":{"deterministic":true}"#;
        let shapes = [
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"result":{{"tools":[{{"name":"w","inputSchema":{schema},{ext}}}]}}}}"#
            ),
            format!(
                r#"[{{"type":"function","function":{{"name":"w","parameters":{schema}}},{ext}}}]"#
            ),
            format!(r#"[{{"type":"function","name":"w","parameters":{schema},{ext}}}]"#),
            format!(r#"[{{"name":"w","input_schema":{schema},{ext}}}]"#),
            format!(r#"[{{"name":"w","description":"d","parameters":{schema},{ext}}}]"#),
        ];
        for doc in shapes {
            let c = cat(&doc).unwrap_or_else(|e| panic!("{doc}: {e}"));
            let t = c.get("w").unwrap();
            assert!(t.hints.property("summary").prose(), "{doc}");
            assert!(!t.hints.property("to").prose(), "{doc}");
            let form = |words: &str| {
                let args = parse(&format!(r#"{{"to":"ada","summary":"{words}"}}"#)).unwrap();
                crate::canon::canonicalize_arguments(t, &args, 0, None).unwrap()
            };
            assert_eq!(
                form("Told Ada."),
                form("Ada knows now, as she asked."),
                "{doc}"
            );
        }
        // A misspelt hint in a foreign shape fails at its place, as in a native one.
        let e = cat(&format!(
            r#"[{{"type":"function","function":{{"name":"w","parameters":{}}},{ext}}}]"#,
            schema.replace("prose", "prosa")
        ))
        .unwrap_err();
        assert!(
            e.first().field.ends_with("parameters/properties/summary"),
            "{e}"
        );
        assert!(e.first().message.contains("unknown hint \"prosa\""), "{e}");
    }
}
