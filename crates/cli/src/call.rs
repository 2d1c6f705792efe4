//! `plangate call`: one tool call in the sandbox under a pinned epoch, printed as one
//! JSON object. The tool author's way to see exactly what a guest returns, and the
//! end-to-end tests' way into the sandbox.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use base64::Engine as _;
use clap::{Args, ValueEnum};
use plangate_sandbox::{
    Epoch, EpochManifest, EpochMode, EpochMount, ModuleSpec, MountMismatch, Outcome, Sandbox,
    SandboxConfig,
};
use serde_json::{Map, Value, json};

use crate::args::LimitArgs;
use crate::exit;

/// Run one WASM tool call under a pinned epoch and print what it did as JSON.
#[derive(Debug, Args)]
pub(crate) struct CallArgs {
    /// The tool: a WASI preview1 command module (`.wasm`).
    module: PathBuf,
    /// The call's arguments, given to the tool on stdin exactly as written.
    #[arg(long, default_value = "{}")]
    args: String,
    /// A read-only directory for the tool: `HOST:GUEST`, pinned (a snapshot taken now)
    /// unless suffixed `:live`. Repeatable.
    #[arg(long = "mount", value_name = "HOST:GUEST[:live]")]
    mounts: Vec<String>,
    /// Replay this epoch manifest (each mount is matched to `--mount` by guest path and
    /// refused if its contents differ from the manifest's digest).
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
    let (rest, mode) = if let Some(r) = spec.strip_suffix(":live") {
        (r, EpochMode::Live)
    } else if let Some(r) = spec.strip_suffix(":pinned") {
        (r, EpochMode::Pinned)
    } else {
        (spec, EpochMode::Pinned)
    };
    // The guest path is absolute and has no ':'; the host path may (rarely) have one.
    let Some((host, guest)) = rest.rsplit_once(':') else {
        bail!("--mount `{spec}` is not HOST:GUEST[:live]");
    };
    if host.is_empty() || !guest.starts_with('/') {
        bail!("--mount `{spec}`: the host path is empty or the guest path is not absolute");
    }
    Ok(EpochMount {
        host: PathBuf::from(host),
        guest: guest.to_owned(),
        mode,
    })
}

pub(crate) fn run(args: CallArgs) -> Result<u8> {
    if let Some(file) = &args.write_epoch {
        let mut inputs = vec![("MODULE", args.module.as_path())];
        inputs.extend(args.epoch.as_deref().map(|e| ("--epoch", e)));
        crate::files::check_outputs(&[("--write-epoch", file)], &inputs)?;
    }
    let mounts = args
        .mounts
        .iter()
        .map(|m| parse_mount(m))
        .collect::<Result<Vec<_>>>()?;
    let epoch = match &args.epoch {
        Some(file) => {
            let text = std::fs::read_to_string(file)
                .with_context(|| format!("failed to read epoch manifest `{}`", file.display()))?;
            let manifest: EpochManifest = serde_json::from_str(&text)
                .with_context(|| format!("failed to parse epoch manifest `{}`", file.display()))?;
            let hosts = manifest.mount_hosts(&mounts).map_err(|m| match m {
                MountMismatch::NotGiven { guest } => anyhow::anyhow!(
                    "the epoch manifest mounts `{guest}`: give it with --mount HOST:{guest}"
                ),
                MountMismatch::NotRecorded { index } => anyhow::anyhow!(
                    "--mount at `{}` is not one of the epoch manifest's mounts",
                    mounts[index].guest
                ),
            })?;
            Epoch::from_manifest(manifest, &hosts, None)?
        }
        None => {
            let mut b = Epoch::builder().seed(args.seed).module(&args.module);
            for m in &mounts {
                b = b.mount(m.clone());
            }
            b.build()?
        }
    };
    if let Some(file) = &args.write_epoch {
        let json = serde_json::to_string_pretty(epoch.manifest())? + "\n";
        crate::files::write_file(file, json.as_bytes())
            .with_context(|| format!("failed to write epoch manifest `{}`", file.display()))?;
    }
    let live_mode = |flag: Option<ModeArg>, source: LiveSource| {
        if flag == Some(ModeArg::Live) || args.live.contains(&source) {
            EpochMode::Live
        } else {
            EpochMode::Pinned
        }
    };
    let mut spec = ModuleSpec::new(&args.module)
        .clock(live_mode(args.clock, LiveSource::Clock))
        .random(live_mode(args.random, LiveSource::Random));
    for m in &mounts {
        spec = spec.mount(&m.host, &m.guest);
    }
    let sandbox = Sandbox::new(SandboxConfig::default(), epoch)?;
    let tool = sandbox.load_tool(&spec)?;
    let limits = args.limits.limits();
    let record = sandbox.call(&tool, args.args.as_bytes(), &limits);

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
    out.insert("epoch_id".into(), json!(sandbox.epoch().id()));
    if let Some(detail) = &record.detail {
        out.insert("detail".into(), json!(detail));
    }
    println!("{}", Value::Object(out));
    Ok(exit::OK)
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
        assert!(parse_mount("nohost").is_err());
        assert!(parse_mount("x:relative").is_err());
    }
}
