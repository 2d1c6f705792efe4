//! `plangate catalog --component FILE.wasm --out FILE`: a native catalog for a
//! component, one tool per exported function (harness's `component_catalog`), what it
//! could not take said on stderr.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Args;

use crate::files::{Reads, check_outputs, real_path, write_json};

#[derive(Debug, Args)]
pub(crate) struct CatalogArgs {
    /// The component (WASI 0.2, `.wasm`) to catalog.
    #[arg(long, value_name = "FILE.wasm")]
    component: PathBuf,
    /// A Wassette `policy.yaml`: storage entries become pinned mounts, network hosts the
    /// tools' `network.allow`.
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
    /// The component's WIT sources (a `.wit` file, or its folder): each tool's
    /// `description` is its function's doc comment, which compiled components leave out.
    #[arg(long, value_name = "PATH")]
    wit: Option<PathBuf>,
    /// Where to write the catalog.
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
}

/// The component's path as the catalog at `out` names it: relative to the catalog's
/// folder when it is inside it, else absolute.
fn module_field(component: &Path, out: &Path) -> String {
    let (Some(c), Some(o)) = (real_path(component), real_path(out)) else {
        return component.display().to_string();
    };
    let dir = o.parent().unwrap_or(Path::new("/"));
    match c.strip_prefix(dir) {
        Ok(rel) => rel.display().to_string(),
        Err(_) => c.display().to_string(),
    }
}

pub(crate) fn run(args: CatalogArgs) -> Result<u8> {
    let mut reads = Reads::default().file("--component", &args.component);
    if let Some(p) = &args.policy {
        reads = reads.file("--policy", p);
    }
    if let Some(p) = &args.wit {
        reads = reads.folder("--wit", p);
    }
    check_outputs(&[("--out", &args.out)], &reads)?;
    let policy = args
        .policy
        .as_deref()
        .map(plangate_harness::Policy::read)
        .transpose()?;
    let docs = (args.wit.as_deref())
        .map(plangate_harness::wit_docs)
        .transpose()?
        .unwrap_or_default();
    let tools = plangate_sandbox::describe(&args.component)
        .with_context(|| format!("cannot catalog {}", args.component.display()))?;
    let stem = (args.component.file_stem())
        .map_or_else(|| "tool".into(), |s| s.to_string_lossy().into_owned());
    let policy_dir = (args.policy.as_deref())
        .and_then(Path::parent)
        .map(|d| {
            std::fs::canonicalize(if d.as_os_str().is_empty() {
                Path::new(".")
            } else {
                d
            })
        })
        .transpose()
        .context("cannot read the policy's folder")?;
    let made = plangate_harness::component_catalog(
        &tools,
        &module_field(&args.component, &args.out),
        &stem,
        policy.as_ref().zip(policy_dir.as_deref()),
        &docs,
    );
    write_json(&args.out, &made.catalog)?;
    for w in &made.warnings {
        eprintln!("plangate: warning: {w}");
    }
    let n = made.catalog["tools"].as_array().map_or(0, Vec::len);
    eprintln!(
        "plangate: catalog {}: {n} tool(s) from {}",
        args.out.display(),
        args.component.display()
    );
    Ok(crate::exit::OK)
}
