//! `plangate call`: one tool call in the sandbox under a pinned epoch, printed as one
//! JSON object. The tool author's way to see exactly what a guest returns, and the
//! end-to-end tests' way into the sandbox. The call runs through the harness's warm gate,
//! over an epoch pinned for its one tool.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use base64::Engine as _;
use clap::{ArgGroup, Args, ValueEnum};
use plangate_gate::catalog::Catalog;
use plangate_gate::json::{Duplicates, parse_with};
use plangate_gate::task::Observed;
use plangate_harness::{EvalOptions, WarmGate, World, epoch_mount, module_spec, observed};
use plangate_sandbox::{
    CallRecord, Epoch, EpochManifest, EpochMode, EpochMount, ModuleSpec, MountMismatch, Outcome,
    SandboxConfig,
};
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use crate::args::LimitArgs;
use crate::exit;
use crate::instant::parse_instant;

/// Run one WASM tool call under a pinned epoch and print what it did as JSON.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("what").required(true).args(["module", "catalog"])))]
pub(crate) struct CallArgs {
    /// The tool: a WASI preview1 command module or a WASI 0.2 component (`.wasm`). Give
    /// it, or --catalog and --tool.
    module: Option<PathBuf>,
    /// The component function to call (`read-file`, or `iface.func` inside an exported
    /// interface), with --args as its JSON arguments object; without it a component must
    /// be a command (`wasi:cli/run`).
    #[arg(long, value_name = "NAME", requires = "module")]
    export: Option<String>,
    /// Run a catalog entry as eval would: its module, mounts (paths relative to the
    /// catalog file), clock and randomness. --mount is refused beside it; --clock,
    /// --random and --live override the entry's clock and randomness.
    #[arg(
        long,
        value_name = "FILE",
        requires = "tool",
        conflicts_with = "mounts"
    )]
    catalog: Option<PathBuf>,
    /// The catalog tool to run (with --catalog).
    #[arg(long, value_name = "NAME", requires = "catalog")]
    tool: Option<String>,
    /// The call's arguments, given to the tool on stdin exactly as written.
    #[arg(long, default_value = "{}")]
    args: String,
    /// A read-only directory for the tool: `HOST:GUEST`, pinned (a snapshot taken now)
    /// unless suffixed `:live`. Repeatable.
    #[arg(long = "mount", value_name = "HOST:GUEST[:pinned|live]")]
    mounts: Vec<String>,
    /// Replay this epoch manifest (each mount is matched to `--mount`, or to the catalog
    /// entry's mounts, by guest path and refused if its contents differ from the
    /// manifest's digest).
    #[arg(long, value_name = "FILE")]
    epoch: Option<PathBuf>,
    /// Write the epoch manifest used to this file.
    #[arg(long, value_name = "FILE")]
    write_epoch: Option<PathBuf>,
    /// Sources to take live from the host instead of the epoch.
    #[arg(long, value_delimiter = ',', value_name = "clock,random")]
    live: Vec<LiveSource>,
    /// The tool's clock (same as `--live clock` when `live`).
    #[arg(long, value_name = "pinned|live")]
    clock: Option<ModeArg>,
    /// The tool's randomness (same as `--live random` when `live`).
    #[arg(long, value_name = "pinned|live")]
    random: Option<ModeArg>,
    /// The epoch's random seed (a new epoch only).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// A new epoch's clock instant, to reproduce another epoch's clock: RFC 3339
    /// (`2026-11-05T09:30:00Z`) or Unix nanoseconds (a manifest's `instant_unix_ns`).
    /// The tool's clock must be pinned.
    #[arg(long, value_name = "WHEN", value_parser = parse_instant, conflicts_with = "epoch")]
    instant: Option<u64>,
    #[command(flatten)]
    limits: LimitArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum LiveSource {
    Clock,
    Random,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ModeArg {
    Pinned,
    Live,
}

fn parse_mount(spec: &str) -> Result<EpochMount> {
    let Some((rest, last)) = spec.rsplit_once(':') else {
        bail!("--mount `{spec}` is not HOST:GUEST[:pinned|live]");
    };
    // The guest path is absolute and has no ':'; the host path may (rarely) have one, so
    // the last field is the mode only when it does not start with '/'.
    let (host, guest, mode) = match last {
        "live" | "pinned" => {
            let Some((host, guest)) = rest.rsplit_once(':') else {
                bail!("--mount `{spec}` is not HOST:GUEST[:pinned|live]");
            };
            let mode = if last == "live" {
                EpochMode::Live
            } else {
                EpochMode::Pinned
            };
            (host, guest, mode)
        }
        g if g.starts_with('/') => (rest, g, EpochMode::Pinned),
        m if rest
            .rsplit_once(':')
            .is_some_and(|(_, g)| g.starts_with('/')) =>
        {
            bail!(
                "--mount `{spec}`: the mode `{m}` is not one of `pinned`, `live` (every mount is \
             read-only to the tool)"
            )
        }
        "" => bail!("--mount `{spec}`: the guest path is empty"),
        g => bail!(
            "--mount `{spec}`: the guest path `{g}` is not absolute (write it as the tool opens \
             it, e.g. /{g})"
        ),
    };
    if host.is_empty() {
        bail!("--mount `{spec}`: the host path is empty");
    }
    if !guest.starts_with('/') {
        bail!("--mount `{spec}`: the guest path `{guest}` is not absolute");
    }
    Ok(EpochMount {
        host: PathBuf::from(host),
        guest: guest.to_owned(),
        mode,
    })
}

/// What one call runs: the module as the sandbox loads it, and the mounts its epoch
/// declares (the same folders, with their modes).
struct Target {
    spec: ModuleSpec,
    mounts: Vec<EpochMount>,
}

/// The target from MODULE and `--mount`, or from the catalog entry, with `--clock`,
/// `--random` and `--live` applied over either.
fn target(args: &CallArgs) -> Result<Target> {
    let mut target = match (&args.module, &args.catalog, &args.tool) {
        (Some(module), None, _) => {
            let mounts = args
                .mounts
                .iter()
                .map(|m| parse_mount(m))
                .collect::<Result<Vec<_>>>()?;
            let mut spec = ModuleSpec::new(module);
            if let Some(export) = &args.export {
                spec = spec.export(export.clone());
            }
            for m in &mounts {
                spec = spec.mount(&m.host, &m.guest);
            }
            Target { spec, mounts }
        }
        (None, Some(catalog), Some(tool)) => from_catalog(catalog, tool)?,
        // clap's argument group and `requires` keep the other shapes out.
        _ => bail!("give MODULE.wasm, or --catalog FILE --tool NAME"),
    };
    let mode = |flag: Option<ModeArg>, source: LiveSource, declared: EpochMode| {
        if flag == Some(ModeArg::Live) || args.live.contains(&source) {
            EpochMode::Live
        } else if flag == Some(ModeArg::Pinned) {
            EpochMode::Pinned
        } else {
            declared
        }
    };
    target.spec.clock = mode(args.clock, LiveSource::Clock, target.spec.clock);
    target.spec.random = mode(args.random, LiveSource::Random, target.spec.random);
    if args.instant.is_some() && target.spec.clock == EpochMode::Live {
        bail!(
            "--instant sets the epoch's clock, and this call's clock is live (the host's, from \
             --live, --clock or the catalog entry): add --clock pinned"
        );
    }
    Ok(target)
}

/// A catalog entry as eval runs it: the harness's own mapping, with paths read against
/// the catalog file's folder.
fn from_catalog(file: &Path, name: &str) -> Result<Target> {
    let catalog = crate::files::load_catalog(file)?;
    let Some(tool) = catalog.get(name) else {
        bail!("{}", unknown_tool(file, &catalog, name));
    };
    let Some(module) = &tool.module else {
        bail!(
            "catalog {}: tool `{name}` has no `module` to run",
            file.display()
        );
    };
    let base = crate::files::catalog_dir(file);
    let module = base.join(module);
    Ok(Target {
        spec: module_spec(tool, &module, &base),
        mounts: tool.mounts.iter().map(|m| epoch_mount(m, &base)).collect(),
    })
}

/// Most tool names an unknown `--tool` lists: a BFCL catalog has thousands.
const NAMES_SHOWN: usize = 20;

/// Names the catalog's tools (in a large catalog, those whose names contain `name` or
/// are contained in it), or says there are none to name.
fn unknown_tool(file: &Path, catalog: &Catalog, name: &str) -> String {
    let all: Vec<&str> = catalog.tools().iter().map(|t| t.name.as_str()).collect();
    let head = format!("catalog {} has no tool `{name}`", file.display());
    if all.is_empty() {
        return format!("{head}: it has no tools");
    }
    let wanted = name.to_lowercase();
    let shown: Vec<&str> = if all.len() <= NAMES_SHOWN {
        all.clone()
    } else {
        all.iter()
            .copied()
            .filter(|n| {
                let n = n.to_lowercase();
                n.contains(&wanted) || wanted.contains(&n)
            })
            .collect()
    };
    if shown.is_empty() {
        return format!(
            "{head}, and none of its {} tools has a name like it",
            all.len()
        );
    }
    let mut list = shown[..shown.len().min(NAMES_SHOWN)].join(", ");
    if shown.len() > NAMES_SHOWN {
        list += &format!(" and {} more", shown.len() - NAMES_SHOWN);
    }
    let which = if shown.len() == all.len() {
        "its tools"
    } else {
        "tools with a name like it"
    };
    format!("{head}; {which}: {list}")
}

/// The epoch the call runs in: a replayed manifest, or a new one holding the module and
/// its mounts.
fn epoch(args: &CallArgs, target: &Target) -> Result<Epoch> {
    let Some(file) = &args.epoch else {
        let mut b = Epoch::builder()
            .random_seed(args.seed)
            .module(&target.spec.module);
        if let Some(ns) = args.instant {
            b = b.instant_unix_ns(ns);
        }
        for m in &target.mounts {
            b = b.mount(m.clone());
        }
        return Ok(b.build()?);
    };
    let text = std::fs::read_to_string(file)
        .with_context(|| format!("failed to read epoch manifest `{}`", file.display()))?;
    let manifest: EpochManifest = serde_json::from_str(&text)
        .with_context(|| format!("failed to parse epoch manifest `{}`", file.display()))?;
    let mounts = &target.mounts;
    let hosts = manifest.mount_hosts(mounts).map_err(|m| match m {
        MountMismatch::NotGiven { guest } if args.catalog.is_some() => {
            anyhow::anyhow!("the epoch manifest mounts `{guest}`, and the catalog entry does not")
        }
        MountMismatch::NotGiven { guest } => anyhow::anyhow!(
            "the epoch manifest mounts `{guest}`: give it with --mount HOST:{guest}"
        ),
        MountMismatch::NotRecorded { index } => anyhow::anyhow!(
            "the mount at `{}` is not one of the epoch manifest's mounts",
            mounts[index].guest
        ),
    })?;
    Ok(Epoch::from_manifest(manifest, &hosts, None)?)
}

pub(crate) fn run(args: CallArgs) -> Result<u8> {
    let target = target(&args)?;
    if let Some(file) = &args.write_epoch {
        let mut inputs = crate::files::Reads::default().file("MODULE", &target.spec.module);
        for (flag, p) in [("--catalog", &args.catalog), ("--epoch", &args.epoch)] {
            if let Some(p) = p {
                inputs = inputs.file(flag, p);
            }
        }
        for m in &target.mounts {
            inputs = inputs.folder(&format!("the mount {}", m.guest), &m.host);
        }
        crate::files::check_outputs(&[("--write-epoch", file)], &inputs)?;
    }
    let limits = args.limits.limits()?;
    let epoch = epoch(&args, &target)?;
    let name = args.tool.as_deref().unwrap_or("tool");
    let live = (target.mounts.iter())
        .filter(|m| m.mode == EpochMode::Live)
        .map(|m| m.guest.clone())
        .collect();
    let world = World::of_tool(
        SandboxConfig::default(),
        epoch,
        name,
        &target.spec,
        live,
        limits,
    )?;
    // No catalog and no probe runs: the gate probes nothing, and its one tool runs in the
    // epoch pinned above for it alone.
    let gate = WarmGate::start(
        Arc::new(world),
        Arc::new(Catalog::default()),
        EvalOptions {
            probe_runs: 0,
            ..EvalOptions::default()
        },
    );
    let record =
        (gate.execute_call(name, args.args.as_bytes())).context("the call's own tool is loaded")?;
    // After the call: the manifest keeps what a pinned network answered.
    if let Some(file) = &args.write_epoch {
        crate::files::write_manifest(file, &gate.world().epoch().manifest_now())
            .with_context(|| format!("failed to write epoch manifest `{}`", file.display()))?;
    }
    let report = report(&record, gate.epoch_id());
    crate::files::print_stdout(&(serde_json::to_string(&report)? + "\n"))?;
    Ok(exit::OK)
}

/// The printed report: the record's fields, and the stdout as JSON when it is JSON.
#[derive(Serialize)]
struct Report {
    #[serde(flatten)]
    fields: Map<String, Value>,
    /// Embedded as the tool wrote it: read into a `Value`, big integers would round and
    /// number lexemes change, and the report must never alter what the tool said.
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<Box<RawValue>>,
}

fn report(record: &CallRecord, epoch_id: &str) -> Report {
    let mut out = Map::new();
    out.insert("outcome".into(), json!(record.outcome.as_str()));
    if let Outcome::Trap { kind } = record.outcome {
        out.insert("trap_kind".into(), json!(kind.as_str()));
    }
    out.insert("exit_code".into(), json!(record.exit_code));
    put_bytes(&mut out, "stdout", &record.stdout);
    put_bytes(&mut out, "stderr", &record.stderr);
    out.insert("fuel_used".into(), json!(record.fuel_used));
    out.insert("wall_ms".into(), json!(record.wall.as_secs_f64() * 1000.0));
    out.insert("epoch_id".into(), json!(epoch_id));
    if let Some(detail) = &record.detail {
        out.insert("detail".into(), json!(detail));
    }
    out.insert("abi".into(), json!(abi(record)));
    // Read as the gate reads results (duplicate keys refused), so `result` appears
    // exactly when eval would compare the stdout as JSON.
    let result = parse_with(&record.stdout, Duplicates::Refuse)
        .ok()
        .and_then(|_| String::from_utf8(record.stdout.clone()).ok())
        .and_then(|text| RawValue::from_string(text).ok());
    Report {
        fields: out,
        result,
    }
}

/// `ok` when the call kept the tool ABI (docs/design.md "Tool ABI") as the harness
/// reads it ([`observed`]), else what broke it.
fn abi(record: &CallRecord) -> String {
    match (record.outcome, observed(record)) {
        (_, Observed::Result(_)) => "ok".into(),
        (_, Observed::Bytes(_)) => match parse_with(&record.stdout, Duplicates::Refuse) {
            Err(e) => format!("stdout is not JSON: {e}"),
            Ok(_) => "stdout is not JSON".into(),
        },
        // Without the envelope the harness says `exit` and `exit status 1: ...`; only an
        // envelope that says the very same would be taken for its absence.
        (Outcome::Exit { code: 1 }, Observed::Error { kind, message })
            if !(kind == "exit" && message.starts_with("exit status 1")) =>
        {
            "ok".into()
        }
        (Outcome::Exit { code: 1 }, _) => {
            "exit 1 without an error object ({\"error\":{\"kind\":...,\"message\":...}})".into()
        }
        (Outcome::Exit { code }, _) => format!("exit code {code} (a tool exits 0 or 1)"),
        (Outcome::Trap { kind }, _) => format!("the call ended as a trap ({})", kind.as_str()),
        (other, _) => format!("the call ended as {}", other.as_str()),
    }
}

/// Text when the bytes are UTF-8, else `<name>_base64`: a report must never alter bytes.
fn put_bytes(out: &mut Map<String, Value>, name: &str, bytes: &[u8]) {
    match std::str::from_utf8(bytes) {
        Ok(s) => {
            out.insert(name.into(), json!(s));
        }
        Err(_) => {
            out.insert(
                format!("{name}_base64"),
                json!(base64::engine::general_purpose::STANDARD.encode(bytes)),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mount_specs_parse() {
        let m = parse_mount("fixtures/world:/world").unwrap();
        assert_eq!(
            (m.host, m.guest.as_str(), m.mode),
            (PathBuf::from("fixtures/world"), "/world", EpochMode::Pinned)
        );
        let m = parse_mount("/a:b/c:/data:live").unwrap();
        assert_eq!(
            (m.host, m.guest.as_str(), m.mode),
            (PathBuf::from("/a:b/c"), "/data", EpochMode::Live)
        );
        let m = parse_mount("docs:/docs:pinned").unwrap();
        assert_eq!((m.guest.as_str(), m.mode), ("/docs", EpochMode::Pinned));
        let err = |s: &str| parse_mount(s).unwrap_err().to_string();
        assert!(err("nohost").contains("is not HOST:GUEST"));
        assert!(err("x:live").contains("is not HOST:GUEST"));
        assert!(err("docs:/docs:ro").contains("the mode `ro` is not one of `pinned`, `live`"));
        assert!(err(":/docs").contains("the host path is empty"));
        assert!(err(":/docs:live").contains("the host path is empty"));
        assert!(err("x:relative").contains("the guest path `relative` is not absolute"));
        assert!(err("x:rel:live").contains("the guest path `rel` is not absolute"));
        assert!(err("x:").contains("the guest path is empty"));
    }
}
