//! `noma ids`: the id registry as JSON.

use std::path::PathBuf;

/// Arguments of `noma ids`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The .noma file.
    file: PathBuf,
}

/// Runs `noma ids`.
pub fn run(args: Args) -> i32 {
    let src = match super::read_doc(&args.file) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let doc = noma_core::doc::parse(&src);
    super::print_json(&noma_core::doc::ids::registry(&doc))
}
