//! Parses each line of stdin and prints the canonical form or the error.
use std::io::BufRead;

fn main() {
    for line in std::io::stdin().lock().lines() {
        let line = line.expect("stdin");
        match corvid_rql::parse(&line) {
            Ok(q) => println!("ok   {line}\n  => {q}"),
            Err(e) => println!("err  {line}\n  => {e} | pos {} expected {:?}", e.position, e.expected),
        }
    }
}
