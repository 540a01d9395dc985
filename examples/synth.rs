//! Prints a synthetic benchmark document: `synth [SECTIONS]` (default
//! 10,000 sections, ~3 MB). A bench-only tool, kept out of the shipped
//! binary: `cargo build --release --example synth` builds
//! `target/release/examples/synth`, and `bench_synth` in
//! `benches/common.sh` does that for the bench scripts.

use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let sections = match (args.next(), args.next()) {
        (None, _) => 10_000,
        (Some(n), None) => match n.parse::<usize>() {
            Ok(n) => n,
            Err(_) => {
                eprintln!("synth: SECTIONS must be a whole number, got {n:?}");
                return ExitCode::from(2);
            }
        },
        (Some(_), Some(_)) => {
            eprintln!("usage: synth [SECTIONS]");
            return ExitCode::from(2);
        }
    };
    let doc = noma_testutil::synth::document(sections);
    let mut out = std::io::stdout().lock();
    match out.write_all(doc.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("synth: cannot write the document: {e}");
            ExitCode::FAILURE
        }
    }
}
