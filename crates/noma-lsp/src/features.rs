//! The requests answered from one [`Analysis`]: symbols, hover,
//! definition, references and completion.

use lsp_types::{
    CompletionItem, CompletionItemKind, DocumentSymbol, Hover, HoverContents, Location,
    LocationLink, MarkupContent, MarkupKind, Position, SymbolKind, Url,
};
use noma_core::doc::{Node, NodeKind};

use crate::analysis::{Analysis, REFERENCE_ATTRS};
use crate::guard::{RECORD_COMMAND, UNRECORDED};

/// Headings and directives with ids, nested as in the document.
pub(crate) fn document_symbols(a: &Analysis) -> Vec<DocumentSymbol> {
    symbols_of(a, &a.doc.children)
}

fn symbols_of(a: &Analysis, nodes: &[Node]) -> Vec<DocumentSymbol> {
    let mut out = Vec::new();
    for node in nodes {
        let children = symbols_of(a, node.children());
        let (Some(id), Some((name, kind))) = (node.id_str(), symbol_name(node)) else {
            // A block without an id is no symbol; its children still are.
            out.extend(children);
            continue;
        };
        let Some(def) = a.definition(id) else {
            out.extend(children);
            continue;
        };
        #[allow(deprecated)] // `deprecated` is a required field of the type
        out.push(DocumentSymbol {
            name,
            detail: Some(id.to_string()),
            kind,
            tags: None,
            deprecated: None,
            range: def.block,
            selection_range: def.range,
            children: (!children.is_empty()).then_some(children),
        });
    }
    out
}

/// A symbol's shown name and kind: a heading's text, `::name id` for a
/// directive; other blocks are no symbols.
fn symbol_name(node: &Node) -> Option<(String, SymbolKind)> {
    match &node.kind {
        NodeKind::Section { title, .. } => Some((title.to_string(), SymbolKind::NAMESPACE)),
        NodeKind::Directive { name, .. } => Some((
            format!("::{name} {}", node.id_str().unwrap_or_default()),
            SymbolKind::OBJECT,
        )),
        _ => None,
    }
}

/// The headings and directives with ids of the open documents whose id or
/// name holds `query` (any case).
pub(crate) fn workspace_symbols<'a>(
    docs: impl Iterator<Item = (&'a Url, &'a Analysis)>,
    query: &str,
) -> Vec<lsp_types::SymbolInformation> {
    let query = query.to_lowercase();
    let mut out = Vec::new();
    for (uri, a) in docs {
        for node in a.doc.walk() {
            let (Some(id), Some((name, kind))) = (node.id_str(), symbol_name(node)) else {
                continue;
            };
            let hit = |s: &str| s.to_lowercase().contains(&query);
            let Some(def) = a.definition(id).filter(|_| hit(id) || hit(&name)) else {
                continue;
            };
            #[allow(deprecated)] // `deprecated` is a required field of the type
            out.push(lsp_types::SymbolInformation {
                name,
                kind,
                tags: None,
                deprecated: None,
                location: Location::new(uri.clone(), def.range),
                container_name: Some(id.to_string()),
            });
        }
    }
    out
}

/// The block under the cursor: id, kind, aliases, lines and `baseHash`.
///
/// `history` gives the block's last changes (Markdown lines) for its id.
#[cfg(test)]
pub(crate) fn hover(
    a: &Analysis,
    pos: Position,
    history: &dyn Fn(&str) -> Vec<String>,
) -> Option<Hover> {
    let (id, mut h) = hover_block(a, pos)?;
    add_history(&mut h, &history(&id));
    Some(h)
}

/// The hover of the block under the cursor without its history, and the
/// block's id: the part the server answers from the open document alone,
/// before history (which reads git) is looked up elsewhere.
pub(crate) fn hover_block(a: &Analysis, pos: Position) -> Option<(String, Hover)> {
    let node = match a.id_at(pos) {
        Some(id) => a.doc.find(&id)?,
        None => a.block_at(pos.line)?,
    };
    let id = node.id_str()?;
    let kind = match node.directive_name() {
        Some(name) => format!("directive `::{name}`"),
        None => node.type_name().to_string(),
    };
    let mut text = format!(
        "**{id}** — {kind}, lines {}–{}",
        node.span.start, node.span.end
    );
    if !node.aliases.is_empty() {
        let aliases: Vec<&str> = node.aliases.iter().map(|s| s.as_str()).collect();
        text.push_str(&format!("\n\naliases: `{}`", aliases.join("`, `")));
    }
    if let Some(hash) = a.base_hash(id) {
        text.push_str(&format!("\n\nbaseHash: `{hash}`"));
    }
    let hover = Hover {
        contents: HoverContents::Markup(MarkupContent {
            kind: MarkupKind::Markdown,
            value: text,
        }),
        range: a.definition(id).map(|d| d.range),
    };
    Some((id.to_string(), hover))
}

/// Appends a block's last changes (Markdown lines, newest first) to its
/// hover; nothing when there are none.
pub(crate) fn add_history(hover: &mut Hover, changes: &[String]) {
    let HoverContents::Markup(m) = &mut hover.contents else {
        return;
    };
    if !changes.is_empty() {
        m.value.push_str("\n\nLast changes (`noma log`):\n");
        for line in changes {
            m.value.push_str(&format!("\n- {line}"));
        }
    }
}

/// Where the id under the cursor is defined.
pub(crate) fn definition(a: &Analysis, uri: &Url, pos: Position) -> Option<Location> {
    let id = a.id_at(pos)?;
    let def = a.definition(&id)?;
    Some(Location::new(uri.clone(), def.range))
}

/// Where the id under the cursor is defined, as a link: the target range
/// is the defining block's lines (what an editor shows of it), the
/// selection its id (or heading text), the origin the reference under the
/// cursor.
pub(crate) fn definition_link(a: &Analysis, uri: &Url, pos: Position) -> Option<LocationLink> {
    let id = a.id_at(pos)?;
    let def = a.definition(&id)?;
    let inside = |r: &lsp_types::Range| r.start <= pos && pos <= r.end;
    Some(LocationLink {
        origin_selection_range: a.references().iter().map(|r| r.hit).find(inside),
        target_uri: uri.clone(),
        target_range: def.block,
        target_selection_range: def.range,
    })
}

/// Every reference to the id under the cursor (and its definition when
/// `declaration`).
pub(crate) fn references(
    a: &Analysis,
    uri: &Url,
    pos: Position,
    declaration: bool,
) -> Vec<Location> {
    let Some(id) = a.id_at(pos) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if declaration {
        if let Some(def) = a.definition(&id) {
            out.push(Location::new(uri.clone(), def.range));
        }
    }
    for r in a.references() {
        if a.resolve(&r.target) == Some(id.as_str()) {
            out.push(Location::new(uri.clone(), r.range));
        }
    }
    out
}

/// Ids and aliases, offered where an id is written: inside `[[` or the
/// value of a reference attribute; nothing elsewhere.
pub(crate) fn completion(a: &Analysis, pos: Position) -> Option<Vec<CompletionItem>> {
    let line = a.index.line(&a.text, pos.line as usize);
    // Bytes of the line before the cursor (`offset` converts its UTF-16
    // column and lands on a character boundary).
    let upto = a.index.offset(&a.text, pos) - a.index.line_start(pos.line as usize);
    let before = line.get(..upto.min(line.len()))?;
    if !(in_wikilink(before) || in_reference_attr(before)) {
        return None;
    }
    let mut items = Vec::new();
    for node in a.doc.walk() {
        let Some(id) = node.id_str() else { continue };
        let detail = match &node.kind {
            NodeKind::Section { title, .. } => format!("section: {title}"),
            NodeKind::Directive { name, .. } => format!("::{name}"),
            _ => node.type_name().to_string(),
        };
        items.push(CompletionItem {
            label: id.to_string(),
            kind: Some(CompletionItemKind::REFERENCE),
            detail: Some(detail),
            ..Default::default()
        });
        for alias in node.aliases.iter() {
            items.push(CompletionItem {
                label: alias.to_string(),
                kind: Some(CompletionItemKind::REFERENCE),
                detail: Some(format!("alias of {id}")),
                ..Default::default()
            });
        }
    }
    Some(items)
}

/// Whether the text before the cursor ends inside an open `[[…`.
fn in_wikilink(before: &str) -> bool {
    let Some(open) = before.rfind("[[") else {
        return false;
    };
    before[open + 2..].bytes().all(is_id_byte)
}

/// Whether the text before the cursor ends inside `key="…` (or `key=…`)
/// of a reference attribute.
fn in_reference_attr(before: &str) -> bool {
    let partial = before.trim_end_matches(|c: char| c.is_ascii() && is_id_byte(c as u8));
    let Some(eq) = partial
        .strip_suffix('"')
        .unwrap_or(partial)
        .strip_suffix('=')
    else {
        return false;
    };
    // The key starts after the last character that cannot be in one (a
    // multi-byte one is skipped whole, never cut).
    let key_start = eq
        .char_indices()
        .rfind(|&(_, c)| !(c.is_ascii_alphanumeric() || c == '_'))
        .map_or(0, |(i, c)| i + c.len_utf8());
    REFERENCE_ATTRS.contains(&&eq[key_start..])
}

/// Bytes an id can hold (as the wikilink grammar reads them).
fn is_id_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b'/' | b':')
}

/// "Record this edit" for each `unrecorded-edit` diagnostic in the
/// request's context: it runs `noma.record` on the document.
pub(crate) fn record_actions(
    p: &lsp_types::CodeActionParams,
) -> Vec<lsp_types::CodeActionOrCommand> {
    let code = lsp_types::NumberOrString::String(UNRECORDED.to_string());
    let diagnostics: Vec<lsp_types::Diagnostic> = p
        .context
        .diagnostics
        .iter()
        .filter(|d| d.code.as_ref() == Some(&code))
        .cloned()
        .collect();
    if diagnostics.is_empty() {
        return Vec::new();
    }
    let uri = serde_json::Value::String(p.text_document.uri.to_string());
    vec![lsp_types::CodeActionOrCommand::CodeAction(
        lsp_types::CodeAction {
            title: "Record this edit".to_string(),
            kind: Some(lsp_types::CodeActionKind::QUICKFIX),
            diagnostics: Some(diagnostics),
            command: Some(lsp_types::Command::new(
                "Record this edit".to_string(),
                RECORD_COMMAND.to_string(),
                Some(vec![uri]),
            )),
            is_preferred: Some(true),
            ..Default::default()
        },
    )]
}

/// "Did you mean" quick fixes: a `broken-reference` whose message names
/// a near miss, on a range that holds the written id, gets an action
/// replacing it with the suggestion.
pub(crate) fn did_you_mean(
    a: &Analysis,
    p: &lsp_types::CodeActionParams,
) -> Vec<lsp_types::CodeActionOrCommand> {
    let code = lsp_types::NumberOrString::String("broken-reference".to_string());
    let mut out = Vec::new();
    for d in p.context.diagnostics.iter() {
        if d.code.as_ref() != Some(&code) {
            continue;
        }
        let Some((written, suggestion)) = written_and_suggestion(&d.message) else {
            continue;
        };
        let start = a.index.offset(&a.text, d.range.start);
        let end = a.index.offset(&a.text, d.range.end);
        if a.text.get(start..end) != Some(written) {
            continue; // a line-wide range: nothing exact to replace
        }
        let edit = lsp_types::TextEdit::new(d.range, suggestion.to_string());
        let changes = std::collections::HashMap::from([(p.text_document.uri.clone(), vec![edit])]);
        out.push(lsp_types::CodeActionOrCommand::CodeAction(
            lsp_types::CodeAction {
                title: format!("Change to \"{suggestion}\""),
                kind: Some(lsp_types::CodeActionKind::QUICKFIX),
                diagnostics: Some(vec![d.clone()]),
                edit: Some(lsp_types::WorkspaceEdit::new(changes)),
                is_preferred: Some(true),
                ..Default::default()
            },
        ));
    }
    out
}

/// The id a `broken-reference` message names as written and the one it
/// suggests: `[[x]] points at …; did you mean "y"?` or `for="x" points …`.
fn written_and_suggestion(message: &str) -> Option<(&str, &str)> {
    let (how, rest) = message.split_once(" points at ")?;
    let suggestion = rest.split_once("did you mean \"")?.1.strip_suffix("\"?")?;
    let written = match how.strip_prefix("[[") {
        Some(w) => w.strip_suffix("]]")?,
        None => how.split_once("=\"")?.1.strip_suffix('"')?,
    };
    Some((written, suggestion))
}

/// The edits turning `before` into `after`: only the bytes that changed
/// (`noma_core::patch::text_edits`), as LSP ranges of `before`.
pub(crate) fn edits_between(before: &str, after: &str) -> Vec<lsp_types::TextEdit> {
    let lines = crate::lines::LineIndex::new(before);
    noma_core::patch::text_edits(before, after)
        .into_iter()
        .map(|e| {
            let range = lines.range(before, e.range.start, e.range.end);
            lsp_types::TextEdit::new(range, e.new_text)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completion_contexts() {
        assert!(in_wikilink("see [["));
        assert!(in_wikilink("see [[c"));
        assert!(!in_wikilink("see [[c1]] and"));
        assert!(in_reference_attr("::evidence{for=\""));
        assert!(in_reference_attr("::evidence{for=\"c"));
        assert!(in_reference_attr("::comment{target="));
        assert!(!in_reference_attr("::claim{id=\"c"));
        assert!(!in_reference_attr("plain words"));
        // After a multi-byte character and `=`: no key, no panic.
        for before in ["ε=", "café=\"", "x😀=\"a", "é", "=", "\"", "ε for=\""] {
            let _ = in_reference_attr(before);
            let _ = in_wikilink(before);
        }
        assert!(!in_reference_attr("ε="));
        assert!(!in_reference_attr("café=\""));
        assert!(in_reference_attr("ε for=\""));
    }

    #[test]
    fn labelled_links_are_references_with_definitions_and_completion() {
        let text = "# T {id=\"t\"}\n\nSee [[t|the title]] and [[t]].\n".to_string();
        let a = Analysis::new(text, &noma_core::validate::Options::default());
        let uri = Url::parse("file:///d.noma").unwrap();
        // In the id, and in the label: both find the heading.
        for col in [6, 12, 17] {
            let def = definition(&a, &uri, Position::new(2, col)).unwrap();
            assert_eq!(def.range.start, Position::new(0, 9), "column {col}");
        }
        // Past the labelled link's `]]` there is none.
        assert!(definition(&a, &uri, Position::new(2, 21)).is_none());
        let refs = references(&a, &uri, Position::new(0, 9), false);
        let starts: Vec<Position> = refs.iter().map(|l| l.range.start).collect();
        assert_eq!(starts, [Position::new(2, 6), Position::new(2, 26)]);
        assert_eq!(refs[0].range.end, Position::new(2, 7));
        // Completion in the id part, none in the label.
        assert!(completion(&a, Position::new(2, 7)).is_some());
        assert!(completion(&a, Position::new(2, 12)).is_none());
    }

    #[test]
    fn positions_past_the_text_answer_nothing_and_do_not_panic() {
        let text = "# T {id=\"t\"}\n\nSee [[t]] and é.\n".to_string();
        let a = Analysis::new(text, &noma_core::validate::Options::default());
        let uri = Url::parse("file:///d.noma").unwrap();
        for pos in [
            Position::new(u32::MAX, u32::MAX),
            Position::new(2, u32::MAX),
            Position::new(9, 0),
        ] {
            assert!(hover(&a, pos, &|_| Vec::new()).is_none() || pos.line == 2);
            assert!(definition(&a, &uri, pos).is_none());
            assert!(references(&a, &uri, pos, true).is_empty());
            assert!(completion(&a, pos).is_none());
        }
        // Inside the wikilink: its definition is the heading's id.
        let def = definition(&a, &uri, Position::new(2, 7)).unwrap();
        assert_eq!(def.range.start, Position::new(0, 9));
    }

    #[test]
    fn suggestions_are_read_from_broken_reference_messages() {
        let wiki = "[[plann]] points at no block id or alias; did you mean \"plan\"?";
        assert_eq!(written_and_suggestion(wiki), Some(("plann", "plan")));
        let attr = "for=\"c2\" points at no block id or alias; did you mean \"c1\"?";
        assert_eq!(written_and_suggestion(attr), Some(("c2", "c1")));
        let none = "[[zz]] points at no block id or alias; fix the id or add a block with that id";
        assert_eq!(written_and_suggestion(none), None);
    }
}
