//! Prints everything a guest can observe, so two runs can be compared byte for byte:
//! clocks around a 1 s sleep, random bytes, HashMap order, env, argv, and a walk of
//! /world in the order the host lists it, with every stat field and every file's bytes.

use std::collections::HashMap;
use std::fs;
use std::path::Path;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use test_guests::{fd_filestat, hex, random_bytes};

fn since_epoch(t: std::io::Result<SystemTime>) -> String {
    match t {
        Ok(t) => match t.duration_since(UNIX_EPOCH) {
            Ok(d) => format!("{}.{:09}", d.as_secs(), d.subsec_nanos()),
            Err(e) => format!("before-epoch({e})"),
        },
        Err(e) => format!("err({})", e.kind()),
    }
}

fn walk(dir: &Path, out: &mut String) {
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) => {
            out.push_str(&format!("readdir {} err {}\n", dir.display(), e));
            return;
        }
    };
    // Listed in the order the host serves: readdir order is one of the observables.
    for entry in entries {
        let entry = match entry {
            Ok(e) => e,
            Err(e) => {
                out.push_str(&format!("entry err {e}\n"));
                continue;
            }
        };
        let path = entry.path();
        let ft = entry
            .file_type()
            .map(|t| format!("{t:?}"))
            .unwrap_or_default();
        out.push_str(&format!("entry {} type {}\n", path.display(), ft));
        describe(&path, out);
        if let Ok(t) = entry.file_type() {
            if t.is_dir() {
                walk(&path, out);
            }
        }
    }
}

fn describe(path: &Path, out: &mut String) {
    for (label, meta) in [
        ("stat", fs::metadata(path)),
        ("lstat", fs::symlink_metadata(path)),
    ] {
        match meta {
            Ok(m) => out.push_str(&format!(
                "  {label} len {} dir {} file {} symlink {} readonly {} modified {} accessed {} created {}\n",
                m.len(),
                m.is_dir(),
                m.is_file(),
                m.file_type().is_symlink(),
                m.permissions().readonly(),
                since_epoch(m.modified()),
                since_epoch(m.accessed()),
                since_epoch(m.created()),
            )),
            Err(e) => out.push_str(&format!("  {label} err {}\n", e.kind())),
        }
    }
    if let Ok(target) = fs::read_link(path) {
        out.push_str(&format!("  link -> {}\n", target.display()));
    }
    match fs::File::open(path) {
        Ok(f) => {
            match fd_filestat(&f) {
                Ok(st) => out.push_str(&format!(
                    "  fdstat dev {} ino {} type {} nlink {} size {} atim {} mtim {} ctim {}\n",
                    st.dev, st.ino, st.filetype, st.nlink, st.size, st.atim, st.mtim, st.ctim
                )),
                Err(e) => out.push_str(&format!("  fdstat errno {e}\n")),
            }
            if let Ok(m) = f.metadata() {
                out.push_str(&format!(
                    "  fmeta len {} modified {}\n",
                    m.len(),
                    since_epoch(m.modified())
                ));
            }
            if path.is_file() {
                match fs::read(path) {
                    Ok(bytes) => out.push_str(&format!("  content {}\n", hex(&bytes))),
                    Err(e) => out.push_str(&format!("  content err {}\n", e.kind())),
                }
            }
        }
        Err(e) => out.push_str(&format!("  open err {}\n", e.kind())),
    }
}

fn main() {
    let mut out = String::new();
    let wall0 = SystemTime::now();
    let mono0 = Instant::now();
    std::thread::sleep(std::time::Duration::from_secs(1));
    let wall1 = SystemTime::now();
    let mono1 = Instant::now();
    out.push_str(&format!("wall_before {}\n", since_epoch(Ok(wall0))));
    out.push_str(&format!("wall_after {}\n", since_epoch(Ok(wall1))));
    out.push_str(&format!("mono_slept_ns {}\n", (mono1 - mono0).as_nanos()));
    out.push_str(&format!("random {}\n", hex(&random_bytes(32))));
    let map: HashMap<u32, u32> = (0..32).map(|i| (i, i)).collect();
    let order: Vec<String> = map.keys().map(u32::to_string).collect();
    out.push_str(&format!("hashmap_order {}\n", order.join(",")));
    for (k, v) in std::env::vars() {
        out.push_str(&format!("env {k}={v}\n"));
    }
    for a in std::env::args() {
        out.push_str(&format!("arg {a}\n"));
    }
    out.push_str("root /world\n");
    describe(Path::new("/world"), &mut out);
    walk(Path::new("/world"), &mut out);
    print!("{out}");
}
