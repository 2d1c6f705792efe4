//! WASI 0.2 components in the sandbox (docs/design.md, "Components"): the store a
//! component call runs in, the linker (WASI 0.2 and wasi:http, with the epoch's own
//! stat, readdir, open and sleep in place of wasmtime-wasi's), and the two shapes a
//! component tool takes: a command (`wasi:cli/run`, the JSON-on-stdin ABI of core
//! modules) or a typed function, called with the JSON arguments through [`crate::wit`].
//! Everything a core module's epoch pins is pinned here too, by the same `Epoch`.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Instant;

use wasmtime::component::types::{ComponentItem, Type};
use wasmtime::component::{
    Component, ComponentExportIndex, InstancePre, Linker, Resource, ResourceTable,
};
use wasmtime::{Engine, StoreContextMut};
use wasmtime_wasi::filesystem::WasiFilesystemView as _;
use wasmtime_wasi::p2::bindings::sync::CommandPre;
use wasmtime_wasi::p2::bindings::sync::filesystem::types as fst;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

use crate::network::Hooks;
use crate::pinned::VirtualTime;
use crate::scrub::MAX_OPEN_FILES;
use crate::store::Limiter;

/// The WASI release wasmtime-wasi 48 links: shadowing at exactly this version covers
/// guests that import any 0.2.x (the linker matches 0.2 imports to the newest 0.2).
const WASI: &str = "0.2.12";

/// The most entries one call's resource table holds (streams, pollables, header maps,
/// open files, requests...): a million by default, each a host allocation a guest can
/// make in a few instructions. Past it the call ends as `memory_limit`.
pub(crate) const MAX_HOST_RESOURCES: usize = 10_000;

/// The data of one component call's store: its WASI and HTTP contexts, limits, clock
/// and what the shadowed filesystem calls remember.
pub(crate) struct ComponentStoreData {
    pub(crate) wasi: WasiCtx,
    pub(crate) table: ResourceTable,
    pub(crate) http: WasiHttpCtx,
    pub(crate) hooks: Hooks,
    pub(crate) limiter: Limiter,
    /// The call's virtual time; `None` when the tool's clock is live.
    pub(crate) time: Option<Arc<VirtualTime>>,
    /// What every timestamp a guest reads from `stat` says.
    pub(crate) instant_ns: u64,
    /// When the call's wall time is up: a live sleep never runs past it.
    pub(crate) deadline: Instant,
    /// The live monotonic clock's origin (read only when the clock is live).
    started: LiveMonotonic,
    /// The sorted entries of each directory stream the guest is reading.
    readdir: HashMap<u32, VecDeque<fst::DirectoryEntry>>,
    /// Host metadata hashes as the guest sees them: numbered in first-seen order.
    hash_ids: HashMap<(u64, u64), u64>,
}

impl ComponentStoreData {
    pub(crate) fn new(
        wasi: WasiCtx,
        hooks: Hooks,
        limiter: Limiter,
        time: Option<Arc<VirtualTime>>,
        instant_ns: u64,
        deadline: Instant,
        started: LiveMonotonic,
    ) -> ComponentStoreData {
        let mut table = ResourceTable::new();
        table.set_max_capacity(MAX_HOST_RESOURCES);
        ComponentStoreData {
            started,
            wasi,
            table,
            http: WasiHttpCtx::new(),
            hooks,
            limiter,
            time,
            instant_ns,
            deadline,
            readdir: HashMap::new(),
            hash_ids: HashMap::new(),
        }
    }
}

impl WasiView for ComponentStoreData {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl WasiHttpView for ComponentStoreData {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            ctx: &mut self.http,
            table: &mut self.table,
            hooks: &mut self.hooks,
        }
    }
}

impl crate::bounded::Bounded for ComponentStoreData {
    fn resources(&mut self) -> &mut ResourceTable {
        &mut self.table
    }

    fn deadline(&self) -> Instant {
        self.deadline
    }

    fn limiter(&mut self) -> &mut Limiter {
        &mut self.limiter
    }
}

/// The linker every component of a sandbox is instantiated through.
pub(crate) fn linker(engine: &Engine) -> wasmtime::Result<Linker<ComponentStoreData>> {
    let mut linker: Linker<ComponentStoreData> = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_sync(&mut linker)?;
    wasmtime_wasi_http::p2::add_only_http_to_linker_sync(&mut linker)?;
    linker.allow_shadowing(true);
    shadow_filesystem(&mut linker)?;
    shadow_sleep(&mut linker)?;
    crate::bounded::shadow(&mut linker)?;
    Ok(linker)
}

/// Every timestamp of a stat is the epoch instant and a directory's size is 0, as for
/// core modules: what the host's filesystem says of them differs from one to another.
fn pin_stat(s: &mut fst::DescriptorStat, instant_ns: u64) {
    if s.type_ == fst::DescriptorType::Directory {
        s.size = 0;
    }
    let t = Some(fst::Datetime {
        seconds: instant_ns / 1_000_000_000,
        nanoseconds: (instant_ns % 1_000_000_000) as u32,
    });
    s.data_access_timestamp = t;
    s.data_modification_timestamp = t;
    s.status_change_timestamp = t;
    s.link_count = 1;
}

/// A host metadata hash (device and inode, machine-dependent) as a number in the order
/// the call first met it.
fn hash_id(c: &mut ComponentStoreData, v: fst::MetadataHashValue) -> fst::MetadataHashValue {
    let n = c.hash_ids.len() as u64 + 1;
    let id = *c.hash_ids.entry((v.lower, v.upper)).or_insert(n);
    fst::MetadataHashValue {
        lower: id,
        upper: 0,
    }
}

type Fd = Resource<fst::Descriptor>;
type FsOut<T> = wasmtime::Result<(Result<T, fst::ErrorCode>,)>;

/// Runs wasmtime-wasi's own `f` on the call's filesystem view, its error as the guest
/// sees it.
fn fs<T>(
    c: &mut ComponentStoreData,
    f: impl FnOnce(
        &mut wasmtime_wasi::filesystem::WasiFilesystemCtxView<'_>,
    ) -> wasmtime_wasi::p2::FsResult<T>,
) -> wasmtime::Result<Result<T, fst::ErrorCode>> {
    let mut v = c.filesystem();
    match f(&mut v) {
        Ok(x) => Ok(Ok(x)),
        Err(e) => Ok(Err(fst::Host::convert_error_code(&mut v, e)?)),
    }
}

/// stat, metadata hashes, directory listings and opens, as the epoch pins them: times
/// are the epoch instant, hashes are numbered, listings are sorted by name, and an open
/// of anything but a file or a directory (a FIFO would block the host thread for good)
/// or past the per-call cap is refused.
fn shadow_filesystem(linker: &mut Linker<ComponentStoreData>) -> wasmtime::Result<()> {
    let mut i = linker.instance(&format!("wasi:filesystem/types@{WASI}"))?;
    i.func_wrap(
        "[method]descriptor.stat",
        |mut st: StoreContextMut<'_, ComponentStoreData>,
         (fd,): (Fd,)|
         -> FsOut<fst::DescriptorStat> {
            let c = st.data_mut();
            let instant = c.instant_ns;
            let r = fs(c, |v| fst::HostDescriptor::stat(v, fd))?;
            Ok((r.map(|mut s| {
                pin_stat(&mut s, instant);
                s
            }),))
        },
    )?;
    i.func_wrap(
        "[method]descriptor.stat-at",
        |mut st: StoreContextMut<'_, ComponentStoreData>,
         (fd, flags, path): (Fd, fst::PathFlags, String)|
         -> FsOut<fst::DescriptorStat> {
            let c = st.data_mut();
            let instant = c.instant_ns;
            let r = fs(c, |v| fst::HostDescriptor::stat_at(v, fd, flags, path))?;
            Ok((r.map(|mut s| {
                pin_stat(&mut s, instant);
                s
            }),))
        },
    )?;
    i.func_wrap(
        "[method]descriptor.metadata-hash",
        |mut st: StoreContextMut<'_, ComponentStoreData>,
         (fd,): (Fd,)|
         -> FsOut<fst::MetadataHashValue> {
            let c = st.data_mut();
            let r = fs(c, |v| fst::HostDescriptor::metadata_hash(v, fd))?;
            Ok((r.map(|h| hash_id(c, h)),))
        },
    )?;
    i.func_wrap(
        "[method]descriptor.metadata-hash-at",
        |mut st: StoreContextMut<'_, ComponentStoreData>,
         (fd, flags, path): (Fd, fst::PathFlags, String)|
         -> FsOut<fst::MetadataHashValue> {
            let c = st.data_mut();
            let r = fs(c, |v| {
                fst::HostDescriptor::metadata_hash_at(v, fd, flags, path)
            })?;
            Ok((r.map(|h| hash_id(c, h)),))
        },
    )?;
    shadow_listing_and_open(linker)
}

/// Listings sorted by name, and opens refused for what is not a file or a directory
/// (a FIFO would block the host thread for good) or past the per-call cap.
fn shadow_listing_and_open(linker: &mut Linker<ComponentStoreData>) -> wasmtime::Result<()> {
    let mut i = linker.instance(&format!("wasi:filesystem/types@{WASI}"))?;
    i.func_wrap(
        "[method]descriptor.read-directory",
        |mut st: StoreContextMut<'_, ComponentStoreData>,
         (fd,): (Fd,)|
         -> FsOut<Resource<fst::DirectoryEntryStream>> {
            let c = st.data_mut();
            let listed = fs(c, |v| {
                let stream = fst::HostDescriptor::read_directory(v, fd)?;
                let mut entries = Vec::new();
                loop {
                    let again = Resource::<fst::DirectoryEntryStream>::new_borrow(stream.rep());
                    match fst::HostDirectoryEntryStream::read_directory_entry(v, again)? {
                        Some(e) => entries.push(e),
                        None => break,
                    }
                }
                Ok((stream, entries))
            })?;
            Ok((listed.map(|(stream, mut entries)| {
                entries.sort_by(|a, b| a.name.cmp(&b.name));
                c.readdir.insert(stream.rep(), entries.into());
                stream
            }),))
        },
    )?;
    i.func_wrap(
        "[method]directory-entry-stream.read-directory-entry",
        |mut st: StoreContextMut<'_, ComponentStoreData>,
         (s,): (Resource<fst::DirectoryEntryStream>,)|
         -> FsOut<Option<fst::DirectoryEntry>> {
            let next = (st.data_mut().readdir.get_mut(&s.rep())).and_then(VecDeque::pop_front);
            Ok((Ok(next),))
        },
    )?;
    i.func_wrap(
        "[method]descriptor.open-at",
        |mut st: StoreContextMut<'_, ComponentStoreData>,
         (fd, flags, path, open, dflags): (
            Fd,
            fst::PathFlags,
            String,
            fst::OpenFlags,
            fst::DescriptorFlags,
        )|
         -> FsOut<Fd> {
            let c = st.data_mut();
            let open_now = (c.table.iter_mut())
                .filter(|e| e.is::<wasmtime_wasi::filesystem::Descriptor>())
                .count();
            if open_now >= MAX_OPEN_FILES {
                return Ok((Err(fst::ErrorCode::InsufficientMemory),));
            }
            let probe = Resource::<fst::Descriptor>::new_borrow(fd.rep());
            let kind = fs(c, |v| {
                fst::HostDescriptor::stat_at(v, probe, flags, path.clone())
            })?;
            if let Ok(s) = kind
                && !matches!(
                    s.type_,
                    fst::DescriptorType::RegularFile | fst::DescriptorType::Directory
                )
            {
                return Ok((Err(fst::ErrorCode::Access),));
            }
            Ok((fs(c, |v| {
                fst::HostDescriptor::open_at(v, fd, flags, path, open, dflags)
            })?,))
        },
    )?;
    Ok(())
}

/// A sleep: on a pinned clock it moves the call's virtual time to its end and is ready
/// at once; on a live clock it waits until its end, on the host's clock. A wait past the
/// call's deadline is cut there and ends the call as a `timeout` (see `bounded`), so a
/// guest never runs on after a sleep that did not happen.
struct Sleep {
    /// The call's virtual time, and the virtual elapsed nanoseconds the sleep ends at.
    pinned: Option<(Arc<VirtualTime>, u64)>,
    /// When a live sleep ends.
    live: Instant,
}

#[wasmtime_wasi::async_trait]
impl wasmtime_wasi::p2::Pollable for Sleep {
    async fn ready(&mut self) {
        match &self.pinned {
            Some((t, until)) => t.advance(until.saturating_sub(t.peek())),
            None => tokio::time::sleep_until(self.live.into()).await,
        }
    }
}

fn shadow_sleep(linker: &mut Linker<ComponentStoreData>) -> wasmtime::Result<()> {
    type Pollable = Resource<wasmtime_wasi::p2::DynPollable>;
    let sleep = |c: &mut ComponentStoreData,
                 until_virtual: u64,
                 live_ns: u64|
     -> wasmtime::Result<Pollable> {
        let now = Instant::now();
        let s = Sleep {
            pinned: c.time.clone().map(|t| (t, until_virtual)),
            // Past any deadline: `Instant` cannot hold every u64 of nanoseconds.
            live: now
                .checked_add(std::time::Duration::from_nanos(live_ns))
                .unwrap_or(c.deadline.max(now) + std::time::Duration::from_secs(1)),
        };
        let r = c.table.push(s)?;
        wasmtime_wasi::p2::subscribe(&mut c.table, r)
    };
    let mut i = linker.instance(&format!("wasi:clocks/monotonic-clock@{WASI}"))?;
    i.func_wrap(
        "subscribe-duration",
        move |mut st: StoreContextMut<'_, ComponentStoreData>,
              (ns,): (u64,)|
              -> wasmtime::Result<(Pollable,)> {
            let c = st.data_mut();
            let now = c.time.as_ref().map_or(0, |t| t.peek());
            Ok((sleep(c, now.saturating_add(ns), ns)?,))
        },
    )?;
    i.func_wrap(
        "subscribe-instant",
        move |mut st: StoreContextMut<'_, ComponentStoreData>,
              (when,): (u64,)|
              -> wasmtime::Result<(Pollable,)> {
            let c = st.data_mut();
            // `when` is on the monotonic clock the guest reads: elapsed time past its base.
            let (until, live) = match &c.time {
                Some(t) => {
                    let base = t.monotonic_ns_at(0);
                    (when.saturating_sub(base), 0)
                }
                None => {
                    use wasmtime_wasi::HostMonotonicClock as _;
                    (0, when.saturating_sub(c.started.now()))
                }
            };
            Ok((sleep(c, until, live)?,))
        },
    )?;
    Ok(())
}

/// The monotonic clock a live-clock component reads: the host's, from the call's start,
/// kept here too so that a sleep until an instant knows how long to wait.
#[derive(Clone, Copy)]
pub(crate) struct LiveMonotonic(pub(crate) Instant);

impl wasmtime_wasi::HostMonotonicClock for LiveMonotonic {
    fn resolution(&self) -> u64 {
        1
    }

    fn now(&self) -> u64 {
        u64::try_from(self.0.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }
}

/// How a component tool is called.
pub(crate) enum Shape {
    /// `wasi:cli/run`: arguments on stdin, the result on stdout.
    Command(CommandPre<ComponentStoreData>),
    /// A typed function, with its parameters and result type.
    Export {
        pre: InstancePre<ComponentStoreData>,
        func: ComponentExportIndex,
        params: Vec<(String, Type)>,
        result: Option<Type>,
    },
}

/// Why a component cannot be a tool as the catalog names it.
pub(crate) fn shape(
    engine: &Engine,
    linker: &Linker<ComponentStoreData>,
    component: &Component,
    export: Option<&str>,
) -> Result<Shape, String> {
    let pre = linker
        .instantiate_pre(component)
        .map_err(|e| format!("{e:#}"))?;
    let Some(name) = export else {
        return CommandPre::new(pre).map(Shape::Command).map_err(|_| {
            let names: Vec<String> = functions(engine, component)
                .into_iter()
                .map(|f| f.name)
                .collect();
            format!(
                "it exports no wasi:cli/run, so the catalog entry must name the function to \
                 call with `export` (it exports: {})",
                if names.is_empty() {
                    "no function".to_string()
                } else {
                    names.join(", ")
                }
            )
        });
    };
    let found = functions(engine, component)
        .into_iter()
        .find(|f| f.name == name || f.full_name == name);
    let Some(f) = found else {
        let all = functions(engine, component);
        let names: Vec<&str> = all.iter().map(|f| f.name.as_str()).collect();
        let shared: Vec<&str> = (all.iter())
            .filter(|f| f.name == f.full_name && short_name(&f.full_name) == name)
            .map(|f| f.full_name.as_str())
            .collect();
        if shared.len() > 1 {
            return Err(format!(
                "`{name}` is ambiguous: interfaces of one short name export it ({}); name \
                 one by its whole name",
                shared.join(", ")
            ));
        }
        return Err(format!(
            "it exports no function `{name}` (it exports: {})",
            names.join(", ")
        ));
    };
    if let Some(why) = &f.unsupported {
        return Err(format!("`{name}` cannot be called with JSON: {why}"));
    }
    let func = match &f.interface {
        Some(iface) => {
            let (_, instance) = component
                .get_export(None, iface.as_str())
                .ok_or_else(|| format!("no exported interface {iface}"))?;
            component.get_export_index(Some(&instance), f.func.as_str())
        }
        None => component.get_export_index(None, f.func.as_str()),
    }
    .ok_or_else(|| format!("no export `{name}`"))?;
    Ok(Shape::Export {
        pre,
        func,
        params: f.params,
        result: f.result,
    })
}

/// A function a component exports, as a tool would call it.
pub(crate) struct ExportedFunction {
    /// The tool name: the function's WIT name, `iface.` before it inside an interface
    /// (`iface` is the interface's name without its package and version), or its whole
    /// name where another function has the same short one.
    pub(crate) name: String,
    /// The same with the interface's whole name (`pkg:ns/iface@1.0.0.func`).
    pub(crate) full_name: String,
    /// The exported interface it is in, if any (its whole name).
    interface: Option<String>,
    /// The function's own name.
    func: String,
    /// Its parameters, by name.
    pub(crate) params: Vec<(String, Type)>,
    /// Its result, if it has one.
    pub(crate) result: Option<Type>,
    /// Why it cannot be called with JSON (it takes or returns a resource, ...).
    pub(crate) unsupported: Option<String>,
}

/// A function's short name from its whole one: `pkg:ns/iface@1.0.0.func` is
/// `iface.func` (the interface's name without its package and version).
fn short_name(full_name: &str) -> String {
    let tail = full_name.rsplit_once('/').map_or(full_name, |(_, t)| t);
    match tail.split_once('@') {
        // The version's dots end where the function's name begins: after the last dot.
        Some((iface, version)) => {
            let func = version.rsplit_once('.').map_or(version, |(_, f)| f);
            format!("{iface}.{func}")
        }
        None => tail.to_string(),
    }
}

/// Interfaces toolchains export for themselves, not for callers: componentize-py's
/// `init` among them.
fn internal(interface: &str) -> bool {
    interface.contains("componentize-py") || interface == "exports"
}

/// Every function a component exports, at its top level and inside exported
/// interfaces, in export order. Resource constructors and methods are not tools.
pub(crate) fn functions(engine: &Engine, component: &Component) -> Vec<ExportedFunction> {
    let mut out = Vec::new();
    let mut push =
        |interface: Option<&str>, func: &str, f: &wasmtime::component::types::ComponentFunc| {
            if func.starts_with('[') {
                return;
            }
            let params: Vec<(String, Type)> = f.params().map(|(n, t)| (n.to_string(), t)).collect();
            let result = f.results().next();
            let unsupported = (params.iter())
                .find_map(|(n, t)| crate::wit::unsupported(t, &format!("parameter {n}")))
                .or_else(|| {
                    result
                        .as_ref()
                        .and_then(|t| crate::wit::unsupported(t, "its result"))
                });
            let full_name = match interface {
                Some(i) => format!("{i}.{func}"),
                None => func.to_string(),
            };
            out.push(ExportedFunction {
                name: short_name(&full_name),
                full_name,
                interface: interface.map(str::to_string),
                func: func.to_string(),
                params,
                result,
                unsupported,
            });
        };
    let ty = component.component_type();
    for (name, ext) in ty.exports(engine) {
        match &ext.ty {
            ComponentItem::ComponentFunc(f) => push(None, name, f),
            ComponentItem::ComponentInstance(i)
                if !name.starts_with("wasi:") && !internal(name) =>
            {
                for (func, e) in i.exports(engine) {
                    if let ComponentItem::ComponentFunc(f) = &e.ty {
                        push(Some(name), func, f);
                    }
                }
            }
            _ => {}
        }
    }
    // A short name two functions share (`api.f` from `a:x/api` and `b:y/api`) names
    // neither of them: each is named by its whole name.
    let mut seen = HashMap::new();
    for f in &out {
        *seen.entry(f.name.clone()).or_insert(0) += 1;
    }
    for f in &mut out {
        if seen[&f.name] > 1 {
            f.name = f.full_name.clone();
        }
    }
    out
}

/// The JSON arguments on a typed call's stdin as the function's parameters.
pub(crate) fn arguments(
    stdin: &[u8],
    params: &[(String, Type)],
) -> Result<Vec<wasmtime::component::Val>, crate::wit::ArgError> {
    let json: serde_json::Value =
        serde_json::from_slice(stdin).map_err(|e| crate::wit::ArgError {
            path: "$".into(),
            message: format!("the arguments are not JSON: {e}"),
        })?;
    crate::wit::arguments(&json, params)
}

/// The tool ABI's error envelope, `{"error": {"kind": …, "message": …}}`.
pub(crate) fn error_envelope(kind: &str, message: &str) -> Vec<u8> {
    serde_json::to_vec(&crate::wit::envelope(kind, message)).expect("an envelope serializes")
}

/// Calls a typed function: its return as the call's stdout and exit code. A `result`
/// is the call's own: `ok` is the result, `err` the call's error envelope
/// ([`crate::wit::call_error`]: `not_found`, `tool_error` or the envelope the
/// tool wrote), exit 1.
pub(crate) fn call(
    store: &mut wasmtime::Store<ComponentStoreData>,
    pre: &InstancePre<ComponentStoreData>,
    func: &ComponentExportIndex,
    args: &[wasmtime::component::Val],
    result: Option<&Type>,
) -> wasmtime::Result<(Vec<u8>, i32)> {
    use wasmtime::component::Val;
    let instance = pre.instantiate(&mut *store)?;
    let f = instance
        .get_func(&mut *store, func)
        .ok_or_else(|| wasmtime::format_err!("the function is gone from its instance"))?;
    let mut out = vec![Val::Bool(false); usize::from(result.is_some())];
    f.call(&mut *store, args, &mut out)?;
    let json = |v: &Val, t: &Type| {
        serde_json::to_vec(&crate::wit::to_json(v, t)).expect("JSON serializes")
    };
    Ok(match (out.first(), result) {
        (Some(Val::Result(r)), Some(Type::Result(rt))) => match r {
            Ok(v) => match (v, rt.ok()) {
                (Some(v), Some(t)) => (json(v, &t), 0),
                _ => (b"null".to_vec(), 0),
            },
            Err(e) => {
                let envelope = crate::wit::call_error(e.as_deref(), rt.err().as_ref());
                (serde_json::to_vec(&envelope).expect("JSON serializes"), 1)
            }
        },
        (Some(v), Some(t)) => (json(v, t), 0),
        _ => (b"null".to_vec(), 0),
    })
}
