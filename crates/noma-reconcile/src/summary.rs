//! What the reviewer's summary of a branch (`noma reconcile --format
//! markdown`, worded by the binary) says per document: the blocks changed
//! since the merge base (as `noma changed` lists them), and which actors
//! changed them and why (from the transcript records the branch appended).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use serde_json::Value;

use super::reconcile::DocReport;
use crate::cache::BlockCache;
use crate::changes::{self, Query};
use crate::git::repo::Repo;
use noma_merge::diff::BlockChange;
use noma_provenance::verify::{signer_matches_actor, RecordStatus};

/// Who changed a block on the branch, and why.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Attribution {
    /// `kind name` (with `/model` for agents that name one), first-seen order.
    pub actors: Vec<String>,
    /// The records' reasons, first-seen order, without repeats.
    pub reasons: Vec<String>,
    /// With provenance on, the verified signer of each record (`none`
    /// without one; a signer who is not the actor is marked).
    pub signers: Vec<String>,
    /// With provenance on, the approver of each agent record (`none`
    /// when it is not approved).
    pub approvers: Vec<String>,
}

/// One document of the summary.
#[derive(Debug, Clone)]
pub struct DocSummary {
    /// Repository-relative path.
    pub path: String,
    /// The changed blocks, as `noma changed` lists them.
    pub blocks: Vec<BlockChange>,
    /// Per block id, who and why; `""` holds records no block names
    /// (`x-noma/replace_lines` for prose outside blocks).
    pub by_block: BTreeMap<String, Attribution>,
}

/// Collects the changed blocks and the branch's records for every
/// document `reports` covers. A document whose blocks cannot be listed
/// keeps an empty table (the reconcile verdicts still say what failed).
pub fn collect(
    start: &Path,
    base_rev: &str,
    reports: &[DocReport],
    cache: &BlockCache,
) -> Result<Vec<DocSummary>, changes::ChangesError> {
    let repo = Repo::discover(start).map_err(changes::ChangesError::from)?;
    let root = repo.workdir().ok_or(changes::ChangesError::Bare)?;
    let q = Query {
        base: base_rev.to_string(),
        ..Query::default()
    };
    let changed = changes::changed_blocks(&repo, &q, cache)?;
    Ok(reports
        .iter()
        .map(|r| {
            let blocks = changed
                .docs
                .iter()
                .find(|d| d.path == r.path)
                .map(|d| d.blocks.clone())
                .unwrap_or_default();
            let tpath = noma_core::transcript::transcript_path(&r.path);
            let before =
                crate::git::blob::read_rev_path(&root, &changed.merge_base, Path::new(&tpath))
                    .map(|f| f.bytes)
                    .unwrap_or_default();
            let after = std::fs::read(root.join(&tpath)).unwrap_or_default();
            DocSummary {
                path: r.path.clone(),
                blocks,
                by_block: attribute(&before, &after, &r.records),
            }
        })
        .collect())
}

/// Who and why per block, from the records `after` appends to `before`
/// (a transcript that is not an extension of the base's is read whole),
/// with the signers and approvers reconcile verified for them.
pub(crate) fn attribute(
    before: &[u8],
    after: &[u8],
    checked: &[RecordStatus],
) -> BTreeMap<String, Attribution> {
    let by_op: std::collections::HashMap<&str, &RecordStatus> =
        checked.iter().map(|s| (s.op_id.as_str(), s)).collect();
    let appended = after.strip_prefix(before).unwrap_or(after);
    let mut out: BTreeMap<String, Attribution> = BTreeMap::new();
    for line in appended.split(|b| *b == b'\n') {
        let Ok(rec) = serde_json::from_slice::<Value>(line) else {
            continue;
        };
        if rec["patch_result"] != "applied" {
            continue;
        }
        let op = &rec["op"];
        let actor = &rec["actor"];
        let mut who = format!(
            "{} {}",
            actor["kind"].as_str().unwrap_or("?"),
            actor["name"].as_str().unwrap_or("?")
        );
        if let Some(m) = actor["model"].as_str() {
            let _ = write!(who, " ({m})");
        }
        let mut ids: Vec<&str> = noma_core::patch::op_target(op).into_iter().collect();
        // A renamed block is listed under its new id.
        if let Some(to) = op["to"].as_str().filter(|_| op["op"] == "rename_id") {
            ids.push(to);
        }
        // The new block of an add_block is not known by id here: the
        // parent's row stands for it, as in the op itself.
        if ids.is_empty() {
            ids.push("");
        }
        let status = rec["op_id"].as_str().and_then(|id| by_op.get(id));
        let signer = status.map(|s| signer_cell(s, &actor["name"]));
        let approver = status
            .filter(|s| s.needs_approval)
            .map(|s| s.approved_by.clone().unwrap_or_else(|| "none".into()));
        for id in ids {
            let a = out.entry(id.to_string()).or_default();
            if !a.actors.contains(&who) {
                a.actors.push(who.clone());
            }
            for (list, v) in [(&mut a.signers, &signer), (&mut a.approvers, &approver)] {
                if let Some(v) = v.as_ref().filter(|v| !list.contains(v)) {
                    list.push(v.clone());
                }
            }
            if let Some(r) = rec["reason"].as_str().filter(|r| !r.trim().is_empty()) {
                let r = r.to_string();
                if !a.reasons.contains(&r) {
                    a.reasons.push(r);
                }
            }
        }
    }
    out
}

/// A record's verified signer as the table shows it.
fn signer_cell(s: &RecordStatus, actor_name: &Value) -> String {
    match &s.signed_by {
        Some(p) if signer_matches_actor(p, actor_name.as_str().unwrap_or_default()) => p.clone(),
        Some(p) => format!("⚠️ {p} (not the actor)"),
        None => "none".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attribution_reads_only_the_appended_applied_records() {
        let old = b"{\"patch_result\":\"applied\",\"actor\":{\"kind\":\"human\",\"name\":\"old\"},\"op\":{\"op\":\"delete_block\",\"id\":\"a\"}}\n";
        let mut new = old.to_vec();
        new.extend_from_slice(b"{\"patch_result\":\"applied\",\"actor\":{\"kind\":\"agent\",\"name\":\"bot\",\"model\":\"m\"},\"reason\":\"r1\",\"op\":{\"op\":\"rename_id\",\"from\":\"a\",\"to\":\"b\"}}\n");
        new.extend_from_slice(b"{\"patch_result\":\"rejected\",\"actor\":{\"kind\":\"human\",\"name\":\"x\"},\"op\":{\"op\":\"delete_block\",\"id\":\"c\"}}\n");
        let by = attribute(old, &new, &[]);
        assert_eq!(by.keys().collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(by["b"].actors, ["agent bot (m)"]);
        assert_eq!(by["b"].reasons, ["r1"]);
    }
}
