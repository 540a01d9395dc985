//! Guard checks run by the git hooks: staged documents, transcripts replaying
//! to the committed bytes, fork detection on merges, `noma record`.
