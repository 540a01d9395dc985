//! Which file system a directory lives on, for the watcher
//! ([`super::watch`]): inotify reports the changes made through this
//! machine's kernel only, so on a network or host-shared file system
//! (NFS, SMB, 9p, virtiofs, FUSE, ...) a change made by another machine,
//! or by the host, is never an event. There the watcher is not used and
//! every query scans.

use std::path::Path;

/// File-system types whose changes made elsewhere inotify does not see.
const REMOTE: &[&str] = &[
    "nfs",
    "nfs4",
    "cifs",
    "smb3",
    "smbfs",
    "9p",
    "virtiofs",
    "ceph",
    "afs",
    "glusterfs",
    "lustre",
    "gpfs",
    "vboxsf",
    "vmhgfs",
    "prl_fs",
];

/// The type of the file system `dir` (absolute, canonical) is on, when it
/// is one whose changes made elsewhere the watcher cannot see; None for a
/// local one, or when the mount table cannot be read (not Linux).
pub(crate) fn remote_file_system(dir: &Path) -> Option<String> {
    let table = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let fs = file_system_of(&table, dir)?;
    let remote = REMOTE.contains(&fs.as_str()) || fs == "fuse" || fs.starts_with("fuse.");
    remote.then_some(fs)
}

/// The file-system type of the mount in `mountinfo` (the format of
/// `/proc/self/mountinfo`) with the longest mount point holding `dir`.
fn file_system_of(mountinfo: &str, dir: &Path) -> Option<String> {
    let mut best: Option<(usize, String)> = None;
    for line in mountinfo.lines() {
        // "id parent major:minor root mount-point options [optional...] - type source super"
        let mut fields = line.split(' ');
        let Some(point) = fields.nth(4).map(unescape) else {
            continue;
        };
        let Some(fs) = fields.skip_while(|f| *f != "-").nth(1) else {
            continue;
        };
        let depth = Path::new(&point).components().count();
        let longer = best.as_ref().is_none_or(|(d, _)| depth >= *d);
        if dir.starts_with(&point) && longer {
            best = Some((depth, fs.to_string()));
        }
    }
    best.map(|(_, fs)| fs)
}

/// Undoes mountinfo's octal escapes (`\040` for a space, and so on).
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let oct = b
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match oct {
            Some(d) if b[i] == b'\\' => {
                out.push((d[0] - b'0') * 64 + (d[1] - b'0') * 8 + (d[2] - b'0'));
                i += 4;
            }
            _ => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &str = "\
22 27 0:21 / /proc rw,relatime - proc proc rw
27 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
40 27 0:40 / /mnt/share rw,relatime shared:9 master:2 - nfs4 srv:/export rw,vers=4.2
41 40 0:41 / /mnt/share/local rw - tmpfs tmpfs rw
42 27 0:42 / /home/me/my\\040docs rw - fuse.sshfs me@host: rw
43 27 0:43 / /mnt/sharex rw - ext4 /dev/sdb1 rw
";

    #[test]
    fn the_longest_mount_point_holding_the_directory_wins() {
        let of = |p: &str| file_system_of(TABLE, Path::new(p));
        assert_eq!(of("/work/repo").as_deref(), Some("ext4"));
        assert_eq!(of("/mnt/share/repo").as_deref(), Some("nfs4"));
        assert_eq!(of("/mnt/share/local/repo").as_deref(), Some("tmpfs"));
        // A mount point is a whole path component, not a string prefix.
        assert_eq!(of("/mnt/sharex/repo").as_deref(), Some("ext4"));
        assert_eq!(of("/home/me/my docs/repo").as_deref(), Some("fuse.sshfs"));
        assert_eq!(of("/proc").as_deref(), Some("proc"));
        assert_eq!(file_system_of("garbage\n", Path::new("/a")), None);
    }

    #[test]
    fn escapes_are_undone() {
        assert_eq!(unescape("a\\040b\\011c"), "a b\tc");
        assert_eq!(unescape("trailing\\04"), "trailing\\04");
        assert_eq!(unescape("\\\\"), "\\\\");
    }
}
