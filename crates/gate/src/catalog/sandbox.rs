//! How the sandbox should run a tool, as its entry declares it: what it may reach on the
//! network, the host folders it sees, and whether its clock and randomness are pinned.
//! Refused here, with the field named, rather than when the sandbox starts.

use super::{CatalogError, MountSpec, NetworkMode, NetworkSpec, SourceMode, err};
use crate::json::Value;

/// `{"mode": "denied" | "live" | "pinned", "allow": ["host:port", ...],
/// "secret_headers": ["x-token", ...], "max_body_bytes": N}`.
pub(super) fn parse_network(v: Option<(&Value, &str)>) -> Result<NetworkSpec, CatalogError> {
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
        if !matches!(
            k.as_str(),
            "mode" | "allow" | "secret_headers" | "max_body_bytes"
        ) {
            return Err(err(
                format!("{field}.{k}"),
                "unknown field (expected mode, allow, secret_headers, max_body_bytes)",
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
    let secret_headers = match o.get("secret_headers") {
        None => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, h)| match h {
                Value::String(s) if header_name(s) => Ok(s.to_ascii_lowercase()),
                _ => Err(err(
                    format!("{field}.secret_headers[{i}]"),
                    "expected a header name such as \"x-api-token\"",
                )),
            })
            .collect::<Result<_, _>>()?,
        Some(_) => {
            return Err(err(
                format!("{field}.secret_headers"),
                "expected an array of header names",
            ));
        }
    };
    let max_body_bytes = match o.get("max_body_bytes") {
        None => None,
        Some(v) => Some(v.as_u64().filter(|n| *n > 0).ok_or_else(|| {
            err(
                format!("{field}.max_body_bytes"),
                "expected a positive whole number of bytes",
            )
        })?),
    };
    Ok(NetworkSpec {
        mode,
        allow,
        secret_headers,
        max_body_bytes,
    })
}

/// An HTTP header name: RFC 9110 token characters.
fn header_name(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

pub(super) fn parse_mounts(v: Option<(&Value, &str)>) -> Result<Vec<MountSpec>, CatalogError> {
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

pub(super) fn parse_mode(v: Option<(&Value, &str)>) -> Result<SourceMode, CatalogError> {
    match v {
        None => Ok(SourceMode::Pinned),
        Some((Value::String(s), _)) if s == "pinned" => Ok(SourceMode::Pinned),
        Some((Value::String(s), _)) if s == "live" => Ok(SourceMode::Live),
        Some((_, f)) => Err(err(f, "expected \"pinned\" or \"live\"")),
    }
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
mod tests {
    use super::*;
    use crate::catalog::{Catalog, CatalogErrors};

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
        assert_eq!(
            (t.network.secret_headers.len(), t.network.max_body_bytes),
            (0, None)
        );
        let c = entry(r#"{"mode":"pinned","secret_headers":["X-Team"],"max_body_bytes":1024}"#)
            .unwrap();
        let n = &c.get("f").unwrap().network;
        assert_eq!(
            (n.secret_headers.clone(), n.max_body_bytes),
            (vec!["x-team".to_string()], Some(1024))
        );
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
            (
                r#"{"secret_headers":["a b"]}"#,
                "tools[0].network.secret_headers[0]",
            ),
            (
                r#"{"secret_headers":"x"}"#,
                "tools[0].network.secret_headers",
            ),
            (r#"{"max_body_bytes":0}"#, "tools[0].network.max_body_bytes"),
            (
                r#"{"max_body_bytes":-1}"#,
                "tools[0].network.max_body_bytes",
            ),
        ] {
            let e = entry(bad).unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}
