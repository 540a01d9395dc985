//! `noma parse <file>`: the AST as pretty JSON, with spans.

use std::path::PathBuf;

use crate::report::output::Output;

/// Arguments of `noma parse`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The .noma file to parse.
    pub file: PathBuf,
}

/// Runs `noma parse`: prints the AST JSON (parse problems do not change the
/// exit code; `noma check` reports them).
pub fn run(args: Args) -> Output {
    let src = match super::read_doc(&args.file) {
        Ok(s) => s,
        Err(said) => return said,
    };
    let doc = noma_core::doc::parse(&src);
    // Streamed: the JSON is written as the tree is walked, never built.
    let mut c = Output::default();
    c.json_with(move |w| {
        serde_json::to_writer_pretty(w, &noma_core::doc::json::DocumentJson::new(&doc))
    });
    c
}
