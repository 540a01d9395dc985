//! The read-only document tools of Annex B: `read_doc` (§B.3), `list_ids`
//! (§B.4) and `validate_doc` (§B.5).

use std::path::Path;

use std::borrow::Cow;

use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde::Serialize;
use serde_json::{json, Value};

use super::documents::{read_source, validate_options, FileArgs};
use super::registry::{JsonText, ToolError, ToolResult};
use super::Context;
use noma_core::diag::Severity;
use noma_core::doc::hash::{slice_hash, BlockHash};
use noma_core::doc::{number_to_json, AttrValue, Attrs, Document, Node, NodeKind, Span};
use noma_store::engine;

/// `read_doc` (§B.3): every block in document order, as the reference's
/// server lists them: the frontmatter first (when it holds any text), then
/// each node pre-order, a list followed by its `list_item` entries (a list's
/// `childCount` is its item count). Blocks with an id carry their source
/// hash, the `base_hash` to send back. The answer is written straight to
/// JSON text ([`JsonText`]), never built as a `Value` tree.
pub(crate) fn read_doc(ctx: &Context, args: FileArgs) -> Result<JsonText, ToolError> {
    let path = ctx.doc_path(&args.file, "read_doc")?;
    let src = read_source(&path)?;
    let doc = noma_core::doc::parse(&src);
    let info = ctx.cache.doc_info(&src);
    let (edit, transcript_error) = match unrecorded_edit(ctx, &path) {
        Ok(edit) => (edit, None),
        Err(e) => (Value::Null, Some(Value::String(e.to_string()))),
    };
    let listing = Listing {
        src: &src,
        doc: &doc,
        hashes: &info.blocks,
    };
    let sha256 = Value::String(info.sha256.clone());
    // About 3.6 bytes of answer per byte of a typical document.
    let mut json = Vec::with_capacity(src.len() * 4);
    json.push(b'{');
    let written = entry(&mut json, "blocks", &listing)
        .and_then(|()| entry(&mut json, "sha256", &sha256))
        .and_then(|()| entry(&mut json, "unrecorded_edit", &edit))
        .and_then(|()| match &transcript_error {
            Some(e) => entry(&mut json, "transcript_error", e),
            None => Ok(()),
        });
    written.map_err(ToolError::system)?;
    json.push(b'}');
    let json = String::from_utf8(json).map_err(ToolError::system)?;
    Ok(JsonText::new(json))
}

/// Appends `"key":value` to the object open in `out`, as serde_json's
/// compact form writes it (a comma first unless it is the first entry).
fn entry<T: Serialize + ?Sized>(out: &mut Vec<u8>, key: &str, value: &T) -> serde_json::Result<()> {
    if out.last() != Some(&b'{') {
        out.push(b',');
    }
    serde_json::to_writer(&mut *out, key)?;
    out.push(b':');
    serde_json::to_writer(&mut *out, value)
}

/// `read_doc`'s block list, serialized as the document is walked.
struct Listing<'a> {
    src: &'a str,
    doc: &'a Document,
    /// The cache's id-bearing blocks, in the same pre-order.
    hashes: &'a [BlockHash],
}

impl Serialize for Listing<'_> {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        let mut seq = ser.serialize_seq(None)?;
        if let Some(fm) = self
            .doc
            .frontmatter
            .as_ref()
            .filter(|fm| !fm.raw.is_empty())
        {
            seq.serialize_element(&Plain("frontmatter", fm.span))?;
        }
        let mut hashes = self.hashes.iter().peekable();
        for node in self.doc.walk() {
            let hash = node.id.as_ref().map(|id| {
                // Fall back to hashing the slice if the cache and the walk
                // ever disagree.
                match hashes.peek() {
                    Some(h) if h.id == *id && h.lines == [node.span.start, node.span.end] => {
                        Cow::Borrowed(hashes.next().map_or("", |h| h.sha256.as_str()))
                    }
                    _ => Cow::Owned(slice_hash(self.src, node.span.start, node.span.end)),
                }
            });
            seq.serialize_element(&Block { node, hash })?;
            if let NodeKind::List { items, .. } = &node.kind {
                for item in items {
                    seq.serialize_element(&Plain("list_item", item.span))?;
                }
            }
        }
        seq.end()
    }
}

/// A block without an id or attributes: the frontmatter, a list item.
struct Plain(&'static str, Span);

impl Serialize for Plain {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        let mut map = ser.serialize_map(Some(4))?;
        map.serialize_entry("type", self.0)?;
        map.serialize_entry("childCount", &0)?;
        map.serialize_entry("lines", &[self.1.start, self.1.end])?;
        map.serialize_entry("patchable", &false)?;
        map.end()
    }
}

/// One node's entry, its fields in the reference's order.
struct Block<'a> {
    node: &'a Node,
    hash: Option<Cow<'a, str>>,
}

impl Serialize for Block<'_> {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        let node = self.node;
        let mut map = ser.serialize_map(None)?;
        if let Some(id) = &node.id {
            map.serialize_entry("id", id.as_str())?;
        }
        map.serialize_entry("type", node.type_name())?;
        let mut items = 0;
        match &node.kind {
            NodeKind::Directive { name, attrs, .. } => {
                map.serialize_entry("name", name.as_str())?;
                map.serialize_entry("attrs", &Attributes(attrs))?;
            }
            NodeKind::Section { title, level, .. } => {
                map.serialize_entry("title", title.as_str())?;
                map.serialize_entry("level", level)?;
            }
            NodeKind::List { items: list, .. } => items = list.len(),
            _ => {}
        }
        if !node.aliases.is_empty() {
            let aliases: Vec<&str> = node.aliases.iter().map(|a| a.as_str()).collect();
            map.serialize_entry("aliases", &aliases)?;
        }
        map.serialize_entry("childCount", &(node.children().len() + items))?;
        map.serialize_entry("lines", &[node.span.start, node.span.end])?;
        let patchable = node.id.as_deref().is_some_and(|id| !id.is_empty());
        map.serialize_entry("patchable", &patchable)?;
        if let Some(hash) = &self.hash {
            map.serialize_entry("hash", hash.as_ref())?;
        }
        map.end()
    }
}

/// A directive's attributes but its id, as a JSON object.
struct Attributes<'a>(&'a Attrs);

impl Serialize for Attributes<'_> {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        let mut map = ser.serialize_map(None)?;
        for (key, value) in self.0.iter().filter(|(k, _)| *k != "id") {
            match value {
                AttrValue::Str(s) => map.serialize_entry(key, s.as_str())?,
                AttrValue::Bool(b) => map.serialize_entry(key, b)?,
                AttrValue::Num(n) => map.serialize_entry(key, &number_to_json(*n))?,
            }
        }
        map.end()
    }
}

/// Why `read_doc` cannot tell whether the document holds an unrecorded
/// edit (its `transcript_error`).
#[derive(Debug, thiserror::Error)]
enum TranscriptError {
    /// The transcript's path is refused (it leaves the served roots).
    #[error("{0}")]
    Refused(String),
    /// The transcript cannot be read back.
    #[error(transparent)]
    Recovery(#[from] engine::recover::RecoveryError),
}

/// `read_doc`'s `unrecorded_edit`: the edit a patch would be refused for
/// (code unrecorded_edit), found the way the engine's recovery finds it,
/// with the command a person runs to record it; `null` when there is none.
fn unrecorded_edit(ctx: &Context, path: &Path) -> Result<Value, TranscriptError> {
    let tpath = ctx
        .derived(&engine::default_transcript_path(path))
        .map_err(|e| match e {
            ToolError::System { error, .. } | ToolError::User { error, .. } => {
                TranscriptError::Refused(error)
            }
        })?;
    let Some(edit) = engine::recover::find_unrecorded_edit(path, &tpath)? else {
        return Ok(Value::Null);
    };
    let shown = ctx.shown(path);
    let command = format!("noma record {}", noma_core::diag::shell_word(&shown));
    Ok(json!({
        "document_sha256": edit.document_sha256,
        "expected_sha256": edit.expected_sha256,
        "line": edit.line,
        "op_id": edit.op_id,
        "record_command": command,
        "message": format!(
            "{shown} holds an edit its transcript does not record (it is not the state record \
             {} at line {} leaves): patches are refused with unrecorded_edit until a person \
             reviews the edit and runs `{command}`",
            edit.op_id, edit.line
        ),
    }))
}

/// `list_ids` (§B.4).
pub(crate) fn list_ids(ctx: &Context, args: FileArgs) -> ToolResult {
    let path = ctx.doc_path(&args.file, "list_ids")?;
    let src = read_source(&path)?;
    let reg = noma_core::doc::ids::registry(&noma_core::doc::parse(&src));
    Ok(json!({ "ids": reg.ids, "aliases": reg.aliases }))
}

/// `validate_doc` (§B.5).
pub(crate) fn validate_doc(ctx: &Context, args: FileArgs) -> ToolResult {
    let path = ctx.doc_path(&args.file, "validate_doc")?;
    let src = read_source(&path)?;
    let opts = validate_options(&path)?;
    let diags = noma_core::validate::validate(&noma_core::doc::parse(&src), &opts);
    let ok = !diags.iter().any(|d| d.severity == Severity::Error);
    Ok(json!({ "ok": ok, "diagnostics": diags }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Body;

    const RICH: &str = "---\ntitle: Rich\n---\n# Rich {id=\"top\" aliases=\"r1,r2\"}\n\n\
        ::claim{id=\"c1\" confidence=0.9 n=3 ok neg=-2 big=12345678901234567 label=\"Ü \\\"q\\\" \\\\\"}\n\
        Sky.\n::\n\n- a\n- b\n  more\n\n::note\nNo id.\n::\n";

    fn read(ctx: &Context) -> JsonText {
        read_doc(
            ctx,
            FileArgs {
                file: "a.noma".into(),
            },
        )
        .expect("read_doc")
    }

    /// The answer written as text is what the `Value` it stands for
    /// serializes to, byte for byte (so clients see exactly the answer the
    /// tool gave before it wrote text), and lists every kind of block with
    /// its fields in the reference's order.
    #[test]
    fn the_written_answer_is_the_json_of_the_block_list() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.noma"), RICH).unwrap();
        let ctx = Context::open(dir.path(), crate::Notices::discard()).unwrap();
        let text = read(&ctx);
        let value: Value = serde_json::from_str(text.json()).expect("valid JSON");
        assert_eq!(value.to_string(), text.json());
        let h = |a: u32, b: u32| slice_hash(RICH, a, b);
        let plain = |t: &str, a: u32, b: u32| json!({"type": t, "childCount": 0, "lines": [a, b], "patchable": false});
        let want = json!({
            "blocks": [
                plain("frontmatter", 1, 3),
                {"id": "top", "type": "section", "title": "Rich", "level": 1,
                 "aliases": ["r1", "r2"], "childCount": 3, "lines": [4, 16],
                 "patchable": true, "hash": h(4, 16)},
                {"id": "c1", "type": "directive", "name": "claim",
                 "attrs": {"confidence": 0.9, "n": 3, "ok": true, "neg": -2,
                           "big": 12345678901234567.0, "label": "Ü \"q\" \\"},
                 "childCount": 1, "lines": [6, 8], "patchable": true, "hash": h(6, 8)},
                plain("paragraph", 7, 7),
                {"type": "list", "childCount": 2, "lines": [10, 12], "patchable": false},
                plain("list_item", 10, 10),
                plain("list_item", 11, 12),
                {"type": "directive", "name": "note", "attrs": {}, "childCount": 1,
                 "lines": [14, 16], "patchable": false},
                plain("paragraph", 15, 15),
            ],
            "sha256": noma_core::doc::hash::sha256_hex(RICH.as_bytes()),
            "unrecorded_edit": null,
        });
        assert_eq!(value, want, "{}", text.json());
        // Whole numbers stay integers, as JSON numbers of the value tree did.
        assert!(text
            .json()
            .contains(r#""n":3,"ok":true,"neg":-2,"big":1.2345678901234568e+16"#));
    }

    /// A transcript that cannot be read is named in the answer, and the
    /// answer is the tool's text content as it is, with no
    /// `structuredContent`.
    #[test]
    fn a_transcript_error_is_a_field_and_the_answer_is_sent_as_text() {
        let dir = tempfile::tempdir().unwrap();
        let body = RICH.repeat(40);
        std::fs::write(dir.path().join("a.noma"), &body).unwrap();
        // A directory where the transcript should be: unreadable.
        std::fs::create_dir(dir.path().join("a.noma.patches")).unwrap();
        let ctx = Context::open(dir.path(), crate::Notices::discard()).unwrap();
        let text = read(&ctx);
        let value: Value = serde_json::from_str(text.json()).unwrap();
        assert_eq!(value.to_string(), text.json());
        let keys: Vec<&str> = value
            .as_object()
            .unwrap()
            .keys()
            .map(|k| k.as_str())
            .collect();
        assert_eq!(
            keys,
            ["blocks", "sha256", "unrecorded_edit", "transcript_error"]
        );
        assert!(value["transcript_error"].is_string(), "{value}");
        let spec = crate::tools::registry().get("read_doc").unwrap().clone();
        let result = spec.answer(Ok(Body::Text(text.clone())));
        let sent = serde_json::to_value(&result.content[0]).unwrap();
        assert_eq!(sent["text"].as_str(), Some(text.json()));
        assert_eq!(result.structured_content, None);
        assert_eq!(result.is_error, Some(false));
    }
}
