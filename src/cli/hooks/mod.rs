//! `noma hooks install | uninstall | status`: manage the git hooks that run
//! `noma hook <name>`. See [`noma_git::install`] for what happens to existing
//! hooks.
//!
//! Exit codes: 0 done, 1 refused (an existing hook or kept file is in the
//! way; nothing changed), 2 could not run (no repository, bare repository,
//! I/O error).

use std::path::PathBuf;

use clap::Subcommand;

pub mod adopt;
pub mod describe;
pub mod setup;
pub mod status;

use super::Format;

/// Arguments of `noma hooks`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    action: Action,
}

#[derive(Debug, Subcommand)]
enum Action {
    /// Install the pre-commit and pre-merge-commit hooks. An existing
    /// foreign hook is kept and run first (chained).
    Install {
        /// Replace a foreign hook instead of chaining it (it is kept as
        /// `<hook>.noma-backup` and restored by uninstall).
        #[arg(long)]
        force: bool,
        /// The noma binary the hooks run (default: this one).
        #[arg(long, value_name = "PATH")]
        noma_path: Option<PathBuf>,
        /// Register only the merge driver (and the line-ending rules),
        /// for repositories whose hooks a hook manager runs.
        #[arg(long, conflicts_with = "force")]
        driver_only: bool,
    },
    /// Remove our hooks and put back whatever they replaced. The merge
    /// lines of a committed .gitattributes stay (other clones use them).
    Uninstall {
        /// Also remove noma's lines from a committed .gitattributes (then
        /// commit that change).
        #[arg(long)]
        gitattributes: bool,
    },
    /// Show, per hook, what is installed and where.
    Status {
        /// Output format.
        #[arg(long, value_enum, default_value_t)]
        format: Format,
    },
}

/// Runs `noma hooks`.
pub fn run(args: Args) -> crate::report::output::Output {
    match args.action {
        Action::Install {
            force,
            noma_path,
            driver_only,
        } => setup::hooks_install(&setup::HooksInstall {
            force,
            noma: noma_path,
            driver_only,
        }),
        Action::Uninstall { gitattributes } => setup::hooks_uninstall(gitattributes),
        Action::Status { format } => status::hooks_status(format == Format::Json),
    }
}
