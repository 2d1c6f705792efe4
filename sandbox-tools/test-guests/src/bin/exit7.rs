//! Exits with code 7, after a line on stdout and one on stderr.

fn main() {
    println!("{{\"about_to\":\"exit\"}}");
    eprintln!("exiting with 7");
    std::process::exit(7);
}
