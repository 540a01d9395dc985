//! A document's Annex A capability descriptor on disk
//! (`<doc>.capabilities.yml`): where it is and reading it. Parsing it and
//! the advisory warnings it gives an op are pure, in
//! [`noma_core::plan::capability`].

use std::path::{Path, PathBuf};

use noma_core::plan::capability::{parse, CapabilityFile, DescriptorError};

/// The sidecar path of a document (A.1): the file name plus `.capabilities.yml`.
pub fn sidecar_path(doc: &Path) -> PathBuf {
    let mut name = doc
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(".capabilities.yml");
    doc.with_file_name(name)
}

/// Why a capability descriptor cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum CapabilityError {
    /// The sidecar exists but cannot be read.
    #[error("{}: cannot read capability descriptor: {source}", path.display())]
    Io {
        /// The sidecar.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The sidecar is not a valid Annex A descriptor.
    #[error("{}: malformed capability descriptor: {source}", path.display())]
    Malformed {
        /// The sidecar.
        path: PathBuf,
        /// What is wrong.
        source: DescriptorError,
    },
}

/// Loads the sidecar of `doc` when it exists.
pub fn load(doc: &Path) -> Result<Option<(PathBuf, CapabilityFile)>, CapabilityError> {
    let path = sidecar_path(doc);
    // Read as every noma input is: a FIFO or device planted in its place
    // is refused at once, never waited on.
    let text = match crate::fsio::read_regular(&path).and_then(|b| {
        String::from_utf8(b).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
    }) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(CapabilityError::Io { path, source }),
    };
    match parse(&text) {
        Ok(f) => Ok(Some((path, f))),
        Err(source) => Err(CapabilityError::Malformed { path, source }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sidecar_name() {
        assert_eq!(
            sidecar_path(Path::new("/a/t.noma")),
            PathBuf::from("/a/t.noma.capabilities.yml")
        );
    }
}
