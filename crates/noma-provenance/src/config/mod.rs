//! Repository policy: `.noma/config.yml`, written by `noma init`.
//!
//! ```yaml
//! # Which .noma files the hooks check (globs relative to the repository root).
//! include: ["**/*.noma"]
//! exclude: ["vendor/**"]
//! # Documents matching these globs must carry a transcript (<doc>.patches).
//! require_transcript: []
//! # Treat validator warnings as errors in the hooks.
//! strict: false
//! # Validator rule codes the hooks ignore.
//! ignore_rules: []
//! # `noma record` may record hand edits that no v1.0 op expresses (prose,
//! # lists, frontmatter, a new document's genesis) with the extension op
//! # x-noma/replace_lines. false: v1.0 ops only, and the hooks refuse
//! # transcripts that carry the extension op.
//! record_text_edits: true
//! # Signed records and human approval (see .noma/provenance.noma). Absent
//! # means off: nothing is signed, looked up or verified.
//! provenance:
//!   signatures: off          # off | warn | required
//!   agents_need_approval: false
//!   agent_principals: []     # globs over principals, e.g. ["*@agents.example"]
//! ```
//!
//! An absent file means the defaults above. A malformed file is an error
//! that names the file and the problem: a guard must not silently weaken.

use std::path::Path;

use globset::{Glob, GlobSet, GlobSetBuilder};
use serde::{Deserialize, Serialize};

/// Path of the policy file relative to the repository root.
pub const CONFIG_PATH: &str = ".noma/config.yml";

/// The policy file as written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PolicyFile {
    /// Globs of documents to check.
    pub include: Vec<String>,
    /// Globs excluded from checking.
    pub exclude: Vec<String>,
    /// Globs of documents that must have a transcript.
    pub require_transcript: Vec<String>,
    /// Warnings fail the hook too.
    pub strict: bool,
    /// Validator rule codes to ignore.
    pub ignore_rules: Vec<String>,
    /// Whether the extension op `x-noma/replace_lines` may be recorded.
    pub record_text_edits: bool,
    /// Signatures and approvals (absent: off; not written by `noma init`).
    #[serde(skip_serializing_if = "ProvenanceFile::is_off")]
    pub provenance: ProvenanceFile,
}

/// How strictly records must be signed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SignatureLevel {
    /// Nothing is signed or verified (the default).
    #[default]
    Off,
    /// Unsigned records and untrusted signers are reported, not failed.
    Warn,
    /// Unsigned records and untrusted signers fail the check.
    Required,
}

/// The `provenance:` section.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ProvenanceFile {
    /// off | warn | required.
    pub signatures: SignatureLevel,
    /// Records of agent principals need a human approval.
    pub agents_need_approval: bool,
    /// Globs over principals whose records are an agent's.
    pub agent_principals: Vec<String>,
}

impl ProvenanceFile {
    /// True when the section asks for nothing (absent, or `signatures: off`
    /// with no approval rule).
    pub fn is_off(&self) -> bool {
        self.signatures == SignatureLevel::Off && !self.agents_need_approval
    }
}

impl Default for PolicyFile {
    fn default() -> Self {
        PolicyFile {
            include: vec!["**/*.noma".to_string()],
            exclude: Vec::new(),
            require_transcript: Vec::new(),
            strict: false,
            ignore_rules: Vec::new(),
            record_text_edits: true,
            provenance: ProvenanceFile::default(),
        }
    }
}

/// The compiled policy.
#[derive(Debug, Clone)]
pub struct Policy {
    /// The settings as written (or defaulted).
    pub file: PolicyFile,
    include: GlobSet,
    exclude: GlobSet,
    require_transcript: GlobSet,
    agent_principals: GlobSet,
}

/// Why the policy file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file exists but cannot be read.
    #[error("{path}: cannot read: {source}")]
    Io {
        /// The file.
        path: String,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The YAML is malformed or has unknown keys / wrong types.
    #[error("{path}: invalid policy: {source}")]
    Invalid {
        /// The file.
        path: String,
        /// What is wrong.
        source: PolicyError,
    },
}

/// Why a policy text is not a policy.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// Malformed YAML, an unknown key or a wrong type.
    #[error("{0}")]
    Yaml(#[from] serde_yaml_ng::Error),
    /// A glob that does not compile.
    #[error("{what}: bad glob {glob:?}: {source}")]
    Glob {
        /// The list it is in (`include`, `exclude`, `require_transcript`).
        what: &'static str,
        /// The glob as written.
        glob: String,
        /// Why it does not compile.
        source: globset::Error,
    },
    /// A list of globs that does not build into one matcher.
    #[error("{what}: {source}")]
    GlobSet {
        /// The list.
        what: &'static str,
        /// Why.
        source: globset::Error,
    },
}

/// What one run adds to the policy: `noma check --strict`,
/// `--ignore-rule` and `--profile`. The default adds nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Overrides {
    /// Warnings are errors too (on top of the policy's `strict`).
    pub strict: bool,
    /// Rule codes dropped besides the policy's `ignore_rules`.
    pub ignore_rules: Vec<String>,
    /// Profile instead of the frontmatter's.
    pub profile: Option<String>,
}

/// The validator's options for one document under `policy` (the only
/// place they are built, so `noma check`, the hooks, MCP and the language
/// server report the same findings): the policy's `strict` and
/// `ignore_rules` with `overrides` added, the profile override, and the
/// document's external datasets read through `datasets` (decision
/// `one-validation-configuration`: always loaded; a shell passes where
/// they are read from, the working tree or the index).
pub fn validate_options(
    policy: &Policy,
    overrides: &Overrides,
    datasets: std::sync::Arc<dyn noma_core::validate::DatasetFiles>,
) -> noma_core::validate::Options {
    let mut ignore_rules = policy.file.ignore_rules.clone();
    for r in &overrides.ignore_rules {
        if !ignore_rules.contains(r) {
            ignore_rules.push(r.clone());
        }
    }
    noma_core::validate::Options {
        ignore_rules,
        profile: overrides.profile.clone(),
        datasets: Some(datasets),
        strict: policy.file.strict || overrides.strict,
        ..noma_core::validate::Options::default()
    }
}

/// The policy of the git work tree that holds `doc` (the nearest
/// directory above it with a `.git`, as the hooks see it), or the defaults
/// outside any work tree. A malformed policy file is an error.
pub fn policy_of(doc: &Path) -> Result<Policy, ConfigError> {
    match work_tree_root(doc) {
        Some(root) => Policy::load(&root),
        None => Policy::compile(PolicyFile::default()).map_err(|source| ConfigError::Invalid {
            path: CONFIG_PATH.to_string(),
            source,
        }),
    }
}

/// The git work tree that holds `doc`, whose policy [`policy_of`] reads:
/// the nearest directory above it with a `.git`; `None` outside any.
pub fn work_tree_root(doc: &Path) -> Option<std::path::PathBuf> {
    // The directory as the file system resolves it: `repo/../elsewhere/d.noma`
    // is not in `repo` (and a lexical walk would find its `.git`).
    let dir = doc.parent().filter(|p| !p.as_os_str().is_empty());
    let abs = dir
        .map_or_else(|| Path::new(".").canonicalize(), Path::canonicalize)
        .or_else(|_| std::path::absolute(dir.unwrap_or(Path::new("."))))
        .unwrap_or_else(|_| doc.to_path_buf());
    abs.ancestors()
        .find(|d| d.join(".git").exists())
        .map(Path::to_path_buf)
}

/// [`validate_options`] for a document on disk: the policy of its work
/// tree ([`policy_of`]) and its datasets read beside it.
pub fn validate_options_for(
    doc: &Path,
    overrides: &Overrides,
) -> Result<noma_core::validate::Options, ConfigError> {
    let policy = policy_of(doc)?;
    let dir = doc
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map_or_else(|| std::path::PathBuf::from("."), Path::to_path_buf);
    Ok(validate_options(
        &policy,
        overrides,
        noma_store::fsio::datasets_in(dir),
    ))
}

impl Policy {
    /// Loads `<root>/.noma/config.yml`, or the defaults when it is absent.
    pub fn load(root: &Path) -> Result<Policy, ConfigError> {
        Policy::from_read(root, Policy::read(root))
    }

    /// The bytes of `<root>/.noma/config.yml` as [`Policy::load`] reads
    /// them (a caller that keeps a policy compares them to see it change).
    pub fn read(root: &Path) -> std::io::Result<Vec<u8>> {
        // Never blocks: a FIFO or device in its place is refused at once.
        noma_store::fsio::read_regular(&root.join(CONFIG_PATH))
    }

    /// The policy of `<root>` from the result of [`Policy::read`].
    pub fn from_read(root: &Path, read: std::io::Result<Vec<u8>>) -> Result<Policy, ConfigError> {
        let shown = root.join(CONFIG_PATH).display().to_string();
        let read = read.and_then(|b| {
            String::from_utf8(b)
                .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
        });
        match read {
            Ok(text) => Policy::from_yaml(&text).map_err(|source| ConfigError::Invalid {
                path: shown,
                source,
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                Policy::compile(PolicyFile::default()).map_err(|source| ConfigError::Invalid {
                    path: shown,
                    source,
                })
            }
            Err(source) => Err(ConfigError::Io {
                path: shown,
                source,
            }),
        }
    }

    /// Parses policy YAML (an empty text gives the defaults).
    pub fn from_yaml(text: &str) -> Result<Policy, PolicyError> {
        let file: PolicyFile = if text.trim().is_empty() {
            PolicyFile::default()
        } else {
            serde_yaml_ng::from_str(text)?
        };
        Policy::compile(file)
    }

    fn compile(file: PolicyFile) -> Result<Policy, PolicyError> {
        let set = |globs: &[String], what: &'static str| -> Result<GlobSet, PolicyError> {
            let mut b = GlobSetBuilder::new();
            for g in globs {
                b.add(Glob::new(g).map_err(|source| PolicyError::Glob {
                    what,
                    glob: g.clone(),
                    source,
                })?);
            }
            b.build()
                .map_err(|source| PolicyError::GlobSet { what, source })
        };
        Ok(Policy {
            include: set(&file.include, "include")?,
            exclude: set(&file.exclude, "exclude")?,
            require_transcript: set(&file.require_transcript, "require_transcript")?,
            agent_principals: set(
                &file.provenance.agent_principals,
                "provenance.agent_principals",
            )?,
            file,
        })
    }

    /// Whether the hooks check `path` (repository-relative, `/`-separated).
    pub fn is_checked(&self, path: &str) -> bool {
        path.ends_with(".noma") && self.include.is_match(path) && !self.exclude.is_match(path)
    }

    /// Whether `path` must carry a transcript.
    pub fn requires_transcript(&self, path: &str) -> bool {
        self.require_transcript.is_match(path)
    }

    /// Whether `principal` is an agent's (`provenance.agent_principals`).
    pub fn is_agent_principal(&self, principal: &str) -> bool {
        self.agent_principals.is_match(principal)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A path that leaves a repository through `..` is judged by where it
    /// leads, not by the repository its text passes through.
    #[test]
    fn a_path_through_dotdot_leaves_the_repository_policy() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("repo");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(repo.join(".noma")).unwrap();
        std::fs::write(repo.join(CONFIG_PATH), "strict: true\n").unwrap();
        std::fs::create_dir_all(tmp.path().join("elsewhere")).unwrap();
        assert!(policy_of(&repo.join("a.noma")).unwrap().file.strict);
        let outside = repo.join("..").join("elsewhere").join("d.noma");
        assert!(!policy_of(&outside).unwrap().file.strict);
    }

    #[test]
    fn defaults_check_every_noma_file() {
        let p = Policy::from_yaml("").unwrap();
        assert!(p.is_checked("docs/a.noma"));
        assert!(p.is_checked("a.noma"));
        assert!(!p.is_checked("a.md"));
        assert!(!p.requires_transcript("a.noma"));
    }

    #[test]
    fn globs_and_errors() {
        let p = Policy::from_yaml(
            "exclude: [\"vendor/**\"]\nrequire_transcript: [\"agents/**\"]\nstrict: true\n",
        )
        .unwrap();
        assert!(!p.is_checked("vendor/x.noma"));
        assert!(p.requires_transcript("agents/plan.noma"));
        assert!(p.file.strict);
        assert!(Policy::from_yaml("strict: maybe\n").is_err());
        assert!(Policy::from_yaml("unknown_key: 1\n").is_err());
        assert!(Policy::from_yaml("include: [\"[\"]\n").is_err());
    }

    #[test]
    fn provenance_section() {
        let p = Policy::from_yaml("strict: false\n").unwrap();
        assert!(p.file.provenance.is_off());
        let p = Policy::from_yaml(
            "provenance:\n  signatures: required\n  agents_need_approval: true\n  agent_principals: [\"*@agents.example\"]\n",
        )
        .unwrap();
        assert_eq!(p.file.provenance.signatures, SignatureLevel::Required);
        assert!(p.file.provenance.agents_need_approval);
        assert!(p.is_agent_principal("bot@agents.example"));
        assert!(!p.is_agent_principal("alice@example.com"));
        assert!(Policy::from_yaml("provenance:\n  signatures: maybe\n").is_err());
        assert!(Policy::from_yaml("provenance:\n  signature: warn\n").is_err());
        // Off is not written back: `noma init`'s template stays as it was.
        let text = serde_json::to_string(&PolicyFile::default()).unwrap();
        assert!(!text.contains("provenance"), "{text}");
    }
}
