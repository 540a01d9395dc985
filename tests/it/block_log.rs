//! `noma log` and `noma blame` on real git histories: records attributed
//! to the blocks whose hashes they changed, followed through `rename_id`,
//! `move_block`, a merge copy made by the merge driver, a recorded hand
//! edit and a `git mv` of the document; newest first, with actor, signer,
//! approver and the commit that introduced each record.

use serde_json::{json, Value};

use crate::common::{assert_ran, keygen, text, Repo};

const DOC: &str = "# Plan\n\n::note{id=\"a\"}\nalpha\n::\n\n::note{id=\"b\"}\nbeta\n::\n\n## Details\n\n::note{id=\"c\"}\ngamma\n::\n";

/// plan.noma with its genesis record, `signatures: warn`, agents needing
/// approval, alice's and the agent's keys allowed; the keys' paths.
fn setup() -> (Repo, String, String) {
    let r = Repo::with_genesis_record(DOC);
    let (person, person_pub) = keygen(&r, "alice");
    let (agent, agent_pub) = keygen(&r, "bot");
    let mut config = r.read(".noma/config.yml");
    config.push_str(
        "provenance:\n  signatures: warn\n  agents_need_approval: true\n  agent_principals: [\"*@agents.example\"]\n",
    );
    r.write(".noma/config.yml", &config);
    r.write(
        ".noma/allowed_signers",
        &format!(
            "alice@example.com namespaces=\"noma\" {person_pub}\nbot@agents.example namespaces=\"noma\" {agent_pub}\n"
        ),
    );
    r.commit_all("provenance on");
    let p = |k: std::path::PathBuf| k.to_str().unwrap().to_string();
    (r, p(person), p(agent))
}

/// `noma patch DOC --inplace` as the agent `bot`, signing with `key`.
fn agent(r: &Repo, doc: &str, key: &str, reason: &str, op: &Value) {
    let o = r.sh(&format!(
        "NOMA_SIGNING_KEY='{key}' noma patch {doc} --inplace --actor-kind agent --actor-name bot --reason '{reason}' --op '{op}'"
    ));
    assert_ran(&o);
}

/// `noma log ARGS --format json`'s changes.
fn log(r: &Repo, args: &[&str]) -> Vec<Value> {
    let o = r.noma(&[&["log"], args, &["--format", "json"]].concat());
    assert_ran(&o);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    v["changes"].as_array().unwrap().clone()
}

/// (op, [(id, change)]) of each change, newest first.
fn summary(changes: &[Value]) -> Vec<(String, Vec<(String, String)>)> {
    changes
        .iter()
        .map(|c| {
            let blocks = c["blocks"]
                .as_array()
                .unwrap()
                .iter()
                .map(|b| {
                    let s = |k: &str| b[k].as_str().unwrap().to_string();
                    (s("id"), s("change"))
                })
                .collect();
            (c["op"].as_str().unwrap().to_string(), blocks)
        })
        .collect()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

fn head(r: &Repo) -> String {
    r.ok(&["rev-parse", "HEAD"]).trim().to_string()
}

#[test]
fn log_follows_rename_move_and_hand_edit_newest_first_with_signer_and_commit() {
    let (r, person, agent_key) = setup();
    let rename = json!({"op": "rename_id", "from": "b", "to": "b2"});
    agent(&r, "plan.noma", &agent_key, "clearer name", &rename);
    r.commit_all("rename");
    let renamed_in = head(&r);
    let o = r.noma(&["approve", "plan.noma", "--key", &person, "--yes"]);
    assert_ran(&o);
    r.commit_all("approved");
    let ids = r.noma(&["ids", "plan.noma"]);
    let details = serde_json::from_slice::<Value>(&ids.stdout).unwrap()["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .find(|i| i.starts_with("details"))
        .unwrap();
    let mv = json!({"op": "move_block", "id": "b2", "parent": details, "position": 1});
    agent(&r, "plan.noma", &agent_key, "belongs in details", &mv);
    r.commit_all("move");
    // A hand edit of b2's body, recorded and signed by alice.
    r.write("plan.noma", &r.read("plan.noma").replace("beta", "BETA"));
    let o = r.noma(&[
        "record",
        "plan.noma",
        "--actor-name",
        "alice",
        "--key",
        &person,
    ]);
    assert_ran(&o);

    let b2 = log(&r, &["plan.noma", "--block", "b2"]);
    assert_eq!(
        summary(&b2),
        vec![
            ("replace_body".into(), pairs(&[("b2", "changed")])),
            ("move_block".into(), pairs(&[("b2", "moved")])),
            ("rename_id".into(), pairs(&[("b2", "renamed")])),
            ("x-noma/replace_lines".into(), pairs(&[("b2", "added")])),
        ],
        "{b2:#?}"
    );
    let (edit, moved, renamed, genesis) = (&b2[0], &b2[1], &b2[2], &b2[3]);
    assert_eq!(edit["actor"], "human alice");
    assert_eq!(edit["signed_by"], "alice@example.com");
    assert_eq!(edit["commit"], Value::Null, "not committed yet");
    assert_eq!(moved["reason"], "belongs in details");
    assert_eq!(moved["needs_approval"], true);
    assert_eq!(moved["approved_by"], Value::Null);
    assert_eq!(renamed["actor"], "agent bot");
    assert_eq!(renamed["signed_by"], "bot@agents.example");
    assert_eq!(renamed["approved_by"], "alice@example.com");
    assert_eq!(renamed["commit"], renamed_in.as_str());
    assert_eq!(renamed["blocks"][0]["renamed_from"], "b");
    assert_eq!(genesis["blocks"][0]["id_then"], "b");
    // Blocks the edits did not touch keep only their genesis.
    let a = log(&r, &["plan.noma", "--block", "a"]);
    assert_eq!(a.len(), 1, "{a:#?}");
    assert_eq!(
        log(&r, &["plan.noma", "--block", "b2", "--limit", "2"]).len(),
        2
    );

    let o = r.noma(&["blame", "plan.noma"]);
    assert_ran(&o);
    let out = text(&o);
    let line = |id: &str| {
        out.lines()
            .find(|l| l.starts_with(&format!("{id} ")))
            .unwrap_or_else(|| panic!("no {id} in\n{out}"))
            .to_string()
    };
    assert!(line("b2").contains("replace_body"), "{out}");
    assert!(
        line("b2").contains("by human alice  signed by alice@example.com"),
        "{out}"
    );
    assert!(line("a").contains("x-noma/replace_lines"), "{out}");

    // A limit of 0 is bad usage, not an empty answer.
    let o = r.noma(&["log", "plan.noma", "--limit", "0"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    // An id that never was is an error, not an empty answer.
    let o = r.noma(&["log", "plan.noma", "--block", "nope"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("no block with id \"nope\""),
        "{}",
        text(&o)
    );
}

#[test]
fn merge_copy_is_attributed_to_its_block_with_the_original_named() {
    let (r, _, agent_key) = setup();
    r.ok(&["checkout", "-q", "-b", "feature"]);
    let op = json!({"op": "replace_block", "id": "a", "content": "::note{id=\"a\"}\nALPHA\n::"});
    agent(&r, "plan.noma", &agent_key, "feature edit", &op);
    r.commit_all("feature");
    let original = log(&r, &["plan.noma", "--block", "a"])[0]["op_id"].clone();
    r.ok(&["checkout", "-q", "main"]);
    let op = json!({"op": "replace_block", "id": "c", "content": "::note{id=\"c\"}\nGAMMA\n::"});
    agent(&r, "plan.noma", &agent_key, "main edit", &op);
    r.commit_all("main");
    r.ok(&["merge", "-q", "--no-edit", "feature"]);
    let merged_in = head(&r);
    assert_ran(&r.noma(&["replay", "plan.noma"]));

    let a = log(&r, &["plan.noma", "--block", "a"]);
    assert_eq!(a.len(), 2, "{a:#?}");
    assert_eq!(a[0]["op"], "replace_block");
    assert_eq!(
        a[0]["parent_op_id"], original,
        "the copy names the original"
    );
    assert_eq!(a[0]["commit"], merged_in.as_str());
    assert_eq!(a[0]["blocks"], json!([{"id": "a", "change": "changed"}]));
    let c = log(&r, &["plan.noma", "--block", "c"]);
    assert_eq!(c[0]["reason"], "main edit");
    assert_eq!(c[0]["parent_op_id"], Value::Null);
}

#[test]
fn git_mv_of_the_document_keeps_its_history_and_commits() {
    let (r, _, agent_key) = setup();
    let op = json!({"op": "replace_block", "id": "a", "content": "::note{id=\"a\"}\nALPHA\n::"});
    agent(&r, "plan.noma", &agent_key, "before the move", &op);
    r.commit_all("edit");
    let edited_in = head(&r);
    r.ok(&["mv", "plan.noma", "roadmap.noma"]);
    r.ok(&["mv", "plan.noma.patches", "roadmap.noma.patches"]);
    if r.path().join("plan.noma.provenance").exists() {
        r.ok(&["mv", "plan.noma.provenance", "roadmap.noma.provenance"]);
    }
    r.commit_all("rename the document");

    let a = log(&r, &["roadmap.noma", "--block", "a"]);
    assert_eq!(a.len(), 2, "{a:#?}");
    assert_eq!(
        a[0]["commit"],
        edited_in.as_str(),
        "the commit of the line, not of the move"
    );
    assert_eq!(a[0]["signed_by"], "bot@agents.example");
    assert_ne!(a[1]["commit"], Value::Null);
}

#[test]
fn log_json_snapshot() {
    let (r, _, agent_key) = setup();
    let rename = json!({"op": "rename_id", "from": "c", "to": "c2"});
    agent(&r, "plan.noma", &agent_key, "clearer name", &rename);
    r.commit_all("rename");
    let o = r.noma(&["log", "plan.noma", "--format", "json"]);
    assert_ran(&o);
    let out = String::from_utf8(o.stdout).unwrap();
    insta::with_settings!({filters => vec![
        (r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "[op_id]"),
        (r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", "[ts]"),
        (r"[0-9a-f]{40}", "[commit]"),
    ]}, {
        insta::assert_snapshot!(out);
    });
    // Both outputs hold to the schemas `noma schema` prints.
    let blame = r.noma(&["blame", "plan.noma", "--format", "json"]);
    assert_ran(&blame);
    for (which, output) in [("log", out.as_bytes()), ("blame", &blame.stdout[..])] {
        let o = r.noma(&["schema", which]);
        assert_ran(&o);
        let schema: Value = serde_json::from_slice(&o.stdout).unwrap();
        let validator = jsonschema::validator_for(&schema).unwrap();
        let value: Value = serde_json::from_slice(output).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&value)
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{which}: {errors:?}\n{value:#}");
        let mut bad = value.clone();
        bad["extra"] = json!(1);
        assert!(!validator.is_valid(&bad), "{which}: the schema is closed");
    }
}

/// What replay learned is kept in the block cache by content: a repeated
/// `noma log` answers from it even where the replay's base can no longer
/// be found (the repository moved away), `noma cache clear` forgets it,
/// and a transcript that grew is replayed again, never served stale.
#[test]
fn a_repeated_log_answers_from_the_block_cache_keyed_by_content() {
    let r = Repo::init();
    assert_ran(&r.noma(&["init"]));
    r.write("plan.noma", DOC);
    r.ok(&["add", "-A"]);
    r.ok(&["commit", "-q", "--no-verify", "-m", "plan, no transcript"]);
    let op = json!({"op": "replace_block", "id": "a", "content": "::note{id=\"a\"}\nALPHA\n::"});
    r.agent_patch("plan.noma", &op.to_string());
    // The transcript starts from the committed document: its base is in git.
    let cold = log(&r, &["plan.noma"]);
    assert_eq!(
        summary(&cold),
        vec![(
            "replace_block".into(),
            pairs(&[("plan", "changed"), ("a", "changed")])
        )]
    );
    let git = r.path().join(".git");
    let away = r.path().join("git-away");
    std::fs::rename(&git, &away).unwrap();
    let warm = log(&r, &["plan.noma"]);
    assert_eq!(summary(&warm), summary(&cold));
    assert_ran(&r.noma(&["cache", "clear"]));
    let o = r.noma(&["log", "plan.noma"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("no version of plan.noma"), "{}", text(&o));
    std::fs::rename(&away, &git).unwrap();

    assert_eq!(summary(&log(&r, &["plan.noma"])), summary(&cold));
    let op = json!({"op": "replace_block", "id": "c", "content": "::note{id=\"c\"}\nGAMMA\n::"});
    r.agent_patch("plan.noma", &op.to_string());
    assert_eq!(
        summary(&log(&r, &["plan.noma"])),
        vec![
            (
                "replace_block".into(),
                pairs(&[
                    ("plan", "changed"),
                    ("details", "changed"),
                    ("c", "changed")
                ])
            ),
            (
                "replace_block".into(),
                pairs(&[("plan", "changed"), ("a", "changed")])
            ),
        ]
    );
}

/// `noma log` of a document removed with `noma rm` lists its history from
/// the tombstone (the transcript that stays), the removal first.
#[test]
fn log_of_a_tombstone_lists_its_history() {
    let r = Repo::with_genesis_record("# Plan\n\n::note{id=\"a\"}\nalpha\n::\n");
    r.agent_patch(
        "plan.noma",
        &json!({"op": "replace_body", "id": "a", "content": "A1"}).to_string(),
    );
    r.commit_all("bot: a");
    assert_ran(&r.noma(&["rm", "plan.noma"]));
    r.commit_all("remove plan");
    assert!(!r.path().join("plan.noma").exists());
    let o = r.noma(&["log", "plan.noma", "--format", "json"]);
    assert_ran(&o);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let changes = v["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 3, "{v:#}");
    assert_eq!(changes[0]["op"], "x-noma/remove_document", "{v:#}");
    let bot = changes
        .iter()
        .find(|c| c["actor"] == "agent bot")
        .unwrap_or_else(|| panic!("{v:#}"));
    let blocks = bot["blocks"].as_array().unwrap();
    assert!(
        blocks
            .iter()
            .any(|b| b["id"] == "a" && b["change"] == "changed"),
        "{v:#}"
    );
    let o = r.noma(&["log", "plan.noma"]);
    assert_ran(&o);
    assert!(text(&o).contains("bot"), "{}", text(&o));
}
