//! Scratch driver: scores a samples file with the gate alone, for callgrind.
use plangate_gate::record::Json;
use plangate_gate::score::{LineScorer, ScoreConfig};
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let cat_text = std::fs::read_to_string(&args[1]).unwrap();
    let catalog = plangate_gate::catalog::Catalog::from_value(
        &plangate_gate::json::parse(&cat_text).unwrap(),
    )
    .unwrap();
    let lines = std::fs::read(&args[2]).unwrap();
    let scorer = LineScorer::new(&catalog, ScoreConfig::default());
    let mut total = 0usize;
    let mut h: u64 = 0;
    for line in lines.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        let scored = scorer.score(line);
        let mut record = String::new();
        scored.emit(&mut Json::new(&mut record));
        total += record.len();
        if args.len() > 3 {
            print!("{record}\n");
        }
        h ^= record.len() as u64;
    }
    println!("{total} {h:x}");
}
