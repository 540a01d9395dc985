//! `noma blame`: every block of a document with the newest record that
//! changed it (who, why, when, signer, approver, commit).

use std::path::PathBuf;

use noma_git::history;

use super::Format;
use crate::report::output::{Exit, Output};

/// Arguments of `noma blame`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The .noma document.
    pub file: PathBuf,
    /// The transcript (default: FILE.patches).
    #[arg(long, value_name = "PATH")]
    pub transcript: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

/// Runs `noma blame`.
pub fn run(args: Args) -> Output {
    if let Err(said) = super::noma_path("blame", &args.file, false) {
        return said;
    }
    let lines = match history::blame(
        &super::cache::open_for_cwd(),
        &args.file,
        args.transcript.as_deref(),
    ) {
        Ok(l) => l,
        Err(e) => return Output::error(format!("noma: {e}"), Exit::NotRun),
    };
    let mut c = Output::default();
    match args.format {
        Format::Json => c.json(serde_json::json!({
            "document": args.file.display().to_string(),
            "blocks": lines,
        })),
        Format::Human => {
            let ids: Vec<String> = lines
                .iter()
                .map(|l| noma_core::display::escape(&l.id).into_owned())
                .collect();
            let width = ids.iter().map(String::len).max().unwrap_or(0);
            let mut out = String::new();
            for (l, id) in lines.iter().zip(&ids) {
                let span = format!("[{}, {}]", l.lines[0], l.lines[1]);
                match &l.last {
                    Some(c) => {
                        let change = c.blocks.first().map_or("changed", |b| b.change);
                        out.push_str(&format!(
                            "{id:<width$}  {span:<10}  {change:<8}  {}",
                            super::log::describe(c)
                        ));
                    }
                    None => out.push_str(&format!(
                        "{id:<width$}  {span:<10}  unchanged since the transcript began\n"
                    )),
                }
            }
            c.out_text(out);
        }
    }
    c
}
