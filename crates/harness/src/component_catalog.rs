//! A native catalog written from a component (`plangate catalog --component`): one tool
//! per exported function, its parameters as JSON Schema from WIT (integer ranges
//! included), and, from a Wassette `policy.yaml`, its storage as pinned mounts and its
//! network hosts as `network.allow`. `deterministic` is left for the author to declare.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::error::HarnessError;

/// Wassette's `policy.yaml`, the parts a catalog takes: storage and network.
#[derive(Debug, Default, Deserialize)]
pub struct Policy {
    #[serde(default)]
    permissions: Permissions,
}

#[derive(Debug, Default, Deserialize)]
struct Permissions {
    #[serde(default)]
    storage: Option<Allow<Storage>>,
    #[serde(default)]
    network: Option<Allow<serde_yaml_ng::Value>>,
    #[serde(default)]
    environment: Option<Allow<serde_yaml_ng::Value>>,
}

#[derive(Debug, Deserialize)]
struct Allow<T> {
    #[serde(default = "Vec::new")]
    allow: Vec<T>,
}

#[derive(Debug, Deserialize)]
struct Storage {
    uri: String,
    #[serde(default)]
    access: Vec<String>,
}

impl Policy {
    /// Reads a `policy.yaml`.
    pub fn read(path: &Path) -> Result<Policy, HarnessError> {
        let bad = |message: String| HarnessError::Policy {
            path: path.to_path_buf(),
            message,
        };
        let text =
            std::fs::read_to_string(path).map_err(|e| bad(format!("cannot read it: {e}")))?;
        serde_yaml_ng::from_str(&text).map_err(|e| bad(e.to_string()))
    }
}

/// The doc comments of a component's exported functions, by whole name (the function's
/// name, after its interface's export name and a dot inside one:
/// `plangate:kinds/values@0.1.0.echo`), from its WIT sources (a `.wit` file, or a
/// folder with its `deps`): compiled components do not carry them.
pub fn wit_docs(path: &Path) -> Result<std::collections::BTreeMap<String, String>, HarnessError> {
    let mut resolve = wit_parser::Resolve::default();
    let (package, _) = resolve.push_path(path).map_err(|e| HarnessError::Wit {
        path: path.to_path_buf(),
        message: format!("{e:#}"),
    })?;
    let mut docs = std::collections::BTreeMap::new();
    for (_, world) in resolve
        .worlds
        .iter()
        .filter(|(_, w)| w.package == Some(package))
    {
        for (key, item) in &world.exports {
            match item {
                wit_parser::WorldItem::Function(f) => {
                    if let Some(d) = &f.docs.contents {
                        docs.insert(f.name.clone(), d.trim().to_string());
                    }
                }
                wit_parser::WorldItem::Interface { id, .. } => {
                    // The name the component exports the interface under.
                    let export = match key {
                        wit_parser::WorldKey::Name(n) => n.clone(),
                        wit_parser::WorldKey::Interface(i) => resolve.id_of(*i).unwrap_or_default(),
                    };
                    for (name, f) in &resolve.interfaces[*id].functions {
                        if let Some(d) = &f.docs.contents {
                            docs.insert(format!("{export}.{name}"), d.trim().to_string());
                        }
                    }
                }
                wit_parser::WorldItem::Type { .. } => {}
            }
        }
    }
    Ok(docs)
}

/// A catalog for a component, and what the author must still say or check.
pub struct ComponentCatalog {
    /// The catalog, `{"tools": [...]}`.
    pub catalog: Value,
    /// One line each: functions that cannot be tools, policy entries not taken, and the
    /// tools whose `deterministic` the author must declare.
    pub warnings: Vec<String>,
}

/// `host:port` for a Wassette network entry (`api.example.com`, `https://host/`,
/// `http://host:8080`), or why it has none.
fn host_port(entry: &str) -> Result<String, String> {
    let (default_port, rest) = match entry.split_once("://") {
        Some(("http", rest)) => (80, rest),
        Some(("https", rest)) => (443, rest),
        Some((scheme, _)) => return Err(format!("{entry}: scheme {scheme} is not http or https")),
        None => (443, entry),
    };
    let authority = rest.split('/').next().unwrap_or(rest);
    if authority.contains('*') {
        return Err(format!(
            "{entry}: a wildcard host cannot be pinned; list each host"
        ));
    }
    match authority.rsplit_once(':') {
        Some((h, p)) if p.parse::<u16>().is_ok() && !h.is_empty() => Ok(authority.to_string()),
        _ if authority.is_empty() => Err(format!("{entry}: no host")),
        _ => Ok(format!("{authority}:{default_port}")),
    }
}

/// A policy's storage as pinned mounts and its network hosts as `host:port`s, with a
/// warning for each entry not taken.
fn from_policy(p: &Policy, dir: &Path, warnings: &mut Vec<String>) -> (Vec<Value>, Vec<Value>) {
    let mut mounts = Vec::new();
    let mut allow = Vec::new();
    let perms = &p.permissions;
    for s in perms.storage.iter().flat_map(|a| &a.allow) {
        let Some(path) = s.uri.strip_prefix("fs://") else {
            warnings.push(format!(
                "policy storage {}: not an fs:// URI; left out",
                s.uri
            ));
            continue;
        };
        if s.access.iter().any(|a| a == "write") {
            warnings.push(format!(
                "policy storage {}: write access is not given: every mount is read-only",
                s.uri
            ));
        }
        let host: PathBuf = dir.join(path);
        let guest = if path.starts_with('/') {
            path.to_string()
        } else {
            format!("/{path}")
        };
        mounts.push(json!({"host": host.display().to_string(), "guest": guest, "mode": "pinned"}));
    }
    for n in perms.network.iter().flat_map(|a| &a.allow) {
        let entry = n.get("host").and_then(|h| h.as_str());
        match entry.map(host_port) {
            Some(Ok(hp)) => allow.push(Value::String(hp)),
            Some(Err(why)) => warnings.push(format!("policy network {why}; left out")),
            None => warnings.push(format!(
                "policy network entry {}: only `host` entries are taken (a cidr names no \
                 host a request can be matched to); left out",
                serde_json::to_string(n).unwrap_or_default()
            )),
        }
    }
    if perms.environment.iter().any(|a| !a.allow.is_empty()) {
        warnings.push(
            "policy environment: not passed: an epoch pins the environment, so a tool \
             sees the manifest's env alone"
                .into(),
        );
    }
    (mounts, allow)
}

/// Writes the catalog for `tools`, the component at `module` (as the catalog will name
/// it), under `policy` read from `policy_dir`.
pub fn component_catalog(
    tools: &plangate_sandbox::ComponentTools,
    module: &str,
    stem: &str,
    policy: Option<(&Policy, &Path)>,
    docs: &std::collections::BTreeMap<String, String>,
) -> ComponentCatalog {
    let mut warnings = Vec::new();
    let (mounts, allow) = match policy {
        Some((p, dir)) => from_policy(p, dir, &mut warnings),
        None => (Vec::new(), Vec::new()),
    };
    let imports_http = tools.imports.iter().any(|i| i.starts_with("wasi:http/"));
    let entry = |name: &str, export: Option<&plangate_sandbox::FunctionTool>, parameters| {
        let mut e = Map::new();
        e.insert("name".into(), json!(name));
        e.insert("module".into(), json!(module));
        if let Some(f) = export {
            e.insert("export".into(), json!(f.name));
            if let Some(d) = docs.get(&f.full_name) {
                e.insert("description".into(), json!(d));
            }
        }
        e.insert("parameters".into(), parameters);
        if !mounts.is_empty() {
            e.insert("mounts".into(), Value::Array(mounts.clone()));
        }
        if !allow.is_empty() {
            e.insert("network".into(), json!({"mode": "pinned", "allow": allow}));
        }
        Value::Object(e)
    };
    let mut out = Vec::new();
    if tools.command {
        out.push(entry(stem, None, json!({"type": "object"})));
    }
    for f in &tools.functions {
        match &f.unsupported {
            Some(why) => warnings.push(format!("{}: not a tool: {why}", f.name)),
            None => out.push(entry(&f.name, Some(f), f.parameters.clone())),
        }
        if f.name == f.full_name && f.name.contains('/') {
            warnings.push(format!(
                "{}: named by its whole name, since another exported interface has the \
                 same short name",
                f.name
            ));
        }
    }
    if imports_http && allow.is_empty() {
        warnings.push(
            "the component imports wasi:http and no network is allowed: its requests are \
             denied (give `network` a mode and `allow`, or --policy)"
                .into(),
        );
    }
    let names: Vec<&str> = out
        .iter()
        .filter_map(|t| t.get("name").and_then(Value::as_str))
        .collect();
    if !names.is_empty() {
        warnings.push(format!(
            "{} tool(s) declare no `deterministic`, and the catalog will not load until each \
             does: the author must say ({})",
            names.len(),
            names.join(", ")
        ));
    }
    ComponentCatalog {
        catalog: json!({"tools": out}),
        warnings,
    }
}

#[cfg(test)]
mod tests {
    use super::host_port;

    #[test]
    fn wassette_hosts_become_host_port() {
        assert_eq!(host_port("api.example.com").unwrap(), "api.example.com:443");
        assert_eq!(
            host_port("https://rss.nytimes.com/").unwrap(),
            "rss.nytimes.com:443"
        );
        assert_eq!(
            host_port("http://127.0.0.1:8080/x").unwrap(),
            "127.0.0.1:8080"
        );
        assert_eq!(host_port("http://h").unwrap(), "h:80");
        assert!(host_port("*.example.com").is_err());
        assert!(host_port("ftp://h").is_err());
    }
}
