//! `noma verify <fixture-dir>`: the Annex C conformance harness.

use std::io::Write;
use std::path::PathBuf;

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
/// fixture.
pub fn run(args: Args) -> i32 {
    let Some(dir) = args.dir else {
        eprintln!("noma verify: give the corpus root, e.g. `noma verify conformance`");
        return super::EXIT_USAGE;
    };
    if !dir.exists() {
        eprintln!("noma verify: {}: no such directory", dir.display());
        return super::EXIT_USAGE;
    }
    if !dir.is_dir() {
        eprintln!("noma verify: {} is not a directory", dir.display());
        return super::EXIT_USAGE;
    }
    let report = noma_verify::run(&dir);
    if report.fixtures.is_empty() {
        // A CI step pointed at the wrong directory must not pass.
        eprintln!(
            "noma verify: no fixtures (directories with input.noma) under {}; give the corpus \
root, e.g. `noma verify conformance`",
            dir.display()
        );
        return super::EXIT_USAGE;
    }
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout
        .write_all(report.render().as_bytes())
        .and_then(|()| stdout.flush())
    {
        eprintln!("noma verify: cannot write output: {e}");
        return super::EXIT_USAGE;
    }
    report.exit_code()
}
