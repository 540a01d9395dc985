//! `noma blocks`: every addressable block with its span and source hash.

use std::path::PathBuf;

use super::Format;

/// Arguments of `noma blocks`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The .noma document.
    pub file: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

/// Runs `noma blocks`.
pub fn run(args: Args) -> i32 {
    let src = match super::read_doc(&args.file) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let doc = crate::doc::parse(&src);
    let blocks = crate::doc::hash::block_hashes(&src, &doc);
    match args.format {
        Format::Json => super::print_json(&blocks),
        Format::Human => {
            for b in &blocks {
                let kind = match &b.name {
                    Some(n) => format!("{}/{n}", b.kind),
                    None => b.kind.to_string(),
                };
                println!(
                    "{}\t{kind}\t[{}, {}]\t{}",
                    b.id, b.lines[0], b.lines[1], b.sha256
                );
            }
            super::EXIT_OK
        }
    }
}
