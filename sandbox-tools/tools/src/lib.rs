//! What the seed-world tools share: the record types of `examples/seed-world/data` and
//! their loaders, so that twelve binaries agree on one reading of the world.
//!
//! Every loader reads from a mount path (`/world`, `/index`, `/config`, `/cache`); the
//! tools carry no data of their own.

use plangate_guest::{ToolError, read_json};
use serde::{Deserialize, Serialize};

/// Where the catalog mounts `examples/seed-world/data` (pinned).
pub const WORLD: &str = "/world";

/// One account in `/world/users.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct User {
    /// Canonical id, `u_` and four digits.
    pub id: String,
    /// Display name.
    pub name: String,
    /// Lower-case email address.
    pub email: String,
    /// Lower-case handle, without the leading `@`.
    pub handle: String,
    /// ISO 3166 alpha-2 country code.
    pub country: String,
    /// Account creation date, `YYYY-MM-DD`.
    pub created: String,
    /// Set on an account merged into another: the id of the account that was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged_into: Option<String>,
}

/// One line item of an order.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Item {
    /// The product's SKU.
    pub sku: String,
    /// Quantity ordered.
    pub qty: u32,
    /// Price per unit at order time, in minor units of the order's currency.
    pub unit_price_cents: u64,
}

/// One order in `/world/orders.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Order {
    /// Canonical id, `o_` and four digits.
    pub id: String,
    /// The buyer's user id.
    pub user_id: String,
    /// `placed`, `paid`, `shipped`, `delivered`, `cancelled` or `refunded`.
    pub status: String,
    /// RFC 3339 UTC timestamp.
    pub placed_at: String,
    /// ISO 4217 code of every amount in the order.
    pub currency: String,
    /// Line items.
    pub items: Vec<Item>,
    /// Sum of the items, in minor units.
    pub total_cents: u64,
}

/// One product in `/world/products.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Product {
    /// Canonical SKU, `SKU-` and four digits.
    pub sku: String,
    /// Display name.
    pub name: String,
    /// `books`, `hardware`, `office`, `software` or `apparel`.
    pub category: String,
    /// List price in minor units.
    pub price_cents: u64,
    /// ISO 4217 code of the price.
    pub currency: String,
    /// Units in stock.
    pub in_stock: u32,
    /// Sorted merchandising tags.
    pub tags: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Users {
    users: Vec<User>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Orders {
    orders: Vec<Order>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Products {
    products: Vec<Product>,
}

/// All accounts, in file order.
pub fn users() -> Result<Vec<User>, ToolError> {
    Ok(read_json::<Users>(format!("{WORLD}/users.json"))?.users)
}

/// All orders, in file order.
pub fn orders() -> Result<Vec<Order>, ToolError> {
    Ok(read_json::<Orders>(format!("{WORLD}/orders.json"))?.orders)
}

/// All products, in file order.
pub fn products() -> Result<Vec<Product>, ToolError> {
    Ok(read_json::<Products>(format!("{WORLD}/products.json"))?.products)
}

/// Check an id argument's shape (`prefix` then exactly four ASCII digits), so that a
/// malformed id is a `bad_argument` and a well-formed absent one is `not_found`: the two
/// mean different things to a plan reviewer (a typo versus a fabricated record).
pub fn check_id(what: &str, value: &str, prefix: &str) -> Result<(), ToolError> {
    let digits = value.strip_prefix(prefix).unwrap_or("");
    if digits.len() == 4 && digits.bytes().all(|b| b.is_ascii_digit()) {
        Ok(())
    } else {
        Err(ToolError::bad_argument(format!(
            "{what} {value:?} is not of the form {prefix}NNNN"
        )))
    }
}

/// Format seconds since the Unix epoch, shifted by `offset_minutes`, as RFC 3339
/// (`2026-11-05T12:00:00+01:00`), without a date library.
pub fn rfc3339(unix_secs: i64, offset_minutes: i32) -> String {
    let local = unix_secs + i64::from(offset_minutes) * 60;
    let days = local.div_euclid(86_400);
    let secs = local.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    let zone = if offset_minutes == 0 {
        "Z".to_owned()
    } else {
        let sign = if offset_minutes < 0 { '-' } else { '+' };
        let abs = offset_minutes.unsigned_abs();
        format!("{sign}{:02}:{:02}", abs / 60, abs % 60)
    };
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}{zone}",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

// Howard Hinnant's days-to-civil algorithm (proleptic Gregorian), exact for every i64 day
// a clock can produce here.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    //! Run on the host: `cargo test -p seed-world-tools --target x86_64-unknown-linux-gnu`.
    use super::*;

    #[test]
    fn rfc3339_known_instants() {
        assert_eq!(rfc3339(0, 0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_793_836_800, 0), "2026-11-05T00:00:00Z");
        assert_eq!(rfc3339(1_793_836_800, 60), "2026-11-05T01:00:00+01:00");
        assert_eq!(rfc3339(1_793_836_800, -330), "2026-11-04T18:30:00-05:30");
        assert_eq!(rfc3339(951_782_400, 0), "2000-02-29T00:00:00Z");
    }

    #[test]
    fn id_shapes() {
        assert!(check_id("user id", "u_0042", "u_").is_ok());
        for bad in ["u_42", "U_0042", "u_00420", "u_00a2", ""] {
            assert!(check_id("user id", bad, "u_").is_err(), "{bad}");
        }
    }
}

/// Merge chains are short; a cycle in bad data must not loop forever.
const MAX_MERGE_HOPS: usize = 8;

/// Which kind of user reference `input` (trimmed, lower case) is: `id`, `email` or
/// `handle`, and its lookup key (`@handle` for handles).
pub fn classify_reference(input: &str) -> Result<(&'static str, String), ToolError> {
    if input.is_empty() {
        return Err(ToolError::bad_argument("user is empty"));
    }
    if check_id("user", input, "u_").is_ok() {
        return Ok(("id", input.to_owned()));
    }
    if let Some(handle) = input.strip_prefix('@') {
        return handle_key(handle);
    }
    if let Some((local, domain)) = input.split_once('@') {
        if local.is_empty() || !domain.contains('.') || domain.contains('@') {
            return Err(ToolError::bad_argument(format!(
                "{input:?} is not an email address"
            )));
        }
        return Ok(("email", input.to_owned()));
    }
    handle_key(input)
}

fn handle_key(handle: &str) -> Result<(&'static str, String), ToolError> {
    let ok = !handle.is_empty()
        && handle
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'.');
    if ok {
        Ok(("handle", format!("@{handle}")))
    } else {
        Err(ToolError::bad_argument(format!(
            "{handle:?} is not an email, a handle or a u_NNNN id"
        )))
    }
}

/// The id an account ends at after following `merged_into`.
pub fn follow_merges<'a>(directory: &'a [User], mut user: &'a User) -> Result<String, ToolError> {
    for _ in 0..MAX_MERGE_HOPS {
        let Some(into) = &user.merged_into else {
            return Ok(user.id.clone());
        };
        user = directory.iter().find(|u| &u.id == into).ok_or_else(|| {
            ToolError::invalid_data(format!("{} is merged into unknown user {into}", user.id))
        })?;
    }
    Err(ToolError::invalid_data(format!(
        "merge chain from {} is too long",
        user.id
    )))
}

/// The directory entry for a classified reference (see [`classify_reference`]).
pub fn lookup<'a>(directory: &'a [User], matched: &str, key: &str) -> Option<&'a User> {
    directory.iter().find(|u| match matched {
        "id" => u.id == key,
        "email" => u.email == key,
        _ => format!("@{}", u.handle) == key,
    })
}

/// The account a reference (id, email, `@handle` or handle; any case, blanks trimmed)
/// names in the directory, following merges: the answer `resolve_user` gives from the
/// directory, so `get_user` keeps the catalog's `id` hint promise.
pub fn find_user(directory: &[User], reference: &str) -> Result<User, ToolError> {
    let input = reference.trim().to_lowercase();
    let (matched, key) = classify_reference(&input)?;
    let user = lookup(directory, matched, &key)
        .ok_or_else(|| ToolError::not_found(format!("no user matches {reference:?}")))?;
    let id = follow_merges(directory, user)?;
    directory
        .iter()
        .find(|u| u.id == id)
        .cloned()
        .ok_or_else(|| ToolError::invalid_data(format!("merged into unknown user {id}")))
}
