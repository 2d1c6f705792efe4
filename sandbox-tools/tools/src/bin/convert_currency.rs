//! `convert_currency`: an amount converted at the world's published rates of one day.
//! Honest and deterministic: the rates are a pinned file, not a live feed.

use std::collections::BTreeMap;

use plangate_guest::{ToolError, read_json, run};
use seed_world_tools::WORLD;
use serde::{Deserialize, Serialize};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    amount: f64,
    /// ISO 4217 codes, case-insensitive and trimmed (the catalog's `casefold`+`trim`).
    from: String,
    to: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Rates {
    as_of: String,
    base: String,
    /// Units of each currency per one unit of `base`.
    rates: BTreeMap<String, f64>,
    /// Digits after the point where not 2 (JPY has none).
    #[serde(default)]
    minor_units: BTreeMap<String, i32>,
}

#[derive(Serialize)]
struct Conversion {
    amount: f64,
    from: String,
    to: String,
    rate: f64,
    converted: f64,
    as_of: String,
}

fn main() {
    run(|args: Args| {
        if !args.amount.is_finite() || args.amount < 0.0 {
            return Err(ToolError::bad_argument(
                "amount must be a finite number >= 0",
            ));
        }
        let table: Rates = read_json(format!("{WORLD}/rates.json"))?;
        let code = |raw: &str| -> Result<(String, f64), ToolError> {
            let code = raw.trim().to_ascii_uppercase();
            if code.len() != 3 || !code.bytes().all(|b| b.is_ascii_uppercase()) {
                return Err(ToolError::bad_argument(format!(
                    "{raw:?} is not a three-letter currency code"
                )));
            }
            let rate = *table.rates.get(&code).ok_or_else(|| {
                ToolError::not_found(format!(
                    "no {} rate for {code} on {}",
                    table.base, table.as_of
                ))
            })?;
            Ok((code, rate))
        };
        let (from, from_rate) = code(&args.from)?;
        let (to, to_rate) = code(&args.to)?;
        let rate = to_rate / from_rate;
        let digits = table.minor_units.get(&to).copied().unwrap_or(2);
        let scale = 10f64.powi(digits);
        let converted = (args.amount * rate * scale).round() / scale;
        Ok(Conversion {
            amount: args.amount,
            from,
            to,
            rate,
            converted,
            as_of: table.as_of,
        })
    })
}
