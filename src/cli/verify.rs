//! `noma verify <fixture-dir>`: the Annex C conformance harness.

use std::path::PathBuf;

use crate::report::output::{Exit, Output};

/// Arguments of `noma verify`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Corpus root (e.g. `conformance/`); every directory below it that holds
    /// `input.noma` is a fixture.
    #[arg(required = true, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// Runs `noma verify`: exit 0 when every fixture passes, 1 when any fails or
/// is skipped, 2 when the directory is absent, does not exist or holds no
/// fixture. The report is printed once the harness is done.
pub fn run(args: Args) -> Output {
    let not_run = |why: String| Output::error(format!("noma verify: {why}"), Exit::NotRun);
    let Some(dir) = args.dir else {
        return not_run("give the corpus root, e.g. `noma verify conformance`".into());
    };
    if !dir.exists() {
        return not_run(format!("{}: no such directory", dir.display()));
    }
    if !dir.is_dir() {
        return not_run(format!("{} is not a directory", dir.display()));
    }
    let report = noma_verify::run(&dir);
    if report.fixtures.is_empty() {
        // A CI step pointed at the wrong directory must not pass.
        return not_run(format!(
            "no fixtures (directories with input.noma) under {}; give the corpus root, e.g. \
             `noma verify conformance`",
            dir.display()
        ));
    }
    let mut c = Output::ending(if report.ok() {
        Exit::Passed
    } else {
        Exit::Failed
    });
    c.out_text(report.render());
    c
}
