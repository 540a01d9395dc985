//! A block id renamed from an editor: one `rename_id` op applied in place
//! as `noma patch --inplace` applies it (references follow, the record is
//! appended and signed as the policy asks), for the language server.

use std::path::Path;

use noma_core::transcript::ActorKind;
use noma_store::engine::WriteMode;

use crate::report::output::{Exit, Part};
use noma_git::patch::options::{Request, Signing};

/// Renames block `from` to `to` in the document at `path` as the person
/// the writer's git identity names, with `reason`; the document's new
/// text, or everything the refusal said.
pub fn rename_in_place(path: &Path, from: &str, to: &str, reason: &str) -> Result<String, String> {
    let op = serde_json::json!({"op": "rename_id", "from": from, "to": to});
    let req = Request {
        actor_kind: ActorKind::Human,
        actor_name: None,
        actor_model: None,
        actor_version: None,
        reason: Some(reason.to_string()),
        expected_sha: None,
        base_sha256: None,
        parent_op_id: None,
        transcript: None,
        write: WriteMode::InPlace,
        strict: false,
        force: false,
        signing: Signing::Configured {
            key: None,
            no_sign: false,
        },
    };
    let output = super::run::run(path, &[op], req, super::run::View::default());
    if output.exit != Exit::Passed {
        let said: Vec<String> = output
            .parts
            .iter()
            .map(|s| match s {
                Part::Stdout(t) | Part::Stderr(t) => t.trim_end().to_string(),
                Part::Json(v) => v.to_string(),
            })
            .collect();
        return Err(said.join("\n"));
    }
    std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))
}
