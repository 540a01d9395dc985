//! `noma replay`: verify that a transcript reproduces its document.

use std::path::PathBuf;

use serde_json::json;

use super::Format;
use crate::engine;

/// Arguments of `noma replay`.
///
/// Read-only: replays every applied record from the base and checks the
/// hash chain, each op's hashes, and the document on disk. Nothing is
/// repaired here; an interrupted write that is due is reported (the next
/// `noma patch`, or `noma repair`, completes it).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The .noma document.
    pub file: PathBuf,
    /// Transcript path (default: the document path plus .patches).
    #[arg(long, value_name = "PATH")]
    pub transcript: Option<PathBuf>,
    /// The document as it was before the first applied record (default:
    /// the document itself, when its sha256 is that record's pre_sha256).
    #[arg(long, value_name = "PATH")]
    pub base: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

/// Runs `noma replay`.
pub fn run(args: Args) -> i32 {
    let (notes, report) = match engine::replay_file(
        &args.file,
        args.transcript.as_deref(),
        args.base.as_deref(),
        engine::APPLY,
    ) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("noma replay: {e}");
            return if e.is_check_failure() {
                super::EXIT_FAIL
            } else {
                super::EXIT_USAGE
            };
        }
    };
    let code = if report.ok {
        super::EXIT_OK
    } else {
        super::EXIT_FAIL
    };
    match args.format {
        Format::Json => {
            let c = super::print_json(&json!({ "pending": notes, "replay": report }));
            if c != super::EXIT_OK {
                return c;
            }
        }
        Format::Human => {
            for m in &notes {
                println!("pending: {m}");
            }
            let rate = if report.elapsed_ms > 0.0 {
                format!(
                    ", {:.0} records/s",
                    report.records as f64 * 1000.0 / report.elapsed_ms
                )
            } else {
                String::new()
            };
            println!(
                "{} records ({} applied, {} rejected, {} noop) in {:.1} ms{rate}",
                report.records, report.applied, report.rejected, report.noop, report.elapsed_ms
            );
            match &report.divergence {
                None => println!(
                    "ok: replay reproduces the document (sha256 {})",
                    report.final_sha256.as_deref().unwrap_or("-")
                ),
                Some(d) => {
                    let who = d
                        .op_id
                        .as_deref()
                        .map(|o| format!(" (op_id {o})"))
                        .unwrap_or_default();
                    println!("DIVERGED at line {}{who}: {}", d.line, d.message);
                    if let (Some(e), Some(a)) = (&d.expected_sha256, &d.actual_sha256) {
                        println!("  expected sha256 {e}\n  actual   sha256 {a}");
                    }
                    for b in &d.blocks {
                        println!("  block {} {}", b.id, b.change);
                    }
                }
            }
        }
    }
    code
}
