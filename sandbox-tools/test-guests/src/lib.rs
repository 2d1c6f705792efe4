//! Raw WASI preview1 calls the test guests need but std does not expose on stable
//! (`std::os::wasi::fs::MetadataExt` is unstable): a whole `filestat`, `random_get`, and
//! `poll_oneoff` with whatever subscription count a hostile guest cares to claim.

/// The preview1 `filestat` record, as the host wrote it.
#[derive(Debug, Default, Clone, Copy)]
#[repr(C)]
pub struct Filestat {
    pub dev: u64,
    pub ino: u64,
    pub filetype: u8,
    pub nlink: u64,
    pub size: u64,
    pub atim: u64,
    pub mtim: u64,
    pub ctim: u64,
}

#[link(wasm_import_module = "wasi_snapshot_preview1")]
unsafe extern "C" {
    #[link_name = "fd_filestat_get"]
    fn wasi_fd_filestat_get(fd: i32, buf: *mut Filestat) -> i32;
    #[link_name = "random_get"]
    fn wasi_random_get(buf: *mut u8, len: usize) -> i32;
    #[link_name = "poll_oneoff"]
    fn wasi_poll_oneoff(subs: *const u8, events: *mut u8, nsubs: u32, nevents: *mut u32) -> i32;
}

/// One preview1 subscription: a relative clock sleep of `timeout_ns` on the monotonic
/// clock, tagged `userdata`.
pub fn clock_subscription(userdata: u64, timeout_ns: u64) -> [u8; 48] {
    let mut s = [0u8; 48];
    s[0..8].copy_from_slice(&userdata.to_le_bytes());
    // tag 0 = clock; clock id 1 = monotonic; timeout; precision 0; flags 0 (relative).
    s[16..20].copy_from_slice(&1u32.to_le_bytes());
    s[24..32].copy_from_slice(&timeout_ns.to_le_bytes());
    s
}

/// `poll_oneoff` over the subscriptions in `subs`, claiming `nsubs` of them (which may
/// be far more than `subs` holds: that is the attack). The errno, and how many events
/// the host wrote when it succeeded.
pub fn poll_claiming(subs: &[u8], nsubs: u32) -> (i32, u32) {
    let mut events = vec![0u8; 32 * (subs.len() / 48).max(1)];
    let mut n = 0u32;
    // SAFETY: `subs` is readable and `events`/`n` writable for what they hold; a host
    // that believed `nsubs` would read past `subs` only inside guest memory, where it
    // checks bounds itself.
    let errno = unsafe { wasi_poll_oneoff(subs.as_ptr(), events.as_mut_ptr(), nsubs, &mut n) };
    (errno, n)
}

/// `fd_filestat_get` on an open file or directory: every field, dev/ino/nlink included.
pub fn fd_filestat(file: &std::fs::File) -> Result<Filestat, i32> {
    use std::os::fd::AsRawFd;
    let mut st = Filestat::default();
    // SAFETY: `st` is a valid, writable, properly aligned `filestat` for the call.
    let errno = unsafe { wasi_fd_filestat_get(file.as_raw_fd(), &mut st) };
    if errno == 0 { Ok(st) } else { Err(errno) }
}

/// `random_get`: what the host's random source hands out.
pub fn random_bytes(n: usize) -> Vec<u8> {
    let mut buf = vec![0u8; n];
    random_fill(&mut buf);
    buf
}

/// `random_get` into an existing buffer, so a loop of draws spends no guest fuel on
/// allocating and zeroing.
pub fn random_fill(buf: &mut [u8]) {
    // SAFETY: `buf` is valid for `buf.len()` writable bytes.
    let errno = unsafe { wasi_random_get(buf.as_mut_ptr(), buf.len()) };
    assert_eq!(errno, 0, "random_get failed");
}

/// Lowercase hex, for printing bytes unambiguously.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
