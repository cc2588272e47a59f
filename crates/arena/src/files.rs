//! Writing result files safely: a finished result is never silently replaced, and a file is
//! written whole or not at all, so an interrupted run leaves the old file or a complete new one.

use std::io::Write;
use std::path::{Path, PathBuf};

/// Refuses to start a run that would replace `path` (an existing, non-empty file) unless the
/// user said so (`allowed`: `--force` replaces it, `--resume` continues it). The message names
/// the file (`what`) and the flags that allow it (`--resume` only where `resumable`).
pub fn check_new_output(path: &Path, what: &str, allowed: bool, resumable: bool) -> Result<(), String> {
    check_new_output_with(path, what, allowed, "add", resumable.then_some("--resume"), "--force")
}

/// [`check_new_output`] for callers whose options have other names (Python's `resume=True`):
/// the hint reads "`verb` `resume` to continue that run, or `force` to replace it" (without the
/// first part where the run cannot be continued).
pub fn check_new_output_with(
    path: &Path,
    what: &str,
    allowed: bool,
    verb: &str,
    resume: Option<&str>,
    force: &str,
) -> Result<(), String> {
    if allowed || !is_nonempty_file(path) {
        return Ok(());
    }
    let hint = match resume {
        Some(r) => format!("{r} to continue that run, or {force} to replace it"),
        None => format!("{force} to replace it"),
    };
    Err(format!("{what} '{}' already exists: {verb} {hint}", path.display()))
}

fn is_nonempty_file(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.len() > 0)
}

/// The temporary file [`write_atomic`] writes beside `path` before renaming it.
pub fn temporary_path(path: &Path) -> PathBuf {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    path.with_file_name(format!(".{name}.{}.tmp", std::process::id()))
}

/// Writes `contents` to `path` whole: into a temporary file in the same directory, flushed to
/// disk, then renamed over `path` (atomic on one file system). A path that is not a regular
/// file (`/dev/stdout`, a pipe) is written directly.
pub fn write_atomic(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
        return std::fs::write(path, contents);
    }
    let tmp = temporary_path(path);
    let result = (|| {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(contents)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Renames a finished temporary file over `path` (for writers that need a path of their own,
/// like chart backends); removes the temporary file if that fails.
pub fn commit_temporary(tmp: &Path, path: &Path) -> std::io::Result<()> {
    let result = std::fs::rename(tmp, path);
    if result.is_err() {
        let _ = std::fs::remove_file(tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("meeple-files-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn existing_results_are_not_replaced_without_leave() {
        let d = dir("check");
        let f = d.join("games.jsonl");
        assert!(check_new_output(&f, "records file", false, true).is_ok(), "a new file is fine");
        std::fs::write(&f, "").unwrap();
        assert!(check_new_output(&f, "records file", false, true).is_ok(), "an empty file holds nothing");
        std::fs::write(&f, "{}\n").unwrap();
        let err = check_new_output(&f, "records file", false, true).unwrap_err();
        assert!(err.ends_with("already exists: add --resume to continue that run, or --force to replace it"), "{err}");
        let err = check_new_output(&f, "results file", false, false).unwrap_err();
        assert!(err.ends_with("already exists: add --force to replace it"), "{err}");
        assert!(check_new_output(&f, "records file", true, true).is_ok());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn atomic_writes_replace_whole_files_and_leave_no_temporary() {
        let d = dir("atomic");
        let f = d.join("summary.json");
        std::fs::write(&f, "old").unwrap();
        write_atomic(&f, b"new and longer").unwrap();
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "new and longer");
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 1, "no temporary file left");
        let missing = d.join("no/such/dir/x.json");
        assert!(write_atomic(&missing, b"x").is_err());
        std::fs::remove_dir_all(&d).unwrap();
    }
}
