//! The sandbox proper: one shared engine, compiled-once modules and components, one
//! pre-linked instance per tool, and `call`, which runs one tool call in a fresh store
//! and turns every way it can end into an [`Outcome`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use wasmtime::component::ResourceTableError;
use wasmtime::{
    Config, Enabled, Engine, InstanceAllocationStrategy, InstancePre, Linker,
    PoolingAllocationConfig, Store, Trap,
};
use wasmtime_wasi::p2::pipe::{MemoryInputPipe, MemoryOutputPipe};
use wasmtime_wasi::{FsPerms, I32Exit, WasiCtxBuilder};

use crate::cache::Compiled;
use crate::component::{ComponentStoreData, LiveMonotonic, Shape};
use crate::epoch::{Epoch, EpochMode, hex};
use crate::error::{Error, Result, io};
use crate::network::{Hooks, NetworkPolicy};
use crate::pinned::{ByteStreamRng, PinnedMonotonicClock, PinnedWallClock, VirtualTime};
use crate::scrub;
use crate::store::{Ctx, Limiter, MemoryLimitHit};

/// How the shared engine is built. One per process is the intent; every field bounds
/// something that is expensive to change once calls run.
#[derive(Debug, Clone)]
pub struct SandboxConfig {
    /// Calls that may run at once; further callers wait. The pooling allocator gets this
    /// many slots, so the bound is what keeps the pool from ever being exhausted.
    pub max_concurrent_calls: u32,
    /// The largest linear memory any call may have, in MiB (a pool slot's size).
    /// [`Limits::memory_mb`] is clamped to it.
    pub max_memory_mb: u64,
    /// The wasm stack a guest may use, in bytes. Deep recursion ends as a
    /// `stack_overflow` trap; the exact depth depends on compiled frame sizes.
    pub max_wasm_stack: usize,
    /// Where precompiled modules are cached. The default is the user's own cache
    /// directory, `$XDG_CACHE_HOME/plangate/modules`, else `$HOME/.cache/plangate/modules`
    /// (`None` when neither is set: no disk cache, compile per sandbox). The directory is
    /// created mode 0700 and used only if it is a directory (not a symlink) owned by the
    /// effective user and writable by no one else; otherwise, or when it cannot be
    /// written, a warning is logged (once per directory) and modules are compiled in
    /// memory. A cache problem never fails a load.
    pub cache_dir: Option<PathBuf>,
    /// How often the wall-time safety net ticks. [`Limits::wall_ms`] is rounded up to it.
    pub tick: Duration,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get() as u32);
        Self {
            max_concurrent_calls: (cores * 4).clamp(8, 256),
            max_memory_mb: 512,
            max_wasm_stack: 512 << 10,
            cache_dir: crate::cache::default_dir(),
            tick: Duration::from_millis(2),
        }
    }
}

/// Limits for one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// The deterministic CPU budget (wasmtime fuel: about one unit per instruction).
    pub fuel: u64,
    /// Linear memory, MiB.
    pub memory_mb: u64,
    /// Wall time, ms: a safety net, not a deterministic limit (fuel is).
    pub wall_ms: u64,
    /// Bytes of stdout, and separately of stderr, kept; more ends the call as
    /// `output_limit`.
    pub output_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            fuel: 2_000_000_000,
            memory_mb: 256,
            wall_ms: 10_000,
            output_bytes: 1 << 20,
        }
    }
}

/// Why a trap ended a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum TrapKind {
    /// `unreachable` ran: in Rust guests, a panic or an abort.
    Unreachable,
    /// The wasm stack ran out (deep recursion). Not portable: depends on frame sizes.
    StackOverflow,
    /// A load or store outside linear memory.
    MemoryOutOfBounds,
    /// Integer division by zero.
    IntegerDivisionByZero,
    /// Integer overflow (`i32.div_s` of MIN by -1, float-to-int out of range).
    IntegerOverflow,
    /// An indirect call to a null or mistyped table entry, or a table access out of range.
    IndirectCall,
    /// Another wasm trap.
    OtherTrap,
    /// The host failed the call: the module could not be instantiated, a host function
    /// failed. [`CallRecord::detail`] says what happened.
    Host,
}

impl TrapKind {
    fn of(trap: Trap) -> Self {
        match trap {
            Trap::UnreachableCodeReached => Self::Unreachable,
            Trap::StackOverflow => Self::StackOverflow,
            Trap::MemoryOutOfBounds | Trap::HeapMisaligned => Self::MemoryOutOfBounds,
            Trap::IntegerDivisionByZero => Self::IntegerDivisionByZero,
            Trap::IntegerOverflow | Trap::BadConversionToInteger => Self::IntegerOverflow,
            Trap::IndirectCallToNull | Trap::BadSignature | Trap::TableOutOfBounds => {
                Self::IndirectCall
            }
            _ => Self::OtherTrap,
        }
    }

    /// The snake_case name used in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Unreachable => "unreachable",
            Self::StackOverflow => "stack_overflow",
            Self::MemoryOutOfBounds => "memory_out_of_bounds",
            Self::IntegerDivisionByZero => "integer_division_by_zero",
            Self::IntegerOverflow => "integer_overflow",
            Self::IndirectCall => "indirect_call",
            Self::OtherTrap => "other_trap",
            Self::Host => "host",
        }
    }
}

/// How a call ended. Every end is one of these: a call never errs and never panics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Outcome {
    /// `_start` returned (code 0) or the guest called `proc_exit(code)`.
    Exit {
        /// The exit code.
        code: i32,
    },
    /// The fuel budget ran out: deterministic, the same call always stops at the same place.
    OutOfFuel,
    /// The wall-time limit passed.
    Timeout,
    /// The guest asked for more linear memory than [`Limits::memory_mb`].
    MemoryLimit,
    /// stdout or stderr went over [`Limits::output_bytes`] (both are cut at the limit).
    OutputLimit,
    /// A trap, or a host failure.
    Trap {
        /// Which.
        kind: TrapKind,
    },
}

impl Outcome {
    /// The snake_case name used in JSON: `exit`, `out_of_fuel`, `timeout`, ...
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Exit { .. } => "exit",
            Self::OutOfFuel => "out_of_fuel",
            Self::Timeout => "timeout",
            Self::MemoryLimit => "memory_limit",
            Self::OutputLimit => "output_limit",
            Self::Trap { .. } => "trap",
        }
    }
}

/// Everything one call produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallRecord {
    /// How it ended.
    pub outcome: Outcome,
    /// The exit code, for [`Outcome::Exit`] only.
    pub exit_code: Option<i32>,
    /// stdout, at most [`Limits::output_bytes`].
    pub stdout: Vec<u8>,
    /// stderr, at most [`Limits::output_bytes`].
    pub stderr: Vec<u8>,
    /// Fuel consumed (deterministic for pinned tools).
    pub fuel_used: u64,
    /// Wall time of the call, setup included.
    pub wall: Duration,
    /// For a host failure or an unclassified trap: wasmtime's message.
    pub detail: Option<String>,
}

/// A module or component to instantiate as a tool: the `.wasm`, the function to call
/// (for a component with typed exports), the epoch mounts it sees, whether its clock and
/// randomness are pinned or live, and what it may do on the network.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleSpec {
    /// The `.wasm` module or component (its sha256 must be one of the epoch's modules).
    pub module: PathBuf,
    /// The component function to call (`read-file`, `iface.func`); none for a command.
    pub export: Option<String>,
    /// What the tool may do on the network (components only: a core module has none).
    pub network: NetworkPolicy,
    /// `(host dir, guest path)` of each epoch mount the tool sees.
    pub mounts: Vec<(PathBuf, String)>,
    /// Pinned (virtual clock) or live (the host's clocks).
    pub clock: EpochMode,
    /// Pinned (seeded stream) or live (the host's randomness).
    pub random: EpochMode,
}

impl ModuleSpec {
    /// A tool with no mounts, pinned clock and randomness.
    pub fn new(module: impl Into<PathBuf>) -> Self {
        Self {
            module: module.into(),
            export: None,
            network: NetworkPolicy::default(),
            mounts: Vec::new(),
            clock: EpochMode::Pinned,
            random: EpochMode::Pinned,
        }
    }

    /// Names the component function to call.
    pub fn export(mut self, name: impl Into<String>) -> Self {
        self.export = Some(name.into());
        self
    }

    /// Sets the network policy.
    pub fn network(mut self, policy: NetworkPolicy) -> Self {
        self.network = policy;
        self
    }

    /// Adds an epoch mount.
    pub fn mount(mut self, host: impl Into<PathBuf>, guest: impl Into<String>) -> Self {
        self.mounts.push((host.into(), guest.into()));
        self
    }

    /// Sets the clock mode.
    pub fn clock(mut self, mode: EpochMode) -> Self {
        self.clock = mode;
        self
    }

    /// Sets the randomness mode.
    pub fn random(mut self, mode: EpochMode) -> Self {
        self.random = mode;
        self
    }
}

/// A loaded tool: cheap to clone, shareable across threads.
#[derive(Clone)]
pub struct Tool {
    inner: Arc<ToolInner>,
}

/// What a tool instantiates.
enum Runs {
    /// A WASI preview-1 command module.
    Module(InstancePre<Ctx>),
    /// A WASI 0.2 component: a command or a typed function.
    Component(Shape),
}

struct ToolInner {
    runs: Runs,
    network: Arc<NetworkPolicy>,
    preopens: Vec<(PathBuf, String)>,
    /// Whether any preopen is a live mount: only there can a guest's open meet a FIFO,
    /// socket or device (a snapshot holds files, directories and inner links only).
    live_mounts: bool,
    clock: EpochMode,
    random: EpochMode,
    sha256: String,
}

impl Tool {
    /// The module's sha256 (hex).
    pub fn sha256(&self) -> &str {
        &self.inner.sha256
    }
}

impl std::fmt::Debug for Tool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tool")
            .field("sha256", &self.inner.sha256)
            .field("preopens", &self.inner.preopens)
            .field("clock", &self.inner.clock)
            .field("random", &self.inner.random)
            .finish_non_exhaustive()
    }
}

/// A counting semaphore: std has none, and the bound must hold across any thread pool.
struct Slots {
    free: Mutex<u32>,
    ready: Condvar,
}

impl Slots {
    fn acquire(&self) -> SlotGuard<'_> {
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        while *free == 0 {
            free = self.ready.wait(free).unwrap_or_else(|e| e.into_inner());
        }
        *free -= 1;
        SlotGuard(self)
    }
}

struct SlotGuard<'a>(&'a Slots);

impl Drop for SlotGuard<'_> {
    fn drop(&mut self) {
        *self.0.free.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        self.0.ready.notify_one();
    }
}

/// Runs tool calls under one epoch. `Send + Sync`: share it (`&Sandbox` or an `Arc`)
/// with every worker thread; each [`Sandbox::call`] builds its own store.
pub struct Sandbox {
    engine: Engine,
    linker: Linker<Ctx>,
    components: wasmtime::component::Linker<ComponentStoreData>,
    epoch: Epoch,
    config: SandboxConfig,
    modules: Mutex<BTreeMap<String, Compiled>>,
    slots: Slots,
    /// The epoch's random streams at position 0; each call clones them (hashing the
    /// seed into a key once per sandbox, not once per call).
    rng_secure: ByteStreamRng,
    rng_insecure: ByteStreamRng,
    ticker_stop: Arc<AtomicBool>,
    ticker: Option<std::thread::JoinHandle<()>>,
}

impl std::fmt::Debug for Sandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sandbox")
            .field("epoch_id", &self.epoch.id())
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// Every timestamp a guest reads from a file's metadata, in every epoch: a pinned file's
/// metadata follows its contents, not the epoch's clock, so a tool that prints it is
/// verified across epochs whatever their instants.
const FILE_TIME_NS: u64 = crate::epoch::DEFAULT_INSTANT_UNIX_NS;

/// The most core instances (and tables) one component may hold: a component over it is
/// refused when it compiles, with wasmtime's message.
const PER_COMPONENT: u32 = 64;

/// Builds the engine every sandbox uses: fuel, epoch interruption, NaN
/// canonicalization, deterministic relaxed SIMD and a tuned pooling allocator.
pub fn build_engine(config: &SandboxConfig) -> Result<Engine> {
    let mut cfg = Config::new();
    cfg.consume_fuel(true);
    cfg.epoch_interruption(true);
    cfg.cranelift_nan_canonicalization(true);
    cfg.relaxed_simd_deterministic(true);
    cfg.max_wasm_stack(config.max_wasm_stack);
    let slots = config.max_concurrent_calls.max(1);
    let mut pool = PoolingAllocationConfig::new();
    // A call is one core instance, or one component instance holding several core
    // instances, memories and tables of their own (a Rust component 3, 1 and 2; an
    // interpreter component more), all from the shared pools.
    pool.total_core_instances(slots * PER_COMPONENT)
        .total_memories(slots * 4)
        .total_tables(slots * PER_COMPONENT)
        // Stacks are only for async/stack switching; the sandbox runs sync.
        .total_stacks(0)
        .total_component_instances(slots)
        .max_core_instances_per_component(PER_COMPONENT)
        .max_memories_per_component(4)
        .max_tables_per_component(PER_COMPONENT)
        .max_memory_size((config.max_memory_mb as usize) << 20)
        .max_unused_warm_slots(slots.min(32))
        // Reset dirty pages with memset (and the PAGEMAP_SCAN ioctl where the kernel
        // has it) instead of madvise: a fresh instance then faults no pages in. This
        // is most of the difference between ~20 us and ~5 us per call.
        .linear_memory_keep_resident(4 << 20)
        .table_keep_resident(64 << 10)
        .pagemap_scan(Enabled::Auto);
    cfg.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    Engine::new(&cfg).map_err(|e| Error::Engine(format!("{e:#}")))
}

impl Sandbox {
    /// Builds the engine, the shared linker and the wall-time ticker for `epoch`.
    pub fn new(config: SandboxConfig, epoch: Epoch) -> Result<Sandbox> {
        let engine = build_engine(&config)?;
        let mut linker: Linker<Ctx> = Linker::new(&engine);
        wasmtime_wasi::p1::add_to_linker_sync(&mut linker, |c: &mut Ctx| &mut c.wasi)
            .map_err(|e| Error::Engine(format!("{e:#}")))?;
        scrub::shadow(&mut linker).map_err(|e| Error::Engine(format!("{e:#}")))?;
        let components =
            crate::component::linker(&engine).map_err(|e| Error::Engine(format!("{e:#}")))?;
        let ticker_stop = Arc::new(AtomicBool::new(false));
        let ticker = {
            let engine = engine.clone();
            let stop = ticker_stop.clone();
            let tick = config.tick;
            std::thread::Builder::new()
                .name("plangate-sandbox-tick".into())
                .spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        std::thread::sleep(tick);
                        engine.increment_epoch();
                    }
                })
                .map_err(io("spawn the ticker thread for", "plangate-sandbox-tick"))?
        };
        Ok(Sandbox {
            slots: Slots {
                free: Mutex::new(config.max_concurrent_calls.max(1)),
                ready: Condvar::new(),
            },
            rng_secure: ByteStreamRng::new(epoch.random_seed, "secure"),
            rng_insecure: ByteStreamRng::new(epoch.random_seed, "insecure"),
            engine,
            linker,
            components,
            epoch,
            config,
            modules: Mutex::new(BTreeMap::new()),
            ticker_stop,
            ticker: Some(ticker),
        })
    }

    /// The epoch the calls run in.
    pub fn epoch(&self) -> &Epoch {
        &self.epoch
    }

    /// The shared engine (for callers that measure against it).
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Compiles (or loads from cache) the module and links it once. The module's sha256
    /// must be in the epoch manifest, and each mount must be one of the epoch's.
    pub fn load_tool(&self, spec: &ModuleSpec) -> Result<Tool> {
        let bytes = std::fs::read(&spec.module).map_err(io("read module", &spec.module))?;
        let sha256 = hex(&Sha256::digest(&bytes));
        if !self.epoch.manifest().modules.contains(&sha256) {
            return Err(Error::ModuleNotInEpoch {
                path: spec.module.clone(),
                sha256,
            });
        }
        let link = |message: String| Error::Link {
            path: spec.module.clone(),
            message,
        };
        let runs = match self.module(&spec.module, &sha256, &bytes)? {
            Compiled::Module(module) => {
                if spec.export.is_some() {
                    return Err(link(
                        "`export` names a component function, and this is a core module".into(),
                    ));
                }
                let pre =
                    (self.linker.instantiate_pre(&module)).map_err(|e| link(format!("{e:#}")))?;
                if module.get_export("_start").is_none() {
                    return Err(link("it exports no `_start`: not a WASI command".into()));
                }
                Runs::Module(pre)
            }
            Compiled::Component(c) => Runs::Component(
                crate::component::shape(&self.engine, &self.components, &c, spec.export.as_deref())
                    .map_err(link)?,
            ),
        };
        let mut preopens = Vec::with_capacity(spec.mounts.len());
        let mut live_mounts = false;
        for (host, guest) in &spec.mounts {
            let found =
                self.epoch.mounts.iter().find(|m| {
                    &m.record.guest == guest && (m.host == *host || same_dir(&m.host, host))
                });
            match found {
                Some(m) => {
                    live_mounts |= m.record.mode == EpochMode::Live;
                    preopens.push((m.served.clone(), guest.clone()));
                }
                None => {
                    return Err(Error::MountNotInEpoch {
                        host: host.clone(),
                        guest: guest.clone(),
                    });
                }
            }
        }
        Ok(Tool {
            inner: Arc::new(ToolInner {
                runs,
                network: Arc::new(spec.network.clone()),
                preopens,
                live_mounts,
                clock: spec.clock,
                random: spec.random,
                sha256,
            }),
        })
    }

    fn module(&self, path: &Path, sha256: &str, bytes: &[u8]) -> Result<Compiled> {
        let mut modules = self.modules.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(m) = modules.get(sha256) {
            return Ok(m.clone());
        }
        let module = crate::cache::load_or_compile(
            &self.engine,
            self.config.cache_dir.as_deref(),
            path,
            sha256,
            bytes,
        )?;
        modules.insert(sha256.to_owned(), module.clone());
        Ok(module)
    }

    /// Runs one call: `stdin` is given to the guest as is (the caller canonicalizes).
    /// Never fails: every end, including a host failure, is an [`Outcome`].
    pub fn call(&self, tool: &Tool, stdin: &[u8], limits: &Limits) -> CallRecord {
        let _slot = self.slots.acquire();
        let start = Instant::now();
        let t = &tool.inner;
        // One byte over the cap, so a guest that writes exactly the cap is not cut off
        // and one that writes more is caught.
        let stdout = MemoryOutputPipe::new(limits.output_bytes.saturating_add(1));
        let stderr = MemoryOutputPipe::new(limits.output_bytes.saturating_add(1));
        let ended = match &t.runs {
            Runs::Module(pre) => self.run_module(t, pre, stdin, (&stdout, &stderr), limits, start),
            Runs::Component(shape) => {
                self.run_component(t, shape, stdin, (&stdout, &stderr), limits, start)
            }
        };
        let Ran {
            result,
            fuel_used,
            memory_hit,
            returned,
        } = match ended {
            Ok(ran) => ran,
            Err(detail) => return host_failure(start, detail),
        };
        let (mut out, err, mut over) = cut_output(&stdout, &stderr, limits.output_bytes);
        let mut result = result;
        if let Some((mut json, code)) = returned {
            over |= json.len() > limits.output_bytes;
            json.truncate(limits.output_bytes);
            out = json;
            if code != 0 {
                result = Err(wasmtime::Error::new(I32Exit(code)));
            }
        }
        let (outcome, detail) = if over {
            (Outcome::OutputLimit, None)
        } else {
            classify(result, memory_hit)
        };
        CallRecord {
            exit_code: match outcome {
                Outcome::Exit { code } => Some(code),
                _ => None,
            },
            outcome,
            stdout: out,
            stderr: err,
            fuel_used,
            wall: start.elapsed(),
            detail,
        }
    }

    /// A core module's `_start`, with `stdin` and the pipes as its stdio.
    fn run_module(
        &self,
        t: &ToolInner,
        pre: &InstancePre<Ctx>,
        stdin: &[u8],
        (stdout, stderr): (&MemoryOutputPipe, &MemoryOutputPipe),
        limits: &Limits,
        start: Instant,
    ) -> std::result::Result<Ran, String> {
        let (mut b, time) = self.wasi_builder(t, stdin, stdout, stderr, start)?;
        let mut store = self.store(b.build_p1(), time, t.live_mounts, limits, start)?;
        let result = match pre.instantiate(&mut store) {
            Ok(instance) => match instance.get_typed_func::<(), ()>(&mut store, "_start") {
                Ok(start_fn) => start_fn.call(&mut store, ()),
                Err(e) => Err(e),
            },
            Err(e) => Err(e),
        };
        Ok(Ran {
            result,
            fuel_used: limits.fuel.saturating_sub(store.get_fuel().unwrap_or(0)),
            memory_hit: store.data().limiter.hit,
            returned: None,
        })
    }

    /// A component: `wasi:cli/run` with stdin and the pipes as its stdio, or a typed
    /// function called with the JSON arguments on `stdin`, whose return is the call's
    /// stdout (what the guest prints goes with its stderr, as logs).
    fn run_component(
        &self,
        t: &ToolInner,
        shape: &Shape,
        stdin: &[u8],
        (stdout, stderr): (&MemoryOutputPipe, &MemoryOutputPipe),
        limits: &Limits,
        start: Instant,
    ) -> std::result::Result<Ran, String> {
        let args = match shape {
            Shape::Export { params, .. } => match crate::component::arguments(stdin, params) {
                Ok(args) => Some(args),
                Err(e) => {
                    return Ok(Ran {
                        result: Ok(()),
                        fuel_used: 0,
                        memory_hit: false,
                        returned: Some((
                            crate::component::error_envelope("invalid_arguments", &e.to_string()),
                            1,
                        )),
                    });
                }
            },
            Shape::Command(_) => None,
        };
        let (guest_in, guest_out): (&[u8], &MemoryOutputPipe) = match args {
            Some(_) => (&[], stderr),
            None => (stdin, stdout),
        };
        let (mut b, time) = self.wasi_builder(t, guest_in, guest_out, stderr, start)?;
        let started = LiveMonotonic(start);
        if time.is_none() {
            b.monotonic_clock(started);
        }
        let ctx = ComponentStoreData::new(
            b.build(),
            Hooks {
                policy: t.network.clone(),
                recording: self.epoch.network.clone(),
            },
            self.limiter(limits),
            time,
            FILE_TIME_NS,
            start + Duration::from_millis(limits.wall_ms),
            started,
        );
        let mut store = Store::new(&self.engine, ctx);
        store.limiter(|c| &mut c.limiter);
        self.arm(&mut store, limits)?;
        let (result, returned) = match (shape, args) {
            (Shape::Command(pre), _) => {
                let run = pre
                    .instantiate(&mut store)
                    .and_then(|cmd| cmd.wasi_cli_run().call_run(&mut store));
                let result = match run {
                    Ok(Ok(())) => Ok(()),
                    Ok(Err(())) => Err(wasmtime::Error::new(I32Exit(1))),
                    Err(e) => Err(e),
                };
                (result, None)
            }
            (
                Shape::Export {
                    pre, func, result, ..
                },
                Some(args),
            ) => match crate::component::call(&mut store, pre, func, &args, result.as_ref()) {
                Ok(returned) => (Ok(()), Some(returned)),
                Err(e) => (Err(e), None),
            },
            (Shape::Export { .. }, None) => unreachable!("typed calls parse their arguments first"),
        };
        Ok(Ran {
            result,
            fuel_used: limits.fuel.saturating_sub(store.get_fuel().unwrap_or(0)),
            memory_hit: store.data().limiter.hit,
            returned,
        })
    }

    /// What the guest sees of the world: its stdio, the epoch's argv and env, the
    /// tool's clock and randomness (the epoch's or the host's), and its read-only
    /// mounts. Also the call's virtual time when its clock is pinned, which the scrub
    /// moves on a sleep. `Err` is a host failure's detail.
    fn wasi_builder(
        &self,
        t: &ToolInner,
        stdin: &[u8],
        stdout: &MemoryOutputPipe,
        stderr: &MemoryOutputPipe,
        _start: Instant,
    ) -> std::result::Result<(WasiCtxBuilder, Option<Arc<VirtualTime>>), String> {
        let mut b = WasiCtxBuilder::new();
        // Before any preopen: wasmtime-wasi captures it per preopen. Blocking on the
        // calling thread skips a tokio round trip per file operation.
        b.allow_blocking_current_thread(true);
        b.stdin(MemoryInputPipe::new(stdin.to_vec()))
            .stdout(stdout.clone())
            .stderr(stderr.clone());
        let manifest = self.epoch.manifest();
        b.args(&manifest.argv);
        for (k, v) in &manifest.env {
            b.env(k, v);
        }
        let time = match t.clock {
            EpochMode::Pinned => {
                let vt = VirtualTime::new(self.epoch.instant_ns, manifest.clock_step_ns);
                b.wall_clock(PinnedWallClock(vt.clone()))
                    .monotonic_clock(PinnedMonotonicClock(vt.clone()));
                Some(vt)
            }
            EpochMode::Live => None,
        };
        if t.random == EpochMode::Pinned {
            b.secure_random(self.rng_secure.clone())
                .insecure_random(self.rng_insecure.clone())
                .insecure_random_seed(u128::from(self.epoch.random_seed));
        }
        for (dir, guest) in &t.preopens {
            b.preopened_dir(dir, guest, FsPerms::ReadOnly)
                .map_err(|e| format!("failed to preopen `{}`: {e:#}", dir.display()))?;
        }
        Ok((b, time))
    }

    /// The call's memory limit, as the limiter a store holds it to.
    fn limiter(&self, limits: &Limits) -> Limiter {
        Limiter::new(
            (limits.memory_mb.min(self.config.max_memory_mb) as usize).saturating_mul(1 << 20),
        )
    }

    /// The call's fuel, and its wall-time limit as an epoch deadline.
    fn arm<T>(&self, store: &mut Store<T>, limits: &Limits) -> std::result::Result<(), String> {
        store
            .set_fuel(limits.fuel)
            .map_err(|e| format!("failed to set fuel: {e:#}"))?;
        let tick_ms = self.config.tick.as_millis().max(1) as u64;
        store.set_epoch_deadline(limits.wall_ms.div_ceil(tick_ms) + 1);
        Ok(())
    }

    /// A fresh store for one core-module call, holding it to the call's memory, fuel and
    /// wall-time limits. `Err` is a host failure's detail.
    fn store(
        &self,
        wasi: wasmtime_wasi::p1::WasiP1Ctx,
        time: Option<Arc<VirtualTime>>,
        live_mounts: bool,
        limits: &Limits,
        start: Instant,
    ) -> std::result::Result<Store<Ctx>, String> {
        let ctx = Ctx {
            wasi,
            limiter: self.limiter(limits),
            time,
            instant_ns: FILE_TIME_NS,
            readdir: Vec::new(),
            deadline: start + Duration::from_millis(limits.wall_ms),
            open_files: Default::default(),
            live_mounts,
        };
        let mut store = Store::new(&self.engine, ctx);
        store.limiter(|c| &mut c.limiter);
        self.arm(&mut store, limits)?;
        Ok(store)
    }
}

/// How a call's instance ended, before its outcome is told.
struct Ran {
    result: wasmtime::Result<()>,
    fuel_used: u64,
    memory_hit: bool,
    /// A typed function's return as the call's stdout, and its exit code (1 for an
    /// `err` or arguments that do not fit).
    returned: Option<(Vec<u8>, i32)>,
}

/// stdout and stderr cut at `cap`, and whether either went over it.
fn cut_output(
    stdout: &MemoryOutputPipe,
    stderr: &MemoryOutputPipe,
    cap: usize,
) -> (Vec<u8>, Vec<u8>, bool) {
    let mut out = stdout.contents().to_vec();
    let mut err = stderr.contents().to_vec();
    let over = out.len() > cap || err.len() > cap;
    out.truncate(cap);
    err.truncate(cap);
    (out, err, over)
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        self.ticker_stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.ticker.take() {
            let _ = t.join();
        }
    }
}

fn same_dir(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

fn classify(result: wasmtime::Result<()>, memory_hit: bool) -> (Outcome, Option<String>) {
    let e = match result {
        Ok(()) => return (Outcome::Exit { code: 0 }, None),
        Err(e) => e,
    };
    if let Some(exit) = e.downcast_ref::<I32Exit>() {
        return (Outcome::Exit { code: exit.0 }, None);
    }
    if memory_hit || e.downcast_ref::<MemoryLimitHit>().is_some() || table_full(&e) {
        return (Outcome::MemoryLimit, None);
    }
    match e.downcast_ref::<Trap>() {
        Some(Trap::OutOfFuel) => (Outcome::OutOfFuel, None),
        Some(Trap::Interrupt) => (Outcome::Timeout, None),
        Some(trap) => {
            let kind = TrapKind::of(*trap);
            let detail = (kind == TrapKind::OtherTrap).then(|| format!("{e:#}"));
            (Outcome::Trap { kind }, detail)
        }
        None => (
            Outcome::Trap {
                kind: TrapKind::Host,
            },
            Some(format!("{e:#}")),
        ),
    }
}

/// Whether the call's resource table ran out of entries (see
/// [`crate::component`]'s `MAX_HOST_RESOURCES`): host memory, so a `memory_limit`.
fn table_full(e: &wasmtime::Error) -> bool {
    e.chain().any(|c| {
        matches!(
            c.downcast_ref::<ResourceTableError>(),
            Some(ResourceTableError::Full)
        )
    })
}

fn host_failure(start: Instant, detail: String) -> CallRecord {
    CallRecord {
        outcome: Outcome::Trap {
            kind: TrapKind::Host,
        },
        exit_code: None,
        stdout: Vec::new(),
        stderr: Vec::new(),
        fuel_used: 0,
        wall: start.elapsed(),
        detail: Some(detail),
    }
}

// The harness shares one sandbox and its tools across a thread pool.
const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Sandbox>();
    assert_send_sync::<Tool>();
};
