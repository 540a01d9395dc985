//! Turning bytes into document text: the one gate every input passes.
//! Invalid UTF-8 and binary content are refused with a precise message.

use std::path::Path;

/// Why bytes or a file cannot be read as a `.noma` document.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// The path does not exist.
    #[error("{path}: no such file")]
    Missing {
        /// The path as given.
        path: String,
    },
    /// The path is a directory.
    #[error("{path}: is a directory, not a .noma file")]
    Directory {
        /// The path as given.
        path: String,
    },
    /// Reading failed (permissions, I/O).
    #[error("{path}: cannot read: {source}")]
    Io {
        /// The path as given.
        path: String,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The bytes are not UTF-8.
    #[error(
        "{path}: not valid UTF-8 (first bad byte at line {line}, column {column}, offset {offset})"
    )]
    NotUtf8 {
        /// The path as given.
        path: String,
        /// Byte offset of the first invalid byte.
        offset: usize,
        /// 1-based line of the first invalid byte.
        line: usize,
        /// 1-based byte column of the first invalid byte.
        column: usize,
    },
    /// The bytes contain NUL: a binary file, not text.
    #[error("{path}: binary content (NUL byte at offset {offset}); .noma files are UTF-8 text")]
    Binary {
        /// The path as given.
        path: String,
        /// Offset of the first NUL byte.
        offset: usize,
    },
}

/// Checks that `bytes` are document text (UTF-8, no NUL) and returns them as `&str`.
pub fn decode<'a>(path: &str, bytes: &'a [u8]) -> Result<&'a str, SourceError> {
    if let Some(offset) = memchr::memchr(0, bytes) {
        return Err(SourceError::Binary {
            path: path.to_string(),
            offset,
        });
    }
    std::str::from_utf8(bytes).map_err(|e| {
        let offset = e.valid_up_to();
        let before = &bytes[..offset];
        let line = memchr::memchr_iter(b'\n', before).count() + 1;
        let column = offset
            - before
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |p| p + 1)
            + 1;
        SourceError::NotUtf8 {
            path: path.to_string(),
            offset,
            line,
            column,
        }
    })
}

/// The checks every document read passes (UTF-8, no NUL byte), on bytes
/// already read from `path`, reusing the buffer without copying.
pub fn decode_owned(path: &Path, bytes: Vec<u8>) -> Result<String, SourceError> {
    // One UTF-8 pass on the good path; the precise error on the bad one.
    match String::from_utf8(bytes) {
        Ok(text) => match memchr::memchr(0, text.as_bytes()) {
            Some(offset) => Err(SourceError::Binary {
                path: path.display().to_string(),
                offset,
            }),
            None => Ok(text),
        },
        Err(e) => {
            let shown = path.display().to_string();
            let offset = e.utf8_error().valid_up_to();
            Err(decode(&shown, e.as_bytes())
                .err()
                .unwrap_or(SourceError::NotUtf8 {
                    path: shown,
                    offset,
                    line: 0,
                    column: 0,
                }))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_invalid_utf8_position() {
        let err = decode("x.noma", b"ok\nab\xffc").unwrap_err();
        assert!(
            matches!(
                err,
                SourceError::NotUtf8 {
                    line: 2,
                    column: 3,
                    offset: 5,
                    ..
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn refuses_nul_bytes() {
        assert!(matches!(
            decode("x", b"a\0b"),
            Err(SourceError::Binary { offset: 1, .. })
        ));
    }
}
