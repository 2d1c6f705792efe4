//! Shadows WASI preview1 imports where wasmtime-wasi's own would let a guest see host
//! metadata, really sleep, or reach past what one call may use of the host:
//! `fd_filestat_get` and `path_filestat_get` (times, dev/ino, nlink, directory sizes),
//! `fd_readdir` (order and inode numbers) and `poll_oneoff` (sleep, and a bounded
//! subscription count) are scrubbed; `path_open`, `fd_close` and `fd_renumber` keep a
//! per-call count of open files, and `path_open` refuses what the host cannot open
//! without blocking (FIFOs, sockets, devices).
//!
//! wasmtime-wasi's generated host functions look up the *calling instance's* `memory`
//! export, so a wrapper cannot simply call them. It can call the trait methods behind
//! them with a memory of its own choosing, though: the guest's memory for stat and open,
//! a host scratch buffer for readdir and poll, then rewrite what they return. No
//! trampoline module and no second instance are needed.

use std::time::Instant;

use wasmtime::{Caller, Extern, Linker, Memory};
use wasmtime_wasi::p1::types;
use wasmtime_wasi::p1::wasi_snapshot_preview1::WasiSnapshotPreview1;
use wasmtime_wasi::runtime::in_tokio;
use wiggle::{GuestMemory, GuestPtr};

use crate::store::{Ctx, DirEntry};

const MODULE: &str = "wasi_snapshot_preview1";
const DIRENT_SIZE: usize = 24;
const SUBSCRIPTION_SIZE: u32 = 48;
const EVENT_SIZE: u32 = 32;

/// How many files and directories one call may hold open besides its stdio and mounts.
/// Each is a host fd, and the host's fds are shared by every call in flight: a tool that
/// opened files until the host ran out made other tools' calls in the same batch fail.
/// 256 is far more than a tool reading its mounts needs; times the default
/// `max_concurrent_calls` (4 per core) it is a few thousand fds, inside the process
/// limit once [`crate::raise_fd_limit`] has raised it. Past it the guest's open fails
/// with `mfile`, as at any OS's limit.
pub const MAX_OPEN_FILES: usize = 256;

/// The most subscriptions one `poll_oneoff` may pass. The count comes from the guest and
/// sizes host buffers before anything else is read: unchecked, `u32::MAX` asks the host
/// for hundreds of GiB and the process aborts. Real guests pass a handful. Past it the
/// call fails with `inval`.
pub const MAX_POLL_SUBSCRIPTIONS: u32 = 4096;

/// Replaces the imports on a linker that already holds wasmtime-wasi's preview1.
pub(crate) fn shadow(linker: &mut Linker<Ctx>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    linker.func_wrap(MODULE, "fd_filestat_get", fd_filestat_get)?;
    linker.func_wrap(MODULE, "path_filestat_get", path_filestat_get)?;
    linker.func_wrap(MODULE, "fd_readdir", fd_readdir)?;
    linker.func_wrap(MODULE, "poll_oneoff", poll_oneoff)?;
    linker.func_wrap(MODULE, "path_open", path_open)?;
    linker.func_wrap(MODULE, "fd_close", fd_close)?;
    linker.func_wrap(MODULE, "fd_renumber", fd_renumber)?;
    linker.allow_shadowing(false);
    Ok(())
}

fn memory(caller: &mut Caller<'_, Ctx>) -> wasmtime::Result<Memory> {
    match caller.get_export("memory") {
        Some(Extern::Memory(m)) => Ok(m),
        _ => Err(wasmtime::format_err!("missing required memory export")),
    }
}

/// An errno for the guest, or a trap for the host (what wiggle's glue does).
fn errno(e: types::Error) -> wasmtime::Result<i32> {
    match e.downcast() {
        Ok(errno) => Ok(errno as i32),
        Err(trap) => Err(trap),
    }
}

fn guest_errno(e: wiggle::GuestError) -> wasmtime::Result<i32> {
    errno(types::Error::from(e))
}

/// Pins everything in a stat that differs between two faithful copies of a tree.
/// Times become the epoch instant; dev/ino 0; nlink 1; a directory's size 0. The file
/// type and a regular file's size stay: they are content.
fn scrub_stat(stat: &mut types::Filestat, instant_ns: u64) {
    stat.dev = 0;
    stat.ino = 0;
    stat.nlink = 1;
    if stat.filetype != types::Filetype::RegularFile {
        stat.size = 0;
    }
    stat.atim = instant_ns;
    stat.mtim = instant_ns;
    stat.ctim = instant_ns;
}

fn fd_filestat_get(mut caller: Caller<'_, Ctx>, fd: i32, buf: i32) -> wasmtime::Result<i32> {
    let mem = memory(&mut caller)?;
    let (data, ctx) = mem.data_and_store_mut(&mut caller);
    let mut gm = GuestMemory::Unshared(data);
    let stat = in_tokio(WasiSnapshotPreview1::fd_filestat_get(
        &mut ctx.wasi,
        &mut gm,
        types::Fd::from(fd),
    ));
    write_scrubbed(&mut gm, stat, ctx.instant_ns, buf)
}

/// Hands the guest what a stat call found, scrubbed, or the call's errno.
fn write_scrubbed(
    gm: &mut GuestMemory<'_>,
    stat: Result<types::Filestat, types::Error>,
    instant_ns: u64,
    buf: i32,
) -> wasmtime::Result<i32> {
    match stat {
        Ok(mut stat) => {
            scrub_stat(&mut stat, instant_ns);
            match gm.write(GuestPtr::new(buf as u32), stat) {
                Ok(()) => Ok(0),
                Err(e) => guest_errno(e),
            }
        }
        Err(e) => errno(e),
    }
}

fn path_filestat_get(
    mut caller: Caller<'_, Ctx>,
    fd: i32,
    flags: i32,
    path: i32,
    path_len: i32,
    buf: i32,
) -> wasmtime::Result<i32> {
    let flags = match types::Lookupflags::try_from(flags) {
        Ok(f) => f,
        Err(e) => return guest_errno(e),
    };
    let mem = memory(&mut caller)?;
    let (data, ctx) = mem.data_and_store_mut(&mut caller);
    let mut gm = GuestMemory::Unshared(data);
    let stat = in_tokio(WasiSnapshotPreview1::path_filestat_get(
        &mut ctx.wasi,
        &mut gm,
        types::Fd::from(fd),
        flags,
        GuestPtr::new((path as u32, path_len as u32)),
    ));
    write_scrubbed(&mut gm, stat, ctx.instant_ns, buf)
}

/// The flag words of a `path_open`, checked as wiggle's glue checks them.
struct OpenArgs {
    dirflags: types::Lookupflags,
    oflags: types::Oflags,
    base: types::Rights,
    inheriting: types::Rights,
    fdflags: types::Fdflags,
}

impl OpenArgs {
    fn parse(
        dirflags: i32,
        oflags: i32,
        base: i64,
        inheriting: i64,
        fdflags: i32,
    ) -> Result<Self, wiggle::GuestError> {
        Ok(Self {
            dirflags: types::Lookupflags::try_from(dirflags)?,
            oflags: types::Oflags::try_from(oflags)?,
            base: types::Rights::try_from(base)?,
            inheriting: types::Rights::try_from(inheriting)?,
            fdflags: types::Fdflags::try_from(fdflags)?,
        })
    }
}

/// wasmtime-wasi's `path_open`, with a per-call bound on open files and, for a tool with
/// a live mount, nothing opened that is not a regular file or a directory (see
/// [`refuse_special`]).
#[expect(clippy::too_many_arguments, reason = "the preview1 signature")]
fn path_open(
    mut caller: Caller<'_, Ctx>,
    fd: i32,
    dirflags: i32,
    path: i32,
    path_len: i32,
    oflags: i32,
    rights_base: i64,
    rights_inheriting: i64,
    fdflags: i32,
    opened: i32,
) -> wasmtime::Result<i32> {
    let args = match OpenArgs::parse(dirflags, oflags, rights_base, rights_inheriting, fdflags) {
        Ok(a) => a,
        Err(e) => return guest_errno(e),
    };
    let mem = memory(&mut caller)?;
    let (data, ctx) = mem.data_and_store_mut(&mut caller);
    if ctx.open_files.len() >= MAX_OPEN_FILES {
        return Ok(types::Errno::Mfile as i32);
    }
    let mut gm = GuestMemory::Unshared(data);
    let dir = types::Fd::from(fd);
    let path = GuestPtr::new((path as u32, path_len as u32));
    // A stat per open, paid only where a special file can be: a snapshot has none (the
    // walk refuses an epoch over one), and the stat cost pinned tools a host round trip
    // of three syscalls per file they read.
    if ctx.live_mounts
        && let Some(refused) = refuse_special(&mut ctx.wasi, &mut gm, dir, args.dirflags, path)
    {
        return Ok(refused as i32);
    }
    let new = in_tokio(WasiSnapshotPreview1::path_open(
        &mut ctx.wasi,
        &mut gm,
        dir,
        args.dirflags,
        path,
        args.oflags,
        args.base,
        args.inheriting,
        args.fdflags,
    ));
    match new {
        Ok(new) => {
            ctx.open_files.insert(u32::from(new));
            match gm.write(GuestPtr::<types::Fd>::new(opened as u32), new) {
                Ok(()) => Ok(0),
                Err(e) => guest_errno(e),
            }
        }
        Err(e) => errno(e),
    }
}

/// Whether `path_open` refuses its target before wasmtime-wasi opens it. The host opens
/// by path and blocking: a FIFO with no writer blocks the thread in `openat` forever,
/// past the call's wall-time net (epoch interruption cannot stop a host call). So the
/// target is stat'ed first, following links as the guest's lookup flags say, and only
/// a regular file or a directory is opened (a symlink the guest does not follow is left
/// to the open, which refuses it without blocking; so is a target that does not exist).
///
/// Race: between this stat and the open, a host process with write access to a live
/// mount could swap a FIFO in, and that open would still block. A guest cannot do it
/// itself (its mounts are read-only and WASI has no mkfifo); wasmtime-wasi offers no
/// way to open by handle or with `O_NONBLOCK` that would close the gap.
fn refuse_special(
    wasi: &mut wasmtime_wasi::p1::WasiP1Ctx,
    gm: &mut GuestMemory<'_>,
    dir: types::Fd,
    flags: types::Lookupflags,
    path: GuestPtr<str>,
) -> Option<types::Errno> {
    let stat = in_tokio(WasiSnapshotPreview1::path_filestat_get(
        wasi, gm, dir, flags, path,
    ));
    match stat {
        Ok(st) => match st.filetype {
            types::Filetype::RegularFile
            | types::Filetype::Directory
            | types::Filetype::SymbolicLink => None,
            _ => Some(types::Errno::Nxio),
        },
        // The open meets the same error and reports it.
        Err(e) => match e.downcast() {
            Ok(_) => None,
            // wasmtime-wasi fails the stat of a socket as a host error (preview1 has
            // no code it maps one to): that is no file to open either.
            Err(_) => Some(types::Errno::Nxio),
        },
    }
}

fn fd_close(mut caller: Caller<'_, Ctx>, fd: i32) -> wasmtime::Result<i32> {
    let ctx = caller.data_mut();
    // fd_close reads no guest memory; an empty one stands in.
    let mut gm = GuestMemory::Unshared(&mut []);
    match in_tokio(WasiSnapshotPreview1::fd_close(
        &mut ctx.wasi,
        &mut gm,
        types::Fd::from(fd),
    )) {
        Ok(()) => {
            ctx.closed(fd as u32);
            Ok(0)
        }
        Err(e) => errno(e),
    }
}

fn fd_renumber(mut caller: Caller<'_, Ctx>, from: i32, to: i32) -> wasmtime::Result<i32> {
    let ctx = caller.data_mut();
    let mut gm = GuestMemory::Unshared(&mut []);
    match in_tokio(WasiSnapshotPreview1::fd_renumber(
        &mut ctx.wasi,
        &mut gm,
        types::Fd::from(from),
        types::Fd::from(to),
    )) {
        Ok(()) => {
            ctx.renumbered(from as u32, to as u32);
            Ok(0)
        }
        Err(e) => errno(e),
    }
}

/// Reads the whole directory through wasmtime-wasi into a scratch buffer, sorts it by
/// name ("." and ".." stay first) and serves the guest's cookie window from that list,
/// with d_ino 0 and d_next the sorted position. The list is cached per fd and renewed
/// whenever a guest starts over at cookie 0, so one listing costs one directory scan
/// rather than one per buffer refill.
fn fd_readdir(
    mut caller: Caller<'_, Ctx>,
    fd: i32,
    buf: i32,
    buf_len: i32,
    cookie: i64,
    bufused: i32,
) -> wasmtime::Result<i32> {
    let mem = memory(&mut caller)?;
    let (data, ctx) = mem.data_and_store_mut(&mut caller);
    let fd_u = fd as u32;
    let cached = ctx.readdir.iter().position(|(f, _)| *f == fd_u);
    let idx = match cached {
        Some(i) if cookie != 0 => i,
        _ => {
            let entries = match list_dir(&mut ctx.wasi, fd) {
                Ok(e) => e,
                Err(e) => return errno(e),
            };
            match cached {
                Some(i) => {
                    ctx.readdir[i].1 = entries;
                    i
                }
                None => {
                    ctx.readdir.push((fd_u, entries));
                    ctx.readdir.len() - 1
                }
            }
        }
    };
    let entries = &ctx.readdir[idx].1;
    let mut gm = GuestMemory::Unshared(data);
    // Same layout and truncation rule as wasmtime-wasi: entries are packed, and the
    // last one is cut at the buffer's end (the guest then knows to refill).
    let cap = buf_len as u32 as usize;
    let mut out = Vec::with_capacity(cap.min(64 << 10));
    let start = usize::try_from(cookie).unwrap_or(usize::MAX);
    for (i, e) in entries.iter().enumerate().skip(start) {
        if out.len() >= cap {
            break;
        }
        let mut dirent = [0u8; DIRENT_SIZE];
        dirent[0..8].copy_from_slice(&(i as u64 + 1).to_le_bytes());
        // d_ino (8..16) stays 0.
        dirent[16..20].copy_from_slice(&(e.name.len() as u32).to_le_bytes());
        dirent[20] = e.d_type;
        out.extend_from_slice(&dirent);
        out.extend_from_slice(&e.name);
    }
    out.truncate(cap);
    let dst = match gm.as_slice_mut(GuestPtr::<[u8]>::new((buf as u32, out.len() as u32))) {
        Ok(Some(s)) => s,
        Ok(None) => return Ok(types::Errno::Fault as i32),
        Err(e) => return guest_errno(e),
    };
    dst.copy_from_slice(&out);
    match gm.write(GuestPtr::<u32>::new(bufused as u32), out.len() as u32) {
        Ok(()) => Ok(0),
        Err(e) => guest_errno(e),
    }
}

fn list_dir(
    wasi: &mut wasmtime_wasi::p1::WasiP1Ctx,
    fd: i32,
) -> Result<Vec<DirEntry>, types::Error> {
    let mut size = 16usize << 10;
    let raw = loop {
        let mut scratch = vec![0u8; size];
        let used = {
            let mut gm = GuestMemory::Unshared(&mut scratch);
            in_tokio(WasiSnapshotPreview1::fd_readdir(
                wasi,
                &mut gm,
                types::Fd::from(fd),
                GuestPtr::new(0),
                size as u32,
                0,
            ))?
        } as usize;
        if used < size {
            scratch.truncate(used);
            break scratch;
        }
        size = size.saturating_mul(4);
    };
    let mut entries = Vec::new();
    let mut at = 0;
    while at + DIRENT_SIZE <= raw.len() {
        let namlen =
            u32::from_le_bytes(raw[at + 16..at + 20].try_into().expect("4 bytes")) as usize;
        let d_type = raw[at + 20];
        let name_at = at + DIRENT_SIZE;
        let name = raw[name_at..(name_at + namlen).min(raw.len())].to_vec();
        entries.push(DirEntry { d_type, name });
        at = name_at + namlen;
    }
    let dots = entries
        .iter()
        .take(2)
        .take_while(|e| e.name == b"." || e.name == b"..")
        .count();
    entries[dots..].sort_by(|a, b| a.name.cmp(&b.name));
    Ok(entries)
}

/// Virtual sleep: a clock subscription moves the call's virtual clock to its deadline
/// and fires at once. Subscriptions on fds (stdin, files) are always ready in this
/// sandbox, so when there are any they go to wasmtime-wasi without the clocks, and
/// their readiness is the answer. With a live clock, a sleep is real but cut off at the
/// call's wall-time deadline, so the timeout outcome still comes on time.
fn poll_oneoff(
    mut caller: Caller<'_, Ctx>,
    subs_ptr: i32,
    events_ptr: i32,
    nsubs: i32,
    nevents_ptr: i32,
) -> wasmtime::Result<i32> {
    let nsubs = nsubs as u32;
    // Before anything is sized from it (see MAX_POLL_SUBSCRIPTIONS).
    if nsubs == 0 || nsubs > MAX_POLL_SUBSCRIPTIONS {
        return Ok(types::Errno::Inval as i32);
    }
    let mem = memory(&mut caller)?;
    let (data, ctx) = mem.data_and_store_mut(&mut caller);
    let mut gm = GuestMemory::Unshared(data);
    let mut subs = Vec::with_capacity(nsubs as usize);
    for i in 0..nsubs {
        let at = (subs_ptr as u32).wrapping_add(i.wrapping_mul(SUBSCRIPTION_SIZE));
        match gm.read(GuestPtr::<types::Subscription>::new(at)) {
            Ok(s) => subs.push(s),
            Err(e) => return guest_errno(e),
        }
    }
    let fd_subs: Vec<types::Subscription> = subs
        .iter()
        .filter(|s| !matches!(s.u, types::SubscriptionU::Clock(_)))
        .cloned()
        .collect();
    let events = if !fd_subs.is_empty() {
        match poll_fds(&mut ctx.wasi, &fd_subs) {
            Ok(ev) => ev,
            Err(e) => return errno(e),
        }
    } else {
        clock_events(ctx, &subs)?
    };
    for (i, ev) in events.iter().enumerate() {
        let at = (events_ptr as u32).wrapping_add((i as u32).wrapping_mul(EVENT_SIZE));
        if let Err(e) = gm.write(GuestPtr::<types::Event>::new(at), ev.clone()) {
            return guest_errno(e);
        }
    }
    match gm.write(
        GuestPtr::<u32>::new(nevents_ptr as u32),
        events.len() as u32,
    ) {
        Ok(()) => Ok(0),
        Err(e) => guest_errno(e),
    }
}

fn poll_fds(
    wasi: &mut wasmtime_wasi::p1::WasiP1Ctx,
    subs: &[types::Subscription],
) -> Result<Vec<types::Event>, types::Error> {
    let n = subs.len() as u32;
    let events_at = n * SUBSCRIPTION_SIZE;
    let mut scratch = vec![0u8; (events_at + n * EVENT_SIZE) as usize];
    let mut gm = GuestMemory::Unshared(&mut scratch);
    for (i, s) in subs.iter().enumerate() {
        gm.write(GuestPtr::new(i as u32 * SUBSCRIPTION_SIZE), s.clone())?;
    }
    let count = in_tokio(WasiSnapshotPreview1::poll_oneoff(
        wasi,
        &mut gm,
        GuestPtr::new(0),
        GuestPtr::new(events_at),
        n,
    ))?;
    (0..count)
        .map(|i| Ok(gm.read(GuestPtr::<types::Event>::new(events_at + i * EVENT_SIZE))?))
        .collect()
}

fn clock_events(
    ctx: &mut Ctx,
    subs: &[types::Subscription],
) -> wasmtime::Result<Vec<types::Event>> {
    // How long each subscription needs, in ns from now; Err for a clock we do not have.
    let waits: Vec<Result<u64, types::Errno>> = subs
        .iter()
        .map(|s| match &s.u {
            types::SubscriptionU::Clock(c) => {
                let absolute = c
                    .flags
                    .contains(types::Subclockflags::SUBSCRIPTION_CLOCK_ABSTIME);
                let now = match (&ctx.time, c.id) {
                    (_, types::Clockid::Realtime | types::Clockid::Monotonic) if !absolute => 0,
                    (Some(t), types::Clockid::Realtime) => t.wall_ns_at(t.peek()),
                    (Some(t), types::Clockid::Monotonic) => t.monotonic_ns_at(t.peek()),
                    (None, types::Clockid::Realtime) => std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .map_or(0, |d| d.as_nanos() as u64),
                    // A live monotonic clock's origin is wasmtime's own; an absolute
                    // deadline on it fires at once rather than guessing.
                    (None, types::Clockid::Monotonic) => c.timeout,
                    _ => return Err(types::Errno::Inval),
                };
                Ok(if absolute {
                    c.timeout.saturating_sub(now)
                } else {
                    c.timeout
                })
            }
            _ => Err(types::Errno::Inval),
        })
        .collect();
    let min_wait = waits.iter().filter_map(|w| w.as_ref().ok()).copied().min();
    if let Some(wait) = min_wait {
        match &ctx.time {
            Some(t) => t.advance(wait),
            None => {
                let left = ctx.deadline.saturating_duration_since(Instant::now());
                let wait = std::time::Duration::from_nanos(wait);
                if wait >= left {
                    // The call's time is up before the sleep is: end it now as the
                    // wall-time net would, rather than let the guest run on after.
                    std::thread::sleep(left);
                    return Err(wasmtime::Error::new(wasmtime::Trap::Interrupt));
                }
                std::thread::sleep(wait);
            }
        }
    }
    Ok(subs
        .iter()
        .zip(&waits)
        .filter(|(_, w)| match w {
            Ok(w) => Some(*w) <= min_wait,
            Err(_) => true,
        })
        .map(|(s, w)| types::Event {
            userdata: s.userdata,
            error: match w {
                Ok(_) => types::Errno::Success,
                Err(e) => *e,
            },
            type_: types::Eventtype::Clock,
            fd_readwrite: types::EventFdReadwrite {
                flags: types::Eventrwflags::empty(),
                nbytes: 0,
            },
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use wiggle::GuestType;

    #[test]
    fn abi_sizes_match_the_witx_types() {
        assert_eq!(types::Subscription::guest_size(), SUBSCRIPTION_SIZE);
        assert_eq!(types::Event::guest_size(), EVENT_SIZE);
        assert_eq!(types::Dirent::guest_size() as usize, DIRENT_SIZE);
    }
}
