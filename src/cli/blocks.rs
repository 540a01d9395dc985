//! `noma blocks`: every addressable block with its span and source hash,
//! served from the per-block hash cache for contents seen before.

use std::path::PathBuf;

use super::Format;

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
pub fn run(args: Args) -> i32 {
    let cache = super::cache::open_for_cwd();
    let info = match &args.rev {
        None => {
            let src = match super::read_doc(&args.file) {
                Ok(s) => s,
                Err(code) => return code,
            };
            cache.doc_info(&src)
        }
        Some(rev) => {
            let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
            match noma_git::git::blob::read_rev_text(&cwd, rev, &args.file) {
                Ok((file, text)) => cache.doc_info_for_blob(&file.oid, &text),
                Err(e) => {
                    eprintln!("noma: {e}");
                    return super::EXIT_USAGE;
                }
            }
        }
    };
    let blocks = &info.blocks;
    match args.format {
        Format::Json => super::print_json(blocks),
        Format::Human => {
            use std::io::Write;
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
            let _ = std::io::stdout().lock().write_all(out.as_bytes());
            super::EXIT_OK
        }
    }
}
