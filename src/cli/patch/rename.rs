//! A block id renamed from an editor: one `rename_id` op applied in place
//! as `noma patch --inplace` applies it (references follow, the record is
//! appended and signed as the policy asks), for the language server.

use std::path::Path;

use noma_core::transcript::{Actor, ActorKind};
use noma_store::engine::{self, Options, WriteMode};

use crate::report::output::{Exit, Output, Part};
use noma_git::patch::{context, Signing, WorkTree, Writer};

/// Renames block `from` to `to` in the document at `path` as the person
/// the writer's git identity names, with `reason`; the document's new
/// text, or everything the refusal said.
pub fn rename_in_place(path: &Path, from: &str, to: &str, reason: &str) -> Result<String, String> {
    let op = serde_json::json!({"op": "rename_id", "from": from, "to": to});
    let tpath = engine::default_transcript_path(path);
    let writer = Writer {
        tree: WorkTree::Discover,
        actor_name: None,
        appends_to: Some(&tpath),
        signing: Signing::Configured {
            key: None,
            no_sign: false,
        },
    };
    let output = match context(path, writer) {
        Ok(ctx) => {
            let actor = Actor {
                kind: ActorKind::Human,
                name: ctx.actor_name,
                model: None,
                version: None,
            };
            let mut opts = Options::for_document(path, ctx.root.as_deref(), actor);
            opts.request.reason = Some(reason.to_string());
            opts.write = WriteMode::InPlace;
            opts.genesis = ctx.genesis;
            opts.before_append = ctx.before_append;
            let result = engine::patch_file(path, &[op], &opts);
            super::run::answer(path, result, &opts, super::run::View::default())
        }
        Err(e) => Output::error(format!("noma patch: {e}"), Exit::NotRun),
    };
    if output.exit != Exit::Passed {
        let said: Vec<String> = output
            .parts
            .iter()
            .map(|s| match s {
                Part::Stdout(t) | Part::Stderr(t) => t.trim_end().to_string(),
                Part::Json(v) => v.to_string(),
                Part::JsonStream(_) => "(a JSON report)".to_string(),
                Part::TextStream(_) | Part::ErrStream(_) => "(a report)".to_string(),
            })
            .collect();
        return Err(said.join("\n"));
    }
    std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))
}
