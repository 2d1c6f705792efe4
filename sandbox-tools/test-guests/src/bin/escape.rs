//! Tries every way out of the sandbox it can think of and reports each attempt as
//! `name: ok ...` or `name: denied ...`. The tests assert that no attempt says `ok`.

use std::fs;

fn report(out: &mut String, name: &str, r: Result<String, String>) {
    match r {
        Ok(s) => out.push_str(&format!("{name}: ok {s}\n")),
        Err(e) => out.push_str(&format!("{name}: denied {e}\n")),
    }
}

fn read(path: &str) -> Result<String, String> {
    fs::read(path)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .map_err(|e| e.to_string())
}

fn main() {
    let mut out = String::new();
    report(
        &mut out,
        "create_in_mount",
        fs::write("/world/new.txt", b"x")
            .map(|_| String::new())
            .map_err(|e| e.to_string()),
    );
    report(
        &mut out,
        "overwrite_in_mount",
        fs::OpenOptions::new()
            .write(true)
            .open("/world/data.txt")
            .map(|_| String::new())
            .map_err(|e| e.to_string()),
    );
    report(
        &mut out,
        "mkdir_in_mount",
        fs::create_dir("/world/newdir")
            .map(|_| String::new())
            .map_err(|e| e.to_string()),
    );
    report(
        &mut out,
        "remove_in_mount",
        fs::remove_file("/world/data.txt")
            .map(|_| String::new())
            .map_err(|e| e.to_string()),
    );
    report(&mut out, "parent_of_mount", read("/world/../secret.txt"));
    report(
        &mut out,
        "dotdot_listing",
        fs::read_dir("/world/..")
            .map(|d| format!("{} entries", d.count()))
            .map_err(|e| e.to_string()),
    );
    report(&mut out, "absolute_host_path", read("/etc/passwd"));
    report(
        &mut out,
        "host_root",
        fs::read_dir("/")
            .map(|d| format!("{} entries", d.count()))
            .map_err(|e| e.to_string()),
    );
    report(&mut out, "symlink_absolute", read("/world/link-abs"));
    report(&mut out, "symlink_relative_out", read("/world/link-up"));
    report(
        &mut out,
        "symlink_dir_out",
        fs::read_dir("/world/link-dir")
            .map(|d| format!("{} entries", d.count()))
            .map_err(|e| e.to_string()),
    );
    let env: Vec<String> = std::env::vars().map(|(k, v)| format!("{k}={v}")).collect();
    report(
        &mut out,
        "host_env",
        if env.is_empty() {
            Err("empty".into())
        } else {
            Ok(env.join(" "))
        },
    );
    report(
        &mut out,
        "host_env_var",
        std::env::var("PLANGATE_HOST_SECRET").map_err(|e| e.to_string()),
    );
    print!("{out}");
}
