//! Transcript records (§5 of the protocol): the v1.0 JSONL record, a strict
//! line-numbered reader, and the small helpers every writer needs (UUID,
//! timestamp, `file://` URI, display hashes).
//!
//! Writers live in the patch engine (`src/engine/`, which depends on this
//! module, never the reverse); verification lives in [`replay`].

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::diag::{Diagnostic, Summary};
use crate::doc::hash::sha256_hex;

pub mod capability_descriptor;
pub mod genesis;
pub mod prefix;
pub mod reapply;
pub mod replay;
pub mod schema;
pub mod stamp;
pub mod tombstone;

/// The only transcript version this crate reads or writes.
pub const PROTOCOL_VERSION: &str = "1.0";

/// The suffix that names a document's transcript (§5.1): `doc.noma` is
/// recorded in `doc.noma.patches`.
pub const TRANSCRIPT_SUFFIX: &str = ".patches";

/// The conventional transcript path of a document path: the path plus
/// [`TRANSCRIPT_SUFFIX`]. Pure string work: a symlinked document's transcript
/// is resolved by the patch engine, which can see the file system.
pub fn transcript_path(doc: &str) -> String {
    format!("{doc}{TRANSCRIPT_SUFFIX}")
}

/// The document path a transcript path records, or `None` when the path does
/// not end in [`TRANSCRIPT_SUFFIX`].
pub fn document_path(transcript: &str) -> Option<&str> {
    transcript.strip_suffix(TRANSCRIPT_SUFFIX)
}

/// The fields §5.2 makes mandatory, in wire order.
pub const REQUIRED_FIELDS: [&str; 14] = [
    "protocol_version",
    "tool_version",
    "op_id",
    "ts",
    "actor",
    "doc_uri",
    "pre_sha256",
    "post_sha256",
    "pre_sha",
    "post_sha",
    "op",
    "patch_result",
    "pre_validation",
    "post_validation",
];

/// Who acted (§5.2 `actor`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Actor {
    /// `human`, `agent` or `tool`.
    pub kind: ActorKind,
    /// Display name (username, agent id, …).
    pub name: String,
    /// Model name, usually present when `kind` is `agent`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Version of the agent or tool, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

impl Actor {
    /// `Ok` when no field of the actor holds a character a terminal would
    /// act on ([`crate::display::is_unsafe`]): what a writer checks before
    /// it records an actor.
    pub fn check_printable(&self) -> Result<(), crate::display::UnsafeField> {
        crate::display::check_field("actor.name", &self.name)?;
        if let Some(m) = &self.model {
            crate::display::check_field("actor.model", m)?;
        }
        if let Some(v) = &self.version {
            crate::display::check_field("actor.version", v)?;
        }
        Ok(())
    }
}

/// `Ok` when the actor and the reason a writer is about to record hold no
/// character a terminal would act on: every writer (CLI, MCP, language
/// server) refuses them at write time, so a reviewer's listing shows what
/// the records say.
pub fn check_writer_fields(
    actor: &Actor,
    reason: Option<&str>,
) -> Result<(), crate::display::UnsafeField> {
    actor.check_printable()?;
    if let Some(r) = reason {
        crate::display::check_field("reason", r)?;
    }
    Ok(())
}

/// The kind of actor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ActorKind {
    /// A person.
    Human,
    /// An AI agent.
    Agent,
    /// An automated tool.
    Tool,
}

impl ActorKind {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            ActorKind::Human => "human",
            ActorKind::Agent => "agent",
            ActorKind::Tool => "tool",
        }
    }
}

/// Outcome of one attempted op (§5.1). `partial` does not exist by design.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum PatchResult {
    /// New bytes were written.
    Applied,
    /// No bytes were written; the reason is in `diagnostics`.
    Rejected,
    /// The op resolved but produced byte-identical text.
    Noop,
}

impl PatchResult {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            PatchResult::Applied => "applied",
            PatchResult::Rejected => "rejected",
            PatchResult::Noop => "noop",
        }
    }
}

/// One v1.0 transcript record (§5.2 required + §5.3 optional fields).
/// Unknown fields are ignored on read, as §5.6 requires.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Record {
    /// Always `"1.0"`.
    pub protocol_version: String,
    /// Version of the tool that wrote the record.
    pub tool_version: String,
    /// UUID v4, unique per record.
    pub op_id: String,
    /// ISO-8601 UTC timestamp with milliseconds, e.g. `2026-05-11T14:32:00.000Z`.
    pub ts: String,
    /// Who acted.
    pub actor: Actor,
    /// `file://` URI of the document.
    pub doc_uri: String,
    /// sha256 of the document before this op.
    pub pre_sha256: String,
    /// sha256 of the document after this op (equals `pre_sha256` unless applied).
    pub post_sha256: String,
    /// First 8 hex chars of `pre_sha256` (display only).
    pub pre_sha: String,
    /// First 8 hex chars of `post_sha256` (display only).
    pub post_sha: String,
    /// The op exactly as the caller sent it.
    pub op: Value,
    /// applied | rejected | noop.
    pub patch_result: PatchResult,
    /// Highest severity of the `pre` diagnostics.
    pub pre_validation: Summary,
    /// Highest severity of the `post` diagnostics.
    pub post_validation: Summary,
    /// Why the patch was made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// op_id of a causally prior record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_op_id: Option<String>,
    /// The caller's claim of the document sha256 it prepared the patch against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_sha256: Option<String>,
    /// Structured diagnostics, each with `phase`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diagnostics: Option<Vec<Diagnostic>>,
    /// Wall-clock milliseconds spent on this op, whole (clients such as the
    /// reference's Python SDK read it as an integer). Fractional values
    /// written by older versions are rounded on read.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "whole_millis"
    )]
    pub elapsed_ms: Option<u64>,
    /// sha256 of the previous transcript line, raw bytes including `\n`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prev_entry_sha256: Option<String>,
    /// Reserved: always `null` in v1.0.
    #[serde(default)]
    pub signature: Option<Value>,
}

/// Reads `elapsed_ms` as any non-negative JSON number, rounded to whole
/// milliseconds.
fn whole_millis<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    let v: Option<f64> = Option::deserialize(d)?;
    match v {
        Some(ms) if ms.is_finite() && ms >= 0.0 => Ok(Some(ms.round() as u64)),
        Some(ms) => Err(serde::de::Error::custom(format!(
            "elapsed_ms {ms} is not a non-negative number"
        ))),
        None => Ok(None),
    }
}

/// A record whose fields parse but break a §5.2 value rule
/// ([`Record::check_shape`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShapeError {
    /// `protocol_version` is not `"1.0"`.
    #[error("protocol_version is {0:?}, expected \"1.0\"")]
    ProtocolVersion(String),
    /// A hash field is not 64 lowercase hex characters.
    #[error("{0} is not 64 lowercase hex characters")]
    NotSha256(&'static str),
    /// A display alias is not the first 8 characters of its full hash.
    #[error("{0} is not the first 8 characters of {1}")]
    DisplayAlias(&'static str, &'static str),
    /// `op_id` is not a UUID.
    #[error("op_id {0:?} is not a UUID")]
    OpIdNotUuid(String),
    /// `op` is not a JSON object.
    #[error("op is not a JSON object")]
    OpNotObject,
    /// A rejected or noop record whose hashes differ.
    #[error("a {0} record must have post_sha256 equal to pre_sha256")]
    UnappliedChangedHash(&'static str),
    /// `signature` is set (reserved, null in v1.0).
    #[error("signature must be null in v1.0")]
    Signature,
}

impl Record {
    /// Checks the value constraints serde cannot express: version literal,
    /// hash formats, display aliases, UUID, rejected/noop hash equality.
    pub fn check_shape(&self) -> Result<(), ShapeError> {
        if self.protocol_version != PROTOCOL_VERSION {
            return Err(ShapeError::ProtocolVersion(self.protocol_version.clone()));
        }
        let hashes = [
            ("pre_sha256", Some(&self.pre_sha256)),
            ("post_sha256", Some(&self.post_sha256)),
            ("base_sha256", self.base_sha256.as_ref()),
            ("prev_entry_sha256", self.prev_entry_sha256.as_ref()),
        ];
        for (field, v) in hashes {
            if v.is_some_and(|v| !is_sha256_hex(v)) {
                return Err(ShapeError::NotSha256(field));
            }
        }
        if self.pre_sha != short_sha(&self.pre_sha256) {
            return Err(ShapeError::DisplayAlias("pre_sha", "pre_sha256"));
        }
        if self.post_sha != short_sha(&self.post_sha256) {
            return Err(ShapeError::DisplayAlias("post_sha", "post_sha256"));
        }
        if uuid::Uuid::parse_str(&self.op_id).is_err() {
            return Err(ShapeError::OpIdNotUuid(self.op_id.clone()));
        }
        if !self.op.is_object() {
            return Err(ShapeError::OpNotObject);
        }
        if self.patch_result != PatchResult::Applied && self.pre_sha256 != self.post_sha256 {
            return Err(ShapeError::UnappliedChangedHash(self.patch_result.as_str()));
        }
        if matches!(&self.signature, Some(v) if !v.is_null()) {
            return Err(ShapeError::Signature);
        }
        Ok(())
    }

    /// The op's `op` name, or `?` when absent.
    pub fn op_name(&self) -> &str {
        self.op.get("op").and_then(Value::as_str).unwrap_or("?")
    }

    /// Serialises the record as one JSONL line (with the trailing `\n`).
    pub fn to_line(&self) -> String {
        // Serialising a struct of strings, enums and Values cannot fail.
        let mut s = serde_json::to_string(self).unwrap_or_default();
        s.push('\n');
        s
    }
}

/// True for 64 lowercase hex characters.
pub fn is_sha256_hex(s: &str) -> bool {
    s.len() == 64
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The 8-character display alias of a full hash.
pub fn short_sha(full: &str) -> String {
    full.chars().take(8).collect()
}

/// A fresh UUID v4 string (the system's random source; see
/// [`stamp`] for caller-supplied ids).
#[cfg(feature = "std-clock")]
pub fn new_uuid() -> String {
    use stamp::IdSource;
    stamp::RandomIds.new_id().to_string()
}

/// The current UTC time in the record form (the system clock; see
/// [`stamp`] for a caller-supplied clock).
#[cfg(feature = "std-clock")]
pub fn now_ts() -> String {
    use stamp::Clock;
    format_ts(stamp::SystemClock.now())
}

/// `t` as a record's `ts`: UTC, `YYYY-MM-DDTHH:MM:SS.mmmZ`. The `time`
/// crate does the calendar maths; RFC 3339's own formatter would print
/// nanoseconds.
pub fn format_ts(t: time::OffsetDateTime) -> String {
    let fmt = time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
    );
    t.to_offset(time::UtcOffset::UTC)
        .format(&fmt)
        .unwrap_or_else(|_| "1970-01-01T00:00:00.000Z".into())
}

/// Why a transcript line is not a valid v1.0 record.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    /// Not JSON, or not a JSON object.
    #[error("line {line}: malformed JSON: {message}")]
    Malformed {
        /// 1-based line number.
        line: usize,
        /// Parser message.
        message: String,
    },
    /// `protocol_version` missing or not `"1.0"` (e.g. a Phase 0 record).
    #[error("line {line}: not a v1.0 record ({found})")]
    NotV1 {
        /// 1-based line number.
        line: usize,
        /// What was found instead.
        found: String,
    },
    /// A v1.0 record without one of the §5.2 fields.
    #[error("line {line}: v1.0 record is missing required field `{field}`")]
    MissingField {
        /// 1-based line number.
        line: usize,
        /// The missing field.
        field: &'static str,
    },
    /// A field has the wrong type or value.
    #[error("line {line}: invalid record: {message}")]
    Invalid {
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        message: String,
    },
}

impl ReadError {
    /// The 1-based line the error refers to.
    pub fn line(&self) -> usize {
        match self {
            ReadError::Malformed { line, .. }
            | ReadError::NotV1 { line, .. }
            | ReadError::MissingField { line, .. }
            | ReadError::Invalid { line, .. } => *line,
        }
    }
}

/// One complete (newline-terminated) line of a transcript file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawLine<'a> {
    /// 1-based line number.
    pub number: usize,
    /// Byte offset of the line start in the file.
    pub offset: usize,
    /// The line's bytes including the terminating `\n`.
    pub raw: &'a [u8],
}

/// Splits transcript bytes into complete lines plus the torn tail (bytes
/// after the last `\n`, i.e. an interrupted append), if any.
pub fn split_lines(bytes: &[u8]) -> (Vec<RawLine<'_>>, Option<&[u8]>) {
    let mut out = Vec::new();
    let mut start = 0;
    for end in memchr::memchr_iter(b'\n', bytes) {
        out.push(RawLine {
            number: out.len() + 1,
            offset: start,
            raw: &bytes[start..=end],
        });
        start = end + 1;
    }
    let torn = (start < bytes.len()).then(|| &bytes[start..]);
    (out, torn)
}

/// Parses one line (with or without its `\n`) as a v1.0 record.
pub fn parse_record(line: usize, raw: &[u8]) -> Result<Record, ReadError> {
    let body = raw.strip_suffix(b"\n").unwrap_or(raw);
    let body = body.strip_suffix(b"\r").unwrap_or(body);
    // Fast path: a well-formed record deserialises directly.
    let record = match serde_json::from_slice::<Record>(body) {
        Ok(r) => r,
        Err(_) => return Err(diagnose_line(line, body)),
    };
    if record.protocol_version != PROTOCOL_VERSION {
        return Err(ReadError::NotV1 {
            line,
            found: format!("protocol_version {:?}", record.protocol_version),
        });
    }
    record.check_shape().map_err(|e| ReadError::Invalid {
        line,
        message: e.to_string(),
    })?;
    Ok(record)
}

/// Explains why a line failed to deserialise, naming the field when possible.
fn diagnose_line(line: usize, body: &[u8]) -> ReadError {
    let value: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => {
            let message = if body.iter().all(u8::is_ascii_whitespace) {
                "empty line".to_string()
            } else {
                e.to_string()
            };
            return ReadError::Malformed { line, message };
        }
    };
    let Some(obj) = value.as_object() else {
        return ReadError::Malformed {
            line,
            message: "not a JSON object".into(),
        };
    };
    match obj.get("protocol_version") {
        Some(Value::String(v)) if v == PROTOCOL_VERSION => {}
        Some(other) => {
            return ReadError::NotV1 {
                line,
                found: format!("protocol_version {other}"),
            }
        }
        None if obj.contains_key("v") => {
            return ReadError::NotV1 {
                line,
                found: "Phase 0 record (`v` field); see §5.7".into(),
            }
        }
        None => {
            return ReadError::NotV1 {
                line,
                found: "no protocol_version".into(),
            }
        }
    }
    if let Some(field) = REQUIRED_FIELDS.iter().find(|f| !obj.contains_key(**f)) {
        return ReadError::MissingField { line, field };
    }
    let message = match serde_json::from_value::<Record>(value) {
        Ok(_) => "unreadable record".to_string(),
        Err(e) => e.to_string(),
    };
    ReadError::Invalid { line, message }
}

/// A whole transcript, parsed strictly.
#[derive(Debug, Clone, Default)]
pub struct Transcript {
    /// Records in file order, each with its line number and raw-line sha256.
    pub entries: Vec<Entry>,
    /// Bytes after the last `\n` (an interrupted append), if any.
    pub torn_tail: Option<Vec<u8>>,
}

/// A parsed record with where it came from.
#[derive(Debug, Clone)]
pub struct Entry {
    /// 1-based line number.
    pub line: usize,
    /// Byte offset of the line start.
    pub offset: usize,
    /// sha256 of the raw line including `\n` (what the next record chains to).
    pub line_sha256: String,
    /// The record.
    pub record: Record,
}

/// Parses every complete line; the first bad line is an error.
pub fn parse_transcript(bytes: &[u8]) -> Result<Transcript, ReadError> {
    let (lines, torn) = split_lines(bytes);
    let mut entries = Vec::with_capacity(lines.len());
    for l in lines {
        let record = parse_record(l.number, l.raw)?;
        entries.push(Entry {
            line: l.number,
            offset: l.offset,
            line_sha256: sha256_hex(l.raw),
            record,
        });
    }
    Ok(Transcript {
        entries,
        torn_tail: torn.map(<[u8]>::to_vec),
    })
}

/// Derives a summary from the diagnostics of one phase (§4.2).
pub fn summary_for(diags: &[Diagnostic], phase: crate::diag::Phase) -> Summary {
    let worst = diags
        .iter()
        .filter(|d| d.phase == Some(phase))
        .map(|d| d.severity)
        .max();
    match worst {
        Some(crate::diag::Severity::Error) => Summary::Error,
        Some(crate::diag::Severity::Warning) => Summary::Warn,
        _ => Summary::Ok,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transcript_and_document_paths_round_trip() {
        assert_eq!(transcript_path("docs/a.noma"), "docs/a.noma.patches");
        assert_eq!(document_path("docs/a.noma.patches"), Some("docs/a.noma"));
        assert_eq!(
            document_path(&transcript_path("x y.noma")),
            Some("x y.noma")
        );
        // Only the suffix counts: a name containing it elsewhere is no transcript.
        assert_eq!(document_path("a.patches.noma"), None);
        assert_eq!(document_path("a.noma"), None);
        assert_eq!(document_path(".patches"), Some(""));
    }

    pub(super) fn sample() -> Record {
        let h = sha256_hex(b"x");
        Record {
            protocol_version: "1.0".into(),
            tool_version: "0.1.0".into(),
            op_id: new_uuid(),
            ts: now_ts(),
            actor: Actor {
                kind: ActorKind::Agent,
                name: "a".into(),
                model: Some("m".into()),
                version: None,
            },
            doc_uri: "file:///tmp/x.noma".into(),
            pre_sha256: h.clone(),
            post_sha256: h.clone(),
            pre_sha: short_sha(&h),
            post_sha: short_sha(&h),
            op: serde_json::json!({"op": "delete_block", "id": "a"}),
            patch_result: PatchResult::Noop,
            pre_validation: Summary::Ok,
            post_validation: Summary::Ok,
            reason: None,
            parent_op_id: None,
            base_sha256: None,
            diagnostics: None,
            elapsed_ms: None,
            prev_entry_sha256: None,
            signature: None,
        }
    }

    #[test]
    fn round_trips_and_ignores_unknown_fields() {
        let r = sample();
        let line = r.to_line();
        assert!(line.ends_with("}\n"));
        assert!(line.contains("\"signature\":null"));
        let mut v: Value = serde_json::from_str(&line).unwrap();
        v["future_field"] = serde_json::json!({"x": 1});
        let back = parse_record(1, serde_json::to_string(&v).unwrap().as_bytes()).unwrap();
        assert_eq!(back, r);
    }

    #[test]
    fn elapsed_ms_is_written_whole_and_read_from_any_number() {
        let mut r = sample();
        r.elapsed_ms = Some(3);
        assert!(r.to_line().contains("\"elapsed_ms\":3,"));
        let mut v: Value = serde_json::from_str(&r.to_line()).unwrap();
        v["elapsed_ms"] = serde_json::json!(0.014);
        let back = parse_record(1, v.to_string().as_bytes()).unwrap();
        assert_eq!(back.elapsed_ms, Some(0));
        v["elapsed_ms"] = serde_json::json!(-1);
        assert!(parse_record(1, v.to_string().as_bytes()).is_err());
    }

    #[test]
    fn names_missing_field_and_line() {
        let mut v: Value = serde_json::from_str(&sample().to_line()).unwrap();
        v.as_object_mut().unwrap().remove("post_validation");
        let err = parse_record(7, v.to_string().as_bytes()).unwrap_err();
        assert_eq!(
            err,
            ReadError::MissingField {
                line: 7,
                field: "post_validation"
            }
        );
        assert!(err.to_string().contains("line 7"));
    }

    #[test]
    fn rejects_malformed_and_phase0_and_bad_hashes() {
        assert!(matches!(
            parse_record(3, b"{not json\n"),
            Err(ReadError::Malformed { line: 3, .. })
        ));
        assert!(matches!(
            parse_record(4, b"\n"),
            Err(ReadError::Malformed { line: 4, .. })
        ));
        assert!(matches!(
            parse_record(5, b"{\"v\":1}\n"),
            Err(ReadError::NotV1 { line: 5, .. })
        ));
        let mut r = sample();
        r.pre_sha = "deadbeef".into();
        assert!(matches!(
            parse_record(6, r.to_line().as_bytes()),
            Err(ReadError::Invalid { line: 6, .. })
        ));
        let mut r = sample();
        r.post_sha256 = sha256_hex(b"y");
        r.post_sha = short_sha(&r.post_sha256);
        // A noop whose hashes differ violates §5.4.
        assert!(parse_record(1, r.to_line().as_bytes()).is_err());
    }

    #[test]
    fn shape_errors_name_the_rule_each_record_breaks() {
        assert_eq!(sample().check_shape(), Ok(()));
        let mut r = sample();
        r.pre_sha = "deadbeef".into();
        assert_eq!(
            r.check_shape(),
            Err(ShapeError::DisplayAlias("pre_sha", "pre_sha256"))
        );
        let mut r = sample();
        r.base_sha256 = Some("ABC".into());
        assert_eq!(r.check_shape(), Err(ShapeError::NotSha256("base_sha256")));
        let mut r = sample();
        r.op_id = "not-a-uuid".into();
        let err = r.check_shape().unwrap_err();
        assert_eq!(err.to_string(), "op_id \"not-a-uuid\" is not a UUID");
        let mut r = sample();
        r.signature = Some(serde_json::json!("sig"));
        assert_eq!(r.check_shape(), Err(ShapeError::Signature));
    }

    #[test]
    fn splits_torn_tail() {
        let (lines, torn) = split_lines(b"a\nb\nc");
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[1].raw, b"b\n");
        assert_eq!(lines[1].offset, 2);
        assert_eq!(torn, Some(&b"c"[..]));
        assert_eq!(split_lines(b"a\n").1, None);
    }

    #[test]
    fn timestamp_and_uri_shapes() {
        let t = time::OffsetDateTime::from_unix_timestamp_nanos(1_778_509_920_123_456_789).unwrap();
        assert_eq!(format_ts(t), "2026-05-11T14:32:00.123Z");
        let ts = now_ts();
        assert_eq!(ts.len(), 24);
        assert!(ts.ends_with('Z'));
    }
}
