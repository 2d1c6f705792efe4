//! Raw WASI preview1 calls the test guests need but std does not expose on stable
//! (`std::os::wasi::fs::MetadataExt` is unstable): a whole `filestat` and `random_get`.

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
