//! Reading repository content: index (staged) blobs, HEAD and revision
//! blobs, merge bases, a path's history.
