//! The tool catalog (design.md section 3): what each tool declares, the schema its
//! arguments are canonicalized against, and how the sandbox should run it. One parser
//! for the native format, an MCP `tools/list` result and an OpenAI `tools` array, so
//! every command reads catalogs the same way.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::json::{Object, Value};

/// Where a catalog field went wrong: a path such as `tools[3].parameters`, and what.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct CatalogError {
    /// The field, as a path from the document root.
    pub field: String,
    /// What is wrong with it.
    pub message: String,
}

fn err(field: impl Into<String>, message: impl Into<String>) -> CatalogError {
    CatalogError {
        field: field.into(),
        message: message.into(),
    }
}

/// Whether a source the guest sees is frozen for the epoch or the host's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceMode {
    /// Fixed for the whole epoch (the default).
    #[default]
    Pinned,
    /// The host's live source, as production would see it.
    Live,
}

/// A host folder shown to the tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountSpec {
    /// Host path as written, relative to the catalog file.
    pub host: String,
    /// Where the guest sees it.
    pub guest: String,
    /// Pinned snapshot or live folder.
    pub mode: SourceMode,
}

/// One tool as the catalog declares it.
#[derive(Debug, Clone)]
pub struct ToolSpec {
    /// Unique name the plans call it by.
    pub name: String,
    /// Path of the `.wasm` module, relative to the catalog file.
    pub module: Option<String>,
    /// What the tool author declares.
    pub deterministic: bool,
    /// A recorded probe result, used by `plangate score`.
    pub verified: Option<bool>,
    /// JSON Schema of the arguments.
    pub parameters: Value,
    /// Arguments to probe determinism with.
    pub probe: Vec<Value>,
    /// Folders the tool can read.
    pub mounts: Vec<MountSpec>,
    /// Clock mode.
    pub clock: SourceMode,
    /// Randomness mode.
    pub random: SourceMode,
    /// Human description.
    pub description: Option<String>,
    pub(crate) validator: Arc<jsonschema::Validator>,
}

/// All tools, by name.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    tools: Vec<ToolSpec>,
    by_name: BTreeMap<String, usize>,
}

impl Catalog {
    /// Reads a catalog in any accepted format from a parsed document.
    pub fn from_value(doc: &Value) -> Result<Self, CatalogError> {
        let (entries, prefix, flavour) = match doc {
            Value::Array(items) => (items.as_slice(), "", Flavour::OpenAi),
            Value::Object(o) => {
                // A JSON-RPC response to tools/list carries the list under `result`.
                let (o, prefix) = match o.get("result").and_then(Value::as_object) {
                    Some(r) if r.contains_key("tools") => (r, "result."),
                    _ => (o, ""),
                };
                match o.get("tools") {
                    Some(Value::Array(items)) => (items.as_slice(), prefix, Flavour::Detect),
                    Some(other) => {
                        return Err(err(
                            format!("{prefix}tools"),
                            format!("expected an array of tools, found {}", other.kind()),
                        ));
                    }
                    None => return Err(err("tools", "missing: a catalog is {\"tools\": [...]}")),
                }
            }
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
        let mut catalog = Catalog::default();
        for (i, entry) in entries.iter().enumerate() {
            let field = if prefix.is_empty() && matches!(flavour, Flavour::OpenAi) {
                format!("[{i}]")
            } else {
                format!("{prefix}tools[{i}]")
            };
            let tool = parse_entry(entry, &field, flavour)?;
            if catalog.by_name.contains_key(&tool.name) {
                return Err(err(
                    format!("{field}.name"),
                    format!("duplicate tool name {:?}", tool.name),
                ));
            }
            catalog
                .by_name
                .insert(tool.name.clone(), catalog.tools.len());
            catalog.tools.push(tool);
        }
        Ok(catalog)
    }

    /// The tool called `name`.
    pub fn get(&self, name: &str) -> Option<&ToolSpec> {
        self.by_name.get(name).map(|&i| &self.tools[i])
    }

    /// Every tool, in catalog order.
    pub fn tools(&self) -> &[ToolSpec] {
        &self.tools
    }
}

#[derive(Debug, Clone, Copy)]
enum Flavour {
    /// `{"tools": [...]}`: native entries, or MCP entries (with `inputSchema`).
    Detect,
    /// `[{"type": "function", "function": {...}}]`.
    OpenAi,
}

const NATIVE_FIELDS: &[&str] = &[
    "name",
    "module",
    "deterministic",
    "verified",
    "parameters",
    "probe",
    "mounts",
    "clock",
    "random",
    "description",
];

fn parse_entry(entry: &Value, field: &str, flavour: Flavour) -> Result<ToolSpec, CatalogError> {
    let o = entry
        .as_object()
        .ok_or_else(|| err(field, format!("expected an object, found {}", entry.kind())))?;
    // Gather the fields wherever the format puts them: OpenAI nests the function, MCP
    // names the schema inputSchema, and both carry plangate's own fields in x-plangate.
    let (body, body_field): (&Object, String) = match flavour {
        Flavour::OpenAi => match o.get("function") {
            Some(Value::Object(f)) => (f, format!("{field}.function")),
            _ => {
                return Err(err(
                    format!("{field}.function"),
                    "missing: an OpenAI tool is {\"type\": \"function\", \"function\": {...}}",
                ));
            }
        },
        Flavour::Detect => (o, field.to_string()),
    };
    let foreign = matches!(flavour, Flavour::OpenAi) || body.contains_key("inputSchema");
    let mut fields: BTreeMap<&str, (&Value, String)> = BTreeMap::new();
    for (k, v) in body.iter() {
        let key = match k.as_str() {
            "inputSchema" if foreign => "parameters",
            "x-plangate" => continue,
            k => k,
        };
        if NATIVE_FIELDS.contains(&key) {
            fields.insert(key, (v, format!("{body_field}.{k}")));
        } else if !foreign {
            return Err(err(
                format!("{body_field}.{k}"),
                format!(
                    "unknown field (expected one of {})",
                    NATIVE_FIELDS.join(", ")
                ),
            ));
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
        let ext = ext
            .as_object()
            .ok_or_else(|| err(&ext_field, "expected an object"))?;
        for (k, v) in ext.iter() {
            if !NATIVE_FIELDS.contains(&k.as_str()) {
                return Err(err(
                    format!("{ext_field}.{k}"),
                    format!(
                        "unknown field (expected one of {})",
                        NATIVE_FIELDS.join(", ")
                    ),
                ));
            }
            fields.insert(k.as_str(), (v, format!("{ext_field}.{k}")));
        }
    }
    let get = |k: &str| fields.get(k).map(|(v, f)| (*v, f.as_str()));

    let name = match get("name") {
        Some((Value::String(s), _)) if !s.is_empty() => s.clone(),
        Some((_, f)) => return Err(err(f, "expected a non-empty string")),
        None => return Err(err(format!("{body_field}.name"), "missing")),
    };
    let deterministic = match get("deterministic") {
        Some((Value::Bool(b), _)) => *b,
        Some((_, f)) => return Err(err(f, "expected true or false")),
        // MCP and OpenAI definitions carry no determinism field; absent, nothing is
        // promised, so results are not compared.
        None if foreign => false,
        None => {
            return Err(err(
                format!("{body_field}.deterministic"),
                "missing: declare true or false",
            ));
        }
    };
    let verified = match get("verified") {
        Some((Value::Bool(b), _)) => Some(*b),
        Some((_, f)) => return Err(err(f, "expected true or false")),
        None => None,
    };
    let (parameters, params_field) = match get("parameters") {
        Some((v @ Value::Object(_), f)) => (v.clone(), f.to_string()),
        Some((_, f)) => return Err(err(f, "expected a JSON Schema object")),
        None => (
            Value::Object(Object::from_iter([(
                "type".to_string(),
                Value::String("object".into()),
            )])),
            String::new(),
        ),
    };
    let validator = jsonschema::validator_for(&crate::convert::to_serde(&parameters))
        .map_err(|e| err(&params_field, format!("invalid JSON Schema: {e}")))?;
    crate::canon::check_hints(&parameters, &params_field)?;
    let module = match get("module") {
        Some((Value::String(s), _)) => Some(s.clone()),
        Some((_, f)) => return Err(err(f, "expected a path string")),
        None => None,
    };
    let description = match get("description") {
        Some((Value::String(s), _)) => Some(s.clone()),
        Some((_, f)) => return Err(err(f, "expected a string")),
        None => None,
    };
    let probe = match get("probe") {
        Some((Value::Array(items), f)) => {
            for (i, p) in items.iter().enumerate() {
                if !matches!(p, Value::Object(_)) {
                    return Err(err(format!("{f}[{i}]"), "expected an arguments object"));
                }
            }
            items.clone()
        }
        Some((_, f)) => return Err(err(f, "expected an array of argument objects")),
        None => Vec::new(),
    };
    let mounts = match get("mounts") {
        Some((Value::Array(items), f)) => items
            .iter()
            .enumerate()
            .map(|(i, m)| parse_mount(m, &format!("{f}[{i}]")))
            .collect::<Result<Vec<_>, _>>()?,
        Some((_, f)) => return Err(err(f, "expected an array of mounts")),
        None => Vec::new(),
    };
    let clock = parse_mode(get("clock"))?;
    let random = parse_mode(get("random"))?;
    Ok(ToolSpec {
        name,
        module,
        deterministic,
        verified,
        parameters,
        probe,
        mounts,
        clock,
        random,
        description,
        validator: Arc::new(validator),
    })
}

fn parse_mode(v: Option<(&Value, &str)>) -> Result<SourceMode, CatalogError> {
    match v {
        None => Ok(SourceMode::Pinned),
        Some((Value::String(s), _)) if s == "pinned" => Ok(SourceMode::Pinned),
        Some((Value::String(s), _)) if s == "live" => Ok(SourceMode::Live),
        Some((_, f)) => Err(err(f, "expected \"pinned\" or \"live\"")),
    }
}

fn parse_mount(m: &Value, field: &str) -> Result<MountSpec, CatalogError> {
    let o = m.as_object().ok_or_else(|| {
        err(
            field,
            "expected {\"host\": ..., \"guest\": ..., \"mode\": ...}",
        )
    })?;
    for k in o.keys() {
        if !matches!(k.as_str(), "host" | "guest" | "mode") {
            return Err(err(
                format!("{field}.{k}"),
                "unknown field (expected host, guest, mode)",
            ));
        }
    }
    let text = |k: &str| match o.get(k) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        _ => Err(err(format!("{field}.{k}"), "expected a non-empty string")),
    };
    let guest = text("guest")?;
    let mode_field = format!("{field}.mode");
    if !guest.starts_with('/') {
        return Err(err(
            format!("{field}.guest"),
            "expected an absolute guest path such as /world",
        ));
    }
    Ok(MountSpec {
        host: text("host")?,
        guest,
        mode: parse_mode(o.get("mode").map(|v| (v, mode_field.as_str())))?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::parse;

    fn cat(s: &str) -> Result<Catalog, CatalogError> {
        Catalog::from_value(&parse(s).unwrap())
    }

    #[test]
    fn native_catalog() {
        let c = cat(
            r#"{"tools":[{"name":"get_user","deterministic":true,"module":"a.wasm",
            "parameters":{"type":"object","properties":{"user_id":{"type":"string"}}},
            "mounts":[{"host":"world","guest":"/world"}],"clock":"live"}]}"#,
        )
        .unwrap();
        let t = c.get("get_user").unwrap();
        assert!(t.deterministic);
        assert_eq!(t.mounts[0].mode, SourceMode::Pinned);
        assert_eq!(t.clock, SourceMode::Live);
    }

    #[test]
    fn errors_name_the_field() {
        let e = cat(
            r#"{"tools":[{"name":"a","deterministic":true},{"name":"a","deterministic":false}]}"#,
        )
        .unwrap_err();
        assert_eq!(e.field, "tools[1].name");
        let e = cat(r#"{"tools":[{"name":"a","deterministc":true}]}"#).unwrap_err();
        assert_eq!(e.field, "tools[0].deterministc");
        let e =
            cat(r#"{"tools":[{"name":"a","deterministic":true,"parameters":{"type":"nope"}}]}"#)
                .unwrap_err();
        assert_eq!(e.field, "tools[0].parameters");
        let e = cat(
            r#"{"tools":[{"name":"a","deterministic":true,"mounts":[{"host":"x","guest":"w"}]}]}"#,
        )
        .unwrap_err();
        assert_eq!(e.field, "tools[0].mounts[0].guest");
    }

    #[test]
    fn mcp_and_openai_catalogs() {
        let mcp = cat(r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"get_user","title":"x",
            "inputSchema":{"type":"object"},"x-plangate":{"deterministic":true,"module":"g.wasm"}}]}}"#)
        .unwrap();
        assert!(mcp.get("get_user").unwrap().deterministic);
        let oai = cat(
            r#"[{"type":"function","function":{"name":"get_user","strict":true,
            "parameters":{"type":"object"}},"x-plangate":{"deterministic":true}}]"#,
        )
        .unwrap();
        assert!(oai.get("get_user").unwrap().deterministic);
        let undeclared = cat(r#"[{"type":"function","function":{"name":"t"}}]"#).unwrap();
        assert!(!undeclared.get("t").unwrap().deterministic);
    }
}
