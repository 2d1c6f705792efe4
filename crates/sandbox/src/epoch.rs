//! The sandbox epoch (docs/design.md, "The sandbox epoch"): everything a guest can observe, pinned once
//! and written down as a manifest whose sha256 is the epoch id. Pinned mounts are copied
//! into a private snapshot here, so a host file that changes later cannot reach a guest.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::canonical::to_canonical_string;
use crate::error::{Error, Result, io};
use crate::recording::{Exchange, NetworkLog, Recording, check_recording, network_sha256};
use crate::walk::walk;

/// The wasmtime release the sandbox is built against. wasmtime exposes no version
/// constant; a unit test checks this against Cargo.lock so the two cannot drift.
pub const WASMTIME_VERSION: &str = "48.0.8";

/// The plangate release, recorded in every manifest.
pub const PLANGATE_VERSION: &str = env!("CARGO_PKG_VERSION");

/// The manifest format this crate writes and reads. It names what an epoch pins as well
/// as the manifest's fields: the same manifest must make the same observations, so a
/// change in what a pinned source serves (format 2: a `u64` draw takes 8 keystream
/// bytes) moves it, and an epoch of another format is refused rather than replayed
/// differently. Format 3: the network recording keys credentials by digest, keeps
/// header bytes, and is sealed by `network_sha256`.
pub const MANIFEST_FORMAT: u32 = 3;

/// 2025-01-01T00:00:00Z: the default epoch instant, so that two epochs built without an
/// explicit instant agree.
pub const DEFAULT_INSTANT_UNIX_NS: u64 = 1_735_689_600_000_000_000;

/// The default clock step: one microsecond per read, so a guest busy-waiting on the
/// clock still gets out of its loop.
pub const DEFAULT_CLOCK_STEP_NS: u64 = 1_000;

/// How a mount (or a tool's clock or randomness) relates to the epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum EpochMode {
    /// Fixed for the epoch: a private snapshot, the virtual clock, the seeded stream.
    #[default]
    Pinned,
    /// The host's own: served as it is now, and digested at start and end.
    Live,
}

/// One mount as the manifest records it. The host path is not recorded: it differs from
/// machine to machine, and the content digest is what identifies the mount.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MountRecord {
    /// Where the guest sees it (absolute, e.g. `/world`).
    pub guest: String,
    /// Pinned or live.
    pub mode: EpochMode,
    /// `sha256:<hex>` over the sorted tree of relative paths and file bytes.
    pub digest: String,
}

/// Everything a pinned guest can observe, written down. Its canonical JSON's sha256 is
/// the epoch id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EpochManifest {
    /// [`MANIFEST_FORMAT`].
    pub format: u32,
    /// The epoch instant: nanoseconds since the Unix epoch, as a decimal string (a JSON
    /// number this large would lose digits in readers that use doubles).
    pub instant_unix_ns: String,
    /// How far the virtual clock moves on each read, in nanoseconds (0 = frozen).
    pub clock_step_ns: u64,
    /// The random seed, 16 lowercase hex digits.
    pub seed: String,
    /// The guest's complete environment.
    pub env: BTreeMap<String, String>,
    /// The guest's complete argv.
    pub argv: Vec<String>,
    /// Every mount of the epoch, in the order they were declared.
    pub mounts: Vec<MountRecord>,
    /// The sha256 (hex) of every module the epoch may run, sorted and unique.
    pub modules: Vec<String>,
    /// [`PLANGATE_VERSION`] of the run that made the epoch.
    pub plangate_version: String,
    /// [`WASMTIME_VERSION`]: fuel accounting and trap points may change between releases.
    pub wasmtime_version: String,
    /// The network exchanges of tools whose network is `pinned`, recorded on first use:
    /// an epoch replayed from a manifest that has them answers from them alone, with no
    /// network. Not part of the epoch id (the epoch is the one that recorded them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<Vec<Exchange>>,
    /// SHA-256 (hex) of `network`'s canonical JSON ([`network_sha256`]): the seal a
    /// loaded recording must match. Present exactly when `network` is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_sha256: Option<String>,
}

/// How the mounts given for a replay fail to match a manifest's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MountMismatch {
    /// The manifest records a mount at `guest` and none was given.
    NotGiven {
        /// The recorded guest path.
        guest: String,
    },
    /// The given mount at this index is not one the manifest records.
    NotRecorded {
        /// Index into the given mounts.
        index: usize,
    },
}

impl EpochManifest {
    /// The manifest as canonical JSON (sorted keys, no whitespace).
    pub fn canonical_json(&self) -> String {
        let value = serde_json::to_value(self).expect("a manifest always serializes");
        to_canonical_string(&value)
    }

    /// The host folder for each of this manifest's mounts, in manifest order, taken from
    /// `mounts` by guest path: what [`Epoch::from_manifest`] needs to replay it. Every
    /// recorded mount must be given and nothing else, or the replay would not be this
    /// epoch.
    pub fn mount_hosts(
        &self,
        mounts: &[EpochMount],
    ) -> std::result::Result<Vec<PathBuf>, MountMismatch> {
        let hosts = self
            .mounts
            .iter()
            .map(|rec| {
                mounts
                    .iter()
                    .find(|m| m.guest == rec.guest)
                    .map(|m| m.host.clone())
                    .ok_or_else(|| MountMismatch::NotGiven {
                        guest: rec.guest.clone(),
                    })
            })
            .collect::<std::result::Result<Vec<_>, _>>()?;
        match mounts
            .iter()
            .position(|m| !self.mounts.iter().any(|r| r.guest == m.guest))
        {
            Some(index) => Err(MountMismatch::NotRecorded { index }),
            None => Ok(hosts),
        }
    }

    /// The epoch id: the sha256 hex of [`Self::canonical_json`], its network recording
    /// and its seal left out.
    pub fn id(&self) -> String {
        let without = EpochManifest {
            network: None,
            network_sha256: None,
            ..self.clone()
        };
        hex(&Sha256::digest(without.canonical_json().as_bytes()))
    }

    /// Refuses a manifest this plangate cannot replay as written: another format, or a
    /// network recording that is not valid or not the one its seal was taken over.
    pub fn check(&self) -> Result<()> {
        if self.format != MANIFEST_FORMAT {
            return Err(Error::Manifest(format!(
                "format {} is not the supported format {MANIFEST_FORMAT} (an epoch of \
                 another format pins other observations: pin a new epoch)",
                self.format
            )));
        }
        match (&self.network, &self.network_sha256) {
            (None, None) => Ok(()),
            (Some(_), None) => Err(Error::Manifest(
                "network_sha256 is missing: a network recording is sealed by it".into(),
            )),
            (None, Some(_)) => Err(Error::Manifest(
                "network_sha256 is given and network is not".into(),
            )),
            (Some(n), Some(seal)) => check_recording(n, Some(seal)).map_err(Error::Manifest),
        }
    }

    fn instant_ns(&self) -> Result<u64> {
        self.instant_unix_ns.parse().map_err(|_| {
            Error::Manifest(format!(
                "instant_unix_ns `{}` is not a u64",
                self.instant_unix_ns
            ))
        })
    }

    fn seed_u64(&self) -> Result<u64> {
        if self.seed.len() != 16 {
            return Err(Error::Manifest(format!(
                "seed `{}` is not 16 hex digits",
                self.seed
            )));
        }
        u64::from_str_radix(&self.seed, 16)
            .map_err(|_| Error::Manifest(format!("seed `{}` is not 16 hex digits", self.seed)))
    }
}

/// A mount as the sandbox sees it: a host directory served to guests at an absolute
/// guest path, pinned (a snapshot) or live. Declared when an epoch is built, or given
/// again to replay one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EpochMount {
    /// The host directory.
    pub host: PathBuf,
    /// The guest path (absolute).
    pub guest: String,
    /// Pinned (snapshot) or live (the host's own).
    pub mode: EpochMode,
}

impl EpochMount {
    /// A pinned mount: the guest sees a private snapshot taken at epoch start.
    pub fn pinned(host: impl Into<PathBuf>, guest: impl Into<String>) -> Self {
        Self {
            host: host.into(),
            guest: guest.into(),
            mode: EpochMode::Pinned,
        }
    }

    /// A live mount: the guest sees the host directory as it is at call time.
    pub fn live(host: impl Into<PathBuf>, guest: impl Into<String>) -> Self {
        Self {
            host: host.into(),
            guest: guest.into(),
            mode: EpochMode::Live,
        }
    }
}

/// One mount of a built epoch, with the directory the sandbox actually serves.
#[derive(Debug, Clone)]
pub(crate) struct ServedMount {
    /// The directory the caller named (compared when a tool asks for this mount).
    pub(crate) host: PathBuf,
    /// The directory actually preopened: the snapshot for pinned mounts, `host` for live.
    pub(crate) served: PathBuf,
    pub(crate) record: MountRecord,
}

/// A live mount whose digest was taken again (see [`Epoch::recheck_live`]). A shard's
/// evidence carries these, so `plangate merge` can tell whether any shard saw a change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LiveCheck {
    /// The mount's guest path.
    pub guest: String,
    /// The host directory.
    pub host: PathBuf,
    /// The digest at epoch start (as the manifest records it).
    pub at_start: String,
    /// The digest now.
    pub now: String,
}

impl LiveCheck {
    /// Whether the live source changed since epoch start: if so, the epoch was not fixed
    /// for the calls that read it.
    pub fn changed(&self) -> bool {
        self.at_start != self.now
    }
}

/// A built epoch: the manifest, its id, and the snapshots it serves. Dropping the epoch
/// removes the snapshots, so keep it alive (a [`crate::Sandbox`] owns it) while calls run.
#[derive(Debug)]
pub struct Epoch {
    manifest: EpochManifest,
    id: String,
    pub(crate) instant_ns: u64,
    pub(crate) random_seed: u64,
    pub(crate) mounts: Vec<ServedMount>,
    /// What its `pinned`-network tools asked and were answered.
    pub(crate) network: Arc<Recording>,
    // Held for its Drop, which deletes the snapshot tree.
    _snapshots: Option<tempfile::TempDir>,
}

impl Epoch {
    /// Starts declaring a new epoch.
    pub fn builder() -> EpochBuilder {
        EpochBuilder::default()
    }

    /// Replays a recorded epoch. `mount_hosts[i]` serves the manifest's mount `i`; every
    /// pinned mount is snapshotted again and refused unless its digest matches the record.
    /// Live mounts are served as they are; [`Epoch::recheck_live`] tells whether they moved.
    pub fn from_manifest(
        manifest: EpochManifest,
        mount_hosts: &[PathBuf],
        snapshot_root: Option<&Path>,
    ) -> Result<Epoch> {
        manifest.check()?;
        if manifest.mounts.len() != mount_hosts.len() {
            return Err(Error::MountCountMismatch {
                expected: manifest.mounts.len(),
                given: mount_hosts.len(),
            });
        }
        let instant_ns = manifest.instant_ns()?;
        let seed = manifest.seed_u64()?;
        let specs: Vec<EpochMount> = manifest
            .mounts
            .iter()
            .zip(mount_hosts)
            .map(|(m, host)| EpochMount {
                host: host.clone(),
                guest: m.guest.clone(),
                mode: m.mode,
            })
            .collect();
        let (mounts, snapshots) = take_mounts(&specs, snapshot_root)?;
        for (m, rec) in mounts.iter().zip(&manifest.mounts) {
            if rec.mode == EpochMode::Pinned && m.record.digest != rec.digest {
                return Err(Error::MountDigestMismatch {
                    guest: rec.guest.clone(),
                    host: m.host.clone(),
                    expected: rec.digest.clone(),
                    actual: m.record.digest.clone(),
                });
            }
        }
        // Live mounts keep the digest the manifest recorded: that is the epoch's start.
        let mounts = mounts
            .into_iter()
            .zip(&manifest.mounts)
            .map(|(mut m, rec)| {
                m.record = rec.clone();
                m
            })
            .collect();
        let id = manifest.id();
        let network = Arc::new(match &manifest.network {
            Some(exchanges) => Recording::replay(exchanges),
            None => Recording::default(),
        });
        Ok(Epoch {
            manifest,
            id,
            instant_ns,
            random_seed: seed,
            mounts,
            network,
            _snapshots: snapshots,
        })
    }

    /// The manifest, as the epoch started.
    pub fn manifest(&self) -> &EpochManifest {
        &self.manifest
    }

    /// The manifest with the network exchanges recorded so far: what `--write-epoch`
    /// keeps once the calls have run, so that replaying it needs no network.
    pub fn manifest_now(&self) -> EpochManifest {
        let exchanges = self.network.exchanges();
        let mut m = self.manifest.clone();
        if !exchanges.is_empty() {
            m.network_sha256 = Some(network_sha256(&exchanges));
            m.network = Some(exchanges);
        }
        m
    }

    /// Answers from what an interrupted run of this epoch recorded (its journal's), as
    /// that run did, so the resumed run decides as an uninterrupted one. Refused,
    /// naming the field, when the exchanges cannot be replayed.
    pub fn resume_network(&self, exchanges: Vec<Exchange>) -> Result<()> {
        check_recording(&exchanges, None).map_err(Error::Manifest)?;
        self.network.resume(exchanges);
        Ok(())
    }

    /// Keeps at most `bytes` of network exchanges in this epoch (set once): a request
    /// not yet recorded past that is the call's error, not sent. What a long-lived
    /// epoch (a server's) records is bounded so; a batch's epoch is not bounded.
    pub fn bound_network(&self, bytes: u64) {
        self.network.bound(bytes);
    }

    /// Sends every exchange recorded from now on to `log`, as it is recorded.
    pub fn log_network(&self, log: Arc<dyn NetworkLog>) {
        self.network.log_to(log);
    }

    /// The epoch id: sha256 hex of the manifest's canonical JSON.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Digests every live mount again, for the end-of-batch check (docs/design.md, "The sandbox epoch").
    pub fn recheck_live(&self) -> Result<Vec<LiveCheck>> {
        self.mounts
            .iter()
            .filter(|m| m.record.mode == EpochMode::Live)
            .map(|m| {
                Ok(LiveCheck {
                    guest: m.record.guest.clone(),
                    host: m.host.clone(),
                    at_start: m.record.digest.clone(),
                    now: digest_tree(&m.host)?,
                })
            })
            .collect()
    }

    /// The virtual clock's starting instant in nanoseconds since the Unix epoch.
    pub fn instant_unix_ns(&self) -> u64 {
        self.instant_ns
    }
}

/// Declares a new epoch; [`EpochBuilder::build`] takes the snapshots and hashes modules.
#[derive(Debug, Clone)]
pub struct EpochBuilder {
    instant_ns: u64,
    step_ns: u64,
    random_seed: u64,
    env: BTreeMap<String, String>,
    argv: Vec<String>,
    mounts: Vec<EpochMount>,
    modules: Vec<PathBuf>,
    snapshot_root: Option<PathBuf>,
}

impl Default for EpochBuilder {
    fn default() -> Self {
        Self {
            instant_ns: DEFAULT_INSTANT_UNIX_NS,
            step_ns: DEFAULT_CLOCK_STEP_NS,
            random_seed: 0,
            env: BTreeMap::new(),
            // A fixed program name: a module's file name differs between checkouts.
            argv: vec!["tool".to_owned()],
            mounts: Vec::new(),
            modules: Vec::new(),
            snapshot_root: None,
        }
    }
}

impl EpochBuilder {
    /// The epoch instant in nanoseconds since the Unix epoch.
    pub fn instant_unix_ns(mut self, ns: u64) -> Self {
        self.instant_ns = ns;
        self
    }

    /// How far the clocks move per read (0 freezes them).
    pub fn clock_step_ns(mut self, ns: u64) -> Self {
        self.step_ns = ns;
        self
    }

    /// The random seed.
    pub fn random_seed(mut self, seed: u64) -> Self {
        self.random_seed = seed;
        self
    }

    /// Adds one environment variable (nothing is inherited from the host).
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.insert(key.into(), value.into());
        self
    }

    /// Replaces argv (default `["tool"]`).
    pub fn argv<I, S>(mut self, argv: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.argv = argv.into_iter().map(Into::into).collect();
        self
    }

    /// Declares a mount.
    pub fn mount(mut self, spec: EpochMount) -> Self {
        self.mounts.push(spec);
        self
    }

    /// Declares a module the epoch may run (its sha256 goes into the manifest).
    pub fn module(mut self, path: impl Into<PathBuf>) -> Self {
        self.modules.push(path.into());
        self
    }

    /// Where pinned snapshots are written (default: the system temp dir).
    pub fn snapshot_root(mut self, dir: impl Into<PathBuf>) -> Self {
        self.snapshot_root = Some(dir.into());
        self
    }

    /// Snapshots and digests every mount, hashes every module, and fixes the manifest.
    pub fn build(self) -> Result<Epoch> {
        let mut modules = self
            .modules
            .iter()
            .map(|p| {
                Ok(hex(&Sha256::digest(
                    fs::read(p).map_err(io("read module", p))?,
                )))
            })
            .collect::<Result<Vec<_>>>()?;
        modules.sort();
        modules.dedup();
        let (mounts, snapshots) = take_mounts(&self.mounts, self.snapshot_root.as_deref())?;
        let manifest = EpochManifest {
            format: MANIFEST_FORMAT,
            instant_unix_ns: self.instant_ns.to_string(),
            clock_step_ns: self.step_ns,
            seed: format!("{:016x}", self.random_seed),
            env: self.env,
            argv: self.argv,
            mounts: mounts.iter().map(|m| m.record.clone()).collect(),
            modules,
            plangate_version: PLANGATE_VERSION.to_owned(),
            wasmtime_version: WASMTIME_VERSION.to_owned(),
            network: None,
            network_sha256: None,
        };
        let id = manifest.id();
        Ok(Epoch {
            manifest,
            id,
            instant_ns: self.instant_ns,
            random_seed: self.random_seed,
            mounts,
            network: Arc::new(Recording::default()),
            _snapshots: snapshots,
        })
    }
}

/// How a snapshot directory's name starts: the prefix, then the pid of the process
/// that made it.
const SNAPSHOT_PREFIX: &str = "plangate-epoch-";

/// Removes the snapshot directories in `root` whose process is gone: a run killed with
/// SIGKILL (or stopped by a second Ctrl-C) cannot remove its own, so the next run does.
/// A directory whose process still runs, or whose name says no pid, is left alone; a
/// failure to remove one is not this run's error.
fn sweep_snapshots(root: &Path) {
    // Without /proc, a live process cannot be told from a dead one: sweep nothing.
    if !Path::new("/proc/self").exists() {
        return;
    }
    let Ok(entries) = fs::read_dir(root) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(SNAPSHOT_PREFIX))
            .and_then(|rest| rest.split_once('-'))
            .and_then(|(pid, _)| pid.parse::<u32>().ok())
        else {
            continue;
        };
        let alive = Path::new("/proc").join(pid.to_string()).exists();
        if !alive && pid != std::process::id() {
            let gone = fs::remove_dir_all(e.path());
            tracing::debug!(path = %e.path().display(), ok = gone.is_ok(), "stale snapshot removed");
        }
    }
}

fn take_mounts(
    specs: &[EpochMount],
    snapshot_root: Option<&Path>,
) -> Result<(Vec<ServedMount>, Option<tempfile::TempDir>)> {
    let mut guests: Vec<&str> = Vec::new();
    for s in specs {
        if !s.guest.starts_with('/') {
            return Err(Error::BadGuestPath {
                guest: s.guest.clone(),
                why: "it is not absolute",
            });
        }
        if guests.contains(&s.guest.as_str()) {
            return Err(Error::BadGuestPath {
                guest: s.guest.clone(),
                why: "another mount of the epoch uses it",
            });
        }
        guests.push(&s.guest);
        if !s.host.is_dir() {
            return Err(Error::NotADirectory {
                path: s.host.clone(),
            });
        }
    }
    let snapshots = if specs.iter().any(|s| s.mode == EpochMode::Pinned) {
        let root = snapshot_root.map_or_else(std::env::temp_dir, Path::to_path_buf);
        sweep_snapshots(&root);
        Some(
            tempfile::Builder::new()
                .prefix(&format!("{SNAPSHOT_PREFIX}{}-", std::process::id()))
                .tempdir_in(&root)
                .map_err(io("create a snapshot directory in", &root))?,
        )
    } else {
        None
    };
    let mut mounts = Vec::with_capacity(specs.len());
    for (i, s) in specs.iter().enumerate() {
        let (served, digest) = match s.mode {
            EpochMode::Pinned => {
                let dst = snapshots
                    .as_ref()
                    .expect("a snapshot dir exists when a mount is pinned")
                    .path()
                    .join(i.to_string());
                fs::create_dir(&dst).map_err(io("create snapshot directory", &dst))?;
                let digest = walk(&s.host, Some(&dst))?;
                (dst, digest)
            }
            EpochMode::Live => (s.host.clone(), digest_tree(&s.host)?),
        };
        mounts.push(ServedMount {
            host: s.host.clone(),
            served,
            record: MountRecord {
                guest: s.guest.clone(),
                mode: s.mode,
                digest,
            },
        });
    }
    Ok((mounts, snapshots))
}

/// The content digest of a directory tree: `sha256:<hex>` over its entries sorted by
/// relative path, each entry its kind, its path and (for a file) the sha256 of its bytes
/// or (for a symlink) its target text. Names, modes, times and inode numbers are left
/// out: they are exactly what differs between two faithful copies. The tree is walked by
/// directory handle, never following a link (see `walk`); FIFOs, sockets and devices
/// are left out.
pub fn digest_tree(root: &Path) -> Result<String> {
    walk(root, None)
}

pub(crate) use crate::canonical::hex;

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn wasmtime_version_matches_the_lockfile() {
        let lock = fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../Cargo.lock"))
            .expect("Cargo.lock at the workspace root");
        let needle = format!("name = \"wasmtime\"\nversion = \"{WASMTIME_VERSION}\"");
        assert!(
            lock.contains(&needle),
            "Cargo.lock pins another wasmtime than {WASMTIME_VERSION}"
        );
    }

    /// A manifest with no mounts, modules or network: what the tests vary.
    pub(crate) fn bare_manifest() -> EpochManifest {
        EpochManifest {
            format: MANIFEST_FORMAT,
            instant_unix_ns: "5".into(),
            clock_step_ns: 0,
            seed: format!("{:016x}", 1),
            env: BTreeMap::new(),
            argv: vec!["tool".into()],
            mounts: vec![],
            modules: vec![],
            plangate_version: "0".into(),
            wasmtime_version: "48".into(),
            network: None,
            network_sha256: None,
        }
    }

    #[test]
    fn manifest_id_is_stable_and_sensitive() {
        let m = bare_manifest();
        assert_eq!(
            m.canonical_json(),
            r#"{"argv":["tool"],"clock_step_ns":0,"env":{},"format":3,"instant_unix_ns":"5","modules":[],"mounts":[],"plangate_version":"0","seed":"0000000000000001","wasmtime_version":"48"}"#
        );
        let mut m2 = m.clone();
        m2.clock_step_ns = 1;
        assert_ne!(m.id(), m2.id());
        assert_eq!(m.id().len(), 64);
        // What a pinned network recorded is kept beside the epoch, not part of its id:
        // the epoch that recorded it is the one it replays.
        let recorded = EpochManifest {
            network: Some(vec![Exchange {
                method: "GET".into(),
                url: "http://127.0.0.1:1/".into(),
                request_headers: vec![],
                credential_sha256: None,
                request_body_sha256: "e3b0".into(),
                status: 200,
                response_headers: vec![],
                response_body: String::new(),
            }]),
            ..m.clone()
        };
        assert_eq!(recorded.id(), m.id());
        assert_ne!(recorded.canonical_json(), m.canonical_json());
    }

    #[test]
    fn replay_mounts_match_by_guest_path_both_ways() {
        let rec = |g: &str| MountRecord {
            guest: g.into(),
            mode: EpochMode::Pinned,
            digest: "sha256:0".into(),
        };
        let spec = |h: &str, g: &str| EpochMount {
            host: h.into(),
            guest: g.into(),
            mode: EpochMode::Pinned,
        };
        let m = EpochManifest {
            format: MANIFEST_FORMAT,
            instant_unix_ns: "5".into(),
            clock_step_ns: 0,
            seed: "0".into(),
            env: BTreeMap::new(),
            argv: vec![],
            mounts: vec![rec("/a"), rec("/b")],
            modules: vec![],
            plangate_version: "0".into(),
            wasmtime_version: "48".into(),
            network: None,
            network_sha256: None,
        };
        // Given in another order, returned in the manifest's.
        let hosts = m
            .mount_hosts(&[spec("hb", "/b"), spec("ha", "/a")])
            .unwrap();
        assert_eq!(hosts, vec![PathBuf::from("ha"), PathBuf::from("hb")]);
        // A manifest of format 1 pinned one byte per u64 draw: its epoch is not this one.
        let old = EpochManifest {
            format: 1,
            mounts: vec![],
            ..m.clone()
        };
        match Epoch::from_manifest(old, &[], None) {
            Err(Error::Manifest(why)) => assert_eq!(
                why,
                format!(
                    "format 1 is not the supported format {MANIFEST_FORMAT} (an epoch of \
                     another format pins other observations: pin a new epoch)"
                )
            ),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            m.mount_hosts(&[spec("ha", "/a")]),
            Err(MountMismatch::NotGiven { guest: "/b".into() })
        );
        assert_eq!(
            m.mount_hosts(&[spec("ha", "/a"), spec("hb", "/b"), spec("hc", "/c")]),
            Err(MountMismatch::NotRecorded { index: 2 })
        );
    }
}
