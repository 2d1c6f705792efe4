//! The options every front end takes alike, defined once with their defaults and
//! checks: worker threads, and the per-call limits as a user gives them.

use plangate_sandbox::Limits;

/// Most worker threads a run takes: more is a typo, and each thread reserves a stack
/// and, in the sandbox, instance slots.
pub const MAX_JOBS: usize = 1024;

/// A thread count out of range (`jobs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("expected a number of threads from 1 to {MAX_JOBS}")]
pub struct JobsOutOfRange;

/// Worker threads for a run: `asked`, checked, or one per core.
pub fn jobs(asked: Option<usize>) -> Result<usize, JobsOutOfRange> {
    match asked {
        Some(n) if (1..=MAX_JOBS).contains(&n) => Ok(n),
        Some(_) => Err(JobsOutOfRange),
        None => Ok(default_jobs()),
    }
}

/// One worker thread per core (one when the core count cannot be read).
pub fn default_jobs() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// A per-call limit that cannot run anything.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{name}: at least 1")]
pub struct LimitTooLow {
    /// The limit's name as the front ends spell it (`fuel`, `memory_mb`, `timeout_ms`).
    pub name: &'static str,
}

/// Per-call limits as a user gives them: each one unset takes the sandbox's default.
#[derive(Debug, Clone, Copy, Default)]
pub struct LimitsGiven {
    /// Fuel per call: the deterministic CPU budget.
    pub fuel: Option<u64>,
    /// Linear memory per call, MiB.
    pub memory_mb: Option<u64>,
    /// Wall time per call, ms: a safety net; fuel is the deterministic bound.
    pub timeout_ms: Option<u64>,
    /// Bytes of stdout (and of stderr) kept before a call ends as `output_limit`.
    pub output_bytes: Option<usize>,
}

impl LimitsGiven {
    /// The limits, each at least 1 where 0 would fail every call (no fuel, no memory,
    /// no time) and so judge nothing.
    pub fn limits(&self) -> Result<Limits, LimitTooLow> {
        let d = Limits::default();
        let at_least_1 = |name: &'static str, v: Option<u64>, default: u64| match v {
            Some(0) => Err(LimitTooLow { name }),
            v => Ok(v.unwrap_or(default)),
        };
        Ok(Limits {
            fuel: at_least_1("fuel", self.fuel, d.fuel)?,
            memory_mb: at_least_1("memory_mb", self.memory_mb, d.memory_mb)?,
            wall_ms: at_least_1("timeout_ms", self.timeout_ms, d.wall_ms)?,
            output_bytes: self.output_bytes.unwrap_or(d.output_bytes),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_are_checked_and_default_to_the_cores() {
        assert_eq!(jobs(Some(3)), Ok(3));
        assert_eq!(jobs(Some(0)), Err(JobsOutOfRange));
        assert_eq!(jobs(Some(MAX_JOBS + 1)), Err(JobsOutOfRange));
        assert!(jobs(None).unwrap() >= 1);
        assert_eq!(
            JobsOutOfRange.to_string(),
            "expected a number of threads from 1 to 1024"
        );
    }

    #[test]
    fn a_zero_limit_is_refused_by_name_and_unset_ones_default() {
        let d = Limits::default();
        assert_eq!(LimitsGiven::default().limits().unwrap(), d);
        let zero = LimitsGiven {
            memory_mb: Some(0),
            ..LimitsGiven::default()
        };
        assert_eq!(
            zero.limits().unwrap_err().to_string(),
            "memory_mb: at least 1"
        );
        // Zero bytes of output is a real limit: the call's output is all cut.
        let quiet = LimitsGiven {
            output_bytes: Some(0),
            ..LimitsGiven::default()
        };
        assert_eq!(quiet.limits().unwrap().output_bytes, 0);
    }
}
