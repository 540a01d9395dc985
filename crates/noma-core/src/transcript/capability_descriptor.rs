//! The wire shape of an Annex A capability descriptor
//! (`<doc>.capabilities.yml`): the types it is read into, from which
//! [`super::schema::capability`] derives its JSON Schema. Reading the file
//! and turning a missing grant into an advisory warning is the patch
//! engine's business; it re-exports these types.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

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
