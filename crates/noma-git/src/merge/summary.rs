//! The reviewer's summary of a branch (`noma reconcile --format markdown`):
//! per document, the blocks changed since the merge base (as `noma changed`
//! lists them), which actors changed them and why (from the transcript
//! records the branch appended), and the verdict of each reconcile check.
//! Sized for a PR comment: a long document section folds into `<details>`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use serde_json::Value;

use super::reconcile::DocReport;
use crate::cache::BlockCache;
use crate::changes::{self, BlockChange, Query};
use crate::git::repo::Repo;
use crate::provenance::verify::{signer_matches_actor, RecordStatus};

/// Rows (blocks plus findings) a document shows before its section folds.
pub const OPEN_ROWS: usize = 8;
/// Characters of one reason shown before it is cut.
const REASON_CHARS: usize = 100;

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
pub fn attribute(
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

fn mark(ok: bool) -> &'static str {
    if ok {
        "✅"
    } else {
        "❌"
    }
}

/// Text safe inside a table cell: one line, no `|`, cut at `max` chars.
fn cell(s: &str, max: usize) -> String {
    let one: String = s
        .chars()
        .map(|c| if c == '\n' || c == '\r' { ' ' } else { c })
        .collect();
    let mut cut: String = one.chars().take(max).collect();
    if one.chars().count() > max {
        cut.push('…');
    }
    cut.replace('|', "\\|").replace('<', "&lt;")
}

/// The summary as GitHub-flavoured Markdown.
pub fn markdown(reports: &[DocReport], docs: &[DocSummary]) -> String {
    let bad = reports.iter().filter(|r| !r.ok()).count();
    let mut md = String::new();
    let _ = writeln!(
        md,
        "## noma: {} document(s) changed, {}\n",
        reports.len(),
        if bad == 0 {
            "all checks pass".to_string()
        } else {
            format!("{bad} with errors")
        }
    );
    if reports.is_empty() {
        md.push_str("No `.noma` document changed on this branch.\n");
        return md;
    }
    removed_list(&mut md, reports);
    md.push_str("| Document | Blocks | Valid | Append-only | Replays | Rebases |\n");
    md.push_str("| --- | ---: | :---: | :---: | :---: | :---: |\n");
    for (r, d) in reports.iter().zip(docs) {
        let _ = writeln!(
            md,
            "| `{}`{} | {} | {} | {} | {} | {} |",
            cell(&r.path, 200),
            match r.removed {
                Some("recorded") => " (removed)",
                Some(_) => " (**removed without a record**)",
                None => "",
            },
            d.blocks.len(),
            mark(r.valid),
            mark(r.append_only),
            mark(r.replays),
            mark(r.rebases)
        );
    }
    for (r, d) in reports.iter().zip(docs) {
        doc_section(&mut md, r, d);
    }
    md
}

/// Every document the branch removed, recorded or not, before the table:
/// a removal is the one change a block table cannot show.
fn removed_list(md: &mut String, reports: &[DocReport]) {
    let removed: Vec<String> = reports
        .iter()
        .filter_map(|r| {
            let how = match r.removed? {
                "recorded" => "recorded with `noma rm`",
                _ => "**no record says who removed it**",
            };
            Some(format!("- `{}`: {how}\n", cell(&r.path, 200)))
        })
        .collect();
    if !removed.is_empty() {
        let _ = writeln!(md, "Removed on this branch:\n\n{}", removed.concat());
    }
}

fn doc_section(md: &mut String, r: &DocReport, d: &DocSummary) {
    let mut body = String::new();
    let unnamed = d.by_block.get("");
    let signed = !r.records.is_empty();
    if !d.blocks.is_empty() {
        body.push_str(if signed {
            "| Block | Change | By | Signed by | Approved by | Why |\n| --- | --- | --- | --- | --- | --- |\n"
        } else {
            "| Block | Change | By | Why |\n| --- | --- | --- | --- |\n"
        });
        for b in &d.blocks {
            let a = d.by_block.get(&b.id).or(unnamed);
            let list = |f: fn(&Attribution) -> &Vec<String>| {
                a.map(f)
                    .filter(|l| !l.is_empty())
                    .map_or("—".to_string(), |l| cell(&l.join(", "), 200))
            };
            let by = list(|a| &a.actors);
            let by = if signed {
                format!(
                    "{by} | {} | {}",
                    list(|a| &a.signers),
                    list(|a| &a.approvers)
                )
            } else {
                by
            };
            let why = a.map_or("—".to_string(), |a| {
                let reasons: Vec<String> =
                    a.reasons.iter().map(|r| cell(r, REASON_CHARS)).collect();
                if reasons.is_empty() {
                    "—".to_string()
                } else {
                    reasons.join("; ")
                }
            });
            let _ = writeln!(
                body,
                "| `{}` | {} | {by} | {why} |",
                cell(&b.id, 120),
                b.change.as_str()
            );
        }
    }
    if !r.findings.is_empty() && !body.is_empty() {
        // A list straight under a table would read as one more row.
        body.push('\n');
    }
    for f in &r.findings {
        let at = f.line.map(|l| format!(":{l}")).unwrap_or_default();
        let _ = writeln!(
            body,
            "- **{}** `{}` {}{at}: {}",
            f.level,
            f.code,
            cell(&f.path, 200),
            cell(&f.message, 300)
        );
    }
    let rows = d.blocks.len() + r.findings.len();
    let title = format!(
        "`{}`: {} block(s) changed, {} finding(s)",
        cell(&r.path, 200),
        d.blocks.len(),
        r.findings.len()
    );
    if rows > OPEN_ROWS {
        let _ = write!(
            md,
            "\n<details><summary>{title}</summary>\n\n{body}\n</details>\n"
        );
    } else {
        let _ = write!(md, "\n### {title}\n\n{body}");
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

    #[test]
    fn cells_stay_one_line_and_short() {
        assert_eq!(cell("a|b\nc", 10), "a\\|b c");
        assert_eq!(cell("abcdef", 3), "abc…");
    }
}
