//! `noma hook <name>`: the checks the installed git hooks run.

use super::Format;
use crate::report::output::{Exit, Output};
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
pub fn run(args: Args) -> Output {
    let hook = match args.name {
        HookName::PreCommit => "pre-commit",
        HookName::PreMergeCommit => "pre-merge-commit",
    };
    let not_run =
        |e: &dyn std::fmt::Display| Output::error(format!("noma hook {hook}: {e}"), Exit::NotRun);
    let repo = match Repo::from_env() {
        Ok(r) => r,
        Err(e) => return not_run(&e),
    };
    let root = repo.workdir().unwrap_or_else(|| repo.git_dir());
    let policy = match Policy::load(&root) {
        Ok(p) => p,
        Err(e) => return not_run(&e),
    };
    // Said at once: the cache's notices, printed as they come, follow it.
    let mut c = Output::default();
    warn_missing_driver(&repo, &mut c);
    super::output::print_now(&mut c);
    let cache = super::cache::open(&root);
    // Fork detection turns itself on whenever a merge is in progress.
    let guard = Guard::new(&repo, &policy, &cache);
    let report = match guard.check_index(hook) {
        Ok(r) => r,
        Err(e) => return not_run(&e),
    };
    if report.blocked {
        c.at_least(Exit::Failed);
    }
    match args.format {
        Format::Json => c.json_typed(report),
        Format::Human => human(report, &mut c),
    }
    c
}

/// Tells a clone whose `.gitattributes` routes to noma's merge driver but
/// whose git config never registered it (git does not clone `.git/config`),
/// once per clone; never blocks.
fn warn_missing_driver(repo: &Repo, c: &mut Output) {
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
    c.err(format!(
        "noma: warning: .gitattributes routes {} to merge=noma but this clone has no merge.noma.driver (git does not clone .git/config): merges of transcripts will conflict as text. fix: noma hooks install --driver-only (or noma init). {repeat}",
        missing.patterns.join(" and ")
    ));
}

/// The findings and the verdict, for the committer.
fn human(report: Report, c: &mut Output) {
    let errors = report.findings.iter().filter(|f| f.blocking).count();
    let warnings = report.findings.len() - errors;
    let quiet = report.documents == 0 && report.transcripts == 0 && report.findings.is_empty();
    let verdict = format!(
        "noma {}: {} document(s), {} transcript(s) checked; {errors} error(s), {warnings} warning(s); {}",
        report.hook,
        report.documents,
        report.transcripts,
        if report.blocked {
            "commit blocked"
        } else {
            "ok"
        }
    );
    // Findings go to stderr: git shows hook stderr to the committer. A
    // line per finding, written when printed: a commit of many documents
    // can have thousands.
    if !report.findings.is_empty() {
        c.err_with(move |w| {
            report.findings.iter().try_for_each(|f| {
                // A finding quotes what records say (actor, reason, op
                // ids): shown escaped, so none reaches the terminal as a
                // control sequence.
                writeln!(w, "{}", noma_core::display::escape(&f.to_line()))
            })
        });
    }
    // A commit that touches no document or transcript says nothing: a line
    // on every commit in a repository where noma has nothing to check is
    // noise people learn to ignore.
    if !quiet {
        c.err(verdict);
    }
}
