//! `noma completions SHELL` and `noma man`: shell completions
//! (clap_complete) and a roff man page (clap_mangen), both generated from
//! the same command definitions as the parser, so they cannot drift.

use std::io::Write;

use clap::CommandFactory;

/// Arguments of `noma completions`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// Prints the completion script for `args.shell`.
pub fn run(args: Args) -> i32 {
    let mut cmd = super::Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "noma", &mut out);
    write_out(&out)
}

/// Prints the man page (section 1) of `noma` and its subcommands.
pub fn run_man() -> i32 {
    let cmd = super::Cli::command();
    let mut out = Vec::new();
    if let Err(e) = clap_mangen::Man::new(cmd.clone()).render(&mut out) {
        eprintln!("noma man: {e}");
        return super::EXIT_USAGE;
    }
    // The top page lists the subcommands; each one's options follow as
    // sections of the same page, so `man noma` holds the whole reference.
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = sub.get_name();
        let _ = writeln!(out, ".SH \"NOMA {}\"", name.to_uppercase());
        let page = clap_mangen::Man::new(sub.clone());
        if let Err(e) = page.render_description_section(&mut out) {
            eprintln!("noma man: {e}");
            return super::EXIT_USAGE;
        }
        let _ = page.render_options_section(&mut out);
    }
    write_out(&out)
}

fn write_out(bytes: &[u8]) -> i32 {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(bytes).and_then(|()| stdout.flush()) {
        Ok(()) => super::EXIT_OK,
        Err(e) => {
            eprintln!("noma: cannot write output: {e}");
            super::EXIT_USAGE
        }
    }
}
