//! Process-wide settings the sandbox needs from its host, made once at start. Its own
//! module because they belong to the process, not to a sandbox or a call.

use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};

/// Where to stop when the hard limit is "unlimited": the kernel refuses a soft limit
/// above its own cap (Linux `fs.nr_open` defaults to 2^20), so ask for no more than that.
const UNLIMITED_FDS: u64 = 1 << 20;

/// Raises this process's soft limit on open files (`RLIMIT_NOFILE`) to its hard limit
/// and returns the soft limit now in force.
///
/// Each call may hold up to [`crate::MAX_OPEN_FILES`] files besides its mounts, and
/// [`crate::SandboxConfig::max_concurrent_calls`] calls run at once; the common default
/// soft limit of 1024 is below that product, and running short makes *other* calls fail
/// on their preopens. Call it once, early in `main`, before building a sandbox. The
/// limit is left as it was if the kernel refuses the raise.
pub fn raise_fd_limit() -> std::io::Result<u64> {
    let now = getrlimit(Resource::Nofile);
    let want = now.maximum.unwrap_or(UNLIMITED_FDS);
    let Some(current) = now.current else {
        // Unlimited already.
        return Ok(u64::MAX);
    };
    if current >= want {
        return Ok(current);
    }
    setrlimit(
        Resource::Nofile,
        Rlimit {
            current: Some(want),
            maximum: now.maximum,
        },
    )?;
    Ok(want)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_soft_limit_ends_at_the_hard_one() {
        let got = raise_fd_limit().unwrap();
        let now = getrlimit(Resource::Nofile);
        assert_eq!(now.current, Some(got));
        if let Some(hard) = now.maximum {
            assert_eq!(got, hard);
        }
    }
}
