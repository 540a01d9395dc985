//! `noma hook <name>`: the checks the installed git hooks run.

use super::Format;
use noma_git::git::repo::Repo;
use noma_git::install::clone_check;
use noma_git::staged::{Guard, Report};
use noma_provenance::config::Policy;

/// Which hook to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum HookName {
    /// Check the staged documents and transcripts.
    PreCommit,
    /// The same over the merge result, plus transcript fork detection.
    PreMergeCommit,
}

/// Arguments of `noma hook`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Reads the index and object database only (never the working tree). Exit 0 \
passes, 1 blocks the commit, 2 the check could not run (not a repository, bad policy file)."
)]
pub struct Args {
    /// The hook.
    #[arg(value_enum)]
    pub name: HookName,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

/// Runs `noma hook`.
pub fn run(args: Args) -> i32 {
    let hook = match args.name {
        HookName::PreCommit => "pre-commit",
        HookName::PreMergeCommit => "pre-merge-commit",
    };
    let repo = match Repo::from_env() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("noma hook {hook}: {e}");
            return super::EXIT_USAGE;
        }
    };
    let root = repo.workdir().unwrap_or_else(|| repo.git_dir());
    let policy = match Policy::load(&root) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("noma hook {hook}: {e}");
            return super::EXIT_USAGE;
        }
    };
    warn_missing_driver(&repo);
    let cache = super::cache::open(&root);
    // Fork detection turns itself on whenever a merge is in progress.
    let guard = Guard::new(&repo, &policy, &cache);
    let report = match guard.check_index(hook) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("noma hook {hook}: {e}");
            return super::EXIT_USAGE;
        }
    };
    let code = if report.blocked {
        super::EXIT_FAIL
    } else {
        super::EXIT_OK
    };
    match args.format {
        Format::Json => {
            let c = super::print_json(&report);
            if c != super::EXIT_OK {
                return c;
            }
        }
        Format::Human => print_human(&report),
    }
    code
}

/// Tells a clone whose `.gitattributes` routes to noma's merge driver but
/// whose git config never registered it (git does not clone `.git/config`),
/// once per clone; never blocks.
fn warn_missing_driver(repo: &Repo) {
    let Some(work_tree) = repo.workdir() else {
        return;
    };
    let warned = repo.config_string(clone_check::WARNED_KEY).is_some();
    let configured = repo.config_string("merge.noma.driver");
    // The pre-commit framework (which sets PRE_COMMIT) shows a passing
    // hook's output only when the hook is `verbose`, which the hook cannot
    // tell: there the warning is not marked shown, and repeats until fixed.
    let framework = std::env::var_os("PRE_COMMIT").is_some();
    let Some(missing) = clone_check::missing_driver_once(
        &repo.common_dir(),
        &work_tree,
        configured,
        (warned, !framework),
    ) else {
        return;
    };
    let repeat = if framework {
        "Shown on each commit until fixed (pre-commit shows it with `verbose: true`)."
    } else {
        "Shown once per clone."
    };
    eprintln!(
        "noma: warning: .gitattributes routes {} to merge=noma but this clone has no merge.noma.driver (git does not clone .git/config): merges of transcripts will conflict as text. fix: noma hooks install --driver-only (or noma init). {repeat}",
        missing.patterns.join(" and ")
    );
}

fn print_human(report: &Report) {
    // Findings go to stderr: git shows hook stderr to the committer.
    for f in &report.findings {
        // A finding quotes what records say (actor, reason, op ids): shown
        // escaped, so none reaches the terminal as a control sequence.
        eprintln!("{}", noma_core::display::escape(&f.to_line()));
    }
    // A commit that touches no document or transcript says nothing: a line
    // on every commit in a repository where noma has nothing to check is
    // noise people learn to ignore.
    if report.documents == 0 && report.transcripts == 0 && report.findings.is_empty() {
        return;
    }
    let errors = report.findings.iter().filter(|f| f.blocking).count();
    let warnings = report.findings.len() - errors;
    let verdict = if report.blocked {
        "commit blocked"
    } else {
        "ok"
    };
    eprintln!(
        "noma {}: {} document(s), {} transcript(s) checked; {errors} error(s), {warnings} warning(s); {verdict}",
        report.hook, report.documents, report.transcripts
    );
}
