//! Annex A capability descriptors (`<doc>.capabilities.yml`).
//!
//! v1.0 makes the descriptor advisory (A.4): we parse and shape-check it
//! (a malformed file is a clear error, so authors get early feedback) and
//! turn a missing grant into a `warning` diagnostic. Nothing is ever
//! rejected on the descriptor's account.
//!
//! The descriptor's types are its wire shape and live with the other wire
//! shapes in [`noma_core::transcript::capability_descriptor`]; they are re-exported here.

use std::path::{Path, PathBuf};

use serde_json::Value;

use noma_core::diag::{Diagnostic, Phase, Severity};
use noma_core::doc::Document;

/// The diagnostic code of an advisory capability warning.
pub const ADVISORY_CODE: &str = "capability_not_granted";

pub use noma_core::transcript::capability_descriptor::{
    AttrPolicy, AttrType, BlockPolicy, CapabilityFile, Descriptor, IdsPolicy, OpName, Scalar,
    ValidationPolicy,
};

/// The sidecar path of a document (A.1): the file name plus `.capabilities.yml`.
pub fn sidecar_path(doc: &Path) -> PathBuf {
    let mut name = doc
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(".capabilities.yml");
    doc.with_file_name(name)
}

/// Why a descriptor text is not an Annex A descriptor.
#[derive(Debug, thiserror::Error)]
pub enum DescriptorError {
    /// Malformed YAML, or a field of the wrong shape.
    #[error("{0}")]
    Yaml(#[from] serde_yaml_ng::Error),
    /// A `nomaAgent.version` this build does not know.
    #[error("nomaAgent.version is {0}; only version 1 is understood")]
    Version(u64),
}

/// Parses and shape-checks descriptor YAML.
pub fn parse(text: &str) -> Result<CapabilityFile, DescriptorError> {
    let file: CapabilityFile = serde_yaml_ng::from_str(text)?;
    if file.noma_agent.version != 1 {
        return Err(DescriptorError::Version(file.noma_agent.version));
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
    #[error("{}: malformed capability descriptor: {source}", path.display())]
    Malformed {
        /// The sidecar.
        path: PathBuf,
        /// What is wrong.
        source: DescriptorError,
    },
}

/// Loads the sidecar of `doc` when it exists.
pub fn load(doc: &Path) -> Result<Option<(PathBuf, CapabilityFile)>, CapabilityError> {
    let path = sidecar_path(doc);
    // Read as every noma input is: a FIFO or device planted in its place
    // is refused at once, never waited on.
    let text = match crate::fsio::read_regular(&path).and_then(|b| {
        String::from_utf8(b).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
    }) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(CapabilityError::Io { path, source }),
    };
    match parse(&text) {
        Ok(f) => Ok(Some((path, f))),
        Err(source) => Err(CapabilityError::Malformed { path, source }),
    }
}

/// Advisory warnings (phase `pre`) for `op` against `state`, the document
/// the op will be applied to. Empty when the descriptor grants the op.
pub fn advise(file: &CapabilityFile, state: &Document, op: &Value) -> Vec<Diagnostic> {
    let desc = &file.noma_agent;
    // Requests reach here checked (`check_request`); an op that is not one
    // is rejected by the engine anyway.
    let Ok(typed) = noma_core::patch::Op::parse(op) else {
        return Vec::new();
    };
    let name = typed.name();
    let Some(op_name) = OpName::parse(name) else {
        return Vec::new();
    };
    let target = typed.target();
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
    use noma_core::doc::parse as parse_doc;
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
        assert!(matches!(
            parse("nomaAgent:\n  version: 2\n"),
            Err(DescriptorError::Version(2))
        ));
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
