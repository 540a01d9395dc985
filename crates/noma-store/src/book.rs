//! Book manifests (`*.noma.yml`): the chapters they list, checked as one
//! book with the protocol's book-mode id scoping (§2.3). Every level-≥2
//! heading section's id becomes `<chapter root id>/<id>` (the unscoped id
//! stays an alias), so two chapters may both have `## Risks`; every other
//! id (the chapter's `#` heading, directive ids) is book-wide, and a second
//! chapter defining it is a `duplicate-id` error. A reference in one
//! chapter to an id or alias of another resolves.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use noma_core::diag::{Diagnostic, Pos, Severity};
use noma_core::doc::{parse, Document, Node, NodeKind};
use noma_core::validate::{self, Options};

/// One chapter's findings: its own validation, then the book-wide ones.
#[derive(Debug)]
pub struct Chapter {
    /// The chapter's path (the manifest's directory joined with its entry).
    pub path: PathBuf,
    /// Its diagnostics.
    pub diagnostics: Vec<Diagnostic>,
}

/// Why a book could not be checked.
#[derive(Debug, thiserror::Error)]
pub enum BookError {
    /// The manifest cannot be read.
    #[error("{}: {source}", path.display())]
    Unreadable {
        /// The manifest.
        path: PathBuf,
        /// The read's error.
        source: std::io::Error,
    },
    /// The manifest is not YAML with a `chapters:` list of paths.
    #[error("{}: not a book manifest ({why}); it needs `chapters:`, a list of .noma paths relative to it", path.display())]
    Manifest {
        /// The manifest.
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
    /// The manifest lists one chapter twice (which would otherwise read as
    /// every id of it defined twice).
    #[error("{}: chapter {chapter} is listed twice in `chapters:` (entries {first} and {second}); remove one of them", path.display())]
    ChapterTwice {
        /// The manifest.
        path: PathBuf,
        /// The chapter as listed the second time.
        chapter: String,
        /// The 1-based entries listing it.
        first: usize,
        /// See `first`.
        second: usize,
    },
    /// A chapter cannot be read.
    #[error(transparent)]
    Chapter(#[from] noma_core::doc::source::SourceError),
}

#[derive(serde::Deserialize)]
struct Manifest {
    chapters: Vec<String>,
}

/// The chapters `manifest` lists, as paths.
pub fn chapters(manifest: &Path) -> Result<Vec<PathBuf>, BookError> {
    let bytes = crate::fsio::read_regular(manifest).map_err(|source| BookError::Unreadable {
        path: manifest.to_path_buf(),
        source,
    })?;
    let bad = |why: String| BookError::Manifest {
        path: manifest.to_path_buf(),
        why,
    };
    let text = String::from_utf8(bytes).map_err(|_| bad("not UTF-8".into()))?;
    let m: Manifest = serde_yaml_ng::from_str(&text).map_err(|e| bad(e.to_string()))?;
    if m.chapters.is_empty() {
        return Err(bad("`chapters:` is empty".into()));
    }
    // Compared by their components, so `a.noma` and `./a.noma` are one.
    let mut seen: std::collections::HashMap<Vec<std::path::Component<'_>>, usize> =
        Default::default();
    for (i, c) in m.chapters.iter().enumerate() {
        let key = Path::new(c)
            .components()
            .filter(|c| *c != std::path::Component::CurDir)
            .collect();
        if let Some(first) = seen.insert(key, i + 1) {
            return Err(BookError::ChapterTwice {
                path: manifest.to_path_buf(),
                chapter: c.clone(),
                first,
                second: i + 1,
            });
        }
    }
    let dir = manifest.parent().unwrap_or(Path::new(""));
    Ok(m.chapters.iter().map(|c| dir.join(c)).collect())
}

/// Validates every chapter of the book `manifest` names with `opts` (each
/// chapter's datasets are read beside it), with book-mode id scoping.
pub fn check(manifest: &Path, opts: &Options) -> Result<Vec<Chapter>, BookError> {
    let paths = chapters(manifest)?;
    let mut docs = Vec::with_capacity(paths.len());
    for p in &paths {
        docs.push(parse(&crate::fsio::read_document(p)?));
    }
    let ids: Vec<ChapterIds> = (paths.iter().zip(&docs))
        .map(|(p, d)| ChapterIds::of(p, d))
        .collect();
    let mut known = HashSet::new();
    for c in &ids {
        known.extend(c.ids.iter().map(|(id, _)| id.clone()));
        known.extend(c.aliases.iter().cloned());
    }
    let known = Arc::new(known);
    let mut first: HashMap<&str, (usize, u32)> = HashMap::new();
    let mut out = Vec::with_capacity(paths.len());
    for (i, (path, doc)) in paths.iter().zip(&docs).enumerate() {
        let chapter_opts = Options {
            datasets: Some(crate::fsio::datasets_in(
                path.parent().unwrap_or(Path::new(".")),
            )),
            known_elsewhere: Some(known.clone()),
            ..opts.clone()
        };
        let mut diagnostics = validate::validate(doc, &chapter_opts);
        for (id, line) in &ids[i].ids {
            match first.get(id.as_str()) {
                None => {
                    first.insert(id.as_str(), (i, *line));
                }
                // Repeats inside one chapter are the chapter's own finding.
                Some((j, _)) if *j == i => {}
                Some((j, first_line)) => {
                    diagnostics.push(duplicate(id, *line, &paths[*j], *first_line))
                }
            }
        }
        out.push(Chapter {
            path: path.clone(),
            diagnostics,
        });
    }
    Ok(out)
}

fn duplicate(id: &str, line: u32, first: &Path, first_line: u32) -> Diagnostic {
    let mut d = Diagnostic::new(
        Severity::Error,
        "duplicate-id",
        format!(
            "duplicate block id \"{id}\" in the book (first used in {}, line {first_line}); give one of them a different id=",
            first.display()
        ),
    );
    d.pos = Some(Pos { line, column: 1 });
    d.node_id = Some(id.to_string());
    d
}

/// A chapter's book-wide ids (scoped where §2.3 scopes them) with their
/// lines, and its aliases (its own, the unscoped heading ids, the file
/// name's slug).
struct ChapterIds {
    ids: Vec<(String, u32)>,
    aliases: Vec<String>,
}

impl ChapterIds {
    fn of(path: &Path, doc: &Document) -> ChapterIds {
        let stem = path.file_name().map(|n| n.to_string_lossy().into_owned());
        let slug = stem
            .as_deref()
            .map(|s| s.strip_suffix(".noma").unwrap_or(s).to_string())
            .unwrap_or_default();
        let root = (doc.children.iter())
            .find(|n| matches!(n.kind, NodeKind::Section { level: 1, .. }))
            .and_then(|n| n.id.as_deref())
            .unwrap_or(&slug)
            .to_string();
        let mut c = ChapterIds {
            ids: Vec::new(),
            aliases: vec![slug],
        };
        c.walk(&doc.children, &root);
        c
    }

    fn walk(&mut self, nodes: &[Node], root: &str) {
        for n in nodes {
            self.aliases.extend(n.aliases.iter().map(|a| a.to_string()));
            if let Some(id) = n.id.as_deref() {
                if matches!(n.kind, NodeKind::Section { level, .. } if level >= 2) {
                    self.ids.push((format!("{root}/{id}"), n.span.start));
                    self.aliases.push(id.to_string());
                } else {
                    self.ids.push((id.to_string(), n.span.start));
                }
            }
            self.walk(n.children(), root);
        }
    }
}
