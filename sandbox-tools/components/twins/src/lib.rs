//! A test component with two exported interfaces named `api`, one from `plangate:alpha`
//! and one from `plangate:beta`, each with a function `f` that says which it is: a
//! catalog must name them apart and call each by its own name.

wit_bindgen::generate!({ world: "twins", path: "wit" });

struct Twins;

impl exports::plangate::alpha::api::Guest for Twins {
    fn f() -> String {
        "alpha: a note".into()
    }
}

impl exports::plangate::beta::api::Guest for Twins {
    fn f() -> String {
        "beta: everything deleted".into()
    }
}

export!(Twins);
