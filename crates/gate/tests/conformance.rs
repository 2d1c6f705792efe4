//! Conformance against the public suites vendored in tests/conformance: every RFC 8785 vector
//! byte for byte, and every JSONTestSuite parsing case (accept y_, refuse n_, survive i_).

use std::path::PathBuf;

use plangate_gate::{jcs, json};

fn suites() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/conformance")
}

fn files(dir: &str) -> Vec<PathBuf> {
    let d = suites().join(dir);
    let mut v: Vec<PathBuf> = std::fs::read_dir(&d)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", d.display()))
        .map(|e| e.unwrap().path())
        .collect();
    v.sort();
    v
}

#[test]
fn rfc8785_vectors_byte_exact() {
    let inputs = files("jcs/input");
    assert!(
        inputs.len() >= 6,
        "expected the RFC 8785 vectors, found {}",
        inputs.len()
    );
    for input in inputs {
        let name = input.file_name().unwrap();
        let expected = std::fs::read(suites().join("jcs/output").join(name)).unwrap();
        let value = json::parse_with(&std::fs::read(&input).unwrap(), json::Duplicates::Refuse)
            .unwrap_or_else(|e| panic!("{}: {e}", input.display()));
        let got = jcs::to_string(&value);
        assert_eq!(
            got.as_bytes(),
            expected.strip_suffix(b"\n").unwrap_or(&expected),
            "{}",
            input.display()
        );
        // Canonical output is a fixed point.
        assert_eq!(jcs::to_string(&json::parse(&got).unwrap()), got);
    }
}

#[test]
fn json_test_suite() {
    let cases = files("json-test-suite/test_parsing");
    assert!(
        cases.len() > 300,
        "expected JSONTestSuite, found {} files",
        cases.len()
    );
    let (mut y, mut n) = (0, 0);
    for case in cases {
        let name = case.file_name().unwrap().to_string_lossy().to_string();
        let bytes = std::fs::read(&case).unwrap();
        let r = json::parse_with(&bytes, json::Duplicates::Refuse);
        if name.starts_with("y_object_duplicated_key") {
            // RFC 8259 allows duplicate names; plangate reads I-JSON (RFC 7493), which does
            // not, because a duplicate makes an argument ambiguous. Refused by default,
            // read when asked to behave like Python (the seed).
            assert!(r.is_err(), "{name} must be refused under I-JSON");
            json::parse_with(&bytes, json::Duplicates::LastWins).unwrap();
        } else if name.starts_with("y_") {
            y += 1;
            let v = r.unwrap_or_else(|e| panic!("{name} must parse: {e}"));
            // Whatever parses canonicalizes, and the canonical form parses back equal.
            let c = jcs::to_string(&v);
            assert_eq!(jcs::to_string(&json::parse(&c).unwrap()), c, "{name}");
        } else if name.starts_with("n_") {
            n += 1;
            let e = r.expect_err(&format!("{name} must be refused"));
            assert!(e.line >= 1 && e.column >= 1, "{name}: {e}");
        }
    }
    assert!(y > 90 && n > 180, "y={y} n={n}");
}
