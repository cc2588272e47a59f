//! Every figure meeple quotes is recomputed from the raw arena results it comes from.
//!
//! `experiments/claims.json` lists the figures: the arena JSON files behind each (several are
//! pooled), the agent (and its opponent, for a head-to-head figure), the score and 95% Wilson
//! interval as quoted, and the pages that quote them. This test reads each file, recomputes the
//! score and interval from the wins, draws and losses, checks that each page quotes them as
//! `S% [L, H]`, and that a network the figure names is still the file under `models/` (by the
//! sha256 the arena recorded). The README's figures must all be claims.

use meeple_arena::{Z95, sha256_file, wilson};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// One arena summary: a file, or `FOLDER/matches.json#NAME`, one match of a table of many kept
/// as one file (`experiments/bundle.py`).
fn read_summary(reference: &str) -> Value {
    match reference.split_once('#') {
        None => read_json(&root().join(reference)),
        Some((file, name)) => {
            let bundle = read_json(&root().join(file));
            bundle["matches"].get(name).cloned().unwrap_or_else(|| panic!("{file}: no match named {name}"))
        }
    }
}

fn field<'a>(v: &'a Value, key: &str, what: &str) -> &'a Value {
    v.get(key).unwrap_or_else(|| panic!("{what}: no `{key}`"))
}

fn text<'a>(v: &'a Value, key: &str, what: &str) -> &'a str {
    field(v, key, what).as_str().unwrap_or_else(|| panic!("{what}: `{key}` is not a string"))
}

fn count(v: &Value, key: &str) -> u64 {
    v[key].as_u64().unwrap_or_else(|| panic!("`{key}` is not a count in {v}"))
}

/// Wins, draws and losses of `agent` (against `opponent`, if given) in one arena summary.
fn results(summary: &Value, agent: &str, opponent: Option<&str>, file: &str) -> [u64; 3] {
    let named = |x: &Value, key: &str, name: &str| x[key].as_str() == Some(name);
    if let Some(opp) = opponent {
        for p in summary["pairwise"].as_array().into_iter().flatten() {
            let wdl = [count(p, "wins"), count(p, "draws"), count(p, "losses")];
            if named(p, "a", agent) && named(p, "b", opp) {
                return wdl;
            }
            if named(p, "a", opp) && named(p, "b", agent) {
                return [wdl[2], wdl[1], wdl[0]];
            }
        }
        panic!("{file}: no pairing of {agent} with {opp}");
    }
    let a = summary["agents"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|a| named(a, "name", agent) || named(a, "spec", agent))
        .unwrap_or_else(|| panic!("{file}: no agent {agent}"));
    [count(a, "wins"), count(a, "draws"), count(a, "losses")]
}

/// The sha256 each summary recorded for the files under `models/` that `agent` names.
fn recorded_models(summary: &Value, agent: &str) -> Vec<(String, String)> {
    let a = summary["agents"].as_array().into_iter().flatten().find(|a| a["spec"].as_str() == Some(agent));
    a.and_then(|a| a["files"].as_array())
        .into_iter()
        .flatten()
        .filter_map(|f| Some((f["path"].as_str()?.to_string(), f["sha256"].as_str()?.to_string())))
        .filter(|(p, _)| p.starts_with("models/"))
        .collect()
}

/// `S% [L, H]` with one decimal, as every page quotes a score.
fn quoted(wdl: [u64; 3]) -> (String, String, String) {
    let n = wdl.iter().sum::<u64>() as f64;
    let p = (wdl[0] as f64 + wdl[1] as f64 / 2.0) / n;
    let (lo, hi) = wilson(p, n, Z95);
    (format!("{:.1}", 100.0 * p), format!("{:.1}", 100.0 * lo), format!("{:.1}", 100.0 * hi))
}

fn claims() -> Vec<Value> {
    let all = read_json(&root().join("experiments/claims.json"));
    field(&all, "claims", "experiments/claims.json").as_array().expect("claims is a list").clone()
}

#[test]
fn every_claimed_figure_is_what_its_raw_results_give() {
    let claims = claims();
    assert!(claims.len() >= 6, "the README's six results at least");
    let mut ids = std::collections::BTreeSet::new();
    for c in &claims {
        let id = text(c, "id", "a claim");
        assert!(ids.insert(id.to_string()), "claim {id} appears twice");
        let files: Vec<&str> = match field(c, "file", id) {
            Value::String(f) => vec![f.as_str()],
            Value::Array(fs) => fs.iter().map(|f| f.as_str().expect("file names")).collect(),
            other => panic!("{id}: `file` is {other}"),
        };
        let agent = text(c, "agent", id);
        let opponent = c.get("opponent").and_then(Value::as_str);
        let mut wdl = [0u64; 3];
        for f in &files {
            let summary = read_summary(f);
            let one = results(&summary, agent, opponent, f);
            (0..3).for_each(|k| wdl[k] += one[k]);
            for (path, sha) in recorded_models(&summary, agent) {
                let now = sha256_file(&root().join(&path)).unwrap_or_else(|e| panic!("{id}: {path}: {e}"));
                assert_eq!(now, sha, "{id}: {f} measured another {path} than the one shipped");
            }
        }
        if let Some(games) = c.get("games") {
            assert_eq!(Some(wdl.iter().sum::<u64>()), games.as_u64(), "{id}: games");
        }
        let (score, lo, hi) = quoted(wdl);
        let claimed = (
            text(c, "score", id).to_string(),
            field(c, "interval", id)[0].as_str().unwrap_or_default().to_string(),
            field(c, "interval", id)[1].as_str().unwrap_or_default().to_string(),
        );
        assert_eq!(claimed, (score.clone(), lo.clone(), hi.clone()), "{id}: {wdl:?} in {files:?}");
        let phrase = format!("{score}% [{lo}, {hi}]");
        let pages = field(c, "quoted", id).as_array().expect("quoted is a list of pages");
        assert!(!pages.is_empty(), "{id}: quoted nowhere");
        for page in pages {
            let page = page.as_str().expect("page names");
            let body = std::fs::read_to_string(root().join(page)).unwrap_or_else(|e| panic!("{page}: {e}"));
            assert!(body.contains(&phrase), "{id}: {page} does not quote {phrase}");
        }
    }
}

/// Every `S% [L, H]` in the README, with the claims that quote it there.
#[test]
fn every_figure_in_the_readme_is_a_claim() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let mut checked = Vec::new();
    for c in claims() {
        if c["quoted"].as_array().into_iter().flatten().any(|p| p.as_str() == Some("README.md")) {
            checked.push(format!(
                "{}% [{}, {}]",
                c["score"].as_str().unwrap_or_default(),
                c["interval"][0].as_str().unwrap_or_default(),
                c["interval"][1].as_str().unwrap_or_default()
            ));
        }
    }
    for figure in figures(&readme) {
        assert!(checked.contains(&figure), "README.md quotes {figure}, which experiments/claims.json does not list");
    }
}

/// The `S% [L, H]` phrases of a text.
fn figures(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (i, _) in text.match_indices("% [") {
        let start = text[..i].rfind(|ch: char| !(ch.is_ascii_digit() || ch == '.')).map_or(0, |k| k + 1);
        let Some(end) = text[i..].find(']') else { continue };
        // Only the pages' own `S% [L, H]`: a console table pasted as an example (`[ 58.5%,
        // 84.9%]`) shows one run, not a figure the project quotes.
        let inside = &text[i + 3..i + end];
        let is_number = |x: &str| !x.is_empty() && x.chars().all(|ch| ch.is_ascii_digit() || ch == '.');
        let quoted = inside.split_once(", ").is_some_and(|(lo, hi)| is_number(lo) && is_number(hi));
        if start < i && quoted {
            out.push(text[start..i + end + 1].to_string());
        }
    }
    out
}

#[test]
fn the_figure_finder_sees_a_quoted_score() {
    assert_eq!(figures("won 56.9% [51.4, 62.2] over 320, then 8% of"), vec!["56.9% [51.4, 62.2]"]);
    assert!(figures("random   200   17.5%  [ 12.9%,  23.4%]").is_empty());
    assert_eq!(quoted([182, 0, 138]), ("56.9".into(), "51.4".into(), "62.2".into()));
}
