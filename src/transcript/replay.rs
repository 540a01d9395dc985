//! Replay (§5.5): re-apply every applied record's op from a base and check
//! that the transcript, its hash chain and the document on disk agree.
//!
//! Checks, in file order: each line is a valid v1.0 record; each record's
//! `prev_entry_sha256` (when present) is the sha256 of the previous raw
//! line; each applied record's `pre_sha256` is the current replay state and
//! re-applying its op yields its `post_sha256`; finally the last applied
//! record's `post_sha256` is the document on disk. The first failure stops
//! the replay and is named by line and op_id.

use std::time::Instant;

use serde::Serialize;

use super::{parse_record, short_sha, split_lines, PatchResult};
use crate::doc::hash::{block_hashes, sha256_hex};
use crate::engine::ApplyFn;

/// Where the replay started from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BaseSource {
    /// `--base PATH`.
    Given,
    /// The document itself (its sha equals the first applied record's pre_sha256).
    Document,
    /// No applied records: nothing to replay.
    NotNeeded,
}

/// A block whose source hash differs between expected and actual text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BlockDiff {
    /// Canonical id.
    pub id: String,
    /// `changed`, `missing` (only in expected) or `extra` (only in actual).
    pub change: &'static str,
    /// Block sha256 in the expected text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected_sha256: Option<String>,
    /// Block sha256 in the actual text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actual_sha256: Option<String>,
}

/// The first place replay and transcript disagree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Divergence {
    /// 1-based transcript line (0 when the problem is not one line).
    pub line: usize,
    /// op_id of the record, when a record is involved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub op_id: Option<String>,
    /// What disagrees.
    pub message: String,
    /// The sha256 the transcript promises, when one applies.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected_sha256: Option<String>,
    /// The sha256 replay observed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actual_sha256: Option<String>,
    /// Blocks whose hashes differ (when both texts are known).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub blocks: Vec<BlockDiff>,
}

/// The result of a replay.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Everything verified.
    pub ok: bool,
    /// Records read.
    pub records: usize,
    /// Applied records re-applied.
    pub applied: usize,
    /// Rejected records (audit only).
    pub rejected: usize,
    /// Noop records (audit only).
    pub noop: usize,
    /// Where replay started.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base: Option<BaseSource>,
    /// sha256 of the replayed final state.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub final_sha256: Option<String>,
    /// The first disagreement, when `ok` is false.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub divergence: Option<Divergence>,
    /// Wall time in milliseconds.
    pub elapsed_ms: f64,
}

/// Compares the block hashes of two texts by id.
pub fn diff_blocks(expected: &str, actual: &str) -> Vec<BlockDiff> {
    let e = block_hashes(expected, &crate::doc::parse(expected));
    let a = block_hashes(actual, &crate::doc::parse(actual));
    let amap: std::collections::HashMap<&str, &str> = a
        .iter()
        .map(|b| (b.id.as_str(), b.sha256.as_str()))
        .collect();
    let emap: std::collections::HashMap<&str, &str> = e
        .iter()
        .map(|b| (b.id.as_str(), b.sha256.as_str()))
        .collect();
    let mut out = Vec::new();
    for b in &e {
        match amap.get(b.id.as_str()) {
            Some(sha) if *sha == b.sha256 => {}
            Some(sha) => out.push(BlockDiff {
                id: b.id.clone(),
                change: "changed",
                expected_sha256: Some(b.sha256.clone()),
                actual_sha256: Some((*sha).to_string()),
            }),
            None => out.push(BlockDiff {
                id: b.id.clone(),
                change: "missing",
                expected_sha256: Some(b.sha256.clone()),
                actual_sha256: None,
            }),
        }
    }
    for b in &a {
        if !emap.contains_key(b.id.as_str()) {
            out.push(BlockDiff {
                id: b.id.clone(),
                change: "extra",
                expected_sha256: None,
                actual_sha256: Some(b.sha256.clone()),
            });
        }
    }
    out
}

/// Replays `transcript` (raw bytes) from `base` (or from `document` when its
/// sha is the first applied record's pre_sha256) and checks the result
/// against `document`, the text on disk.
pub fn replay(transcript: &[u8], base: Option<&str>, document: &str, apply: ApplyFn) -> Report {
    let started = Instant::now();
    let mut report = Report {
        ok: false,
        records: 0,
        applied: 0,
        rejected: 0,
        noop: 0,
        base: None,
        final_sha256: None,
        divergence: None,
        elapsed_ms: 0.0,
    };
    let result = run(transcript, base, document, apply, &mut report);
    report.ok = result.is_ok();
    report.divergence = result.err().map(|d| *d);
    report.elapsed_ms = (started.elapsed().as_secs_f64() * 1e6).round() / 1e3;
    report
}

fn run(
    transcript: &[u8],
    base: Option<&str>,
    document: &str,
    apply: ApplyFn,
    report: &mut Report,
) -> Result<(), Box<Divergence>> {
    let div = |line: usize, op_id: Option<&str>, message: String| {
        Box::new(Divergence {
            line,
            op_id: op_id.map(str::to_string),
            message,
            expected_sha256: None,
            actual_sha256: None,
            blocks: Vec::new(),
        })
    };
    let (lines, torn) = split_lines(transcript);
    if let Some(t) = torn {
        return Err(div(
            lines.len() + 1,
            None,
            format!("torn final line ({} bytes without a newline)", t.len()),
        ));
    }
    let doc_sha = sha256_hex(document.as_bytes());
    // State is materialised lazily: the base is chosen at the first applied record.
    let mut state: Option<(String, String)> = None; // (text, sha256)
    let mut prev_line_sha: Option<String> = None;
    for l in &lines {
        let rec = parse_record(l.number, l.raw).map_err(|e| div(e.line(), None, e.to_string()))?;
        report.records += 1;
        let line_sha = sha256_hex(l.raw);
        if let (Some(claimed), Some(actual)) = (&rec.prev_entry_sha256, &prev_line_sha) {
            if claimed != actual {
                let mut d = div(
                    l.number,
                    Some(&rec.op_id),
                    format!("prev_entry_sha256 does not match line {} (the chain is broken: a line was changed, removed or inserted)", l.number - 1),
                );
                d.expected_sha256 = Some(claimed.clone());
                d.actual_sha256 = Some(actual.clone());
                return Err(d);
            }
        }
        prev_line_sha = Some(line_sha);
        match rec.patch_result {
            PatchResult::Rejected => report.rejected += 1,
            PatchResult::Noop => report.noop += 1,
            PatchResult::Applied => {
                if state.is_none() {
                    let (text, source) = match base {
                        Some(b) => (b.to_string(), BaseSource::Given),
                        None if doc_sha == rec.pre_sha256 => {
                            (document.to_string(), BaseSource::Document)
                        }
                        None => {
                            let mut d = div(
                                l.number,
                                Some(&rec.op_id),
                                format!(
                                    "no base: the first applied record starts from sha256 {} ({}), but the document is at {}; pass --base PATH with that content",
                                    rec.pre_sha256,
                                    short_sha(&rec.pre_sha256),
                                    short_sha(&doc_sha)
                                ),
                            );
                            d.expected_sha256 = Some(rec.pre_sha256.clone());
                            d.actual_sha256 = Some(doc_sha.clone());
                            return Err(d);
                        }
                    };
                    report.base = Some(source);
                    let sha = sha256_hex(text.as_bytes());
                    state = Some((text, sha));
                }
                let Some((text, sha)) = state.as_mut() else {
                    continue;
                };
                if *sha != rec.pre_sha256 {
                    let mut d = div(
                        l.number,
                        Some(&rec.op_id),
                        "pre_sha256 is not the replayed state (an edit happened that no record explains, or the base is wrong)".into(),
                    );
                    d.expected_sha256 = Some(rec.pre_sha256.clone());
                    d.actual_sha256 = Some(sha.clone());
                    return Err(d);
                }
                let next = apply(text, std::slice::from_ref(&rec.op)).map_err(|e| {
                    div(
                        l.number,
                        Some(&rec.op_id),
                        format!(
                            "re-applying the {} op failed: {} ({})",
                            rec.op_name(),
                            e.code.as_str(),
                            e.message
                        ),
                    )
                })?;
                let next_sha = sha256_hex(next.as_bytes());
                if next_sha != rec.post_sha256 {
                    let mut d = div(
                        l.number,
                        Some(&rec.op_id),
                        format!("re-applying the {} op does not reproduce post_sha256; blocks listed are those the replayed op changed", rec.op_name()),
                    );
                    d.expected_sha256 = Some(rec.post_sha256.clone());
                    d.actual_sha256 = Some(next_sha);
                    d.blocks = diff_blocks(text, &next);
                    return Err(d);
                }
                // The next op reads this state's tree: splice it from the
                // current one (a 3 MB document then costs milliseconds per
                // record, not a full parse).
                let _ = crate::doc::parse_shared_edited(text, &next, || ());
                *text = next;
                *sha = next_sha;
                report.applied += 1;
            }
        }
    }
    let Some((text, sha)) = state else {
        report.base = Some(BaseSource::NotNeeded);
        report.final_sha256 = Some(doc_sha);
        return Ok(());
    };
    report.final_sha256 = Some(sha.clone());
    if sha != doc_sha {
        let last = lines.last().map_or(0, |l| l.number);
        let mut d = div(
            last,
            None,
            "the replayed final state is not the document on disk (it was edited after the last record)".into(),
        );
        d.expected_sha256 = Some(sha);
        d.actual_sha256 = Some(doc_sha);
        d.blocks = diff_blocks(&text, document);
        return Err(d);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::tests::{actor, fake_apply};
    use crate::engine::{chain_and_serialise, plan, Context, Options};
    use serde_json::json;

    fn transcript_for(src: &str, batches: &[&[&str]]) -> (String, Vec<u8>) {
        let mut text = src.to_string();
        let mut bytes = Vec::new();
        for b in batches {
            let ops: Vec<_> = b.iter().map(|t| json!({"op":"append","text":t})).collect();
            let mut p = plan(
                &text,
                &Context::default(),
                &ops,
                &Options::new(actor()),
                fake_apply,
            );
            let prev = split_lines(&bytes).0.last().map(|l| sha256_hex(l.raw));
            bytes.extend(chain_and_serialise(&mut p.records, prev));
            text = p.new_text;
        }
        (text, bytes)
    }

    #[test]
    fn verifies_a_good_chain() {
        let (text, bytes) = transcript_for("x", &[&["a", "b"], &["c"]]);
        let r = replay(&bytes, Some("x"), &text, fake_apply);
        assert!(r.ok, "{:?}", r.divergence);
        assert_eq!((r.records, r.applied), (3, 3));
        // Without a base, the document itself is not the first pre-state.
        let r = replay(&bytes, None, &text, fake_apply);
        assert!(!r.ok);
        assert!(r.divergence.unwrap().message.contains(&sha256_hex(b"x")));
    }

    #[test]
    fn names_broken_chain_and_final_mismatch() {
        let (text, bytes) = transcript_for("x", &[&["a"], &["b"], &["c"]]);
        let lines: Vec<&[u8]> = split_lines(&bytes).0.iter().map(|l| l.raw).collect();
        let dropped: Vec<u8> = [lines[0], lines[2]].concat();
        let r = replay(&dropped, Some("x"), &text, fake_apply);
        let d = r.divergence.unwrap();
        assert_eq!(d.line, 2);
        assert!(d.message.contains("chain"), "{}", d.message);
        let r = replay(&bytes, Some("x"), "::n{id=\"z\"}\n::\n", fake_apply);
        let d = r.divergence.unwrap();
        assert!(d.message.contains("document on disk"));
        assert_eq!(d.blocks[0].id, "z");
        assert_eq!(d.blocks[0].change, "extra");
    }

    #[test]
    fn torn_and_malformed_lines_are_named() {
        let r = replay(b"{bad\n", None, "", fake_apply);
        assert_eq!(r.divergence.unwrap().line, 1);
        let (text, mut bytes) = transcript_for("x", &[&["a"]]);
        bytes.extend_from_slice(b"{\"protocol");
        let d = replay(&bytes, Some("x"), &text, fake_apply)
            .divergence
            .unwrap();
        assert_eq!(d.line, 2);
        assert!(d.message.contains("torn"));
    }
}
