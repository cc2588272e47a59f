//! The files an agent spec names (networks, weights), each named by its sha256, so that a
//! result says which network it measured even after the file at that path is replaced.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::SystemTime;

/// A file an agent's spec names, by path (as written in the spec) and content.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelFile {
    pub path: String,
    /// Lower-case hex sha256 of the file's bytes.
    pub sha256: String,
}

/// The files named by option values of `spec` (`model=F`, `weights=F`, inside nested specs
/// too), in the order they appear, each once. A value counts as a file when a regular file of
/// that name exists; one that cannot be read is left out (the agent reports it when it loads).
pub fn model_files(spec: &str) -> Vec<ModelFile> {
    let mut out: Vec<ModelFile> = Vec::new();
    for value in option_values(spec) {
        if out.iter().any(|f| f.path == value) || !Path::new(value).is_file() {
            continue;
        }
        if let Ok(sha256) = sha256_file(Path::new(value)) {
            out.push(ModelFile { path: value.to_string(), sha256 });
        }
    }
    out
}

/// Every `key=value` value of a spec whose value is not itself bracketed.
fn option_values(spec: &str) -> impl Iterator<Item = &str> {
    spec.match_indices('=').filter_map(move |(i, _)| {
        let rest = &spec[i + 1..];
        if rest.starts_with('(') {
            return None;
        }
        let end = rest.find([',', ')']).unwrap_or(rest.len());
        Some(rest[..end].trim()).filter(|v| !v.is_empty())
    })
}

type Key = (PathBuf, u64, Option<SystemTime>);

/// The sha256 of a file, computed once per process for a file of unchanged size and time
/// (every game's record carries its match's files, and a match may play thousands).
pub fn sha256_file(path: &Path) -> std::io::Result<String> {
    static CACHE: OnceLock<Mutex<HashMap<Key, String>>> = OnceLock::new();
    let meta = std::fs::metadata(path)?;
    let key = (std::fs::canonicalize(path)?, meta.len(), meta.modified().ok());
    let cache = CACHE.get_or_init(Default::default);
    if let Some(hit) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return Ok(hit.clone());
    }
    let mut hasher = Sha256::new();
    std::io::copy(&mut std::fs::File::open(path)?, &mut hasher)?;
    let hex: String = hasher.finalize().iter().map(|b| format!("{b:02x}")).collect();
    cache.lock().unwrap_or_else(|e| e.into_inner()).insert(key, hex.clone());
    Ok(hex)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spec_names_its_files_by_sha256_nested_specs_too() {
        let dir = std::env::temp_dir().join(format!("meeple-models-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (a, b) = (dir.join("a.txt"), dir.join("b.txt"));
        std::fs::write(&a, "abc").unwrap();
        std::fs::write(&b, "").unwrap();
        let spec = format!(
            "alphabeta:depth=2,eval=(linear8:weights={}),x=missing.txt,m=(az:model={},time=1s),y={}",
            a.display(),
            b.display(),
            a.display()
        );
        let files = model_files(&spec);
        assert_eq!(files.len(), 2, "{files:?}");
        assert_eq!(files[0].path, a.display().to_string());
        // The test vectors of FIPS 180-2: "abc" and the empty message.
        assert_eq!(files[0].sha256, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert_eq!(files[1].sha256, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        std::fs::write(&a, "abcd").unwrap();
        assert_ne!(model_files(&spec)[0].sha256, files[0].sha256, "a changed file is hashed again");
        assert!(model_files("mcts:iters=10,eval=zero").is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
