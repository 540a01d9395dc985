//! The writer's context of one patch request, gathered from the repository
//! and its policy in one call for every writer shell (`noma patch`,
//! `noma rm`, the MCP patch tools, the language server's rename): the work
//! tree the records' `doc_uri` is relative to, the actor's name when the
//! shell names nobody, whether a genesis record must come first
//! ([`crate::record::first_patch_needs_genesis`]), and the signing step.
//! The shell builds the engine's [`Options`](noma_store::engine::Options)
//! from it and calls the engine itself (decision `patch-request-one-path`).

use std::cell::OnceCell;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use noma_store::engine::BeforeAppend;

use crate::git::repo::Repo;
use crate::provenance::writer;
use noma_provenance::config::Policy;
use noma_provenance::{Signer, SignerError};

/// What a shell knows of its writer before the repository is asked.
#[derive(Debug, Clone)]
pub struct Writer<'a> {
    /// The work tree the records' `doc_uri` is relative to.
    pub tree: WorkTree<'a>,
    /// The actor's name; `None`: the writer's git identity
    /// ([`crate::actor::default_name`]).
    pub actor_name: Option<String>,
    /// The transcript an in-place request appends to; `None` when nothing
    /// is appended (a dry run, `--out`): then no genesis and no signer.
    pub appends_to: Option<&'a Path>,
    /// How the appended records are signed.
    pub signing: Signing,
}

/// How the records of an in-place request are signed.
#[derive(Debug, Clone)]
pub enum Signing {
    /// The key a command line configures: `key` (`--key`), else the
    /// environment or git when the policy asks; none with `no_sign`.
    Configured {
        /// The key file named on the command line.
        key: Option<PathBuf>,
        /// Do not sign, even when a key is configured.
        no_sign: bool,
    },
    /// A signer the shell already holds (the MCP server's `--signing-key`),
    /// or none.
    Signer(Option<Arc<Signer>>),
}

/// The work tree a document's `doc_uri` is relative to.
#[derive(Debug, Clone, Copy)]
pub enum WorkTree<'a> {
    /// The work tree of the repository holding the document, if any.
    Discover,
    /// A root the shell was given.
    Root(&'a Path),
}

/// What the repository and its policy say about one writer of a document.
#[derive(Debug, Clone)]
pub struct WriterContext {
    /// The work tree (for [`noma_store::engine::Options::for_document`]).
    pub root: Option<PathBuf>,
    /// Who the records name: the shell's name, else the git identity.
    pub actor_name: String,
    /// A genesis record must come first ([`noma_store::engine::Options::genesis`]).
    pub genesis: bool,
    /// The signing step ([`noma_store::engine::Options::before_append`]).
    pub before_append: Option<BeforeAppend>,
}

/// The writer's context for a request on `doc`; fails only when a
/// configured signing key cannot be used.
pub fn context(doc: &Path, w: Writer<'_>) -> Result<WriterContext, SignerError> {
    // The repository is opened and the policy read at most once each, and
    // only when something asks: the work tree, the git identity, the
    // genesis check and the signer share them.
    let dir = doc
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let opened = OnceCell::new();
    let repo = || opened.get_or_init(|| Repo::open_from(dir).ok()).as_ref();
    let read = OnceCell::new();
    let policy = || {
        read.get_or_init(|| Policy::load(&repo()?.workdir()?).ok())
            .as_ref()
    };
    let root = match w.tree {
        WorkTree::Discover => repo().and_then(Repo::workdir),
        WorkTree::Root(r) => Some(r.to_path_buf()),
    };
    let actor_name = w
        .actor_name
        .unwrap_or_else(|| crate::actor::default_name_in(repo()).name);
    let Some(tpath) = w.appends_to else {
        return Ok(WriterContext {
            root,
            actor_name,
            genesis: false,
            before_append: None,
        });
    };
    let genesis = crate::record::first_patch_needs_genesis(repo, policy, doc, tpath);
    let before_append = match w.signing {
        Signing::Configured { key, no_sign } => {
            writer::step_in(root.as_deref(), repo, policy, key.as_deref(), no_sign)?
        }
        Signing::Signer(signer) => signer.map(writer::signing_step),
    };
    Ok(WriterContext {
        root,
        actor_name,
        genesis,
        before_append,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn writer(appends_to: Option<&Path>) -> Writer<'_> {
        Writer {
            tree: WorkTree::Discover,
            actor_name: Some("bot".into()),
            appends_to,
            signing: Signing::Configured {
                key: None,
                no_sign: true,
            },
        }
    }

    #[test]
    fn a_given_root_is_kept_and_a_dry_run_is_never_signed() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("docs")).unwrap();
        let doc = dir.path().join("docs/a.noma");
        std::fs::write(&doc, "# A\n").unwrap();
        let mut w = writer(None);
        w.tree = WorkTree::Root(dir.path());
        w.signing = Signing::Configured {
            key: Some(dir.path().join("no-such-key")),
            no_sign: false,
        };
        let ctx = context(&doc, w).unwrap();
        assert_eq!(ctx.root.as_deref(), Some(dir.path()));
        assert_eq!(ctx.actor_name, "bot");
        assert!(ctx.before_append.is_none());
        assert!(!ctx.genesis);
    }

    #[test]
    fn an_in_place_request_with_an_unusable_key_cannot_run() {
        let dir = tempfile::tempdir().unwrap();
        let doc = dir.path().join("a.noma");
        std::fs::write(&doc, "# A\n").unwrap();
        let tpath = dir.path().join("a.noma.patches");
        let mut w = writer(Some(&tpath));
        w.signing = Signing::Configured {
            key: Some(dir.path().join("no-such-key")),
            no_sign: false,
        };
        assert!(context(&doc, w).is_err());
        assert!(context(&doc, writer(Some(&tpath))).is_ok());
    }
}
