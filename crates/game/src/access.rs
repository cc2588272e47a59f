//! Which files an agent spec may read. The command line trusts its user: `model=F` and
//! `weights=F` open any path. A server builds agents from specs that strangers send, so it runs
//! the build inside [`restricted`]: every file a spec names must then be a regular file inside
//! one of the allowed directories (after following links), and a refusal says only that the name
//! is unknown, never what the operating system said (which would tell whether a path exists).
//!
//! Every loader of an agent's file asks [`agent_file`] for the path it may open.

use crate::Error;
use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::sync::Arc;

thread_local! {
    static ROOTS: RefCell<Option<Arc<Vec<PathBuf>>>> = const { RefCell::new(None) };
}

/// Runs `build` with file access limited to `roots` (directories; those that do not exist are
/// left out) on this thread; the previous policy is restored afterwards, also on a panic.
pub fn restricted<T>(roots: &[PathBuf], build: impl FnOnce() -> T) -> T {
    let canonical: Vec<PathBuf> = roots.iter().filter_map(|r| r.canonicalize().ok()).filter(|r| r.is_dir()).collect();
    let previous = ROOTS.with(|c| c.replace(Some(Arc::new(canonical))));
    struct Restore(Option<Arc<Vec<PathBuf>>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let previous = self.0.take();
            ROOTS.with(|c| *c.borrow_mut() = previous);
        }
    }
    let _restore = Restore(previous);
    build()
}

/// Whether this thread builds agents for strangers (inside [`restricted`]).
pub fn is_restricted() -> bool {
    ROOTS.with(|c| c.borrow().is_some())
}

/// The path a loader may open for the file a spec names (`what`: "model", "weights file").
/// Unrestricted: the name as given. Restricted: a name relative to an allowed directory (or an
/// absolute path inside one), resolved through links, that is a regular file; anything else is
/// "unknown", with the names the caller may use.
pub fn agent_file(given: &str, what: &str) -> Result<PathBuf, Error> {
    let Some(roots) = ROOTS.with(|c| c.borrow().clone()) else {
        return Ok(PathBuf::from(given));
    };
    let unknown = || {
        let names = available(&roots);
        Error::Invalid(if names.is_empty() {
            format!("unknown {what} '{given}': this server offers no files to agents")
        } else {
            format!("unknown {what} '{given}': this server offers {}", names.join(", "))
        })
    };
    let asked = Path::new(given);
    if given.is_empty() || given.len() > 4096 || given.contains('\0') {
        return Err(unknown());
    }
    // A relative name is looked for in each allowed directory, and as given (from the working
    // directory: `models/x.safetensors`); either way it must end up inside one.
    let mut candidates: Vec<PathBuf> = vec![asked.to_path_buf()];
    if !asked.is_absolute() {
        candidates.extend(roots.iter().map(|r| r.join(asked)));
    }
    for candidate in candidates {
        let Ok(real) = candidate.canonicalize() else { continue };
        if roots.iter().any(|r| real.starts_with(r)) && std::fs::metadata(&real).is_ok_and(|m| m.is_file()) {
            return Ok(real);
        }
    }
    Err(unknown())
}

/// Numbers an evaluator's `weights=` option gives: inline (`1,2,-3`), or the name of a file of
/// them (`#` lines are comments; `meeple train rootstrap|treestrap` writes one), opened under
/// this thread's file policy. `None` where a number does not parse (the caller names what it
/// accepts).
pub fn numbers(given: &str) -> Result<Option<Vec<f64>>, Error> {
    let parse = |text: &str| -> Option<Vec<f64>> {
        text.split(',').map(str::trim).filter(|v| !v.is_empty()).map(|v| v.parse::<f64>().ok()).collect()
    };
    if given.split(',').all(|v| v.trim().parse::<f64>().is_ok()) {
        return Ok(parse(given));
    }
    let path = agent_file(given, "weights file")?;
    let text = crate::limits::read_text(&path, 64 << 10, "weights file")?;
    let numbers: Vec<&str> = text.lines().filter(|l| !l.trim_start().starts_with('#')).collect();
    Ok(parse(&numbers.join(",")))
}

/// The file names offered (at most 20, sorted), for error messages: regular files directly in
/// the allowed directories, except sidecars.
fn available(roots: &[PathBuf]) -> Vec<String> {
    let mut names: Vec<String> = roots
        .iter()
        .filter_map(|r| std::fs::read_dir(r).ok())
        .flat_map(|d| d.filter_map(|e| e.ok()))
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| !n.ends_with(".json") && !n.ends_with(".md") && !n.starts_with('.'))
        .collect();
    names.sort();
    names.dedup();
    names.truncate(20);
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restricted_builds_open_only_regular_files_inside_the_roots() {
        let dir = std::env::temp_dir().join(format!("meeple-access-{}", std::process::id()));
        let inside = dir.join("models");
        std::fs::create_dir_all(&inside).unwrap();
        std::fs::write(inside.join("net.safetensors"), b"x").unwrap();
        std::fs::write(dir.join("secret.txt"), b"x").unwrap();
        // A link inside that leads outside is followed, and refused.
        let _ = std::os::unix::fs::symlink(dir.join("secret.txt"), inside.join("link.safetensors"));
        // Unrestricted: any name, untouched.
        assert_eq!(agent_file("/etc/passwd", "model").unwrap(), PathBuf::from("/etc/passwd"));
        restricted(std::slice::from_ref(&inside), || {
            assert!(is_restricted());
            let ok = agent_file("net.safetensors", "model").unwrap();
            assert_eq!(ok, inside.canonicalize().unwrap().join("net.safetensors"));
            assert_eq!(agent_file(ok.to_str().unwrap(), "model").unwrap(), ok);
            for bad in [
                "../secret.txt",
                "/etc/passwd",
                "/dev/stdin",
                "/dev/zero",
                "",
                ".",
                "missing",
                "/proc/self/fd/0",
                "link.safetensors",
            ] {
                let e = agent_file(bad, "model").unwrap_err().to_string();
                assert!(e.contains("unknown model") && e.contains("net.safetensors"), "{bad}: {e}");
                assert!(!e.contains("No such file") && !e.contains("os error"), "{e}");
            }
        });
        assert!(!is_restricted());
        // Weights inline or from a file (comments skipped), the file under the same policy.
        std::fs::write(inside.join("w.txt"), "# made by a test\n1,2.5,-3\n").unwrap();
        assert_eq!(numbers("1, 2,-3").unwrap(), Some(vec![1.0, 2.0, -3.0]));
        let file = inside.join("w.txt").display().to_string();
        assert_eq!(numbers(&file).unwrap(), Some(vec![1.0, 2.5, -3.0]));
        restricted(std::slice::from_ref(&inside), || {
            assert_eq!(numbers("w.txt").unwrap(), Some(vec![1.0, 2.5, -3.0]));
            assert!(numbers("/etc/passwd").unwrap_err().to_string().contains("unknown weights file"));
        });
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
