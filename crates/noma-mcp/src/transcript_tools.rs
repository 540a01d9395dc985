//! The §B.8 directions that read what lies beside a document:
//! `transcript_read` (its newest records, with who signed and approved
//! them) and `describe_capabilities` (its Annex A descriptor).

use std::collections::{HashSet, VecDeque};
use std::fs::File;
use std::io::{self, BufRead, BufReader};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::documents::FileArgs;
use super::registry::{ToolError, ToolResult};
use super::Context;
use noma_core::transcript::{self, Record};
use noma_store::engine::{self, capability};

/// Arguments of `transcript_read`.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct TranscriptReadArgs {
    /// The .noma file's path.
    pub file: String,
    /// Most records returned (default 20).
    #[serde(default)]
    #[schemars(range(min = 1, max = 500))]
    pub limit: Option<u32>,
    /// Only records after this op_id.
    #[serde(default)]
    pub after_op_id: Option<String>,
}

/// Default and ceiling of `transcript_read.limit`.
const TRANSCRIPT_LIMIT: (u32, u32) = (20, 500);

/// `transcript_read` (§B.8 direction). The transcript is read a line at
/// a time, keeping only the newest `limit` records, so memory follows
/// `limit` and the longest record, not the file.
pub(crate) fn transcript_read(ctx: &Context, args: TranscriptReadArgs) -> ToolResult {
    let doc = ctx.doc_path(&args.file, "transcript_read")?;
    let tpath = ctx.derived(&engine::default_transcript_path(&doc))?;
    let shown = ctx.shown(&tpath);
    let limit = args
        .limit
        .unwrap_or(TRANSCRIPT_LIMIT.0)
        .clamp(1, TRANSCRIPT_LIMIT.1) as usize;
    let after = args.after_op_id.as_deref();
    // The provenance check needs the whole transcript, so only a document
    // with a sidecar has it read whole (under the size cap); the lines are
    // then walked in those bytes, so both answers see the same records.
    let provenance = noma_provenance::sidecar_path(&doc).exists();
    let opened = if provenance {
        noma_store::fsio::read_regular(&tpath).map(Opened::Whole)
    } else {
        noma_store::fsio::open_lines(&tpath).map(Opened::Lines)
    };
    let (newest, whole) = match opened {
        Ok(Opened::Whole(bytes)) => (newest_records(&bytes[..], limit, after), Some(bytes)),
        Ok(Opened::Lines(reader)) => (newest_records(reader, limit, after), None),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Ok(json!({
                "transcript": shown, "exists": false, "total": 0,
                "records": [], "truncated": false,
            }))
        }
        Err(e) => return Err(Unread::Io(e).into_tool_error(&shown, after)),
    };
    let newest = newest.map_err(|e| e.into_tool_error(&shown, after))?;
    let mut out = json!({
        "transcript": shown,
        "exists": true,
        "total": newest.total,
        "records": newest.records,
        "truncated": newest.truncated,
        "torn_tail": newest.torn_tail,
    });
    // Who signed and approved each record (trusting the workspace's
    // allowed signers).
    if let Some(bytes) = whole {
        let shown_ids: HashSet<&str> = newest.records.iter().map(|r| r.op_id.as_str()).collect();
        match noma_git::provenance::check::check_worktree(&doc, &bytes) {
            Ok(rep) => {
                let statuses: Vec<_> = rep
                    .records
                    .iter()
                    .filter(|s| shown_ids.contains(s.op_id.as_str()))
                    .collect();
                out["provenance"] = json!({"records": statuses, "sidecar": rep.sidecar});
            }
            Err(e) => out["provenance"] = json!({"error": e.to_string()}),
        }
    }
    Ok(out)
}

/// A transcript, opened for `transcript_read`.
enum Opened {
    /// Read whole, for the provenance check.
    Whole(Vec<u8>),
    /// To be read a line at a time.
    Lines(BufReader<File>),
}

/// What `transcript_read` answers from a transcript's lines.
#[derive(Debug, Clone, PartialEq)]
struct Newest {
    /// Complete records in the file.
    total: usize,
    /// The newest `limit` records (after the first one with `after_op_id`
    /// when given), oldest first.
    records: VecDeque<Record>,
    /// More than `limit` records qualified.
    truncated: bool,
    /// The file ends in bytes without a `\n` (an interrupted append).
    torn_tail: bool,
}

/// Why [`newest_records`] has no answer.
#[derive(Debug)]
enum Unread {
    /// The file could not be read.
    Io(io::Error),
    /// A complete line is no valid record (the first such line).
    Invalid(transcript::ReadError),
    /// `after_op_id` was given and no record has it.
    UnknownOpId,
}

impl Unread {
    /// The tool's error for this failure to read the transcript `shown`
    /// after `after_op_id`.
    fn into_tool_error(self, shown: &str, after: Option<&str>) -> ToolError {
        match self {
            Unread::Io(e) => ToolError::system(format!("{shown}: cannot read: {e}")),
            Unread::Invalid(e) => {
                let mut extra = Map::new();
                extra.insert("line".into(), json!(e.line()));
                ToolError::User {
                    code: "transcript_invalid".into(),
                    error: format!("{shown}: {e}"),
                    extra,
                }
            }
            Unread::UnknownOpId => ToolError::user(
                "unknown_op_id",
                format!(
                    "{shown} has no record with op_id {}",
                    after.unwrap_or_default()
                ),
            ),
        }
    }
}

/// The newest `limit` records of the transcript `lines` reads, after the
/// first record whose op_id is `after` when given. Lines are read exactly
/// as [`transcript::parse_transcript`] splits them: every complete line
/// is a record (its error, the first, is the answer), and bytes after the
/// last `\n` are a torn tail, never parsed. Only `limit` records and one
/// line are held at a time.
fn newest_records(
    mut lines: impl BufRead,
    limit: usize,
    after: Option<&str>,
) -> Result<Newest, Unread> {
    let mut found = after.is_none();
    let (mut total, mut counted, mut torn_tail) = (0, 0, false);
    let mut records = VecDeque::new();
    let mut line = Vec::new();
    loop {
        line.clear();
        if lines.read_until(b'\n', &mut line).map_err(Unread::Io)? == 0 {
            break;
        }
        if line.last() != Some(&b'\n') {
            torn_tail = true;
            break;
        }
        total += 1;
        let record = transcript::parse_record(total, &line).map_err(Unread::Invalid)?;
        if !found && after == Some(record.op_id.as_str()) {
            // Only records after the first with that op_id count.
            (found, counted) = (true, 0);
            records.clear();
            continue;
        }
        counted += 1;
        records.push_back(record);
        if records.len() > limit {
            records.pop_front();
        }
    }
    if !found {
        return Err(Unread::UnknownOpId);
    }
    Ok(Newest {
        total,
        records,
        truncated: counted > limit,
        torn_tail,
    })
}

/// `describe_capabilities` (§B.8 direction, Annex A).
pub(crate) fn describe_capabilities(ctx: &Context, args: FileArgs) -> ToolResult {
    let doc = ctx.doc_path(&args.file, "describe_capabilities")?;
    let sidecar = ctx.derived(&capability::sidecar_path(&doc))?;
    let shown = ctx.shown(&sidecar);
    let loaded = capability::load(&doc).map_err(|e| {
        ToolError::user(
            "invalid_descriptor",
            e.to_string()
                .replace(&doc.parent().unwrap_or(&doc).display().to_string(), "."),
        )
    })?;
    let extension_ops = extension_ops(ctx);
    let Some((_, file)) = loaded else {
        return Ok(json!({
            "extension_ops": extension_ops,
            "sidecar": shown,
            "exists": false,
            "descriptor": null,
            "grants": {},
            "rename_ids": false,
            "enforcement": "advisory",
            "note": "No descriptor: nothing is granted to agents (Annex A.2). In v1.0 this is \
        advisory only; patches are not refused on its account.",
        }));
    };
    let d = &file.noma_agent;
    let grants: Map<String, Value> = d
        .blocks
        .iter()
        .flatten()
        .map(|(name, policy)| {
            let ops: Vec<&str> = policy.ops.iter().flatten().map(|o| o.as_str()).collect();
            (name.clone(), json!(ops))
        })
        .collect();
    let rename = d.ids.as_ref().and_then(|i| i.rename).unwrap_or(false);
    Ok(json!({
        "extension_ops": extension_ops,
        "sidecar": shown,
        "exists": true,
        "descriptor": file,
        "grants": grants,
        "rename_ids": rename,
        "enforcement": "advisory",
        "note": "v1.0: advisory only. Ops not granted here still apply but are flagged with \
    capability_not_granted warnings in the transcript.",
    }))
}

/// The one extension op, as `describe_capabilities` lists it: agents'
/// requests refuse it; `noma record` writes it for hand edits when the
/// repository's policy allows (`record_text_edits`).
fn extension_ops(ctx: &Context) -> Value {
    let policy = noma_provenance::config::Policy::load(ctx.workspace.root());
    let (allowed, error) = match &policy {
        Ok(p) => (json!(p.file.record_text_edits), Value::Null),
        Err(e) => (Value::Null, json!(e.to_string())),
    };
    json!([{
        "op": noma_core::patch::REPLACE_LINES,
        "fields": {"line": "1-based line where `old` starts", "old": "the replaced whole lines", "new": "the new whole lines"},
        "accepted_in_patch_requests": false,
        "written_by": "noma record (actor kind human): hand edits no v1.0 op expresses, and a transcript's genesis record; noma itself (actor kind tool): the genesis record before the first patch of a document no commit holds",
        "allowed_by_policy": allowed,
        "policy_error": error,
    }])
}

#[cfg(test)]
mod tests {
    use super::*;
    use noma_core::diag::Summary;
    use noma_core::doc::hash::sha256_hex;
    use noma_core::transcript::{short_sha, Actor, ActorKind, PatchResult};
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestRunner};

    /// `transcript_read` as it was before it streamed, kept as the oracle:
    /// the whole file read and parsed, then sliced.
    fn transcript_read_whole(ctx: &Context, args: TranscriptReadArgs) -> ToolResult {
        let doc = ctx.doc_path(&args.file, "transcript_read")?;
        let tpath = ctx.derived(&engine::default_transcript_path(&doc))?;
        let shown = ctx.shown(&tpath);
        let bytes = match noma_store::fsio::read_regular(&tpath) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(json!({
                    "transcript": shown, "exists": false, "total": 0,
                    "records": [], "truncated": false,
                }))
            }
            Err(e) => return Err(ToolError::system(format!("{shown}: cannot read: {e}"))),
        };
        let parsed = transcript::parse_transcript(&bytes).map_err(|e| {
            let mut extra = Map::new();
            extra.insert("line".into(), json!(e.line()));
            ToolError::User {
                code: "transcript_invalid".into(),
                error: format!("{shown}: {e}"),
                extra,
            }
        })?;
        let total = parsed.entries.len();
        let start = match &args.after_op_id {
            None => 0,
            Some(id) => match parsed.entries.iter().position(|e| &e.record.op_id == id) {
                Some(i) => i + 1,
                None => {
                    return Err(ToolError::user(
                        "unknown_op_id",
                        format!("{shown} has no record with op_id {id}"),
                    ))
                }
            },
        };
        let limit = args
            .limit
            .unwrap_or(TRANSCRIPT_LIMIT.0)
            .clamp(1, TRANSCRIPT_LIMIT.1) as usize;
        let tail = &parsed.entries[start..];
        let skip = tail.len().saturating_sub(limit);
        let records: Vec<&Record> = tail[skip..].iter().map(|e| &e.record).collect();
        let mut out = json!({
            "transcript": shown,
            "exists": true,
            "total": total,
            "records": records,
            "truncated": skip > 0,
            "torn_tail": parsed.torn_tail.is_some(),
        });
        if noma_provenance::sidecar_path(&doc).exists() {
            let shown_ids: std::collections::HashSet<&str> =
                records.iter().map(|r| r.op_id.as_str()).collect();
            match noma_git::provenance::check::check_worktree(&doc, &bytes) {
                Ok(rep) => {
                    let statuses: Vec<_> = rep
                        .records
                        .iter()
                        .filter(|s| shown_ids.contains(s.op_id.as_str()))
                        .collect();
                    out["provenance"] = json!({"records": statuses, "sidecar": rep.sidecar});
                }
                Err(e) => out["provenance"] = json!({"error": e.to_string()}),
            }
        }
        Ok(out)
    }

    /// A UUID-shaped op_id, the same for the same `n`.
    fn op_id(n: usize) -> String {
        format!("00000000-0000-4000-8000-{n:012x}")
    }

    /// The `i`th record of a document's history, as the engine writes
    /// it: applied, chained to the previous line, of varying length.
    fn record_line(i: usize, op_id: String, prev_line: Option<&[u8]>) -> String {
        let pre = sha256_hex(format!("doc state {i}").as_bytes());
        let post = sha256_hex(format!("doc state {}", i + 1).as_bytes());
        Record {
            protocol_version: "1.0".into(),
            tool_version: "0.1.0".into(),
            op_id,
            ts: format!("2026-05-11T14:32:{:02}.000Z", i % 60),
            actor: Actor {
                kind: ActorKind::Agent,
                name: "tester".into(),
                model: Some("m".into()),
                version: None,
            },
            doc_uri: "file:///w/a.noma".into(),
            pre_sha: short_sha(&pre),
            post_sha: short_sha(&post),
            pre_sha256: pre,
            post_sha256: post,
            op: json!({"op": "update_attribute", "id": "c1", "key": "confidence", "value": i}),
            patch_result: PatchResult::Applied,
            pre_validation: Summary::Ok,
            post_validation: Summary::Ok,
            reason: Some("step ".repeat(i * 7 % 23)),
            parent_op_id: None,
            base_sha256: None,
            diagnostics: None,
            elapsed_ms: Some(i as u64),
            prev_entry_sha256: prev_line.map(sha256_hex),
            signature: None,
        }
        .to_line()
    }

    /// One generated transcript and a `transcript_read` of it.
    #[derive(Debug, Clone)]
    struct Case {
        /// Records written.
        records: usize,
        /// The `limit` argument.
        limit: Option<u32>,
        /// Which `after_op_id`: none, a record's, an unknown one, or one
        /// two records share.
        after: (u8, usize, usize),
        /// A line that is no record, inserted before the record at the
        /// index (kind, index).
        bad: Option<(u8, usize)>,
        /// A torn last line: (kind, where a record line is cut).
        torn: Option<(u8, usize)>,
        /// Lines whose index is a multiple of this end in `\r\n`.
        crlf_every: usize,
        /// A provenance sidecar exists (the whole-file path).
        sidecar: bool,
        /// Capacity of the small reader the lines are also read through.
        capacity: usize,
    }

    fn cases() -> impl Strategy<Value = Case> {
        let limit = prop_oneof![Just(None), (0u32..40).prop_map(Some), Just(Some(1000))];
        let tail = (
            proptest::option::weighted(0.3, (0u8..6, 0usize..64)),
            proptest::option::weighted(0.3, (0u8..3, 1usize..400)),
        );
        (
            0usize..40,
            limit,
            (0u8..5, 0usize..64, 0usize..64),
            tail,
            (2usize..6, any::<bool>(), 1usize..100),
        )
            .prop_map(
                |(records, limit, after, (bad, torn), (crlf, side, cap))| Case {
                    records,
                    limit,
                    after,
                    bad,
                    torn,
                    crlf_every: crlf,
                    sidecar: side,
                    capacity: cap,
                },
            )
    }

    /// The transcript's bytes and the `after_op_id` of `case`.
    fn transcript_of(case: &Case) -> (Vec<u8>, Option<String>) {
        let n = case.records;
        let (kind, i, j) = case.after;
        let (i, j) = (i % n.max(1), j % n.max(1));
        // Kind 3 gives a later record the op_id of an earlier one.
        let (dup_from, dup_to) = (i.min(j), i.max(j));
        let after = match kind {
            0 => None,
            1 => Some(op_id(i)),
            2 => Some(op_id(10_000)),
            3 => Some(op_id(dup_from)),
            _ => Some("not an op id".to_string()),
        };
        let mut bytes = Vec::new();
        let mut prev: Option<Vec<u8>> = None;
        for k in 0..=n {
            if let Some((bad, _)) = case.bad.filter(|(_, at)| at % (n + 1) == k) {
                let mut missing: Value =
                    serde_json::from_str(&record_line(k, op_id(k), None)).unwrap();
                missing.as_object_mut().unwrap().remove("post_validation");
                let line = match bad {
                    0 => "\n".to_string(),
                    1 => "{not json}\n".to_string(),
                    2 => "{\"v\":1}\n".to_string(),
                    3 => format!("{missing}\n"),
                    4 => "\r\n".to_string(),
                    _ => "[1,2]\n".to_string(),
                };
                bytes.extend_from_slice(line.as_bytes());
            }
            if k == n {
                break;
            }
            let id = if kind == 3 && k == dup_to && dup_to > dup_from {
                op_id(dup_from)
            } else {
                op_id(k)
            };
            let mut line = record_line(k, id, prev.as_deref()).into_bytes();
            if k % case.crlf_every == 0 {
                line.insert(line.len() - 1, b'\r');
            }
            bytes.extend_from_slice(&line);
            prev = Some(line);
        }
        if let Some((torn, cut)) = case.torn {
            let whole = record_line(n, op_id(n), prev.as_deref());
            let whole = whole.trim_end_matches('\n');
            let torn = match torn {
                0 => &whole[..cut.min(whole.len() - 1).max(1)],
                1 => whole,
                _ => "{not json",
            };
            bytes.extend_from_slice(torn.as_bytes());
        }
        (bytes, after)
    }

    /// An answer of [`newest_records`] that can be compared (no I/O
    /// error is expected of bytes in memory).
    fn comparable(r: Result<Newest, Unread>) -> Result<Newest, Option<transcript::ReadError>> {
        r.map_err(|e| match e {
            Unread::Io(e) => panic!("I/O error from memory: {e}"),
            Unread::Invalid(e) => Some(e),
            Unread::UnknownOpId => None,
        })
    }

    /// The streamed answer equals the whole-file answer it replaces, for
    /// every shape of transcript: any number of records and `limit`, an
    /// `after_op_id` absent, present, unknown or on two records (the
    /// first wins), a torn last line, a bad line anywhere, `\r\n` ends,
    /// with and without a provenance sidecar; and reading the lines
    /// through a reader of a few bytes changes nothing.
    #[test]
    fn streamed_answer_equals_the_whole_file_answer() {
        let dir = tempfile::tempdir().unwrap();
        let doc = dir.path().join("a.noma");
        std::fs::write(&doc, "# A\n").unwrap();
        let tpath = engine::default_transcript_path(&doc);
        let sidecar = noma_provenance::sidecar_path(&doc);
        let ctx = Context::open(dir.path(), crate::Notices::discard()).unwrap();
        let seen = std::cell::RefCell::new([0; 7]);
        let mut runner = TestRunner::new(Config {
            cases: 512,
            failure_persistence: None,
            ..Config::default()
        });
        runner
            .run(&cases(), |case| {
                let (bytes, after) = transcript_of(&case);
                std::fs::write(&tpath, &bytes).unwrap();
                if case.sidecar {
                    std::fs::write(&sidecar, "").unwrap();
                } else {
                    let _ = std::fs::remove_file(&sidecar);
                }
                let args = || TranscriptReadArgs {
                    file: "a.noma".into(),
                    limit: case.limit,
                    after_op_id: after.clone(),
                };
                let streamed = transcript_read(&ctx, args());
                prop_assert_eq!(&streamed, &transcript_read_whole(&ctx, args()));
                tally(&seen, &case, &streamed);
                let limit = case.limit.unwrap_or(20).clamp(1, 500) as usize;
                let small = BufReader::with_capacity(case.capacity, &bytes[..]);
                prop_assert_eq!(
                    comparable(newest_records(small, limit, after.as_deref())),
                    comparable(newest_records(&bytes[..], limit, after.as_deref()))
                );
                Ok(())
            })
            .unwrap();
        // The cases reached every kind of answer, so the equality above
        // was tested on each.
        let seen = seen.into_inner();
        assert!(seen.iter().all(|&n| n > 0), "{seen:?}");
    }

    /// Counts which kind of answer a case got: a page, a truncated page,
    /// a page after a duplicated op_id, a torn tail, a provenance part,
    /// an invalid line, an unknown op_id.
    fn tally(seen: &std::cell::RefCell<[usize; 7]>, case: &Case, answer: &ToolResult) {
        let mut seen = seen.borrow_mut();
        let code = |e: &ToolError| match e {
            ToolError::User { code, .. } => code.clone(),
            ToolError::System { error, .. } => panic!("{error}"),
        };
        match answer {
            Ok(v) => {
                seen[0] += 1;
                seen[1] += usize::from(v["truncated"] == true);
                let dup = case.after.0 == 3
                    && case.after.1 % case.records.max(1) != case.after.2 % case.records.max(1);
                seen[2] += usize::from(dup && !v["records"].as_array().unwrap().is_empty());
                seen[3] += usize::from(v["torn_tail"] == true);
                seen[4] += usize::from(v.get("provenance").is_some());
            }
            Err(e) if code(e) == "transcript_invalid" => seen[5] += 1,
            Err(e) => {
                assert_eq!(code(e), "unknown_op_id");
                seen[6] += 1;
            }
        }
    }
}
