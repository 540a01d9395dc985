//! Is the running hook part of `git commit --amend`?
//!
//! The pre-commit hook judges the staged transcripts against the commit
//! the new one will follow. For `git commit --amend` that is HEAD's parent,
//! not HEAD: HEAD is being replaced, so its records may be rewritten. Git
//! tells a hook nothing about an amend (no argument, variable or file
//! differs), so the answer comes from the command line of the `git commit`
//! process that runs the hook: the nearest ancestor process that is git.
//! Read from `/proc` on Linux and from `ps` on other Unix systems; where
//! neither answers (Windows), the hook assumes no amend, which is the
//! strict reading (an amend that rewrites records is then refused).

/// How many ancestors to look through: git runs the hook directly or
/// through a shell (husky, a chained hook), never much deeper.
#[cfg(unix)]
const MAX_DEPTH: usize = 6;

/// True when an ancestor process is `git commit` with `--amend`.
pub fn amend_in_progress() -> bool {
    #[cfg(unix)]
    {
        let mut pid = std::os::unix::process::parent_id();
        for _ in 0..MAX_DEPTH {
            let Some((args, parent)) = process_info(pid) else {
                return false;
            };
            if let Some(amend) = git_commit_amends(&args) {
                return amend;
            }
            if parent <= 1 {
                return false;
            }
            pid = parent;
        }
        false
    }
    #[cfg(not(unix))]
    {
        false
    }
}

/// For a git command line: `Some(true)` for `git … commit … --amend`,
/// `Some(false)` for any other git command; `None` when it is not git.
#[cfg_attr(not(unix), allow(dead_code))]
pub fn git_commit_amends(args: &[String]) -> Option<bool> {
    let program = args.first()?;
    let name = program.rsplit(['/', '\\']).next().unwrap_or(program);
    if name != "git" && name != "git.exe" {
        return None;
    }
    let mut rest = args[1..].iter().map(String::as_str);
    // Global options come before the subcommand (`git -c k=v commit`).
    let is_commit = loop {
        match rest.next() {
            None => break false,
            Some("-c" | "-C" | "--git-dir" | "--work-tree" | "--namespace") => {
                rest.next();
            }
            Some(a) if a.starts_with('-') => {}
            Some(sub) => break sub == "commit",
        }
    };
    // `--amend` or an unambiguous abbreviation of it (git accepts those).
    let amends = rest
        .take_while(|a| *a != "--")
        .any(|a| a.len() >= 5 && "--amend".starts_with(a));
    Some(is_commit && amends)
}

/// The command line and parent of process `pid`.
#[cfg(unix)]
fn process_info(pid: u32) -> Option<(Vec<String>, u32)> {
    let proc_dir = std::path::Path::new("/proc").join(pid.to_string());
    if let (Ok(cmdline), Ok(stat)) = (
        std::fs::read(proc_dir.join("cmdline")),
        std::fs::read_to_string(proc_dir.join("stat")),
    ) {
        let args = cmdline
            .split(|&b| b == 0)
            .filter(|a| !a.is_empty())
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        // `pid (comm) state ppid …`; comm may hold spaces and parentheses.
        let ppid = stat
            .rsplit_once(')')?
            .1
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()?;
        return Some((args, ppid));
    }
    let out = std::process::Command::new("ps")
        .args(["-o", "ppid=", "-o", "args=", "-p", &pid.to_string()])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let (ppid, args) = text.trim().split_once(char::is_whitespace)?;
    // `ps` joins the arguments with spaces; enough to spot these words.
    let args = args.split_whitespace().map(str::to_string).collect();
    Some((args, ppid.trim().parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn amends(line: &str) -> Option<bool> {
        let args: Vec<String> = line.split(' ').map(str::to_string).collect();
        git_commit_amends(&args)
    }

    #[test]
    fn reads_git_command_lines() {
        assert_eq!(amends("git commit --amend --no-edit"), Some(true));
        assert_eq!(amends("/usr/bin/git commit -q --amen"), Some(true));
        assert_eq!(amends("git -c core.editor=true commit --amend"), Some(true));
        assert_eq!(amends("git commit -m x"), Some(false));
        assert_eq!(amends("git commit -m x -- --amend"), Some(false));
        assert_eq!(amends("git rebase --continue"), Some(false));
        assert_eq!(amends("git merge --amend"), Some(false));
        assert_eq!(amends("sh .git/hooks/pre-commit"), None);
        assert_eq!(amends(""), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn reads_its_own_process() {
        let (args, ppid) = process_info(std::process::id()).unwrap();
        assert!(!args.is_empty());
        assert_eq!(ppid, std::os::unix::process::parent_id());
    }
}
