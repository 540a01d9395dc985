//! Annex A capability descriptors (`<doc>.capabilities.yml`).
//!
//! v1.0 makes the descriptor advisory (A.4): we parse and shape-check it
//! (a malformed file is a clear error, so authors get early feedback) and
//! turn a missing grant into a `warning` diagnostic. Nothing is ever
//! rejected on the descriptor's account.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::diag::{Diagnostic, Phase, Severity};
use crate::doc::Document;

/// The diagnostic code of an advisory capability warning.
pub const ADVISORY_CODE: &str = "capability_not_granted";

/// The whole sidecar file: a single `nomaAgent` key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CapabilityFile {
    /// The descriptor.
    #[serde(rename = "nomaAgent")]
    pub noma_agent: Descriptor,
}

/// `nomaAgent` (A.3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Descriptor {
    /// Descriptor schema version; must be 1.
    #[schemars(range(min = 1, max = 1))]
    pub version: u64,
    /// Named profile; no effect on grants.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// Directive name → policy. Absent names have no grants.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocks: Option<BTreeMap<String, BlockPolicy>>,
    /// Id policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ids: Option<IdsPolicy>,
    /// Validation policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validation: Option<ValidationPolicy>,
}

/// Per-directive policy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BlockPolicy {
    /// Permitted ops on this directive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ops: Option<Vec<OpName>>,
    /// Per-attribute constraints for `update_attribute`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attrs: Option<BTreeMap<String, AttrPolicy>>,
}

/// Constraint on one attribute's value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AttrPolicy {
    /// Expected value type.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<AttrType>,
    /// Inclusive minimum (numbers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    /// Inclusive maximum (numbers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
    /// Allowed values.
    #[serde(rename = "enum", default, skip_serializing_if = "Option::is_none")]
    pub allowed: Option<Vec<Scalar>>,
}

/// A scalar allowed in `enum`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Scalar {
    /// Boolean.
    Bool(bool),
    /// Number.
    Number(f64),
    /// String.
    String(String),
}

/// Attribute value types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AttrType {
    /// Text.
    String,
    /// Number.
    Number,
    /// Boolean.
    Boolean,
}

/// `ids` policy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IdsPolicy {
    /// Whether `rename_id` is permitted at all (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rename: Option<bool>,
}

/// `validation` policy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ValidationPolicy {
    /// Surface post-validation errors as warnings (informational in v1.0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<bool>,
}

macro_rules! op_names {
    ($($variant:ident => $wire:literal),* $(,)?) => {
        /// The 25 op names of the v1.0 catalog (§3.1 + §1.5).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
        pub enum OpName {
            $(
                #[doc = concat!("`", $wire, "`")]
                #[serde(rename = $wire)]
                $variant,
            )*
        }
        impl OpName {
            /// Every op, in catalog order.
            pub const ALL: &'static [OpName] = &[$(OpName::$variant),*];
            /// The wire spelling.
            pub fn as_str(self) -> &'static str {
                match self { $(OpName::$variant => $wire),* }
            }
            /// Parses a wire spelling.
            pub fn parse(s: &str) -> Option<OpName> {
                match s { $($wire => Some(OpName::$variant),)* _ => None }
            }
        }
    };
}

op_names! {
    ReplaceBlock => "replace_block",
    ReplaceBody => "replace_body",
    UpdateHeading => "update_heading",
    AddComment => "add_comment",
    ResolveComment => "resolve_comment",
    AddFootnote => "add_footnote",
    AddEndnote => "add_endnote",
    AddChangeRequest => "add_change_request",
    UpdateTableCell => "update_table_cell",
    UpdateTableHeaderCell => "update_table_header_cell",
    InsertTableRow => "insert_table_row",
    DeleteTableRow => "delete_table_row",
    InsertTableColumn => "insert_table_column",
    DeleteTableColumn => "delete_table_column",
    UpdateDatasetCell => "update_dataset_cell",
    InsertDatasetRow => "insert_dataset_row",
    DeleteDatasetRow => "delete_dataset_row",
    InsertDatasetColumn => "insert_dataset_column",
    DeleteDatasetColumn => "delete_dataset_column",
    MoveBlock => "move_block",
    AddBlock => "add_block",
    DeleteBlock => "delete_block",
    UpdateAttribute => "update_attribute",
    RemoveAttribute => "remove_attribute",
    RenameId => "rename_id",
}

/// The sidecar path of a document (A.1): the file name plus `.capabilities.yml`.
pub fn sidecar_path(doc: &Path) -> PathBuf {
    let mut name = doc
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(".capabilities.yml");
    doc.with_file_name(name)
}

/// Parses and shape-checks descriptor YAML.
pub fn parse(text: &str) -> Result<CapabilityFile, String> {
    let file: CapabilityFile = serde_yaml_ng::from_str(text).map_err(|e| e.to_string())?;
    if file.noma_agent.version != 1 {
        return Err(format!(
            "nomaAgent.version is {}; only version 1 is understood",
            file.noma_agent.version
        ));
    }
    Ok(file)
}

/// Why a capability descriptor cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum CapabilityError {
    /// The sidecar exists but cannot be read.
    #[error("{}: cannot read capability descriptor: {source}", path.display())]
    Io {
        /// The sidecar.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The sidecar is not a valid Annex A descriptor.
    #[error("{}: malformed capability descriptor: {message}", path.display())]
    Malformed {
        /// The sidecar.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

/// Loads the sidecar of `doc` when it exists.
pub fn load(doc: &Path) -> Result<Option<(PathBuf, CapabilityFile)>, CapabilityError> {
    let path = sidecar_path(doc);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(CapabilityError::Io { path, source }),
    };
    match parse(&text) {
        Ok(f) => Ok(Some((path, f))),
        Err(message) => Err(CapabilityError::Malformed { path, message }),
    }
}

/// The field naming the block an op targets (same rule as `baseHash`, §3.4).
pub fn target_field(op_name: &str) -> &'static str {
    match op_name {
        "rename_id" => "from",
        "add_block" => "parent",
        "add_comment" | "add_footnote" | "add_endnote" | "add_change_request" => "target",
        _ => "id",
    }
}

/// Advisory warnings (phase `pre`) for `op` against `state`, the document
/// the op will be applied to. Empty when the descriptor grants the op.
pub fn advise(file: &CapabilityFile, state: &Document, op: &Value) -> Vec<Diagnostic> {
    let desc = &file.noma_agent;
    let name = op.get("op").and_then(Value::as_str).unwrap_or("");
    let Some(op_name) = OpName::parse(name) else {
        // Unknown ops are rejected by the engine anyway.
        return Vec::new();
    };
    let target = op.get(target_field(name)).and_then(Value::as_str);
    let node = target.and_then(|t| state.find(t));
    let block = node
        .map(|n| n.directive_name().unwrap_or(n.type_name()).to_string())
        .unwrap_or_default();
    let warn = |msg: String| {
        let mut d = Diagnostic::new(
            Severity::Warning,
            ADVISORY_CODE,
            format!("advisory only (Annex A.4, not enforced in v1.0): {msg}"),
        )
        .with_node(target);
        d.phase = Some(Phase::Pre);
        d
    };
    let mut out = Vec::new();
    let policy = desc.blocks.as_ref().and_then(|b| b.get(&block));
    let granted = policy
        .and_then(|p| p.ops.as_ref())
        .is_some_and(|ops| ops.contains(&op_name));
    if !granted {
        let what = if block.is_empty() {
            "the target".to_string()
        } else {
            format!("`{block}` blocks")
        };
        out.push(warn(format!(
            "the capability descriptor grants no `{name}` on {what}"
        )));
    }
    if op_name == OpName::RenameId && !desc.ids.as_ref().and_then(|i| i.rename).unwrap_or(false) {
        out.push(warn(
            "the capability descriptor does not enable ids.rename".into(),
        ));
    }
    if op_name == OpName::UpdateAttribute {
        let key = op.get("key").and_then(Value::as_str).unwrap_or("");
        let value = op.get("value").unwrap_or(&Value::Null);
        if let Some(rule) = policy
            .and_then(|p| p.attrs.as_ref())
            .and_then(|a| a.get(key))
        {
            if let Some(problem) = check_attr(rule, value) {
                out.push(warn(format!("attribute `{key}`: {problem}")));
            }
        }
    }
    out
}

/// Describes how `value` breaks `rule`, if it does.
fn check_attr(rule: &AttrPolicy, value: &Value) -> Option<String> {
    let type_ok = match rule.kind {
        Some(AttrType::String) => value.is_string(),
        Some(AttrType::Number) => value.is_number(),
        Some(AttrType::Boolean) => value.is_boolean(),
        None => true,
    };
    if !type_ok {
        return Some(format!("expected a {:?} value, got {value}", rule.kind?).to_lowercase());
    }
    if let Some(n) = value.as_f64() {
        if rule.min.is_some_and(|m| n < m) || rule.max.is_some_and(|m| n > m) {
            return Some(format!("{n} is outside [{:?}, {:?}]", rule.min, rule.max));
        }
    }
    if let Some(allowed) = &rule.allowed {
        let hit = allowed.iter().any(|a| match (a, value) {
            (Scalar::Bool(a), Value::Bool(b)) => a == b,
            (Scalar::Number(a), Value::Number(b)) => b.as_f64() == Some(*a),
            (Scalar::String(a), Value::String(b)) => a == b,
            _ => false,
        });
        if !hit {
            return Some(format!("{value} is not one of the allowed values"));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::parse as parse_doc;
    use serde_json::json;

    const DESC: &str = "nomaAgent:\n  version: 1\n  blocks:\n    claim:\n      ops: [replace_block, update_attribute]\n      attrs:\n        confidence: {type: number, min: 0, max: 1}\n";

    #[test]
    fn parses_and_rejects_bad_shapes() {
        let f = parse(DESC).unwrap();
        assert_eq!(OpName::ALL.len(), 25);
        assert!(f.noma_agent.blocks.unwrap()["claim"]
            .ops
            .as_ref()
            .unwrap()
            .contains(&OpName::ReplaceBlock));
        assert!(parse("nomaAgent:\n  version: 2\n")
            .unwrap_err()
            .contains("version"));
        assert!(parse("nomaAgent:\n  version: 1\n  blocks:\n    c: {ops: [explode]}\n").is_err());
        assert!(parse("nomaAgent:\n  version: 1\n  extra: 1\n").is_err());
        assert!(parse("other: 1\n").is_err());
        assert!(parse(": : :\n").is_err());
    }

    #[test]
    fn advises_without_rejecting() {
        let f = parse(DESC).unwrap();
        let doc = parse_doc("::claim{id=\"c\" confidence=0.5}\nx\n::\n\n::note{id=\"n\"}\ny\n::\n");
        assert!(advise(
            &f,
            &doc,
            &json!({"op":"update_attribute","id":"c","key":"confidence","value":0.7})
        )
        .is_empty());
        let d = advise(
            &f,
            &doc,
            &json!({"op":"update_attribute","id":"c","key":"confidence","value":3}),
        );
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].severity, Severity::Warning);
        let d = advise(&f, &doc, &json!({"op":"delete_block","id":"n"}));
        assert_eq!(d[0].code, ADVISORY_CODE);
        assert_eq!(d[0].phase, Some(Phase::Pre));
        assert!(d[0].message.contains("`note`"));
        assert_eq!(
            advise(&f, &doc, &json!({"op":"rename_id","from":"c","to":"d"})).len(),
            2
        );
    }

    #[test]
    fn sidecar_name() {
        assert_eq!(
            sidecar_path(Path::new("/a/t.noma")),
            PathBuf::from("/a/t.noma.capabilities.yml")
        );
    }
}
