//! `noma render <file> [--to noma|json]`: canonical source or AST JSON.

use std::io::Write;
use std::path::PathBuf;

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
pub fn run(args: Args) -> i32 {
    let src = match super::read_doc(&args.file) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let doc = noma_core::doc::parse(&src);
    match args.to {
        Target::Json => super::print_json(&noma_core::doc::json::DocumentJson::new(&doc)),
        Target::Noma => {
            let out = noma_core::doc::render::render_noma(&doc);
            let mut stdout = std::io::stdout().lock();
            match stdout
                .write_all(out.as_bytes())
                .and_then(|()| stdout.flush())
            {
                Ok(()) => super::EXIT_OK,
                Err(e) => {
                    eprintln!("noma render: cannot write output: {e}");
                    super::EXIT_USAGE
                }
            }
        }
    }
}
