//! A test component for the WIT-JSON mapping: `values.echo` hands every kind of value
//! back, `check` ends in an ok or an err, `crash` traps, `nap` sleeps (virtually, on a
//! pinned clock), `get-user`, `find-user` and `lookup-user` say "not found" in each
//! way a typed export can, and `peek` takes a resource, which no JSON can carry.

wit_bindgen::generate!({ world: "kinds", path: "wit" });

use exports::plangate::kinds::values::{
    Color, CounterBorrow, Guest, GuestCounter, LookupError, LookupFailure, Perms, Point, Shape,
};

struct Kinds;

struct MyCounter(std::cell::Cell<u64>);

impl GuestCounter for MyCounter {
    fn new(start: u64) -> Self {
        MyCounter(std::cell::Cell::new(start))
    }

    fn bump(&self) -> u64 {
        self.0.set(self.0.get() + 1);
        self.0.get()
    }
}

/// The users the lookups know.
fn user(id: &str) -> Result<String, LookupError> {
    match id {
        "u_1" => Ok("Ada".into()),
        "u_2" => Ok("Grace".into()),
        "u_0" => Err(LookupError::Denied(format!("{id} is not yours to read"))),
        _ => Err(LookupError::NotFound(format!("no user {id}"))),
    }
}

type Echoed = (
    Point,
    Shape,
    Color,
    Perms,
    Option<Option<u8>>,
    (char, f64),
    Vec<String>,
    u64,
    i64,
    f32,
);

impl Guest for Kinds {
    type Counter = MyCounter;

    #[allow(clippy::too_many_arguments, reason = "the WIT signature is the test")]
    fn echo(
        p: Point,
        s: Shape,
        c: Color,
        f: Perms,
        o: Option<Option<u8>>,
        t: (char, f64),
        l: Vec<String>,
        big: u64,
        small: i64,
        ratio: f32,
    ) -> Result<Echoed, String> {
        Ok((p, s, c, f, o, t, l, big, small, ratio))
    }

    fn check(ok: bool) -> Result<(), String> {
        if ok {
            Ok(())
        } else {
            Err("check failed: ok was false".into())
        }
    }

    fn crash() -> u32 {
        panic!("crash was called")
    }

    fn nap(ms: u64) -> u64 {
        let start = std::time::Instant::now();
        std::thread::sleep(std::time::Duration::from_millis(ms));
        start.elapsed().as_millis() as u64
    }

    fn get_user(user_id: String) -> Result<String, LookupError> {
        user(&user_id)
    }

    fn find_user(user_id: String) -> Result<String, LookupFailure> {
        user(&user_id).map_err(|e| match e {
            LookupError::NotFound(_) => LookupFailure::NotFound,
            LookupError::Denied(_) => LookupFailure::Denied,
        })
    }

    fn lookup_user(user_id: String) -> Result<String, String> {
        user(&user_id).map_err(|e| {
            let (kind, message) = match e {
                LookupError::NotFound(m) => ("not_found", m),
                LookupError::Denied(m) => ("denied", m),
            };
            // The tool ABI's envelope, written by hand: the component has no JSON crate.
            let message = message.replace('\\', "\\\\").replace('"', "\\\"");
            format!(r#"{{"error":{{"kind":"{kind}","message":"{message}"}}}}"#)
        })
    }

    fn peek(c: CounterBorrow<'_>) -> u64 {
        c.get::<MyCounter>().0.get()
    }
}

export!(Kinds);
