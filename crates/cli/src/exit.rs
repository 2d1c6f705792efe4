//! Every exit code plangate uses, in one place (docs/design.md, "Exit codes"), so
//! scripts and CI suites can rely on them and tests can name them.

/// Every task was accepted or deferred; or a command that decides nothing succeeded.
pub const OK: u8 = 0;
/// At least one task was rejected as hallucinated (or, for `probe`, a declaration failed).
pub const REJECT: u8 = 1;
/// The command line or an input file could not be used at all.
pub const USAGE: u8 = 2;
/// Interrupted (SIGINT or SIGTERM): the run stopped early and kept what it decided, to be
/// resumed with `--resume` (128 + SIGINT, the shell's convention).
pub const INTERRUPTED: u8 = 130;
