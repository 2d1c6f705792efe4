//! Write a plangate tool in ten lines: this crate is the tool ABI (docs/design.md, "The sandbox epoch")
//! so that a tool author writes only the tool.
//!
//! A plangate tool is a plain WASI preview1 command. plangate writes the call's
//! canonical arguments (JSON) to its stdin and reads its stdout:
//!
//! | outcome | stdout | exit status |
//! |---|---|---|
//! | success | the result, as JSON | 0 |
//! | failure | `{"error":{"kind":"not_found","message":"..."}}` | 1 |
//!
//! [`run`] does all of it: it parses stdin into your argument type, calls your function,
//! prints what it returns and exits with the right status. Arguments that do not
//! deserialize (a missing field, a wrong type, an unknown field when you use
//! `#[serde(deny_unknown_fields)]`) become a `bad_argument` error without your code
//! running.
//!
//! Nothing here is special to Rust: any language that targets `wasm32-wasi` can write
//! the same protocol, and `wasmtime run --dir data::/world tool.wasm` runs a tool by
//! hand (`echo '{"user_id":"u_0001"}' | wasmtime run ...`).
//!
//! # Example
//!
//! A tool that looks a user up in the mounted world:
//!
//! ```no_run
//! use plangate_guest::{ToolError, read_json, run};
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Deserialize)]
//! #[serde(deny_unknown_fields)]
//! struct Args { user_id: String }
//!
//! #[derive(Serialize, Deserialize)]
//! struct User { id: String, name: String }
//!
//! fn main() {
//!     run(|args: Args| {
//!         let users: Vec<User> = read_json("/world/users.json")?;
//!         users.into_iter().find(|u| u.id == args.user_id)
//!             .ok_or_else(|| ToolError::not_found(format!("no user {:?}", args.user_id)))
//!     })
//! }
//! ```
//!
//! # Determinism
//!
//! Inside plangate's sandbox the clock, randomness and every `pinned` mount are fixed
//! for the epoch, so a tool that reads only those is deterministic for free. Two things
//! are still the author's job: never iterate a `HashMap` into the output (its order is
//! seeded from WASI randomness; use a `BTreeMap` or sort), and never trust directory
//! listing order (sort it) unless listing order is part of what the tool means.
//!
//! The helpers [`now`], [`random_bytes`] and [`random_below`] read the WASI clock and
//! random source; a tool that calls them is nondeterministic unless its catalog entry
//! keeps `clock`/`random` pinned.

use std::borrow::Cow;
use std::fmt;
use std::io::{self, Read, Write};
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;
use serde::de::DeserializeOwned;

/// The error kinds the seed world uses; a tool may use any other short snake_case kind.
///
/// Kinds are part of a tool's contract: plangate compares them across samples and test
/// suites assert on them, so keep one meaning per kind.
pub mod kind {
    /// The arguments are malformed or out of range: the caller's fault, whatever the data.
    pub const BAD_ARGUMENT: &str = "bad_argument";
    /// The arguments are well formed but name something the world does not have.
    pub const NOT_FOUND: &str = "not_found";
    /// The world's own data is malformed (a fixture or live file that does not parse).
    pub const INVALID_DATA: &str = "invalid_data";
    /// Reading the world failed for another reason.
    pub const IO: &str = "io";
    /// A bug in the tool.
    pub const INTERNAL: &str = "internal";
}

/// A typed tool failure: printed as `{"error":{"kind":..,"message":..}}` with exit status 1.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolError {
    kind: Cow<'static, str>,
    message: String,
}

impl ToolError {
    /// An error of any kind; prefer the named constructors for the kinds in [`kind`].
    pub fn new(kind: impl Into<Cow<'static, str>>, message: impl Into<String>) -> Self {
        Self {
            kind: kind.into(),
            message: message.into(),
        }
    }

    /// See [`kind::BAD_ARGUMENT`].
    pub fn bad_argument(message: impl Into<String>) -> Self {
        Self::new(kind::BAD_ARGUMENT, message)
    }

    /// See [`kind::NOT_FOUND`].
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(kind::NOT_FOUND, message)
    }

    /// See [`kind::INVALID_DATA`].
    pub fn invalid_data(message: impl Into<String>) -> Self {
        Self::new(kind::INVALID_DATA, message)
    }

    /// See [`kind::IO`].
    pub fn io(message: impl Into<String>) -> Self {
        Self::new(kind::IO, message)
    }

    /// See [`kind::INTERNAL`].
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(kind::INTERNAL, message)
    }

    /// Map an I/O error on `path` to the kind a caller can act on: a missing path is the
    /// caller's `not_found`, reading a directory as a file is a `bad_argument`.
    pub fn from_io(path: impl AsRef<Path>, err: io::Error) -> Self {
        let path = path.as_ref().display();
        match err.kind() {
            io::ErrorKind::NotFound => {
                Self::not_found(format!("no such file or directory: {path}"))
            }
            io::ErrorKind::IsADirectory => Self::bad_argument(format!("is a directory: {path}")),
            io::ErrorKind::NotADirectory => Self::bad_argument(format!("not a directory: {path}")),
            io::ErrorKind::InvalidData => Self::invalid_data(format!("{path}: {err}")),
            _ => Self::io(format!("{path}: {err}")),
        }
    }

    /// The error's kind, e.g. `"not_found"`.
    pub fn kind(&self) -> &str {
        &self.kind
    }

    /// The human-readable message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind, self.message)
    }
}

impl std::error::Error for ToolError {}

/// Run a tool: read the arguments from stdin, call `tool`, print its result or error,
/// and exit with status 0 or 1. Never returns.
///
/// Empty stdin reads as `{}`, so a tool whose parameters are all optional can be run by
/// hand without piping anything in.
pub fn run<A, R>(tool: impl FnOnce(A) -> Result<R, ToolError>) -> !
where
    A: DeserializeOwned,
    R: Serialize,
{
    let mut input = Vec::new();
    let (output, status) = match io::stdin().read_to_end(&mut input) {
        Ok(_) => respond(&input, tool),
        Err(e) => render(Err::<(), _>(ToolError::io(format!(
            "cannot read arguments from stdin: {e}"
        )))),
    };
    let mut stdout = io::stdout().lock();
    // If stdout is gone there is no one left to tell; the exit status still says it.
    let _ = stdout.write_all(&output).and_then(|()| stdout.flush());
    std::process::exit(status)
}

/// The pure core of [`run`]: the stdout bytes and exit status for one input. Public so a
/// tool can unit-test its ABI behaviour on the host without spawning anything.
pub fn respond<A, R>(input: &[u8], tool: impl FnOnce(A) -> Result<R, ToolError>) -> (Vec<u8>, i32)
where
    A: DeserializeOwned,
    R: Serialize,
{
    let input: &[u8] = if input.iter().all(u8::is_ascii_whitespace) {
        b"{}"
    } else {
        input
    };
    match parse_args(input) {
        Ok(args) => render(tool(args)),
        Err(e) => render(Err::<(), _>(e)),
    }
}

fn parse_args<A: DeserializeOwned>(input: &[u8]) -> Result<A, ToolError> {
    let bad = |e: serde_json::Error| ToolError::bad_argument(format!("invalid arguments: {e}"));
    // Through a Value first: serde accepts a struct from a JSON array too (`[1]` for
    // `{"n":1}`), and tool arguments are always an object.
    let value: serde_json::Value = serde_json::from_slice(input).map_err(bad)?;
    if !value.is_object() {
        return Err(ToolError::bad_argument("arguments must be a JSON object"));
    }
    serde_json::from_value(value).map_err(bad)
}

fn render<R: Serialize>(result: Result<R, ToolError>) -> (Vec<u8>, i32) {
    #[derive(Serialize)]
    struct Envelope<'a> {
        error: &'a ToolError,
    }
    let rendered = match &result {
        Ok(value) => serde_json::to_vec(value).map(|v| (v, 0)),
        Err(error) => serde_json::to_vec(&Envelope { error }).map(|v| (v, 1)),
    };
    let (mut bytes, status) = rendered.unwrap_or_else(|e| {
        // A result that cannot serialize (a map with non-string keys, a NaN) is a tool bug.
        let error = ToolError::internal(format!("result does not serialize as JSON: {e}"));
        let bytes =
            serde_json::to_vec(&Envelope { error: &error }).expect("a ToolError always serializes");
        (bytes, 1)
    });
    bytes.push(b'\n');
    (bytes, status)
}

/// Read a whole file, mapping failures to typed errors: `not_found` for a missing path,
/// `bad_argument` for a directory.
pub fn read_bytes(path: impl AsRef<Path>) -> Result<Vec<u8>, ToolError> {
    let path = path.as_ref();
    let err = |e| ToolError::from_io(path, e);
    // Open first and stat the open file: `fs::metadata` before `fs::read` looked the
    // path up twice, and a stat by path costs the host three syscalls (an `O_PATH` open,
    // `statx`, `close`) where a stat of an open file costs one.
    let file = std::fs::File::open(path).map_err(err)?;
    let meta = file.metadata().map_err(err)?;
    // Checked before reading because WASI reports reading a directory as EBADF, which
    // would otherwise surface as an opaque `io` error.
    if meta.is_dir() {
        return Err(ToolError::bad_argument(format!(
            "is a directory: {}",
            path.display()
        )));
    }
    // One byte over the size, so the read that finds the end needs no buffer growth
    // (a live file that grew meanwhile is still read whole). `take` hides `File`'s own
    // `read_to_end`, which would ask for the size again.
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0).saturating_add(1));
    file.take(u64::MAX).read_to_end(&mut bytes).map_err(err)?;
    Ok(bytes)
}

/// Read and parse a JSON file, mapping failures to typed errors (see [`read_bytes`];
/// `invalid_data` for a file that does not parse).
pub fn read_json<T: DeserializeOwned>(path: impl AsRef<Path>) -> Result<T, ToolError> {
    let path = path.as_ref();
    serde_json::from_slice(&read_bytes(path)?)
        .map_err(|e| ToolError::invalid_data(format!("{}: {e}", path.display())))
}

/// Read a UTF-8 text file, mapping failures to typed errors (see [`read_bytes`];
/// `bad_argument` for a file that is not UTF-8 text).
pub fn read_text(path: impl AsRef<Path>) -> Result<String, ToolError> {
    let path = path.as_ref();
    String::from_utf8(read_bytes(path)?)
        .map_err(|_| ToolError::bad_argument(format!("not a UTF-8 text file: {}", path.display())))
}

/// Resolve a path argument against a mount the way plangate's `path` canonicalization
/// hint does (docs/design.md, "Canonical arguments"), and refuse one that leaves the mount.
///
/// A relative `input` is taken relative to `base`; `.`, `..`, repeated and trailing `/`
/// are removed lexically (the sandbox has no symlinks to follow). The result is `base`
/// or a path below it; anything else is a `bad_argument`, so a tool gives one typed
/// answer for `/etc/passwd` and `../../etc/passwd` instead of whatever the sandbox's
/// preopen check happens to say.
///
/// ```
/// use plangate_guest::confine;
/// assert_eq!(confine("/world", "docs/./a.md").unwrap(), "/world/docs/a.md");
/// assert_eq!(confine("/world", "/world/docs/../b.md").unwrap(), "/world/b.md");
/// assert!(confine("/world", "../etc/passwd").is_err());
/// ```
pub fn confine(base: &str, input: &str) -> Result<String, ToolError> {
    if input.is_empty() {
        return Err(ToolError::bad_argument("path is empty"));
    }
    if input.contains('\0') {
        return Err(ToolError::bad_argument("path contains a NUL byte"));
    }
    let joined = if input.starts_with('/') {
        input.to_owned()
    } else {
        format!("{base}/{input}")
    };
    let mut parts: Vec<&str> = Vec::new();
    for part in joined.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                // Popping past the root stays at the root, as POSIX does for "/..".
                parts.pop();
            }
            name => parts.push(name),
        }
    }
    let normal = format!("/{}", parts.join("/"));
    let base = base.trim_end_matches('/');
    if normal == base || normal.starts_with(&format!("{base}/")) {
        Ok(normal)
    } else {
        Err(ToolError::bad_argument(format!(
            "path {input:?} is outside {base}"
        )))
    }
}

/// The WASI wall clock as time since the Unix epoch. Under a pinned epoch this is the
/// epoch's instant; with `"clock": "live"` it is the host's clock.
pub fn now() -> Result<Duration, ToolError> {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_err(|_| ToolError::internal("the clock reads before 1970"))
}

/// Fill `buf` from the WASI random source (`random_get`). Under a pinned epoch the
/// stream is seeded from the epoch; with `"random": "live"` it is the host's.
pub fn random_bytes(buf: &mut [u8]) -> Result<(), ToolError> {
    sys::random_bytes(buf)
}

/// A uniformly distributed integer in `0..bound`, drawn from [`random_bytes`] without
/// modulo bias (so a sample's distribution does not depend on the population size).
pub fn random_below(bound: u64) -> Result<u64, ToolError> {
    if bound == 0 {
        return Err(ToolError::internal("random_below(0) has no values"));
    }
    // Reject draws from the incomplete top band of the u64 range.
    let zone = u64::MAX - (u64::MAX % bound);
    loop {
        let mut b = [0u8; 8];
        random_bytes(&mut b)?;
        let x = u64::from_le_bytes(b);
        if x < zone {
            return Ok(x % bound);
        }
    }
}

#[cfg(target_os = "wasi")]
mod sys {
    use super::ToolError;

    #[link(wasm_import_module = "wasi_snapshot_preview1")]
    unsafe extern "C" {
        // WASI preview1: random_get(buf: pointer, buf_len: size) -> errno.
        fn random_get(buf: *mut u8, buf_len: usize) -> i32;
    }

    pub(super) fn random_bytes(buf: &mut [u8]) -> Result<(), ToolError> {
        // Called directly rather than through the getrandom crate so the SDK stays at
        // serde + serde_json. SAFETY: the pointer and length describe one live, writable
        // buffer that random_get fills and does not retain.
        let errno = unsafe { random_get(buf.as_mut_ptr(), buf.len()) };
        if errno == 0 {
            Ok(())
        } else {
            Err(ToolError::io(format!(
                "random_get failed with errno {errno}"
            )))
        }
    }
}

#[cfg(not(target_os = "wasi"))]
mod sys {
    use super::ToolError;
    use std::io::Read;

    // Host builds exist only for the SDK's own unit tests.
    pub(super) fn random_bytes(buf: &mut [u8]) -> Result<(), ToolError> {
        std::fs::File::open("/dev/urandom")
            .and_then(|mut f| f.read_exact(buf))
            .map_err(|e| ToolError::io(format!("/dev/urandom: {e}")))
    }
}

#[cfg(test)]
mod tests {
    //! Run on the host: `cargo test -p plangate-guest --target x86_64-unknown-linux-gnu`.
    use super::*;
    use serde::Deserialize;

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Args {
        n: u32,
    }

    fn double(a: Args) -> Result<serde_json::Value, ToolError> {
        if a.n > 100 {
            return Err(ToolError::bad_argument("n is over 100"));
        }
        Ok(serde_json::json!({"doubled": a.n * 2}))
    }

    #[test]
    fn success_prints_result_and_exits_zero() {
        assert_eq!(
            respond(br#"{"n":21}"#, double),
            (b"{\"doubled\":42}\n".to_vec(), 0)
        );
    }

    #[test]
    fn tool_error_prints_envelope_and_exits_one() {
        let (out, status) = respond(br#"{"n":101}"#, double);
        assert_eq!(status, 1);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"error\":{\"kind\":\"bad_argument\",\"message\":\"n is over 100\"}}\n"
        );
    }

    #[test]
    fn undeserializable_arguments_are_bad_argument() {
        for input in [&b"{\"m\":1}"[..], b"{\"n\":\"x\"}", b"[1]", b"{"] {
            let (out, status) = respond(input, double);
            let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
            assert_eq!(status, 1);
            assert_eq!(v["error"]["kind"], "bad_argument", "{v}");
        }
    }

    #[test]
    fn empty_stdin_reads_as_empty_object() {
        let (out, status) = respond(b"  \n", |v: serde_json::Value| Ok(v));
        assert_eq!((out, status), (b"{}\n".to_vec(), 0));
    }

    #[test]
    fn read_bytes_reads_whole_files_and_types_failures() {
        let dir = std::env::temp_dir().join(format!("plangate-guest-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("f.json");
        // Larger than one read's buffer, and empty: the size-sized buffer ends either way.
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&file, &data).unwrap();
        assert_eq!(read_bytes(&file).unwrap(), data);
        std::fs::write(&file, b"").unwrap();
        assert_eq!(read_bytes(&file).unwrap(), b"");
        assert_eq!(read_bytes(&dir).unwrap_err().kind(), kind::BAD_ARGUMENT);
        let missing = read_bytes(dir.join("missing")).unwrap_err();
        assert_eq!(missing.kind(), kind::NOT_FOUND);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn confine_normalizes_and_refuses_escapes() {
        assert_eq!(confine("/world", ".").unwrap(), "/world");
        assert_eq!(confine("/world", "a//b/").unwrap(), "/world/a/b");
        assert_eq!(
            confine("/world", "/world/a/../../world/b").unwrap(),
            "/world/b"
        );
        assert!(confine("/world", "/worldly").is_err());
        assert!(confine("/world", "/").is_err());
        assert!(confine("/world", "").is_err());
    }

    #[test]
    fn random_below_stays_in_range() {
        for bound in [1, 2, 3, 40, u64::MAX] {
            assert!(random_below(bound).unwrap() < bound);
        }
    }
}
