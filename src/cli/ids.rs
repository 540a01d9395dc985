//! `noma ids`: the id registry as JSON.

use std::path::PathBuf;

use crate::report::output::Output;

/// Arguments of `noma ids`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The .noma file.
    file: PathBuf,
}

/// Runs `noma ids`.
pub fn run(args: Args) -> Output {
    let src = match super::read_doc(&args.file) {
        Ok(s) => s,
        Err(said) => return said,
    };
    let doc = noma_core::doc::parse(&src);
    let mut c = Output::default();
    c.json_typed(noma_core::doc::ids::registry(&doc));
    c
}
