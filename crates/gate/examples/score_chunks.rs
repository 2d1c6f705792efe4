//! Scratch driver: scores a samples file as `plangate score` does (chunks of 256 lines,
//! the records appended to one reused buffer, a chunk's scored values kept until it is
//! written), with the gate alone, for callgrind.
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
    let all: Vec<&[u8]> = lines
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    let mut records = String::new();
    let mut total = 0usize;
    for chunk in all.chunks(256) {
        let scored: Vec<_> = chunk
            .iter()
            .map(|line| {
                let s = scorer.score(line);
                s.emit(&mut Json::new(&mut records));
                records.push('\n');
                s
            })
            .collect();
        total += records.len();
        if args.len() > 3 {
            print!("{records}");
        }
        drop(scored);
        records.clear();
    }
    println!("{total}");
}
