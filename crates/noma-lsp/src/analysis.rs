//! One open document as the server sees it: parsed, validated, and the
//! places where ids are defined and referenced, with LSP ranges.

use std::cell::OnceCell;
use std::collections::HashMap;
use std::sync::Arc;

use lsp_types::{DiagnosticSeverity, NumberOrString, Position, Range};
use noma_core::diag::{Diagnostic, Severity};
use noma_core::doc::reparse::{self, Reparsed};
use noma_core::doc::{self, hash::block_hashes, Document, Node, NodeKind};
use noma_core::validate::{self, Options, Validation};
use noma_provenance::config::{self, ConfigError, Policy};

use crate::lines::LineIndex;

/// Attributes whose value names another block, as the validator reads
/// them (`for=`, `parent=`, `target=`, `block=`, `ref=`, replies,
/// `dataset=`).
pub(crate) const REFERENCE_ATTRS: &[&str] = &[
    "for", "parent", "target", "block", "ref", "reply_to", "replyTo", "reply", "dataset",
];

/// Where a block's id is written (or, for a heading without `{id=…}`,
/// the heading text its slug comes from).
#[derive(Debug, Clone)]
pub struct Definition {
    /// Canonical id.
    pub id: String,
    /// The id token (or heading text).
    pub range: Range,
    /// The block's whole lines.
    pub block: Range,
}

/// One reference to an id: a `[[wikilink]]` or a reference attribute.
#[derive(Debug, Clone)]
pub struct Reference {
    /// The id as written.
    pub target: String,
    /// The written id's range.
    pub range: Range,
    /// Where the cursor finds the reference: a wikilink's whole `[[…]]`
    /// (brackets included, as clients select it), else `range`.
    pub hit: Range,
}

/// How an [`Analysis`] was made: the cheaper, the later the variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum How {
    /// Parsed and validated in full.
    Full,
    /// The edited blocks (or the frontmatter) re-parsed and spliced in,
    /// then validated in full.
    Reparsed,
    /// Re-parsed as [`How::Reparsed`], and only the edited blocks validated.
    Revalidated,
}

/// A parsed and validated document.
#[derive(Debug)]
pub struct Analysis {
    /// The text.
    pub text: String,
    /// Line table of `text`.
    pub index: LineIndex,
    /// The tree.
    pub doc: Document,
    /// What `noma check` reports for the text, as LSP diagnostics.
    pub diagnostics: Vec<lsp_types::Diagnostic>,
    /// How the tree and the report were found.
    pub how: How,
    /// The validator's report behind `diagnostics` (before the policy's
    /// `ignore_rules` and `strict`), which the next keystroke's analysis
    /// starts from.
    report: Validation,
    /// What of the options the report depends on.
    inputs: Inputs,
    /// Whether the report depends on more than the text and the options:
    /// a `::dataset{src=…}` (a file that may change on disk) or a
    /// `::citation` (staleness moves with the clock). Such a document is
    /// validated in full on every keystroke, as `noma check` would.
    outside: bool,
    /// Found on first use: a keystroke needs only the diagnostics.
    definitions: OnceCell<Vec<Definition>>,
    references: OnceCell<Vec<Reference>>,
    /// Index in `definitions` of each id's first definition.
    by_id: OnceCell<HashMap<String, usize>>,
}

impl Analysis {
    /// Parses and validates `text` with `options` (the ones `noma check`
    /// would use for the same file).
    pub fn new(text: String, options: &Options) -> Analysis {
        let doc = doc::parse(&text);
        let outside = reads_outside(&doc.children);
        let report = validate::validate_report(&doc, options);
        Analysis::assemble(text, doc, report, options, outside, How::Full)
    }

    /// [`Analysis::new`] of `text`, an edit of `prev`'s text, from `prev`'s
    /// tree and report: the edited blocks (or the frontmatter) are parsed
    /// again and spliced into the tree, and validated alone when the
    /// validator can prove the whole report follows
    /// (`validate::revalidate_reparsed`); otherwise the text is parsed or
    /// validated in full. Either way the result is [`Analysis::new`]'s.
    /// `prev`'s tree is taken (it becomes this one's), its text is kept.
    pub fn after(prev: &mut Analysis, text: String, options: &Options) -> Analysis {
        let mut doc = std::mem::take(&mut prev.doc);
        let Some(reparsed) = reparse::reparse_in_place(&prev.text, &mut doc, &text) else {
            return Analysis::new(text, options);
        };
        let outside = prev.outside || added_outside(&doc, &reparsed);
        let report = if outside || prev.inputs != Inputs::of(options) {
            None
        } else {
            validate::revalidate_reparsed(&prev.report, &doc, &reparsed, options)
        };
        let (report, how) = match report {
            Some(r) => (r, How::Revalidated),
            None => (validate::validate_report(&doc, options), How::Reparsed),
        };
        Analysis::assemble(text, doc, report, options, outside, how)
    }

    fn assemble(
        text: String,
        doc: Document,
        report: Validation,
        options: &Options,
        outside: bool,
        how: How,
    ) -> Analysis {
        let index = LineIndex::new(&text);
        let mut found = report.diagnostics(options);
        validate::attach_ranges(&text, &doc, &mut found);
        let mut a = Analysis {
            definitions: OnceCell::new(),
            references: OnceCell::new(),
            by_id: OnceCell::new(),
            diagnostics: Vec::new(),
            how,
            report,
            inputs: Inputs::of(options),
            outside,
            text,
            index,
            doc,
        };
        a.diagnostics = found.iter().map(|d| a.lsp_diagnostic(d)).collect();
        a
    }

    /// Every id definition in document order.
    pub fn definitions(&self) -> &[Definition] {
        self.definitions.get_or_init(|| self.find_definitions())
    }

    /// Every reference in document order.
    pub fn references(&self) -> &[Reference] {
        self.references.get_or_init(|| self.find_references())
    }

    /// The canonical id `key` resolves to (itself or through an alias).
    pub fn resolve(&self, key: &str) -> Option<&str> {
        doc::ids::resolve(&self.doc, key)
    }

    /// The definition of canonical `id`.
    pub fn definition(&self, id: &str) -> Option<&Definition> {
        let by_id = self.by_id.get_or_init(|| {
            let mut map = HashMap::new();
            for (i, d) in self.definitions().iter().enumerate() {
                map.entry(d.id.clone()).or_insert(i);
            }
            map
        });
        by_id.get(id).map(|&i| &self.definitions()[i])
    }

    /// The canonical id at `pos`: on a reference (resolved) or on a
    /// definition.
    pub fn id_at(&self, pos: Position) -> Option<String> {
        let inside = |r: &Range| r.start <= pos && pos <= r.end;
        if let Some(r) = self.references().iter().find(|r| inside(&r.hit)) {
            return self.resolve(&r.target).map(str::to_string);
        }
        self.definitions()
            .iter()
            .find(|d| inside(&d.range))
            .map(|d| d.id.clone())
    }

    /// The innermost node with an id whose lines hold 0-based `line`.
    pub fn block_at(&self, line: u32) -> Option<&Node> {
        let line = line.saturating_add(1);
        self.doc
            .walk()
            .filter(|n| n.id.is_some() && n.span.contains(line))
            .last()
    }

    /// The `baseHash` of block `id`: what `noma blocks` prints and agents
    /// pass to `noma patch`.
    pub fn base_hash(&self, id: &str) -> Option<String> {
        block_hashes(&self.text, &self.doc)
            .into_iter()
            .find(|b| b.id == id)
            .map(|b| b.sha256)
    }

    /// The range of 1-based inclusive `start..=end` lines.
    pub fn lines_range(&self, start: u32, end: u32) -> Range {
        let first = self.index.line_start(start.saturating_sub(1) as usize);
        let last = end.saturating_sub(1) as usize;
        let stop = self.index.line_start(last) + self.index.line(&self.text, last).len();
        self.index.range(&self.text, first, stop.max(first))
    }

    fn find_definitions(&self) -> Vec<Definition> {
        self.doc
            .walk()
            .filter(|n| n.id.is_some())
            .map(|n| self.definition_of(n))
            .collect()
    }

    /// The definition `node` (one of this document's, with an id) makes,
    /// found alone: a keystroke's diagnostics need only the few that
    /// changed, not [`Analysis::definitions`].
    pub fn definition_of(&self, node: &Node) -> Definition {
        let id = node.id.as_deref().unwrap_or_default();
        let line = node.span.start.saturating_sub(1) as usize;
        let range = self
            .token_on_line(line, "id", id)
            .or_else(|| self.heading_text(node, line))
            .unwrap_or_else(|| self.index.line_range(&self.text, line));
        Definition {
            id: id.to_string(),
            range,
            block: self.lines_range(node.span.start, node.span.end),
        }
    }

    /// The range of `value` in `key="value"` (or `key=value`) on `line`.
    fn token_on_line(&self, line: usize, key: &str, value: &str) -> Option<Range> {
        let content = self.index.line(&self.text, line);
        let start = self.index.line_start(line);
        let mut from = 0;
        while let Some(found) = content[from..].find(key) {
            let at = from + found;
            from = at + key.len();
            let before_ok = at == 0 || !is_key_char(content.as_bytes()[at - 1]);
            let rest = &content[at + key.len()..];
            let Some(rest) = rest.strip_prefix('=') else {
                continue;
            };
            let quoted = rest.strip_prefix('"');
            let value_at = at + key.len() + 1 + usize::from(quoted.is_some());
            if before_ok && quoted.unwrap_or(rest).starts_with(value) {
                let s = start + value_at;
                return Some(self.index.range(&self.text, s, s + value.len()));
            }
        }
        None
    }

    /// A heading's text (the words its slug id comes from).
    fn heading_text(&self, node: &Node, line: usize) -> Option<Range> {
        let NodeKind::Section { title, .. } = &node.kind else {
            return None;
        };
        let content = self.index.line(&self.text, line);
        let at = content.find(title.as_str())?;
        let s = self.index.line_start(line) + at;
        Some(self.index.range(&self.text, s, s + title.len()))
    }

    fn find_references(&self) -> Vec<Reference> {
        let mut skip = vec![false; self.index.line_count()];
        let mut attr_lines = Vec::new();
        for node in self.doc.walk() {
            match &node.kind {
                NodeKind::Code { .. } => {
                    for l in node.span.start..=node.span.end {
                        if let Some(s) = skip.get_mut(l.saturating_sub(1) as usize) {
                            *s = true;
                        }
                    }
                }
                NodeKind::Directive { attrs, .. } => attr_lines.push((node.span.start, attrs)),
                _ => {}
            }
        }
        let mut out = Vec::new();
        for (line, &skipped) in skip.iter().enumerate() {
            if skipped {
                continue;
            }
            let content = self.index.line(&self.text, line);
            let start = self.index.line_start(line);
            for link in noma_core::doc::inline::wikilink_spans(content) {
                let s = start + link.start + 2;
                let end = s + link.target.len();
                out.push(Reference {
                    target: link.target.to_string(),
                    range: self.index.range(&self.text, s, end),
                    // A labelled link's label finds its target too.
                    hit: self
                        .index
                        .range(&self.text, start + link.start, start + link.end),
                });
            }
        }
        for (line, attrs) in attr_lines {
            let line = line.saturating_sub(1) as usize;
            for (key, value) in attrs.iter() {
                let Some(value) = value.as_str().filter(|_| REFERENCE_ATTRS.contains(&key)) else {
                    continue;
                };
                if let Some(range) = self.token_on_line(line, key, value) {
                    out.push(Reference {
                        target: value.to_string(),
                        range,
                        hit: range,
                    });
                }
            }
        }
        out.sort_by_key(|r| r.range.start);
        out
    }

    /// A validator diagnostic as an LSP one, over the range the core
    /// narrowed it to (the token it is about, else its line or block;
    /// `validate::attach_ranges`), else the first line's text.
    fn lsp_diagnostic(&self, d: &Diagnostic) -> lsp_types::Diagnostic {
        let range = match d.range {
            Some(r) => self.index.range(&self.text, r.start_byte, r.end_byte),
            None => self.index.line_range(&self.text, 0),
        };
        lsp_types::Diagnostic {
            range,
            severity: Some(match d.severity {
                Severity::Error => DiagnosticSeverity::ERROR,
                Severity::Warning => DiagnosticSeverity::WARNING,
                Severity::Info => DiagnosticSeverity::INFORMATION,
            }),
            code: Some(NumberOrString::String(d.code.clone())),
            source: Some("noma".to_string()),
            message: d.message.clone(),
            ..Default::default()
        }
    }
}

/// What of the validator's [`Options`] its report depends on (the policy's
/// `ignore_rules` and `strict` apply to the report afterwards): two runs
/// with equal inputs report alike.
#[derive(Debug, Clone, PartialEq)]
struct Inputs {
    profile: Option<String>,
    require_evidence_for_claims: bool,
    stale_citation_days: Option<u64>,
    now: Option<std::time::SystemTime>,
    known_elsewhere: Option<usize>,
    datasets: bool,
}

impl Inputs {
    fn of(o: &Options) -> Inputs {
        Inputs {
            profile: o.profile.clone(),
            require_evidence_for_claims: o.require_evidence_for_claims,
            stale_citation_days: o.stale_citation_days.map(f64::to_bits),
            now: o.now,
            // The same set, not an equal one: compared by address.
            known_elsewhere: o
                .known_elsewhere
                .as_ref()
                .map(|k| std::sync::Arc::as_ptr(k) as usize),
            datasets: o.datasets.is_some(),
        }
    }
}

/// Whether any of `nodes` (or below) is a `::citation` or a
/// `::dataset{src=…}`: see [`Analysis::outside`].
fn reads_outside(nodes: &[Node]) -> bool {
    doc::ast::walk_nodes(nodes).any(|n| {
        n.is_directive("citation")
            || (n.is_directive("dataset") && n.attrs().is_some_and(|a| a.has("src")))
    })
}

/// Whether the nodes a re-parse put in `doc` read outside the text.
fn added_outside(doc: &Document, reparsed: &Reparsed) -> bool {
    match reparsed {
        Reparsed::Body(r) => r
            .container(doc)
            .and_then(|kids| kids.get(r.run.clone()))
            .is_none_or(reads_outside),
        Reparsed::Frontmatter(_) => false,
    }
}

/// Whether `b` can be part of an attribute key.
fn is_key_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b':')
}

/// The work trees' policies, each compiled once and again only when its
/// file's bytes change: the options `noma check` and the hooks use, for every keystroke without
/// parsing `.noma/config.yml` each time.
#[derive(Debug, Default)]
pub(crate) struct Policies {
    /// Per work tree: the policy file's bytes (`None`: absent) and what
    /// they compiled to.
    trees: HashMap<std::path::PathBuf, (Option<Vec<u8>>, Compiled)>,
}

/// A policy file compiled, or why it does not compile.
type Compiled = Result<Policy, Arc<ConfigError>>;

impl Policies {
    /// The options `noma check` and the hooks use for the document at
    /// `path` (its work tree's policy, datasets read beside it; an unsaved
    /// document gets the defaults), with the policy from the cache while
    /// its file reads the same. `Err` names a malformed policy file.
    pub(crate) fn options_for(
        &mut self,
        path: Option<&std::path::Path>,
    ) -> Result<Options, Arc<ConfigError>> {
        let Some(path) = path else {
            return Ok(Options::default());
        };
        let Some(root) = config::work_tree_root(path) else {
            return config::validate_options_for(path, &Default::default()).map_err(Arc::new);
        };
        let read = Policy::read(&root);
        let bytes = match &read {
            Ok(b) => Some(b.clone()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            // Not cached: an unreadable file is read again next time.
            Err(_) => {
                self.trees.remove(&root);
                return Policy::from_read(&root, read)
                    .map(|p| options_under(&p, path))
                    .map_err(Arc::new);
            }
        };
        let stale = self.trees.get(&root).is_none_or(|(b, _)| *b != bytes);
        if stale {
            let policy = Policy::from_read(&root, read).map_err(Arc::new);
            self.trees.insert(root.clone(), (bytes, policy));
        }
        match self.trees.get(&root).map(|(_, p)| p) {
            Some(Ok(policy)) => Ok(options_under(policy, path)),
            Some(Err(e)) => Err(e.clone()),
            None => Ok(Options::default()),
        }
    }
}

/// The options for the document at `path` under `policy`, as
/// [`config::validate_options_for`] builds them.
fn options_under(policy: &Policy, path: &std::path::Path) -> Options {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map_or_else(
            || std::path::PathBuf::from("."),
            std::path::Path::to_path_buf,
        );
    config::validate_options(
        policy,
        &Default::default(),
        noma_store::fsio::datasets_in(dir),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    use noma_testutil::Rng;

    const START: &str = "---\ntitle: T\nprofile: research\n---\n\n# T\n\nIntro [[c1]] and [[zz]].\n\n## A\n\n::claim{id=\"c1\" confidence=0.8}\nOne é [[c2]].\n::\n\n::evidence{id=\"e1\" for=\"c1\"}\nRun.\n::\n\n- item [[e1]]\n- more\n\n```\n::not{id=\"q\"}\n```\n\n## B\n\n::claim{id=\"c2\"}\nTwo.\n::\n\n::note{id=\"n\"}\nText.\n\n:::aside{id=\"in\"}\nInner.\n:::\n::\n\n| a | b |\n| --- | --- |\n| [[n]] | 2 |\n\n::risk{id=\"r\"}\nNo owner.\n::\n\nEnd.\n";

    /// Keystrokes anywhere, including in the frontmatter, fences and
    /// directives opened and closed, CRLF, a BOM and multibyte text: the
    /// analysis made from the last one (re-parse and re-validation of what
    /// changed, when they apply) equals a fresh one of the same text, tree,
    /// report and diagnostics. Seed: `NOMA_TEST_SEED`, else the clock;
    /// it is printed.
    #[test]
    #[allow(clippy::too_many_lines)] // one random walk, its steps in order
    fn an_analysis_after_an_edit_equals_a_fresh_one() {
        let seed = std::env::var("NOMA_TEST_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(1, |d| d.as_nanos() as u64)
            });
        println!("seed {seed}");
        let mut rng = Rng(seed.max(1));
        let pieces = [
            "x",
            "x",
            "x",
            " ",
            "\n",
            "\n\n",
            "::",
            "::\n",
            ":::\n",
            "```\n",
            "---\n",
            "## C\n",
            "# ",
            "c1",
            "[[c1]]",
            "[[zz]]",
            "{id=\"c2\"}",
            "é",
            "",
            "",
            "::claim{id=\"c9\"}\n",
            "::evidence{for=\"c9\"}\nok\n::\n\n",
            "::note{id=\"c1\"}\n",
            "profile: technical\n",
            "aliases: [al]\n",
            "stale_citation_days: 3\n",
            "::citation{id=\"ci\"}\n::\n",
            "::dataset{id=\"d\" src=\"x.csv\"}\n::\n",
            "- ",
            "| ",
            "title: Z\n",
            "\r\n",
            "\u{feff}",
        ];
        let options = noma_core::validate::Options::default();
        let mut a = Analysis::new(START.to_string(), &options);
        let (mut reparsed, mut revalidated) = (0, 0);
        for step in 0..1500 {
            if step % 4 == 0 {
                a = Analysis::new(START.to_string(), &options);
            }
            let mut text = a.text.clone();
            let mut at = rng.below(text.len() + 1);
            while !text.is_char_boundary(at) {
                at -= 1;
            }
            if rng.below(2) == 0 {
                // Often at a line's start, where typing changes structure.
                at = text[..at].rfind('\n').map_or(0, |i| i + 1);
            }
            let mut end = (at + rng.below(3) * rng.below(12)).min(text.len());
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            text.replace_range(at..end, pieces[rng.below(pieces.len())]);
            let fresh = Analysis::new(text.clone(), &options);
            let next = Analysis::after(&mut a, text, &options);
            let why = format!("seed {seed} step {step}: {:?}", next.text);
            assert_eq!(next.doc, fresh.doc, "{why}");
            assert_eq!(next.report, fresh.report, "{why}");
            assert_eq!(next.diagnostics, fresh.diagnostics, "{why}");
            match next.how {
                How::Full => {}
                How::Reparsed => reparsed += 1,
                How::Revalidated => revalidated += 1,
            }
            a = next;
        }
        println!("re-parsed {reparsed}, also re-validated {revalidated} of 1500");
        // The shortcuts are taken, or the test proves nothing.
        assert!(
            reparsed > 100 && revalidated > 30,
            "{reparsed} {revalidated}"
        );
    }
}
