//! `--help` says what is true: the top line names every subcommand clap dispatches and
//! no other, and `--catalog`'s help names every dialect the catalog reader tells apart,
//! each of which the binary reads.

use std::collections::BTreeSet;
use std::process::Command;

use plangate_gate::catalog::{Catalog, Dialect};
use plangate_gate::json;

use crate::exit;

/// Runs `plangate ARGS --help` and gives its standard output.
fn help(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_plangate"))
        .args(args)
        .arg("--help")
        .output()
        .expect("plangate runs");
    assert_eq!(out.status.code(), Some(exit::OK), "{args:?} --help");
    String::from_utf8(out.stdout).expect("utf-8 help")
}

/// Text with every run of whitespace one space, so clap's wrapping does not matter.
fn flat(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The subcommands clap lists under `Commands:`, its own `help` left out: the command
/// enum itself, as clap sees it.
fn subcommands(top: &str) -> BTreeSet<String> {
    let listed = top
        .split("\nCommands:\n")
        .nth(1)
        .expect("a Commands: section")
        .split("\n\n")
        .next()
        .unwrap();
    let names: BTreeSet<String> = listed
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect();
    assert!(names.len() >= 8, "too few subcommands parsed: {names:?}");
    names
}

#[test]
fn the_top_line_names_every_subcommand_and_no_other() {
    let top = help(&[]);
    let about = flat(top.split("Usage:").next().unwrap());
    let (_, list) = about
        .split_once(": ")
        .unwrap_or_else(|| panic!("the top line lists the commands after a colon: {about:?}"));
    let named: BTreeSet<String> = list
        .trim_end_matches('.')
        .split(", ")
        .map(str::to_string)
        .collect();
    assert_eq!(named, subcommands(&top), "top line: {about:?}");
}

#[test]
fn every_listed_subcommand_has_its_own_help() {
    for name in subcommands(&help(&[])) {
        let text = help(&[&name]);
        assert!(
            text.contains(&format!("plangate {name}")),
            "{name}:\n{text}"
        );
    }
}

/// Each catalog dialect with the words `--catalog`'s help names it by and one tool entry
/// in it. One declaration gives both the list and an exhaustive match, so a dialect the
/// reader gains does not compile here until the help names it.
macro_rules! dialects {
    ($($variant:ident => ($words:expr, $entry:expr)),* $(,)?) => {
        const DIALECTS: &[(Dialect, &str, &str)] = &[$((Dialect::$variant, $words, $entry)),*];

        #[expect(dead_code, reason = "compiled only to fail on a dialect not listed above")]
        fn listed(dialect: Dialect) {
            match dialect {
                $(Dialect::$variant => {})*
            }
        }
    };
}

dialects! {
    Native => ("native", r#"{"name": "t", "deterministic": true, "parameters": {"type": "object"}}"#),
    Mcp => ("MCP tools/list", r#"{"name": "t", "inputSchema": {"type": "object"}}"#),
    OpenAiChat => (
        "OpenAI Chat Completions",
        r#"{"type": "function", "function": {"name": "t", "parameters": {"type": "object"}}}"#
    ),
    OpenAiResponses => (
        "Responses",
        r#"{"type": "function", "name": "t", "parameters": {"type": "object"}}"#
    ),
    Anthropic => ("Anthropic", r#"{"name": "t", "input_schema": {"type": "object"}}"#),
    FunctionDoc => (
        "function docs",
        r#"{"name": "t", "description": "d", "parameters": {"type": "object"}}"#
    ),
}

#[test]
fn catalog_help_names_every_dialect_the_reader_accepts() {
    for command in ["score", "eval"] {
        let text = flat(&help(&[command]));
        let catalog = text
            .split_once("Options:")
            .and_then(|(_, options)| options.split("--catalog <FILE>").nth(1))
            .and_then(|rest| rest.split(" --").next())
            .unwrap_or_else(|| panic!("{command} --help has --catalog:\n{text}"));
        for (dialect, words, _) in DIALECTS {
            assert!(
                catalog.contains(words),
                "{command} --catalog's help does not name {dialect:?} ({words:?}): {catalog:?}"
            );
        }
    }
}

#[test]
fn each_dialect_named_reads_as_itself_and_the_binary_takes_it() {
    let dir = tempfile::tempdir().unwrap();
    let samples = dir.path().join("samples.jsonl");
    std::fs::write(&samples, "").unwrap();
    for (dialect, _, entry) in DIALECTS {
        let doc = format!(r#"{{"tools": [{entry}]}}"#);
        let catalog = Catalog::from_value(&json::parse(&doc).unwrap())
            .unwrap_or_else(|e| panic!("{dialect:?}: {e:?}"));
        assert_eq!(catalog.tools()[0].dialect, *dialect, "{entry}");
        let path = dir.path().join("catalog.json");
        std::fs::write(&path, &doc).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_plangate"))
            .args(["score", "--catalog"])
            .arg(&path)
            .arg("--samples")
            .arg(&samples)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(exit::OK),
            "{dialect:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
