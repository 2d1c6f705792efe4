//! The tool catalog (docs/design.md, "Inputs"): what each tool declares, the schema its
//! arguments are canonicalized against, and how the sandbox should run it. One parser
//! for the native format, an MCP `tools/list` result and an OpenAI `tools` array, so
//! every command reads catalogs the same way.
//!
//! The types and [`Catalog::from_value`] live here; reading one tool entry in whatever
//! shape it comes in `entry`, its argument schema in `schema`, and its sandbox settings
//! (network, mounts, clock and randomness) in `sandbox`.

mod entry;
mod sandbox;
mod schema;

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::errors::ErrorConvention;
use crate::hints::Hints;
use crate::json::Value;
use crate::serde_bridge::GateJson;

use entry::{entries_of, entry_name, parse_entry};

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

/// Something plangate changed or assumed while reading a catalog, said once with its
/// place, never silently: a BFCL type mapped to JSON Schema, a tool that declares nothing.
pub type CatalogWarning = CatalogError;

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
    /// Header names whose values are credentials, besides the sandbox's own list: never
    /// recorded, keyed by digest.
    pub secret_headers: Vec<String>,
    /// The largest body a pinned network records (none: the sandbox's default).
    pub max_body_bytes: Option<u64>,
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
    /// How the tool writes an error in its result, when it says (`errors`).
    pub errors: Option<ErrorConvention>,
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

/// All tools, by name.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    tools: Vec<ToolSpec>,
    by_name: BTreeMap<String, usize>,
    warnings: Vec<CatalogWarning>,
    /// Whether a tool says how it writes errors (`errors`): a run whose catalog has none
    /// reads no result for one.
    error_conventions: bool,
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
        catalog.error_conventions = catalog.tools.iter().any(|t| t.errors.is_some());
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

    /// Whether any tool says how it writes errors in its results.
    pub fn has_error_conventions(&self) -> bool {
        self.error_conventions
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

fn names_preview(names: &[&str]) -> String {
    let mut s: Vec<String> = names.iter().take(5).map(|n| format!("{n:?}")).collect();
    if names.len() > 5 {
        s.push(format!("and {} more", names.len() - 5));
    }
    s.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::parse;

    pub(super) fn cat(s: &str) -> Result<Catalog, CatalogErrors> {
        Catalog::from_value(&parse(s).unwrap())
    }

    pub(super) fn fields(e: &CatalogErrors) -> Vec<&str> {
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
}
