//! What a component offers as tools, read from its types for `plangate catalog`: it
//! builds an engine of its own and loads the component, so it sits above both the
//! sandbox and the component code it reads with.

use wasmtime::component::types::Type;

use crate::component::functions;

/// What a component offers as tools, described without wasmtime's types: what
/// `plangate catalog --component` writes a catalog from.
#[derive(Debug, Clone, PartialEq)]
pub struct ComponentTools {
    /// It exports `wasi:cli/run`: a command, called with JSON on stdin.
    pub command: bool,
    /// Its typed functions, in export order.
    pub functions: Vec<FunctionTool>,
    /// The WASI and other interfaces it imports (`wasi:http/outgoing-handler@0.2.4`).
    pub imports: Vec<String>,
}

/// One typed function as a tool.
#[derive(Debug, Clone, PartialEq)]
pub struct FunctionTool {
    /// Its tool name (and the catalog's `export`): the WIT name, `iface.` before it
    /// inside an exported interface, or its whole name where another function has the
    /// same short one.
    pub name: String,
    /// The same with the interface's whole name.
    pub full_name: String,
    /// JSON Schema of its arguments object.
    pub parameters: serde_json::Value,
    /// JSON Schema of what it returns (for a `result`, of its `ok`).
    pub returns: Option<serde_json::Value>,
    /// Why it cannot be a tool (it takes or returns a resource, ...).
    pub unsupported: Option<String>,
}

/// Compiles (or loads from the module cache) the component at `path` and describes the
/// tools it offers.
pub fn describe(path: &std::path::Path) -> crate::Result<ComponentTools> {
    let config = crate::SandboxConfig::default();
    let engine = crate::build_engine(&config)?;
    let bytes = std::fs::read(path).map_err(crate::error::io("read component", path))?;
    if !crate::cache::is_component(&bytes) {
        return Err(crate::Error::Link {
            path: path.to_path_buf(),
            message: "not a WebAssembly component (a core module has no typed exports: \
                      catalog it by hand, as a command)"
                .into(),
        });
    }
    let sha256 = crate::epoch::hex(&<sha2::Sha256 as sha2::Digest>::digest(&bytes));
    let crate::cache::Compiled::Component(c) =
        crate::cache::load_or_compile(&engine, config.cache_dir.as_deref(), path, &sha256, &bytes)?
    else {
        unreachable!("a component's bytes compile to a component");
    };
    let ty = c.component_type();
    let command = ty
        .exports(&engine)
        .any(|(name, _)| name.starts_with("wasi:cli/run@"));
    let imports = ty.imports(&engine).map(|(n, _)| n.to_string()).collect();
    let functions = functions(&engine, &c)
        .into_iter()
        .map(|f| FunctionTool {
            parameters: crate::wit::parameters_schema(&f.params),
            returns: f.result.as_ref().map(|t| match t {
                Type::Result(r) => r
                    .ok()
                    .as_ref()
                    .map_or(serde_json::json!({"type": "null"}), crate::wit::schema),
                t => crate::wit::schema(t),
            }),
            name: f.name,
            full_name: f.full_name,
            unsupported: f.unsupported,
        })
        .collect();
    Ok(ComponentTools {
        command,
        functions,
        imports,
    })
}
