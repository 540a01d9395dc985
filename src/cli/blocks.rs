//! `noma blocks`: every addressable block with its span and source hash,
//! served from the per-block hash cache for contents seen before.

use std::path::PathBuf;

use super::Format;
use crate::report::output::{Exit, Output};

/// Arguments of `noma blocks`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The .noma document.
    pub file: PathBuf,
    /// Read the file as committed at this revision (git's `REV:path` rule:
    /// the path is relative to the repository root unless it starts with
    /// `./` or `../`).
    #[arg(long, value_name = "REV")]
    pub rev: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

/// Runs `noma blocks`.
pub fn run(args: Args) -> Output {
    let cache = super::cache::open_for_cwd();
    let info = match &args.rev {
        None => {
            let src = match super::read_doc(&args.file) {
                Ok(s) => s,
                Err(said) => return said,
            };
            cache.doc_info(&src)
        }
        Some(rev) => {
            let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
            match noma_git::git::blob::read_rev_text(&cwd, rev, &args.file) {
                Ok((file, text)) => cache.doc_info_for_blob(&file.oid, &text),
                Err(e) => return Output::error(format!("noma: {e}"), Exit::NotRun),
            }
        }
    };
    let mut c = Output::default();
    match args.format {
        Format::Json => c.json_with(move |w| serde_json::to_writer_pretty(w, &info.blocks)),
        Format::Human => {
            let blocks = &info.blocks;
            // One buffered write: large documents have tens of thousands of lines.
            let mut out = String::with_capacity(blocks.len() * 110);
            for b in blocks {
                let kind = match &b.name {
                    Some(n) => format!("{}/{n}", b.kind),
                    None => b.kind.to_string(),
                };
                out.push_str(&format!(
                    "{}\t{kind}\t[{}, {}]\t{}\n",
                    b.id, b.lines[0], b.lines[1], b.sha256
                ));
            }
            c.out_text(out);
        }
    }
    c
}
