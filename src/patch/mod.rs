//! Source-preserving patch ops. STUB — being replaced by the patch-engine work.

use serde_json::Value;

/// The §3.5 PatchError codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchErrorCode {
    /// Target id missing or not a directive.
    TargetMissing,
    /// Parent missing, not accepting children, or position out of range.
    ParentMissing,
    /// Id already taken.
    IdConflict,
    /// Content is not exactly one top-level directive.
    InvalidContent,
    /// `update_attribute` with key `id`.
    IdAttributeProtected,
    /// `expected_sha` or `baseHash` precondition failed.
    ShaMismatch,
    /// Strict mode and pre-validation errors.
    PreValidationBlocked,
    /// Rolled back because a later op failed.
    OpListAborted,
    /// Unknown op or book manifest target.
    UnsupportedOp,
}

impl PatchErrorCode {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            PatchErrorCode::TargetMissing => "target_missing",
            PatchErrorCode::ParentMissing => "parent_missing",
            PatchErrorCode::IdConflict => "id_conflict",
            PatchErrorCode::InvalidContent => "invalid_content",
            PatchErrorCode::IdAttributeProtected => "id_attribute_protected",
            PatchErrorCode::ShaMismatch => "sha_mismatch",
            PatchErrorCode::PreValidationBlocked => "pre_validation_blocked",
            PatchErrorCode::OpListAborted => "op_list_aborted",
            PatchErrorCode::UnsupportedOp => "unsupported_op",
        }
    }
}

/// A rejected op.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatchError {
    /// §3.5 code.
    pub code: PatchErrorCode,
    /// Human-readable explanation.
    pub message: String,
    /// Index of the failing op in the list.
    pub op_index: usize,
}

/// Applies `ops` in order to `source`, all or nothing; returns the new bytes.
pub fn apply_ops(_source: &str, ops: &[Value]) -> Result<String, PatchError> {
    Err(PatchError {
        code: PatchErrorCode::UnsupportedOp,
        message: "patch engine not built yet".into(),
        op_index: ops.len().saturating_sub(1),
    })
}
