//! A test component for the WIT-JSON mapping: `values.echo` hands every kind of value
//! back, `check` ends in an ok or an err, `crash` traps, `nap` sleeps (virtually, on a
//! pinned clock), and `peek` takes a resource, which no JSON can carry.

wit_bindgen::generate!({ world: "kinds", path: "wit" });

use exports::plangate::kinds::values::{
    Color, CounterBorrow, Guest, GuestCounter, Perms, Point, Shape,
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

    fn peek(c: CounterBorrow<'_>) -> u64 {
        c.get::<MyCounter>().0.get()
    }
}

export!(Kinds);
