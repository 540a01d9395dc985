//! docs/provenance.md's walk-through runs as printed: its first three `sh`
//! blocks run command by command with `sh` in a repository holding a
//! committed `plan.noma` and its genesis record, `$HOME` a fresh directory
//! whose `~/.ssh/id_ed25519` is the person's key (the agent's key is made
//! by the walk-through itself, in `~/.ssh`, outside the work tree). Every
//! `#   ` line under a command is output it must print, and a trailing
//! `# exit N` its exit status. `noma approve`'s question is answered `y`.

use std::path::Path;

use crate::common::{text, Repo, NOMA};

const DOC: &str = "# Plan\n\n::claim{id=\"c1\" confidence=0.5}\nThe sky is blue.\n::\n\n::evidence{id=\"e1\" for=\"c1\"}\nLooked up.\n::\n";

/// What the linked file outside the work tree holds.
const BASHRC: &str = "export EDITOR=vi\n";

/// One command (continuation lines and a here-document joined) and what
/// the walk-through shows it printing and exiting with.
#[derive(Debug, PartialEq)]
struct Step {
    command: String,
    expected: Vec<String>,
    exit: Option<i32>,
    /// Which `sh` block (1-based) it is in.
    block: usize,
}

/// The first five `sh` blocks of the walk-through: the set-up, the agent's
/// patch, the approval, `noma provenance check-signers`, and a write
/// refused because the sidecar is a symbolic link.
fn steps(doc: &str) -> Vec<Step> {
    let mut steps: Vec<Step> = Vec::new();
    let mut blocks = 0;
    let mut lines = doc.lines();
    while let Some(line) = lines.next() {
        if line.trim() != "```sh" {
            continue;
        }
        blocks += 1;
        if blocks > 5 {
            break;
        }
        let mut pending = String::new();
        for line in lines.by_ref() {
            if line.trim() == "```" {
                break;
            }
            if let Some(out) = line.strip_prefix("#   ") {
                steps
                    .last_mut()
                    .unwrap()
                    .expected
                    .push(out.trim().to_string());
                continue;
            }
            pending.push_str(line);
            if let Some(joined) = pending.strip_suffix('\\') {
                pending = joined.to_string();
                continue;
            }
            if pending.contains("<<'EOF'") && !pending.ends_with("\nEOF") {
                pending.push('\n');
                continue;
            }
            // A trailing comment, not one inside a here-document.
            let note = if pending.contains('\n') {
                None
            } else {
                pending.split_once("  # ")
            };
            let (command, exit) = match note {
                Some((c, note)) => (c.trim_end().to_string(), exit_of(note)),
                None => (pending.clone(), None),
            };
            steps.push(Step {
                command,
                expected: Vec::new(),
                exit,
                block: blocks,
            });
            pending.clear();
        }
    }
    steps
}

/// `exit N` at the start of a trailing comment.
fn exit_of(note: &str) -> Option<i32> {
    let rest = note.trim().strip_prefix("exit ")?;
    rest.split_whitespace().next()?.parse().ok()
}

/// Runs `command` with `sh` in the work tree, the binary under test first
/// on PATH, answering `y` to a question.
fn run(r: &Repo, command: &str) -> (i32, String) {
    let bin = Path::new(NOMA).parent().unwrap();
    let path = format!(
        "PATH={}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let script = format!("echo y | (\n{command}\n)");
    let o = r.cmd("env", &[&path, "sh", "-c", &script]);
    (o.status.code().unwrap_or(-1), text(&o))
}

#[test]
fn the_provenance_walk_through_runs_as_printed() {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/provenance.md"))
            .unwrap();
    let steps = steps(&doc);
    assert!(steps.len() >= 10, "{steps:#?}");
    assert!(steps.iter().any(|s| !s.expected.is_empty()), "{steps:#?}");
    let r = Repo::with_genesis_record(DOC);
    let ssh = r.home.path().join(".ssh");
    std::fs::create_dir_all(&ssh).unwrap();
    let key = ssh.join("id_ed25519");
    let o = r.cmd(
        "ssh-keygen",
        &[
            "-q",
            "-t",
            "ed25519",
            "-N",
            "",
            "-C",
            "alice@example.com",
            "-f",
            key.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let root = [r.path().to_path_buf(), r.path().canonicalize().unwrap()];
    let home = [
        r.home.path().to_path_buf(),
        r.home.path().canonicalize().unwrap(),
    ];
    let bashrc = r.home.path().join(".bashrc");
    for step in &steps {
        if step.block == 4 && step.command.starts_with("noma provenance check-signers") {
            // The line the text describes: an option ssh-keygen skips.
            let alice = std::fs::read_to_string(ssh.join("id_ed25519.pub")).unwrap();
            let mut signers = r.read(".noma/allowed_signers");
            signers.push_str(&format!("alice@example.com no-touch-required {alice}"));
            r.write(".noma/allowed_signers", &signers);
        }
        if step.block == 5 {
            // The hostile clone the text describes: the sidecar links to a
            // file of the user's outside the work tree.
            std::fs::write(&bashrc, BASHRC).unwrap();
            std::fs::remove_file(r.path().join("plan.noma.provenance")).unwrap();
            std::os::unix::fs::symlink(&bashrc, r.path().join("plan.noma.provenance")).unwrap();
        }
        let (code, mut out) = run(&r, &step.command);
        for dir in &root {
            out = out.replace(dir.to_str().unwrap(), "/home/you/plan");
        }
        for dir in &home {
            out = out.replace(dir.to_str().unwrap(), "/home/you");
        }
        let want = step
            .exit
            .unwrap_or(if step.expected.is_empty() { 0 } else { code });
        assert_eq!(code, want, "`{}` exited {code}:\n{out}", step.command);
        for line in &step.expected {
            // A pasted line ending in `…` is shortened: its start must match.
            let printed = |l: &str| match line.strip_suffix('…') {
                Some(start) => l.trim().starts_with(start.trim_end()),
                None => l.trim() == line.as_str(),
            };
            assert!(
                out.lines().any(printed),
                "`{}` did not print\n  {line}\nit printed:\n{out}",
                step.command
            );
        }
    }
    assert!(steps.iter().any(|s| s.block == 5), "{steps:#?}");
    // The refused write left the linked file as it was.
    assert_eq!(std::fs::read_to_string(&bashrc).unwrap(), BASHRC);
    // The agent's key stayed outside the work tree; nothing secret was committed.
    assert!(ssh.join("noma_agent").is_file());
    let files = r.ok(&["ls-files"]);
    assert!(!files.contains("noma_agent"), "{files}");
}

#[test]
fn walk_through_steps_are_read_with_their_output_and_exit() {
    let doc = "```sh\na \\\n  b\ncat >> f <<'EOF'\nx  # kept\nEOF\nc   # exit 0\nd\n#   out\n```\n";
    assert_eq!(
        steps(doc),
        [
            Step {
                block: 1,
                command: "a   b".into(),
                expected: vec![],
                exit: None
            },
            Step {
                block: 1,
                command: "cat >> f <<'EOF'\nx  # kept\nEOF".into(),
                expected: vec![],
                exit: None
            },
            Step {
                block: 1,
                command: "c".into(),
                expected: vec![],
                exit: Some(0)
            },
            Step {
                block: 1,
                command: "d".into(),
                expected: vec!["out".into()],
                exit: None
            },
        ]
    );
}
