//! `plangate epoch`: pins an epoch for a catalog and writes its manifest, without
//! running anything, so the shards of one batch (`eval --shard K/M --epoch FILE`), or a
//! run next week, replay the very same epoch.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use plangate_harness::{World, WorldOptions};

use crate::files::{catalog_dir, load_catalog};

#[derive(Debug, Args)]
pub(crate) struct EpochArgs {
    /// Tool catalog; module and mount paths are relative to it.
    #[arg(long, value_name = "FILE")]
    catalog: PathBuf,
    /// Write the epoch manifest here.
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// The epoch's random seed.
    #[arg(long, default_value_t = 0)]
    seed: u64,
}

pub(crate) fn run(args: EpochArgs) -> Result<u8> {
    let catalog = load_catalog(&args.catalog)?;
    crate::files::check_outputs(
        &[("--out", &args.out)],
        &crate::files::Reads::default().catalog("--catalog", &args.catalog, &catalog),
    )?;
    let world = World::build(
        &catalog,
        &catalog_dir(&args.catalog),
        WorldOptions {
            random_seed: args.seed,
            ..WorldOptions::default()
        },
    )
    .with_context(|| format!("failed to pin an epoch for {}", args.catalog.display()))?;
    crate::files::write_manifest(&args.out, world.epoch().manifest())?;
    eprintln!(
        "plangate: epoch {} pinned for {}: replay it with --epoch {}",
        &world.epoch().id()[..12],
        args.catalog.display(),
        args.out.display()
    );
    Ok(crate::exit::OK)
}
