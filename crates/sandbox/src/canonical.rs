//! A small canonical JSON writer (sorted keys, no whitespace) for the epoch id, and the
//! hex form every digest the sandbox writes takes. The gate
//! crate owns the full RFC 8785 serializer, but the sandbox must not depend on the gate,
//! and a manifest holds only strings, integers, arrays and objects, which this covers.

use serde_json::Value;

/// Writes `value` with object keys sorted by UTF-16 code units (RFC 8785 order) and no
/// whitespace. Integers are written exactly; the manifest holds no floats.
pub(crate) fn to_canonical_string(value: &Value) -> String {
    let mut out = String::new();
    write(value, &mut out);
    out
}

fn write(value: &Value, out: &mut String) {
    match value {
        Value::Null | Value::Bool(_) | Value::Number(_) => out.push_str(&value.to_string()),
        // serde_json escapes exactly what RFC 8785 escapes: `"`, `\`, and control
        // characters (the short forms where they exist, else lowercase \u00xx).
        Value::String(s) => out.push_str(&Value::String(s.clone()).to_string()),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            // Sorted here rather than trusting the map's order: another crate in the
            // build may turn on serde_json's `preserve_order`.
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.encode_utf16().cmp(b.0.encode_utf16()));
            out.push('{');
            for (i, (k, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                write(v, out);
            }
            out.push('}');
        }
    }
}

/// `bytes` as lowercase hex: every digest plangate writes (module sha256, mount digests,
/// epoch ids, request bodies, journal seals, samples digests, run fingerprints).
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[usize::from(b >> 4)] as char);
        s.push(DIGITS[usize::from(b & 15)] as char);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorts_keys_by_utf16_and_drops_whitespace() {
        let v: Value = serde_json::from_str(
            r#"{ "b": [1, {"z": 1, "a": "x\n"}], "a": null, "\u00e9": 1, "\ud83d\ude00": 2 }"#,
        )
        .unwrap();
        assert_eq!(
            to_canonical_string(&v),
            "{\"a\":null,\"b\":[1,{\"a\":\"x\\n\",\"z\":1}],\"\u{e9}\":1,\"\u{1f600}\":2}"
        );
    }

    #[test]
    fn utf16_order_differs_from_code_point_order() {
        // U+FF21 precedes U+1F600 by code point, but the emoji's first UTF-16 unit
        // (0xD83D) is below 0xFF21, so RFC 8785 puts the emoji first.
        let v: Value = serde_json::from_str(r#"{"\uff21": 1, "\ud83d\ude00": 2}"#).unwrap();
        assert_eq!(to_canonical_string(&v), "{\"\u{1f600}\":2,\"\u{ff21}\":1}");
    }
}
