//! Profiles: named directive allow-lists a document opts in to (§4.4
//! "Profile conformance"). The lists follow the reference implementation.

use serde_json::{Map, Value};

use super::FastSet;

/// Directives every profile carries (plain-document building blocks).
const BASE: &[&str] = &[
    "summary",
    "abstract",
    "callout",
    "note",
    "warning",
    "tip",
    "header",
    "footer",
    "page_setup",
    "doc_protection",
    "toc",
    "figure",
    "citation",
    "footnote",
    "endnote",
    "bibliography",
    "math",
    "code",
    "table",
    "pagebreak",
];

const TECHNICAL: &[&str] = &[
    "hero",
    "grid",
    "card",
    "columns",
    "tabs",
    "accordion",
    "sidebar",
    "button",
    "api",
    "endpoint",
    "parameter",
    "example",
    "changelog",
    "instruction",
    "plot",
    "plotly",
    "diagram",
    "dataset",
    "query",
    "code_cell",
    "output",
    "control",
    "computed_metric",
    "computed_plot",
    "computed_table",
    "export_button",
    "agent_task",
    "todo",
    "html",
    "svg",
    "script",
];

const RESEARCH: &[&str] = &[
    "claim",
    "evidence",
    "counterevidence",
    "assumption",
    "risk",
    "hypothesis",
    "result",
    "limitation",
    "open_question",
    "decision",
    "adr",
    "dataset",
    "query",
    "plot",
    "plotly",
    "diagram",
    "metric",
    "control",
    "computed_metric",
    "computed_plot",
    "computed_table",
    "agent_task",
    "todo",
    "instruction",
    "review",
    "comment",
    "change_request",
    "provenance",
    "confidence",
    "state_change",
];

/// Decision records: the base set plus decision and review directives.
const ADR: &[&str] = &["decision", "adr", "review", "comment", "change_request"];

const MEMORY: &[&str] = &["memory", "memory_index"];

/// The canonical profile names (§4.4).
pub const KNOWN: &[&str] = &["minimal", "technical", "research", "memory"];

/// Which lists make up a profile; `None` for an unknown name. Besides the
/// four canonical names this accepts the documented aliases
/// (`technical-docs`, `research-memo`, `investment-thesis`, `adr`, `spec`,
/// `agent-memory`).
fn parts(name: &str) -> Option<&'static [&'static [&'static str]]> {
    Some(match name {
        "minimal" => &[BASE],
        "technical" | "technical-docs" => &[BASE, TECHNICAL],
        "research" | "research-memo" | "investment-thesis" => &[BASE, RESEARCH],
        "adr" => &[BASE, ADR],
        "spec" => &[BASE, TECHNICAL, RESEARCH],
        "memory" | "agent-memory" => &[MEMORY],
        _ => return None,
    })
}

/// Whether `name` is a recognised profile (or alias).
pub fn is_known(name: &str) -> bool {
    parts(name).is_some()
}

/// The profiles a run enforces.
#[derive(Debug, Default)]
pub struct Declared {
    /// Every declared name, in order (known or not).
    pub names: Vec<String>,
    /// Union of the known names' allow-lists; empty means "no restriction".
    allowed: FastSet<&'static str>,
}

impl Declared {
    /// Reads the declaration: `override_` (`--profile`, comma- or
    /// `+`-separated) wins; else frontmatter `profiles:` (a list, used when it
    /// holds at least one non-blank string); else `profile:`.
    pub fn read(meta: &Map<String, Value>, override_: Option<&str>) -> Declared {
        let names: Vec<String> = match override_ {
            Some(o) => o
                .split([',', '+'])
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect(),
            None => {
                let list: Vec<String> = match meta.get("profiles") {
                    Some(Value::Array(items)) => items
                        .iter()
                        .filter_map(Value::as_str)
                        .map(str::trim)
                        .filter(|s| !s.is_empty())
                        .map(String::from)
                        .collect(),
                    _ => Vec::new(),
                };
                if !list.is_empty() {
                    list
                } else {
                    match meta.get("profile").and_then(Value::as_str).map(str::trim) {
                        Some(p) if !p.is_empty() => vec![p.to_string()],
                        _ => Vec::new(),
                    }
                }
            }
        };
        let mut allowed = FastSet::default();
        for n in &names {
            for list in parts(n).unwrap_or(&[]) {
                allowed.extend(list.iter().copied());
            }
        }
        Declared { names, allowed }
    }

    /// Whether any known profile restricts the directive set.
    pub fn restricts(&self) -> bool {
        !self.allowed.is_empty()
    }

    /// Whether directive `name` is allowed by the union of declared profiles.
    pub fn allows(&self, name: &str) -> bool {
        !self.restricts() || self.allowed.contains(name)
    }

    /// The label used in messages, e.g. `research+technical`.
    pub fn label(&self) -> String {
        self.names.join("+")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn meta(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn reads_profile_profiles_and_override() {
        let d = Declared::read(&meta(json!({"profile": " research "})), None);
        assert_eq!(d.names, ["research"]);
        assert!(d.allows("claim") && d.allows("math") && !d.allows("hero"));

        let d = Declared::read(
            &meta(json!({"profiles": ["research", "technical"], "profile": "minimal"})),
            None,
        );
        assert_eq!(d.label(), "research+technical");
        assert!(d.allows("hero") && d.allows("claim"));

        let d = Declared::read(
            &meta(json!({"profiles": [" ", 3], "profile": "minimal"})),
            None,
        );
        assert_eq!(d.names, ["minimal"]);

        let d = Declared::read(
            &meta(json!({"profile": "research"})),
            Some("technical-docs"),
        );
        assert!(d.allows("hero") && !d.allows("claim"));
    }

    #[test]
    fn unknown_profiles_do_not_restrict() {
        let d = Declared::read(&meta(json!({"profile": "bogus"})), None);
        assert!(!d.restricts() && d.allows("anything"));
        assert!(!is_known("bogus") && is_known("memory") && is_known("spec"));
        let d = Declared::read(&meta(json!({})), None);
        assert!(d.names.is_empty());
    }
}
