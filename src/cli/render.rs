//! `noma render <file> [--to noma|json]`: canonical source or AST JSON.

use std::path::PathBuf;

use crate::report::output::Output;

/// Output of `noma render`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Default)]
pub enum Target {
    /// Canonical .noma source (the roundtrip renderer).
    #[default]
    Noma,
    /// The AST as JSON (same as `noma parse`).
    Json,
}

/// Arguments of `noma render`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The .noma file to render.
    pub file: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Target::Noma)]
    pub to: Target,
}

/// Runs `noma render`.
pub fn run(args: Args) -> Output {
    let src = match super::read_doc(&args.file) {
        Ok(s) => s,
        Err(said) => return said,
    };
    let doc = noma_core::doc::parse(&src);
    let mut c = Output::default();
    match args.to {
        Target::Json => c.json_with(move |w| {
            serde_json::to_writer_pretty(w, &noma_core::doc::json::DocumentJson::new(&doc))
        }),
        Target::Noma => c.out_text(noma_core::doc::render::render_noma(&doc)),
    }
    c
}
