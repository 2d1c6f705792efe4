//! `$from` references at execution time: the tool receives the value at a JSON Pointer
//! (RFC 6901) in the sample's own earlier result, while the gate keeps the reference
//! symbolic (canon.rs), so upstream nondeterminism never reaches the argument signal.

use plangate_gate::canon::as_from_ref;
use plangate_gate::json::{Object, Value};
use plangate_gate::task::Observed;

/// The value at `ptr` in `v`, or why there is none.
pub fn pointer<'a>(v: &'a Value, ptr: &str) -> Result<&'a Value, String> {
    if ptr.is_empty() {
        return Ok(v);
    }
    let Some(rest) = ptr.strip_prefix('/') else {
        return Err(format!("pointer {ptr:?} does not start with '/'"));
    };
    let mut cur = v;
    for raw in rest.split('/') {
        let token = raw.replace("~1", "/").replace("~0", "~");
        cur = match cur {
            Value::Object(o) => o
                .get(&token)
                .ok_or_else(|| format!("pointer {ptr:?}: no member {token:?}"))?,
            Value::Array(items) => {
                let canonical_index = token == "0" || !token.starts_with('0');
                let i = token
                    .parse::<usize>()
                    .ok()
                    .filter(|_| canonical_index)
                    .ok_or_else(|| format!("pointer {ptr:?}: {token:?} is not an array index"))?;
                items
                    .get(i)
                    .ok_or_else(|| format!("pointer {ptr:?}: index {i} is out of range"))?
            }
            other => {
                return Err(format!(
                    "pointer {ptr:?}: cannot step into {} with {token:?}",
                    other.kind()
                ));
            }
        };
    }
    Ok(cur)
}

/// `args` with every `{"$from": {"step": k, "pointer": p}}` replaced by the value at `p`
/// in step k's result among `earlier` (the steps before this one). Err says why a
/// reference cannot be resolved: the step is not earlier, it failed, or the pointer
/// finds nothing.
pub fn substitute(args: &Value, earlier: &[Observed]) -> Result<Value, String> {
    if let Some(r) = as_from_ref(args) {
        let o = r
            .as_object()
            .ok_or("$from: expected {\"step\": N, \"pointer\": \"/...\"}")?;
        let step = o
            .get("step")
            .and_then(Value::as_u64)
            .ok_or("$from.step: expected a step number")?;
        let ptr = o
            .get("pointer")
            .and_then(Value::as_str)
            .ok_or("$from.pointer: expected a JSON Pointer")?;
        let source = usize::try_from(step)
            .ok()
            .and_then(|s| earlier.get(s))
            .ok_or_else(|| format!("$from.step {step} is not an earlier step"))?;
        return match source {
            Observed::Result(p) => pointer(p.value(), ptr).cloned(),
            Observed::Error { kind, .. } => Err(format!("step {step} failed ({kind})")),
            Observed::Bytes(_) => Err(format!("step {step} returned no JSON")),
            Observed::Missing => Err(format!("step {step} has no result")),
        };
    }
    Ok(match args {
        Value::Object(o) => {
            let mut out = Object::new();
            for (k, v) in o.iter() {
                out.insert(k.clone(), substitute(v, earlier)?);
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|v| substitute(v, earlier))
                .collect::<Result<_, _>>()?,
        ),
        other => other.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use plangate_gate::jcs;
    use plangate_gate::json::parse;

    #[test]
    fn pointers_follow_rfc_6901() {
        let v = parse(r#"{"a":{"b/c":[10,{"~d":"x"}]},"":1}"#).unwrap();
        assert_eq!(
            jcs::to_string(pointer(&v, "/a/b~1c/1/~0d").unwrap()),
            r#""x""#
        );
        assert_eq!(jcs::to_string(pointer(&v, "/").unwrap()), "1");
        assert!(pointer(&v, "/a/b~1c/01").is_err());
        assert!(pointer(&v, "/a/b~1c/5").is_err());
        assert!(pointer(&v, "/zz").is_err());
        assert!(pointer(&v, "a").is_err());
    }

    #[test]
    fn references_take_the_earlier_result() {
        let earlier = vec![
            Observed::Result(parse(r#"{"user_id":"u_0001","n":[1,2]}"#).unwrap().into()),
            Observed::Error {
                kind: "not_found".into(),
                message: String::new(),
            },
        ];
        let args =
            parse(r#"{"id":{"$from":{"step":0,"pointer":"/user_id"}},"k":[{"$from":{"step":0,"pointer":"/n/1"}}]}"#)
                .unwrap();
        assert_eq!(
            jcs::to_string(&substitute(&args, &earlier).unwrap()),
            r#"{"id":"u_0001","k":[2]}"#
        );
        let failed = parse(r#"{"id":{"$from":{"step":1,"pointer":"/x"}}}"#).unwrap();
        assert!(
            substitute(&failed, &earlier)
                .unwrap_err()
                .contains("failed")
        );
        let missing = parse(r#"{"id":{"$from":{"step":0,"pointer":"/nope"}}}"#).unwrap();
        assert!(substitute(&missing, &earlier).is_err());
        let later = parse(r#"{"id":{"$from":{"step":2,"pointer":""}}}"#).unwrap();
        assert!(substitute(&later, &earlier).is_err());
    }
}
