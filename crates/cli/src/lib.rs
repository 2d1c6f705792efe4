//! What of the `plangate` command line other code may name: its exit codes, which
//! scripts, CI suites and the end-to-end tests rely on, kept here so a test says
//! `exit::USAGE` and can never drift from the binary's own number.

pub mod exit;
