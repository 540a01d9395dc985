//! The one wording for a revision that does not resolve: "`mian` is not a
//! revision of this repository; did you mean `main`?", shared by every
//! command that takes a revision (`reconcile --base`, `changed --base`,
//! `replay --rev`, `blocks --rev`).

use git2::{BranchType, Repository};

/// `"; did you mean `main`?"` when exactly one branch, remote-tracking
/// branch (with or without its remote's prefix) or tag is within edit
/// distance 2 of `rev`; the remotes to choose from when several have a
/// branch of that name; else where the names are listed.
pub(in crate::git) fn hint(repo: &Repository, rev: &str) -> String {
    let mut names: Vec<String> = vec!["HEAD".into()];
    let mut same_name_remotes = Vec::new();
    for kind in [BranchType::Local, BranchType::Remote] {
        let Ok(branches) = repo.branches(Some(kind)) else {
            continue;
        };
        for (branch, _) in branches.flatten() {
            let Ok(Some(name)) = branch.name() else {
                continue;
            };
            if kind == BranchType::Remote {
                if let Some((_, short)) = name.split_once('/') {
                    if short == rev {
                        same_name_remotes.push(format!("`{name}`"));
                    }
                    names.push(short.to_string());
                }
            }
            names.push(name.to_string());
        }
    }
    if !same_name_remotes.is_empty() {
        return format!(
            "; several remotes have it: name one ({})",
            same_name_remotes.join(", ")
        );
    }
    if let Ok(tags) = repo.tag_names(None) {
        names.extend(tags.iter().flatten().map(str::to_string));
    }
    names.sort();
    names.dedup();
    names.retain(|n| n != rev);
    match noma_core::suggest::near_miss(rev, names.iter().map(String::as_str)) {
        Some(name) => format!("; did you mean `{name}`?"),
        None => "; list the branches with `git branch -a` (a CI checkout may need to fetch the base branch)".into(),
    }
}

/// The message for a revision that does not resolve.
pub fn unknown(rev: &str, hint: &str) -> String {
    format!("`{rev}` is not a revision of this repository{hint}")
}
