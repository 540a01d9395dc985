//! The id registry behind `noma ids`: canonical ids in document order, the
//! alias → id map, and one record per addressable node.

use serde::Serialize;
use serde_json::{Map, Value};

use super::ast::{Document, NodeKind, Text};

/// One addressable node.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IdRecord {
    /// Canonical id.
    pub id: Text,
    /// Node type (`section`, `directive`, …).
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// Directive name, for directives.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<Text>,
    /// Section title, for sections.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<Text>,
    /// Aliases registered on the node.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<Text>,
    /// First line of the node.
    pub line: u32,
    /// Last line of the node.
    #[serde(rename = "endLine")]
    pub end_line: u32,
}

/// The registry: `{ids, aliases, records}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IdRegistry {
    /// Canonical ids in document order (duplicates included, as written).
    pub ids: Vec<Text>,
    /// Alias → canonical id (a later registration of the same alias wins).
    pub aliases: Map<String, Value>,
    /// One record per node with an id.
    pub records: Vec<IdRecord>,
}

/// Builds the registry for a document.
pub fn registry(doc: &Document) -> IdRegistry {
    let mut ids = Vec::new();
    let mut aliases = Map::new();
    let mut records = Vec::new();
    for node in doc.walk() {
        let Some(id) = &node.id else { continue };
        ids.push(id.clone());
        for a in &node.aliases {
            aliases.insert(a.to_string(), Value::String(id.to_string()));
        }
        let (name, title) = match &node.kind {
            NodeKind::Directive { name, .. } => (Some(name.clone()), None),
            NodeKind::Section { title, .. } => (None, Some(title.clone())),
            _ => (None, None),
        };
        records.push(IdRecord {
            id: id.clone(),
            kind: node.type_name(),
            name,
            title,
            aliases: node.aliases.to_vec(),
            line: node.span.start,
            end_line: node.span.end,
        });
    }
    IdRegistry {
        ids,
        aliases,
        records,
    }
}

/// Resolves `key` to a canonical id: itself when it is one, else via aliases.
pub fn resolve<'a>(doc: &'a Document, key: &str) -> Option<&'a str> {
    let mut via_alias = None;
    for node in doc.walk() {
        let Some(id) = node.id.as_deref() else {
            continue;
        };
        if id == key {
            return Some(id);
        }
        if via_alias.is_none() && node.aliases.iter().any(|a| a == key) {
            via_alias = Some(id);
        }
    }
    via_alias
}
