//! `noma parse <file>`: the AST as pretty JSON, with spans.

use std::path::PathBuf;

/// Arguments of `noma parse`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The .noma file to parse.
    pub file: PathBuf,
}

/// Runs `noma parse`: prints the AST JSON (parse problems do not change the
/// exit code; `noma check` reports them).
pub fn run(args: Args) -> i32 {
    let src = match super::read_doc(&args.file) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let doc = noma_core::doc::parse(&src);
    // Streamed: the JSON is written as the tree is walked, never built.
    super::print_json(&noma_core::doc::json::DocumentJson::new(&doc))
}
