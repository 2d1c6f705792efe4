//! The tool catalog (docs/design.md, "Inputs"): what each tool declares, the schema its
//! arguments are canonicalized against, and how the sandbox should run it. One parser
//! for the native format, an MCP `tools/list` result and an OpenAI `tools` array, so
//! every command reads catalogs the same way.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::hints::Hints;
use crate::json::{Object, Value};
use crate::serde_bridge::GateJson;

/// Where a catalog field went wrong: a path such as `tools[3].parameters`, and what.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct CatalogError {
    /// The field, as a path from the document root; inside a schema it goes on as a
    /// JSON Pointer (`tools[0].parameters/properties/n/type`).
    pub field: String,
    /// What is wrong with it.
    pub message: String,
}

/// Every problem an invalid catalog has, found in one pass, so a user fixes them all at
/// once rather than one per run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogErrors(pub Vec<CatalogError>);

impl std::fmt::Display for CatalogErrors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0.as_slice() {
            [one] => write!(f, "{one}"),
            all => {
                write!(f, "{} problems:", all.len())?;
                for e in all {
                    write!(f, "\n  {e}")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for CatalogErrors {}

impl CatalogErrors {
    /// The first problem (a catalog error always has one).
    pub fn first(&self) -> &CatalogError {
        &self.0[0]
    }
}

impl From<CatalogError> for CatalogErrors {
    fn from(e: CatalogError) -> Self {
        CatalogErrors(vec![e])
    }
}

/// Something plangate changed or assumed while reading a catalog, said once with its
/// place, never silently: a BFCL type mapped to JSON Schema, a tool that declares nothing.
pub type CatalogWarning = CatalogError;

fn err(field: impl Into<String>, message: impl Into<String>) -> CatalogError {
    CatalogError {
        field: field.into(),
        message: clip(message.into()),
    }
}

/// Longest message kept whole: the schema library quotes the offending value, and a
/// catalog error must not print megabytes back at the user.
const MESSAGE_MAX: usize = 400;

fn clip(mut message: String) -> String {
    if message.len() <= MESSAGE_MAX {
        return message;
    }
    let total = message.len();
    let mut cut = MESSAGE_MAX;
    while !message.is_char_boundary(cut) {
        cut -= 1;
    }
    message.truncate(cut);
    message.push_str(&format!("... ({total} bytes in all)"));
    message
}

/// Longest `pattern` (or `patternProperties` key) compiled: real schemas' patterns are
/// a few hundred bytes, and compiling a 10 MB one took seconds and gigabytes before the
/// regex engine's own size limit refused it.
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

/// What a tool may do on the network (wasi:http, wasi:sockets).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NetworkMode {
    /// Nothing leaves the sandbox: every request is a deterministic error naming its
    /// host (the default).
    #[default]
    Denied,
    /// Requests to the allowed hosts go out as they are: results follow the network.
    Live,
    /// Each distinct request to an allowed host is recorded on its first use in an
    /// epoch and replayed ever after, from the epoch's manifest.
    Pinned,
}

/// A tool's `network`: its mode and the `host:port`s it may reach.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NetworkSpec {
    /// Denied, live or pinned.
    pub mode: NetworkMode,
    /// `host:port` pairs requests may go to (none: every request is refused).
    pub allow: Vec<String>,
}

/// The shape a tool entry was written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Dialect {
    /// plangate's own entry (`deterministic` at the top level).
    Native,
    /// An MCP `tools/list` entry (`inputSchema`).
    Mcp,
    /// OpenAI Chat Completions: `{"type": "function", "function": {...}}`.
    OpenAiChat,
    /// OpenAI Responses: flat `{"type": "function", "name": ..., "parameters": ...}`.
    OpenAiResponses,
    /// Anthropic: `{"name": ..., "input_schema": ...}`.
    Anthropic,
    /// A bare function doc `{"name", "description", "parameters"}` as BFCL/Gorilla and
    /// Gemini write them.
    FunctionDoc,
}

/// One tool as the catalog declares it.
#[derive(Debug, Clone)]
pub struct ToolSpec {
    /// Unique name the plans call it by.
    pub name: String,
    /// Path of the `.wasm` module or component, relative to the catalog file.
    pub module: Option<String>,
    /// The component function this tool calls (`read-file`, or `iface.func` inside an
    /// exported interface); none for a command (a core module, or a component that
    /// exports `wasi:cli/run`).
    pub export: Option<String>,
    /// What the tool may do on the network.
    pub network: NetworkSpec,
    /// What the tool author declares.
    pub deterministic: bool,
    /// A recorded probe result, used by `plangate score`.
    pub verified: Option<bool>,
    /// JSON Schema of the arguments (foreign types already mapped).
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
    /// MCP `annotations` (`readOnlyHint`, `idempotentHint`, ...), kept to show in tool
    /// health; they are hints, not determinism declarations.
    pub annotations: Option<Value>,
    /// The shape the entry was written in.
    pub dialect: Dialect,
    /// Top-level parameters that name something that must exist: declared
    /// `must_exist`, or resolved through an `id` hint.
    pub references: Vec<Reference>,
    /// Whether the entry said `deterministic` at all (a foreign one may not).
    declared: bool,
    /// The schema's canonicalization hints, read once.
    pub(crate) hints: Hints,
    /// `name`, for the prepared steps that call the tool to share instead of copying.
    pub(crate) shared_name: Arc<str>,
    pub(crate) validator: Arc<jsonschema::Validator>,
    /// The same schema compiled for our own values, which asks whether arguments are
    /// valid without converting them. `None` for a schema over `IN_PLACE_NODES` values,
    /// or one that would not compile where the first did: arguments are then converted.
    pub(crate) in_place: Option<Arc<jsonschema::Validator<GateJson>>>,
}

/// A parameter that refers to something (a user, an order, a file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    /// The parameter's name.
    pub param: String,
    /// Declared `"x-plangate": {"must_exist": true}`.
    pub must_exist: bool,
    /// The resolver tool of its `id` hint, if it has one.
    pub resolver: Option<String>,
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

/// All tools, by name.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    tools: Vec<ToolSpec>,
    by_name: BTreeMap<String, usize>,
    warnings: Vec<CatalogWarning>,
}

impl Catalog {
    /// Reads a catalog in any accepted shape from a parsed document: plangate's own
    /// `{"tools": [...]}`, an MCP `tools/list` result (or its JSON-RPC response), a list
    /// or `{"tools": [...]}` of OpenAI (Chat or Responses), Anthropic or plain function
    /// docs, and a BFCL entry (`{"function": [...]}`). Every problem is reported.
    pub fn from_value(doc: &Value) -> Result<Self, CatalogErrors> {
        let (entries, prefix) = entries_of(doc)?;
        let mut catalog = Catalog::default();
        let mut problems = Vec::new();
        let mut seen = BTreeMap::new();
        for (i, entry) in entries.iter().enumerate() {
            let field = format!("{prefix}[{i}]");
            let parsed = parse_entry(entry, &field, &mut catalog.warnings);
            // Names are checked for repeats even on entries with other problems, so
            // one run says everything.
            if let Some((name, name_field)) = entry_name(entry, &field)
                && seen.insert(name.to_string(), i).is_some()
            {
                problems.push(err(name_field, format!("duplicate tool name {name:?}")));
                continue;
            }
            match parsed {
                Ok(tool) => {
                    catalog
                        .by_name
                        .insert(tool.name.clone(), catalog.tools.len());
                    catalog.tools.push(tool);
                }
                Err(mut e) => problems.append(&mut e),
            }
        }
        if !problems.is_empty() {
            return Err(CatalogErrors(problems));
        }
        let undeclared: Vec<&str> = catalog
            .tools
            .iter()
            .filter(|t| t.dialect != Dialect::Native && !t.declared)
            .map(|t| t.name.as_str())
            .collect();
        if !undeclared.is_empty() {
            let warning = err(
                if prefix.is_empty() {
                    "[*]".to_string()
                } else {
                    format!("{prefix}[*]")
                },
                format!(
                    "{} of {} tools declare no `deterministic` (put it under x-plangate): \
                     their results are not compared and their plans cannot be rejected ({})",
                    undeclared.len(),
                    catalog.tools.len(),
                    names_preview(&undeclared)
                ),
            );
            catalog.warnings.push(warning);
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

    /// What was mapped or assumed while reading, each with its place.
    pub fn warnings(&self) -> &[CatalogWarning] {
        &self.warnings
    }
}

fn names_preview(names: &[&str]) -> String {
    let mut s: Vec<String> = names.iter().take(5).map(|n| format!("{n:?}")).collect();
    if names.len() > 5 {
        s.push(format!("and {} more", names.len() - 5));
    }
    s.join(", ")
}

/// The list of tool entries and the path that names it.
fn entries_of(doc: &Value) -> Result<(&[Value], String), CatalogError> {
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
fn entry_name<'a>(entry: &'a Value, field: &str) -> Option<(&'a str, String)> {
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

/// Collects the problems of one entry and goes on, so one run lists them all.
#[derive(Default)]
struct Problems(Vec<CatalogError>);

impl Problems {
    fn take<T>(&mut self, r: Result<T, CatalogError>) -> Option<T> {
        r.map_err(|e| self.0.push(e)).ok()
    }

    fn take_all<T>(&mut self, r: Result<T, Vec<CatalogError>>) -> Option<T> {
        r.map_err(|mut e| self.0.append(&mut e)).ok()
    }
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

/// The entry's argument schema (foreign types mapped, defaults mended), compiled, and
/// its hints; an entry without one takes `{"type": "object"}`.
fn parse_schema(
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

fn parse_mounts(v: Option<(&Value, &str)>) -> Result<Vec<MountSpec>, CatalogError> {
    match v {
        Some((Value::Array(items), f)) => items
            .iter()
            .enumerate()
            .map(|(i, m)| parse_mount(m, &format!("{f}[{i}]")))
            .collect(),
        Some((_, f)) => Err(err(f, "expected an array of mounts")),
        None => Ok(Vec::new()),
    }
}

fn parse_entry(
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
    let annotations = (dialect == Dialect::Mcp)
        .then(|| body.get("annotations").cloned())
        .flatten();
    let (
        Some(name),
        Some(deterministic),
        Some(verified),
        Some((parameters, (validator, in_place), hints)),
        Some(module),
        Some(export),
        Some(network),
        Some(description),
        Some(probe),
        Some(mounts),
        Some(clock),
        Some(random),
    ) = (
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
    )
    else {
        return Err(p.0);
    };
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
        dialect,
        declared,
        validator: Arc::new(validator),
        in_place: in_place.map(Arc::new),
    })
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

/// Compiles a schema, or names every place it breaks the meta-schema (as a JSON Pointer
/// after the schema's field).
/// A schema's validator for `serde_json` values, and for ours when it compiles for them.
type Compiled = (
    jsonschema::Validator,
    Option<jsonschema::Validator<GateJson>>,
);

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

/// Schemas of up to this many values also compile for checking arguments in place. A
/// larger one (issue 13's catalog of 100,000 properties) is checked by converting the
/// arguments, as before: its second compiled copy cost 140 MB there, and the time to
/// zero that memory, for a conversion that costs far less.
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

fn parse_mode(v: Option<(&Value, &str)>) -> Result<SourceMode, CatalogError> {
    match v {
        None => Ok(SourceMode::Pinned),
        Some((Value::String(s), _)) if s == "pinned" => Ok(SourceMode::Pinned),
        Some((Value::String(s), _)) if s == "live" => Ok(SourceMode::Live),
        Some((_, f)) => Err(err(f, "expected \"pinned\" or \"live\"")),
    }
}

/// `{"mode": "denied" | "live" | "pinned", "allow": ["host:port", ...]}`.
fn parse_network(v: Option<(&Value, &str)>) -> Result<NetworkSpec, CatalogError> {
    let Some((v, field)) = v else {
        return Ok(NetworkSpec::default());
    };
    let o = v.as_object().ok_or_else(|| {
        err(
            field,
            "expected {\"mode\": \"denied\" | \"live\" | \"pinned\", \"allow\": [\"host:port\", ...]}",
        )
    })?;
    for k in o.keys() {
        if !matches!(k.as_str(), "mode" | "allow") {
            return Err(err(
                format!("{field}.{k}"),
                "unknown field (expected mode, allow)",
            ));
        }
    }
    let mode = match o.get("mode") {
        None => NetworkMode::Denied,
        Some(Value::String(s)) if s == "denied" => NetworkMode::Denied,
        Some(Value::String(s)) if s == "live" => NetworkMode::Live,
        Some(Value::String(s)) if s == "pinned" => NetworkMode::Pinned,
        Some(_) => {
            return Err(err(
                format!("{field}.mode"),
                "expected \"denied\", \"live\" or \"pinned\"",
            ));
        }
    };
    let allow = match o.get("allow") {
        None => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, h)| match h {
                Value::String(s) if host_port(s) => Ok(s.clone()),
                _ => Err(err(
                    format!("{field}.allow[{i}]"),
                    "expected \"host:port\" such as \"api.example.com:443\"",
                )),
            })
            .collect::<Result<_, _>>()?,
        Some(_) => {
            return Err(err(
                format!("{field}.allow"),
                "expected an array of \"host:port\" strings",
            ));
        }
    };
    Ok(NetworkSpec { mode, allow })
}

/// `host:port`: a host name or address (an IPv6 one in brackets) and a port number.
fn host_port(s: &str) -> bool {
    let Some((host, port)) = s.rsplit_once(':') else {
        return false;
    };
    let host_ok = if let Some(v6) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        v6.contains(':')
            && v6
                .bytes()
                .all(|b| b.is_ascii_hexdigit() || b == b':' || b == b'.')
    } else {
        !host.is_empty()
            && host
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-' || b == b'_')
    };
    host_ok && port.parse::<u16>().is_ok_and(|p| p > 0)
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
mod network_tests {
    use super::*;

    fn entry(network: &str) -> Result<Catalog, CatalogErrors> {
        let doc = format!(
            r#"{{"tools":[{{"name":"f","module":"f.wasm","export":"fetch","deterministic":true,"network":{network}}}]}}"#
        );
        Catalog::from_value(&crate::json::parse(&doc).unwrap())
    }

    #[test]
    fn network_and_export_read_and_refuse_what_they_cannot_be() {
        let c = entry(
            r#"{"mode":"pinned","allow":["127.0.0.1:8080","[::1]:80","api.example.com:443"]}"#,
        )
        .unwrap();
        let t = c.get("f").unwrap();
        assert_eq!(t.export.as_deref(), Some("fetch"));
        assert_eq!(t.network.mode, NetworkMode::Pinned);
        assert_eq!(t.network.allow.len(), 3);
        let none = Catalog::from_value(
            &crate::json::parse(r#"{"tools":[{"name":"g","deterministic":true}]}"#).unwrap(),
        )
        .unwrap();
        assert_eq!(none.get("g").unwrap().network, NetworkSpec::default());
        for (bad, says) in [
            (r#"{"mode":"open"}"#, "tools[0].network.mode"),
            (r#"{"allow":["example.com"]}"#, "tools[0].network.allow[0]"),
            (
                r#"{"allow":["example.com:0"]}"#,
                "tools[0].network.allow[0]",
            ),
            (r#"{"allow":["a b:80"]}"#, "tools[0].network.allow[0]"),
            (r#"{"hosts":[]}"#, "tools[0].network.hosts"),
            (r#""live""#, "tools[0].network"),
        ] {
            let e = entry(bad).unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::parse;

    fn cat(s: &str) -> Result<Catalog, CatalogErrors> {
        Catalog::from_value(&parse(s).unwrap())
    }

    fn fields(e: &CatalogErrors) -> Vec<&str> {
        e.0.iter().map(|e| e.field.as_str()).collect()
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
        assert_eq!(t.dialect, Dialect::Native);
        assert_eq!(t.mounts[0].mode, SourceMode::Pinned);
        assert_eq!(t.clock, SourceMode::Live);
        assert!(c.warnings().is_empty(), "{:?}", c.warnings());
    }

    #[test]
    fn errors_name_the_field() {
        let e = cat(
            r#"{"tools":[{"name":"a","deterministic":true},{"name":"a","deterministic":false}]}"#,
        )
        .unwrap_err();
        assert_eq!(fields(&e), ["tools[1].name"]);
        let e =
            cat(r#"{"tools":[{"name":"a","deterministc":true,"module":"a.wasm"}]}"#).unwrap_err();
        assert_eq!(
            fields(&e),
            ["tools[0].deterministc", "tools[0].deterministic"]
        );
        let e =
            cat(r#"{"tools":[{"name":"a","deterministic":true,"parameters":{"type":"nope"}}]}"#)
                .unwrap_err();
        assert_eq!(fields(&e), ["tools[0].parameters/type"]);
        assert_eq!(e.first().message, r#""nope" is not a JSON Schema type"#);
        let e = cat(
            r#"{"tools":[{"name":"a","deterministic":true,"mounts":[{"host":"x","guest":"w"}]}]}"#,
        )
        .unwrap_err();
        assert_eq!(fields(&e), ["tools[0].mounts[0].guest"]);
    }

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
    fn long_messages_are_clipped_with_their_length() {
        let m = clip("é".repeat(1_000));
        assert!(m.ends_with("... (2000 bytes in all)"), "{m}");
        assert!(m.len() < MESSAGE_MAX + 30);
        assert_eq!(clip("short".into()), "short");
    }

    /// One run lists every problem of every tool, each at its keyword.
    #[test]
    fn an_invalid_catalog_lists_every_problem() {
        let e = cat(r#"{"tools":[
              {"name":"a","deterministic":"yes","parameters":{"type":"object","properties":{
                 "x":{"type":"nope"},"y":{"type":"array","items":{"type":"flaot"}},
                 "z":{"type":"string","x-plangate":{"canon":["pth"]}}}}},
              {"name":"b","deterministic":true,"clock":"sometimes"},
              {"name":"a","deterministic":true}]}"#)
        .unwrap_err();
        assert_eq!(
            fields(&e),
            [
                "tools[0].deterministic",
                "tools[0].parameters/properties/z",
                "tools[0].parameters/properties/x/type",
                "tools[0].parameters/properties/y/items/type",
                "tools[1].clock",
                "tools[2].name",
            ],
            "{e}"
        );
        assert!(e.to_string().starts_with("6 problems:"), "{e}");
        let e = cat(
            r#"{"tools":[{"name":"a","deterministic":true,"parameters":{"type":"object","properties":{
                 "z":{"type":"string","x-plangate":{"canon":["pth"]}}}}}]}"#,
        )
        .unwrap_err();
        assert_eq!(fields(&e), ["tools[0].parameters/properties/z"]);
    }

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
