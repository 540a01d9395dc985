//! Who a writer on the command line is when it names nobody.

use std::path::Path;

use crate::git::repo::Repo;

/// The actor name a transcript record carries when none is given, and
/// where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DefaultName {
    /// The name git would author a commit with (`GIT_AUTHOR_NAME`, then
    /// `user.name` as seen from the document's directory), then `$USER` /
    /// `$USERNAME`, then "unknown". Containers and CI runners rarely set
    /// `$USER`, but a commit needs `user.name` anyway.
    pub name: String,
    /// Whether git has an identity there. Without one, records carry a
    /// name guessed from the login and the first `git commit` fails too,
    /// so the shells warn and say how to set it.
    pub from_git: bool,
}

/// The [`DefaultName`] for a writer of `file`.
pub fn default_name(file: &Path) -> DefaultName {
    let dir = file
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    named(|| crate::git::config::user_name(dir))
}

/// [`default_name`] with the repository around the document already open
/// (`None`: the document is in none, so only the user's and the system's
/// configuration count).
pub(crate) fn default_name_in(repo: Option<&Repo>) -> DefaultName {
    named(|| match repo {
        Some(r) => r.config_string("user.name"),
        None => crate::git::config::user_name_outside(),
    })
}

fn named(user_name: impl FnOnce() -> Option<String>) -> DefaultName {
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
    let git = env("GIT_AUTHOR_NAME").or_else(|| {
        user_name()
            .map(|n| n.trim().to_string())
            .filter(|n| !n.is_empty())
    });
    let from_git = git.is_some();
    let name = git
        .or_else(|| std::env::var("USER").ok().filter(|u| !u.is_empty()))
        .or_else(|| std::env::var("USERNAME").ok().filter(|u| !u.is_empty()))
        .unwrap_or_else(|| "unknown".into());
    DefaultName { name, from_git }
}
