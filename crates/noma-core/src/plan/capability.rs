//! Annex A capability descriptors over text: parsing and the advisory
//! warnings of an op. Finding and reading a document's sidecar
//! (`<doc>.capabilities.yml`) is the file-touching half, in `noma-store`.
//!
//! v1.0 makes the descriptor advisory (A.4): we parse and shape-check it
//! (a malformed file is a clear error, so authors get early feedback) and
//! turn a missing grant into a `warning` diagnostic. Nothing is ever
//! rejected on the descriptor's account.
//!
//! The descriptor's types are its wire shape and live with the other wire
//! shapes in [`crate::transcript::capability_descriptor`]; they are re-exported here.

use serde_json::Value;

use crate::diag::{Diagnostic, Phase, Severity};
use crate::doc::Document;

/// The diagnostic code of an advisory capability warning.
pub const ADVISORY_CODE: &str = "capability_not_granted";

pub use crate::transcript::capability_descriptor::{
    AttrPolicy, AttrType, BlockPolicy, CapabilityFile, Descriptor, IdsPolicy, OpName, Scalar,
    ValidationPolicy,
};

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

/// Advisory warnings (phase `pre`) for `op` against `state`, the document
/// the op will be applied to. Empty when the descriptor grants the op.
pub fn advise(file: &CapabilityFile, state: &Document, op: &Value) -> Vec<Diagnostic> {
    let desc = &file.noma_agent;
    // Requests reach here checked (`check_request`); an op that is not one
    // is rejected by the engine anyway.
    let Ok(typed) = crate::patch::Op::parse(op) else {
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
}
