//! The world driver and the private live state it drives: production's live sources
//! changed while a batch ran, and the demo changes a copy of the seed world's, never the
//! repository's own fixtures.

use std::path::Path;
use std::process::Command;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use plangate_gate::catalog::Catalog;
use plangate_gate::json::{self, Value};

use crate::error::DemoError;

/// Acts on the live state at fixed points of the batch's progress, through the world's
/// own writer script: an index segment appended, the config reloaded, the identity
/// cache refilled.
pub(crate) fn drive(
    writer: &Path,
    live: &Path,
    done: &AtomicUsize,
    total: usize,
    log: &Mutex<Vec<String>>,
) {
    // One reload only: a second would swap the config back, and a source that ends as
    // it began looks unchanged to the start/end digests (the witnesses still see it).
    let plan: [(f64, &[&str]); 4] = [
        (0.15, &["append-segment"]),
        (0.30, &["reload-config"]),
        // Re-stamped 50 s old: fresh (answered from the cache) for the rest of a batch of
        // a few seconds, where the first half was answered from the directory.
        (0.45, &["refresh-cache", "50"]),
        (0.60, &["append-segment"]),
    ];
    for (at, action) in plan {
        let target = (at * total as f64) as usize;
        while done.load(Ordering::Relaxed) < target {
            if done.load(Ordering::Relaxed) >= total {
                return;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        let mut cmd = Command::new("bash");
        cmd.arg(writer).arg(action[0]).arg(live).args(&action[1..]);
        let line = match cmd.output() {
            Ok(o) if o.status.success() => {
                format!("{} at {:.0}% of tasks", action.join(" "), at * 100.0)
            }
            Ok(o) => format!(
                "{} failed: {}",
                action.join(" "),
                String::from_utf8_lossy(&o.stderr).trim()
            ),
            Err(e) => format!("{} could not start: {e}", action.join(" ")),
        };
        log.lock().unwrap_or_else(|e| e.into_inner()).push(line);
    }
}

/// The seed world's catalog with every live mount pointed at the private copy.
pub(crate) fn private_catalog(dir: &Path, live: &Path) -> Result<Catalog, DemoError> {
    let path = dir.join("catalog.json");
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(source) => return Err(DemoError::Read { path, source }),
    };
    let mut doc = match json::parse(&text) {
        Ok(doc) => doc,
        Err(source) => return Err(DemoError::CatalogJson { path, source }),
    };
    let shape = |problem: String| DemoError::CatalogShape {
        path: path.clone(),
        problem,
    };
    let Value::Object(root) = &mut doc else {
        return Err(shape("expected an object".into()));
    };
    let Some(Value::Array(tools)) = root.get_mut("tools") else {
        return Err(shape("no tools".into()));
    };
    for tool in tools.iter_mut() {
        let Value::Object(t) = tool else { continue };
        let Some(Value::Array(mounts)) = t.get_mut("mounts") else {
            continue;
        };
        for m in mounts.iter_mut() {
            let Value::Object(m) = m else { continue };
            if m.get("mode").and_then(Value::as_str) != Some("live") {
                continue;
            }
            let Some(host) = m.get("host").and_then(Value::as_str) else {
                continue;
            };
            let Some(rest) = host.strip_prefix("live/") else {
                return Err(shape(format!("live mount {host:?} is not under live/")));
            };
            m.insert(
                "host",
                Value::String(live.join(rest).to_string_lossy().into_owned()),
            );
        }
    }
    Catalog::from_value(&doc).map_err(|source| DemoError::Catalog {
        path: path.clone(),
        source,
    })
}

/// Copies a folder's tree, files and folders only.
pub(crate) fn copy_tree(from: &Path, to: &Path) -> Result<(), DemoError> {
    std::fs::create_dir_all(to).map_err(|source| DemoError::Create {
        path: to.to_path_buf(),
        source,
    })?;
    let entries = std::fs::read_dir(from).map_err(|source| DemoError::List {
        path: from.to_path_buf(),
        source,
    })?;
    for e in entries {
        let e = e?;
        let (src, dst) = (e.path(), to.join(e.file_name()));
        if e.file_type()?.is_dir() {
            copy_tree(&src, &dst)?;
        } else if let Err(source) = std::fs::copy(&src, &dst) {
            return Err(DemoError::Copy { path: src, source });
        }
    }
    Ok(())
}
