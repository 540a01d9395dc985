//! The mistakes a newcomer makes first, one row each: the command run (in
//! a fresh repository after `noma init`, holding `plan.noma` with its
//! genesis record and `README.md`, both committed on `main`), the exit
//! code it gets, and words of its message naming what to do next. Every
//! row runs through the real binary (and real git, ssh-keygen); all
//! failures are reported at once.

use crate::common::{text, Repo};

const PLAN: &str = "---\ntitle: Plan\n---\n# Plan\n\nSome prose.\n\n::claim{id=\"speed\" confidence=0.5}\nFast.\n::\n\n::evidence{for=\"speed\" source=\"bench\"}\nMeasured.\n::\n";

/// A hand edit of `plan.noma` that no record explains.
const HAND_EDIT: &str = "printf 'A line by hand.\\n' >> plan.noma";
/// A signing key outside the work tree.
const KEYGEN: &str = "ssh-keygen -q -t ed25519 -N '' -f \"$HOME/k\"";
/// Where commands run outside any repository.
const OUTSIDE: &str = "mkdir -p \"$HOME/out\" && cd \"$HOME/out\"";

/// (what, shell command, exit code, words naming the next step)
const MISTAKES: &[(&str, &str, i32, &str)] = &[
    // Typos in commands and flags.
    ("command typo", "noma chek plan.noma", 2, "'check'"),
    ("command typo", "noma reconile --base main", 2, "'reconcile'"),
    ("command typo", "noma recrod plan.noma", 2, "'record'"),
    ("flag typo", "noma patch plan.noma --inplce --op '{}'", 2, "'--inplace'"),
    ("flag typo", "noma check --formt json plan.noma", 2, "'--format'"),
    ("missing flag", "noma reconcile", 2, "--base <REV>"),
    ("missing flag", "noma patch plan.noma --inplace", 2, "--op <OP>"),
    // Typos in ops, fields and ids.
    ("op typo", r#"noma patch plan.noma --op '{"op":"delete_blok","id":"speed"}'"#, 2, "did you mean `delete_block`?"),
    ("field typo", r#"noma patch plan.noma --op '{"op":"update_attribute","id":"speed","kye":"confidence","value":1}'"#, 2, "did you mean `key`?"),
    ("missing field", r#"noma patch plan.noma --op '{"op":"delete_block"}'"#, 2, "`noma schema patch-op` prints every op"),
    ("id typo in an op", r#"noma patch plan.noma --op '{"op":"delete_block","id":"sped"}'"#, 1, "did you mean \"speed\"?"),
    ("unquoted JSON", "noma patch plan.noma --op '{op:1}'", 2, "quote every key and string"),
    ("id typo in a link", "printf '# B\\n\\nSee [[sped]].\\n\\n::note{id=\"speed\"}\\nx\\n::\\n' > b.noma && noma check b.noma", 1, "did you mean \"speed\"?"),
    ("duplicate id", "printf '# B\\n\\n::note{id=\"n\"}\\nx\\n::\\n\\n::note{id=\"n\"}\\ny\\n::\\n' > b.noma && noma check b.noma", 1, "give one of them a different id="),
    ("profile typo", "sed -i 's/^title: Plan$/title: Plan\\nprofile: reserch/' plan.noma && noma check plan.noma", 0, "known profiles: minimal, technical, research"),
    ("rule typo", "noma check plan.noma --ignore-rule broken-referense", 0, "see `noma check --help` for the rule list"),
    // Typos in revisions.
    ("base typo", "noma reconcile --base mian", 2, "`mian` is not a revision of this repository; did you mean `main`?"),
    ("base typo", "noma changed --base mian", 2, "`mian` is not a revision of this repository; did you mean `main`?"),
    ("rev typo", "noma replay --rev mian plan.noma", 2, "`mian` is not a revision of this repository; did you mean `main`?"),
    ("rev typo", "noma blocks plan.noma --rev mian", 2, "`mian` is not a revision of this repository; did you mean `main`?"),
    ("tag typo", "git tag v1.0 && noma reconcile --base v1.1", 2, "did you mean `v1.0`?"),
    ("unknown base", "noma reconcile --base develop", 2, "list the branches with `git branch -a`"),
    // Wrong files.
    ("not a .noma file", "noma check README.md", 2, "rename it to end in .noma"),
    ("not a .noma file", r#"noma patch README.md --inplace --op '{"op":"delete_block","id":"readme"}'"#, 2, "rename it to end in .noma"),
    ("not a .noma file", "noma record README.md", 2, "rename it to end in .noma"),
    ("not a .noma file", "noma replay README.md", 2, "rename it to end in .noma"),
    ("the transcript", "noma check plan.noma.patches", 2, "run `noma check plan.noma`"),
    ("the transcript", "noma record plan.noma.patches", 2, "run `noma record plan.noma`"),
    ("file name typo", "noma check pln.noma", 2, "did you mean `plan.noma`?"),
    ("extension typo", "noma check plan.nma", 2, "did you mean `plan.noma`?"),
    ("empty directory", "mkdir docs && noma check docs", 2, "name the files to check"),
    ("no fixtures", "mkdir docs && noma verify docs", 2, "`noma verify conformance`"),
    ("no corpus named", "noma verify --help | grep -q 'Usage: noma verify <DIR>' && noma verify", 2, "Usage: noma verify <DIR>"),
    ("log typo", "noma log pln.noma", 2, "did you mean `plan.noma`?"),
    ("log without transcript", "printf '# New\\n' > new.noma && noma log new.noma", 0, "`noma record new.noma` starts one"),
    ("dry run", r#"noma patch plan.noma --op '{"op":"delete_block","id":"speed"}' && git diff --quiet -- plan.noma"#, 0, "would apply"),
    ("refused first record leaves no transcript", "printf '# B\\n\\n::note{id=\"n\"}\\nx\\n::\\n\\n::note{id=\"n\"}\\ny\\n::\\n' > b.noma && { noma record b.noma; rc=$?; test ! -e b.noma.patches || { echo 'b.noma.patches was left behind'; exit 9; }; exit $rc; }", 1, "fix the document and record again (nothing was recorded)"),
    ("no documents", "OUTSIDE && noma check", 2, "create a document first"),
    ("not a book", "echo 'title: x' > book.noma.yml && noma check book.noma.yml", 2, "it needs `chapters:`"),
    ("a book to record", "echo 'chapters: [plan.noma]' > book.noma.yml && noma record book.noma.yml", 2, "give one chapter's .noma file"),
    ("an id twice in a book", "printf '# B\\n\\n::note{id=\"speed\"}\\nx\\n::\\n' > b.noma && printf 'chapters: [plan.noma, b.noma]\\n' > book.noma.yml && noma check book.noma.yml", 1, "give one of them a different id="),
    ("a chapter twice in a book", "printf 'chapters: [plan.noma, ./plan.noma]\\n' > book.noma.yml && noma check book.noma.yml", 2, "chapter ./plan.noma is listed twice in `chapters:` (entries 1 and 2); remove one of them"),
    // Missing transcript, key or base.
    ("no transcript", "KEYGEN && echo \"me namespaces=\\\"noma\\\" $(cat \"$HOME/k.pub\")\" > .noma/allowed_signers && printf '# New\\n' > new.noma && NOMA_SIGNING_PRINCIPAL=me noma approve new.noma --key \"$HOME/k\" --yes", 2, "start one with `noma record new.noma`"),
    ("no transcript", "printf '# New\\n' > new.noma && noma replay new.noma", 2, "`noma record new.noma` starts one"),
    ("no key", "noma approve plan.noma", 2, "pass --key FILE"),
    ("key path typo", r#"noma patch plan.noma --inplace --key "$HOME/nokey" --op '{"op":"delete_block","id":"speed"}'"#, 2, "make a key with `ssh-keygen -t ed25519"),
    ("key not listed", "KEYGEN && noma approve plan.noma --key \"$HOME/k\"", 2, "list it in .noma/allowed_signers"),
    ("shallow clone", "git checkout -qb feat && git clone -q --depth 1 --branch feat \"file://$PWD\" \"$HOME/sh\" && cd \"$HOME/sh\" && noma reconcile --base main", 2, "fetch-depth: 0"),
    ("shallow single-branch clone, advice followed", "git checkout -qb feat && git clone -q --depth 1 --branch feat \"file://$PWD\" \"$HOME/sh\" && cd \"$HOME/sh\" && { noma reconcile --base main 2> \"$HOME/err\"; cmd=$(grep -o 'git fetch --unshallow origin [^`]*' \"$HOME/err\") && echo \"ran: $cmd\" && $cmd 2>/dev/null && noma reconcile --base main; }", 0, "ran: git fetch --unshallow origin +refs/heads/main:refs/remotes/origin/main"),
    // No identity: a warning that names the fix, and the fix works.
    ("no git identity", "git config --unset user.name; git config --unset user.email; unset GIT_AUTHOR_NAME GIT_AUTHOR_EMAIL GIT_COMMITTER_NAME GIT_COMMITTER_EMAIL; printf 'More.\\n' >> plan.noma && noma record plan.noma && git config --global user.name 'Your Name' && git config --global user.email you@example.com && git commit -qam edit", 0, "set yours with `git config --global user.name \"Your Name\"` and `git config --global user.email you@example.com`"),
    // Hand edits.
    ("hand edit committed", "HAND_EDIT && git commit -qam edit", 1, "fix: noma record \"plan.noma\" && git add"),
    ("hand edit, then a patch", r#"HAND_EDIT && noma patch plan.noma --inplace --op '{"op":"delete_block","id":"speed"}'"#, 1, "record it (`noma record`)"),
    ("hand edit, then replay", "HAND_EDIT && noma replay plan.noma", 1, "record the edit with `noma record \"plan.noma\"`"),
    ("editor saved CRLF plus an edit, committed", "sed -i 's/$/\\r/; s/Fast\\./Faster./' plan.noma && git commit -qam edit", 1, "blocks speed (changed, line 8); and saved with CRLF line endings where its transcript's state has LF"),
    ("editor saved CRLF plus an edit, advice followed", "sed -i 's/$/\\r/; s/Fast\\./Faster./' plan.noma && noma record plan.noma && git commit -qam edit && ! git show HEAD:plan.noma | grep -q \"$(printf '\\r')\"", 0, "only the edit is recorded\nplan.noma: recorded 1 op(s) in plan.noma.patches: replace_body"),
    ("editor saved CRLF alone", "sed -i 's/$/\\r/' plan.noma && git commit -qam crlf", 1, "an editor saved it so"),
    ("hand edit past the hook", "git checkout -qb feat && HAND_EDIT && git commit -qam edit --no-verify && noma reconcile --base main", 1, "noma record \"plan.noma\" && git add \"plan.noma\" \"plan.noma.patches\""),
    // Outside a repository.
    ("no repository", "OUTSIDE && printf '# A\\n' > a.noma && noma record a.noma", 2, "run `git init` and commit it"),
    ("no repository", "OUTSIDE && noma init", 2, "run `git init` first"),
    ("no repository", "OUTSIDE && noma changed --base main", 2, "run `git init` first"),
    ("no repository", "OUTSIDE && noma reconcile --base main", 2, "run `git init` first"),
    ("no repository", "OUTSIDE && noma hooks install", 2, "run `git init` first"),
];

/// The row's command with the named snippets spelled out.
fn expand(command: &str) -> String {
    command
        .replace("HAND_EDIT", HAND_EDIT)
        .replace("KEYGEN", KEYGEN)
        .replace("OUTSIDE", OUTSIDE)
}

#[test]
fn every_common_mistake_gets_its_exit_code_and_names_the_next_step() {
    assert!(MISTAKES.len() >= 40, "{} rows", MISTAKES.len());
    let mut failures = Vec::new();
    for (what, command, code, next) in MISTAKES {
        let r = Repo::with_genesis_record(PLAN);
        r.write("README.md", "# Readme\n");
        r.commit_all("readme");
        let o = r.sh(&expand(command));
        let said = text(&o);
        if o.status.code() != Some(*code) || !said.contains(next) {
            failures.push(format!(
                "{what}: `{command}`: want exit {code} and {next:?}, got {:?}:\n{said}",
                o.status.code()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} mistakes:\n\n{}",
        failures.len(),
        MISTAKES.len(),
        failures.join("\n")
    );
}
