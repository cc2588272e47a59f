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

/// A claim's files: one summary or several pooled.
fn files_of(c: &Value, id: &str) -> Result<Vec<String>, String> {
    match c.get("file") {
        Some(Value::String(f)) => Ok(vec![f.clone()]),
        Some(Value::Array(fs)) => {
            fs.iter().map(|f| f.as_str().map(str::to_string).ok_or(format!("{id}: file names"))).collect()
        }
        other => Err(format!("{id}: `file` is {other:?}")),
    }
}

/// The opponents a claim names: `opponent` (one spec) or `opponents` (a list, for a game of
/// more than two seats where the others differ).
fn opponents_of(c: &Value, id: &str) -> Result<Vec<String>, String> {
    match (c.get("opponent"), c.get("opponents")) {
        (Some(Value::String(o)), None) => Ok(vec![o.clone()]),
        (None, Some(Value::Array(os))) if !os.is_empty() => {
            os.iter().map(|o| o.as_str().map(str::to_string).ok_or(format!("{id}: opponents are specs"))).collect()
        }
        _ => Err(format!("{id}: a claim names its opponent (`opponent`, or `opponents` for several)")),
    }
}

/// `x` formatted with as many decimals as `like` shows, as a page quotes it.
fn like(x: f64, like: &str) -> String {
    let decimals = like.split_once('.').map_or(0, |(_, d)| d.len());
    format!("{x:.decimals$}")
}

/// What one claim says, checked against its raw summaries: the agent's wins, draws and losses
/// against exactly the opponents it names, the games, the seeds, both sides' ms a move, the
/// score and interval, and the shipped networks by sha256. Returns the phrase pages quote.
fn check_claim(c: &Value) -> Result<String, String> {
    let id = c.get("id").and_then(Value::as_str).ok_or("a claim without an id")?;
    let files = files_of(c, id)?;
    let agent = c.get("agent").and_then(Value::as_str).ok_or(format!("{id}: no agent"))?;
    let opponents = opponents_of(c, id)?;
    let seeds: Vec<u64> = match c.get("seed") {
        Some(Value::Number(n)) => vec![n.as_u64().ok_or(format!("{id}: seed"))?; files.len()],
        Some(Value::Array(xs)) => {
            xs.iter().map(|x| x.as_u64().ok_or(format!("{id}: seeds are numbers"))).collect::<Result<_, _>>()?
        }
        _ => return Err(format!("{id}: a claim names its seed (`seed`, or one a file)")),
    };
    if seeds.len() != files.len() {
        return Err(format!("{id}: {} seeds for {} files", seeds.len(), files.len()));
    }
    let mut wdl = [0u64; 3];
    // Games-weighted sums of each side's mean ms a move.
    let (mut ms_agent, mut ms_opp) = ([0.0f64, 0.0], [0.0f64, 0.0]);
    for (f, seed) in files.iter().zip(&seeds) {
        let summary = read_summary(f);
        if summary["seed"].as_u64() != Some(*seed) {
            return Err(format!("{id}: {f} was played on seed {}, the claim says {seed}", summary["seed"]));
        }
        let agents = summary["agents"].as_array().cloned().unwrap_or_default();
        let spec = |a: &Value| a["spec"].as_str().unwrap_or_default().to_string();
        let others: std::collections::BTreeSet<String> = agents.iter().map(spec).filter(|s| s != agent).collect();
        let named: std::collections::BTreeSet<String> = opponents.iter().cloned().collect();
        if others != named {
            return Err(format!("{id}: {f} played {agent} against {others:?}, the claim names {named:?}"));
        }
        let two = opponents.len() == 1 && summary["pairwise"].as_array().is_some_and(|p| !p.is_empty());
        let one = results(&summary, agent, two.then_some(opponents[0].as_str()), f);
        (0..3).for_each(|k| wdl[k] += one[k]);
        for a in &agents {
            let n = count(a, "wins") + count(a, "draws") + count(a, "losses");
            let ms = a["mean_move_ms"].as_f64().ok_or(format!("{id}: {f} has no ms a move"))?;
            let side = if spec(a) == agent { &mut ms_agent } else { &mut ms_opp };
            side[0] += ms * n as f64;
            side[1] += n as f64;
        }
        for (path, sha) in recorded_models(&summary, agent) {
            let now = sha256_file(&root().join(&path)).map_err(|e| format!("{id}: {path}: {e}"))?;
            if now != sha {
                return Err(format!("{id}: {f} measured another {path} than the one shipped"));
            }
        }
    }
    let games = c.get("games").and_then(Value::as_u64).ok_or(format!("{id}: a claim names its games"))?;
    if wdl.iter().sum::<u64>() != games {
        return Err(format!("{id}: {games} games claimed, {} in {files:?}", wdl.iter().sum::<u64>()));
    }
    let ms = c.get("ms").and_then(Value::as_array).ok_or(format!("{id}: a claim names both sides' ms a move"))?;
    let (Some(a_ms), Some(o_ms)) = (ms.first().and_then(Value::as_str), ms.get(1).and_then(Value::as_str)) else {
        return Err(format!("{id}: `ms` is [agent's, opponents'] as quoted"));
    };
    let measured = (like(ms_agent[0] / ms_agent[1], a_ms), like(ms_opp[0] / ms_opp[1], o_ms));
    if (a_ms.to_string(), o_ms.to_string()) != measured {
        return Err(format!("{id}: ms a move {a_ms} / {o_ms} claimed, {} / {} measured", measured.0, measured.1));
    }
    let (score, lo, hi) = quoted(wdl);
    let claimed = (
        text(c, "score", id).to_string(),
        field(c, "interval", id)[0].as_str().unwrap_or_default().to_string(),
        field(c, "interval", id)[1].as_str().unwrap_or_default().to_string(),
    );
    if claimed != (score.clone(), lo.clone(), hi.clone()) {
        return Err(format!("{id}: {claimed:?} claimed, {wdl:?} in {files:?} give {score}% [{lo}, {hi}]"));
    }
    Ok(format!("{score}% [{lo}, {hi}]"))
}

/// The cells of a markdown table row.
fn cells(row: &str) -> Vec<String> {
    row.trim().trim_start_matches('|').trim_end_matches('|').split('|').map(|c| c.trim().to_lowercase()).collect()
}

/// A spec's kind and its top-level options (`eval=(gods:threats=true)` is one option).
fn spec_parts(spec: &str) -> (String, Vec<String>) {
    let (kind, rest) = spec.split_once(':').unwrap_or((spec, ""));
    let (mut opts, mut depth, mut cur) = (Vec::new(), 0i32, String::new());
    for ch in rest.chars() {
        match ch {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                opts.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(ch);
    }
    if !cur.is_empty() {
        opts.push(cur);
    }
    (kind.to_lowercase(), opts.into_iter().map(|o| o.to_lowercase()).collect())
}

/// Whether a table cell names `spec`: it quotes at least one `code` token, and each is a path
/// the spec loads (`models/connect4-az`) or the spec itself with some of its options.
fn names(cell: &str, spec: &str) -> bool {
    let spec = spec.to_lowercase();
    let tokens: Vec<&str> = cell.split('`').skip(1).step_by(2).collect();
    let (kind, opts) = spec_parts(&spec);
    !tokens.is_empty()
        && tokens.iter().all(|t| {
            if t.contains('/') && !t.contains(':') {
                return spec.contains(t);
            }
            // An option alone (`offer=trade`): one of the spec's.
            if t.contains('=') && !t.contains(':') {
                return opts.iter().any(|o| o == t);
            }
            let (k, os) = spec_parts(t);
            k == kind && os.iter().all(|o| opts.contains(o))
        })
}

/// Where a page quotes `phrase` in a table with `agent` and `opponent` columns, those cells
/// must name the claim's agent and one of its opponents: a figure moved to another row fails.
fn check_rows(id: &str, page: &str, body: &str, phrase: &str, agent: &str, opponents: &[String]) -> Result<(), String> {
    let lines: Vec<&str> = body.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        if !line.contains(phrase) || !line.trim_start().starts_with('|') {
            continue;
        }
        let top = (0..=i).rev().take_while(|&k| lines[k].trim_start().starts_with('|')).last().unwrap_or(i);
        let header = cells(lines[top]);
        let (Some(a), Some(o)) =
            (header.iter().position(|h| h == "agent"), header.iter().position(|h| h == "opponent"))
        else {
            continue;
        };
        let row = cells(line);
        let (ac, oc) = (row.get(a).cloned().unwrap_or_default(), row.get(o).cloned().unwrap_or_default());
        if !names(&ac, agent) {
            return Err(format!("{id}: {page} quotes {phrase} in a row whose agent is {ac:?}, not {agent}"));
        }
        if !opponents.iter().any(|op| names(&oc, op)) {
            return Err(format!("{id}: {page} quotes {phrase} in a row whose opponent is {oc:?}, not {opponents:?}"));
        }
    }
    Ok(())
}

#[test]
fn every_claimed_figure_is_what_its_raw_results_give() {
    let claims = claims();
    assert!(claims.len() >= 6, "the README's six results at least");
    let mut ids = std::collections::BTreeSet::new();
    for c in &claims {
        let id = text(c, "id", "a claim");
        assert!(ids.insert(id.to_string()), "claim {id} appears twice");
        let phrase = check_claim(c).unwrap_or_else(|e| panic!("{e}"));
        let agent = text(c, "agent", id);
        let opponents = opponents_of(c, id).unwrap();
        let pages = field(c, "quoted", id).as_array().expect("quoted is a list of pages");
        assert!(!pages.is_empty(), "{id}: quoted nowhere");
        for page in pages {
            let page = page.as_str().expect("page names");
            let body = std::fs::read_to_string(root().join(page)).unwrap_or_else(|e| panic!("{page}: {e}"));
            assert!(body.contains(&phrase), "{id}: {page} does not quote {phrase}");
            check_rows(id, page, &body, &phrase, agent, &opponents).unwrap_or_else(|e| panic!("{e}"));
        }
    }
}

/// The checks fail where they should: a claim whose opponent is changed, and a README whose
/// figure is moved to another game's row.
#[test]
fn a_claim_with_another_opponent_or_in_another_row_fails() {
    let claims = claims();
    let c = claims.iter().find(|c| c["id"] == "connect4-az-vs-mcts").expect("the connect four claim");
    assert!(check_claim(c).is_ok());
    let mut other = c.clone();
    other["opponent"] = Value::String("mcts:time=300ms".into());
    assert!(check_claim(&other).unwrap_err().contains("the claim names"));
    let mut seed = c.clone();
    seed["seed"] = Value::from(7u64);
    assert!(check_claim(&seed).is_err());
    let mut ms = c.clone();
    ms["ms"] = serde_json::json!(["555", "60"]);
    assert!(check_claim(&ms).unwrap_err().contains("ms a move"));
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let phrase = check_claim(c).unwrap();
    let agent = c["agent"].as_str().unwrap();
    let opp = vec![c["opponent"].as_str().unwrap().to_string()];
    assert!(check_rows("connect4", "README.md", &readme, &phrase, agent, &opp).is_ok());
    // The same figure in the Cathedral row instead.
    let cathedral = readme.lines().find(|l| l.starts_with("| Cathedral |")).unwrap();
    let theirs = figures(cathedral)[0].clone();
    let moved = readme.replace(&phrase, "XX").replace(&theirs, &phrase);
    assert!(check_rows("connect4", "README.md", &moved, &phrase, agent, &opp).unwrap_err().contains("whose agent is"));
    assert!(names("`az` with `models/connect4-az`, 1 s", agent) && !names("`mcts:time=1s`", agent));
    assert!(names("`catan-td`, offers by the trade (`offer=trade`)", "catan-td:model=m,offer=trade"));
    assert!(!names("`catan-td` (`offer=trade`)", "catan-td:model=m"));
    assert!(names(
        "the thesis's minimax (`alphabeta:worlds=20,eval=thesis`)",
        "alphabeta:time=300ms,eval=thesis,filter=true,worlds=20"
    ));
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

/// The text with its fenced code blocks blanked (same length): a console output pasted as an
/// example shows what one run printed, not a figure the page quotes.
fn prose(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut fenced = false;
    for line in text.split_inclusive('\n') {
        let fence = line.trim_start().starts_with("```");
        if fenced && !fence {
            // As many spaces as the line has bytes, so that offsets stay where they were.
            let body = line.trim_end_matches('\n');
            out.extend(std::iter::repeat_n(' ', body.len()));
            out.push_str(&line[body.len()..]);
        } else {
            out.push_str(line);
        }
        if fence {
            fenced = !fenced;
        }
    }
    out
}

/// The `S% [L, H]` phrases of a text, outside its code blocks.
fn figures(text: &str) -> Vec<String> {
    let text = &prose(text);
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

/// Every string of a JSON value, depth first.
fn strings<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
    match v {
        Value::String(s) => out.push(s),
        Value::Array(xs) => xs.iter().for_each(|x| strings(x, out)),
        Value::Object(m) => m.values().for_each(|x| strings(x, out)),
        _ => {}
    }
}

/// An absolute folder named by a raw output: a string that is one (`/tmp/x.json`) or an
/// option's value that is one (`model=/work/run/last.safetensors`).
fn absolute(s: &str) -> bool {
    let names_root = |t: &str| t.starts_with('/') && t[1..].contains('/') && !t.starts_with("//");
    names_root(s) || s.split(['=', ',', '(', ' ']).any(names_root)
}

/// Raw outputs name files relative to the repository: a reader can follow them and rerun.
#[test]
fn raw_outputs_name_no_folder_of_the_machine_that_made_them() {
    assert!(absolute("az:model=/work/exp/run7/gen.safetensors,time=1s") && absolute("/tmp/x.json"));
    assert!(
        !absolute("models/santorini-az.safetensors") && !absolute("scratch/run7/gen.safetensors") && !absolute("1/2")
    );
    let mut stack = vec![root().join("experiments")];
    let mut seen = 0;
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().to_string();
            if path.is_dir() {
                // A run's self-play shards and checkpoints are its own working files.
                if name != "selfplay" && name != "ckpt" {
                    stack.push(path);
                }
                continue;
            }
            if !name.ends_with(".json") {
                continue;
            }
            let Ok(v) = serde_json::from_str::<Value>(&std::fs::read_to_string(&path).unwrap()) else { continue };
            let mut all = Vec::new();
            strings(&v, &mut all);
            let bad: Vec<_> = all.into_iter().filter(|s| absolute(s)).take(3).collect();
            assert!(bad.is_empty(), "{} names folders of the machine that made it: {bad:?}", path.display());
            seen += 1;
        }
    }
    assert!(seen > 100, "read {seen} raw outputs");
}

/// Files under `dir` whose names end in `ext`, leaving out runs' working folders.
fn files_under(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().to_string();
        if path.is_dir() {
            if !["selfplay", "ckpt", "node_modules", "target"].contains(&name.as_str()) {
                files_under(&path, ext, out);
            }
        } else if name.ends_with(ext) {
            out.push(path);
        }
    }
}

/// Every `S% [L, H]` that some arena summary under `experiments/` gives, for an agent over its
/// games or for one side of a pairing.
fn raw_figures() -> std::collections::BTreeSet<String> {
    let mut files = Vec::new();
    files_under(&root().join("experiments"), ".json", &mut files);
    let mut out = std::collections::BTreeSet::new();
    let phrase = |w: [u64; 3]| {
        let (s, l, h) = quoted(w);
        format!("{s}% [{l}, {h}]")
    };
    let wdl = |x: &Value| Some([x["wins"].as_u64()?, x["draws"].as_u64()?, x["losses"].as_u64()?]);
    for f in files {
        let Ok(v) = serde_json::from_str::<Value>(&std::fs::read_to_string(&f).unwrap_or_default()) else { continue };
        let summaries: Vec<&Value> = match v.get("matches").and_then(Value::as_object) {
            Some(m) => m.values().collect(),
            None => vec![&v],
        };
        for s in summaries {
            for a in s["agents"].as_array().into_iter().flatten().filter_map(wdl) {
                out.insert(phrase(a));
            }
            for p in s["pairwise"].as_array().into_iter().flatten().filter_map(wdl) {
                out.insert(phrase(p));
                out.insert(phrase([p[2], p[1], p[0]]));
            }
        }
    }
    out.remove("NaN% [NaN, NaN]");
    out
}

/// Whether the figure at `end` (just past its `]`) carries the mark `°`, bold or not.
fn marked(text: &str, end: usize) -> bool {
    text[end..].trim_start_matches('*').starts_with('°')
}

/// Every interval a page quotes is checked: a claim on that page, a figure some raw arena
/// summary gives, or marked `°` (not recomputed: pooled by hand, from game records or a
/// training run's evaluations) on a page that says what the mark means. The README's must all
/// be claims.
#[test]
fn every_figure_on_every_page_is_a_claim_a_raw_result_or_marked() {
    let raw = raw_figures();
    let mut pages = vec![root().join("README.md"), root().join("models/README.md")];
    files_under(&root().join("docs"), ".md", &mut pages);
    files_under(&root().join("experiments"), ".md", &mut pages);
    let claims = claims();
    let mut unchecked = Vec::new();
    let mut counts = [0usize; 3];
    for path in &pages {
        let page = path.strip_prefix(root()).unwrap().to_string_lossy().replace('\\', "/");
        let page = page.trim_start_matches("./").to_string();
        let body = prose(&std::fs::read_to_string(path).unwrap());
        let claimed: Vec<String> = claims
            .iter()
            .filter(|c| c["quoted"].as_array().into_iter().flatten().any(|p| p.as_str() == Some(page.as_str())))
            .map(|c| {
                format!(
                    "{}% [{}, {}]",
                    c["score"].as_str().unwrap_or_default(),
                    c["interval"][0].as_str().unwrap_or_default(),
                    c["interval"][1].as_str().unwrap_or_default()
                )
            })
            .collect();
        let legend = body.lines().any(|l| l.starts_with("° "));
        let mut from = 0;
        for figure in figures(&body) {
            let at = from + body[from..].find(&figure).unwrap();
            from = at + figure.len();
            if claimed.contains(&figure) {
                counts[0] += 1;
            } else if page != "README.md" && raw.contains(&figure) {
                counts[1] += 1;
            } else if page != "README.md" && marked(&body, from) && legend {
                counts[2] += 1;
            } else {
                unchecked.push(format!("{page}: {figure}"));
            }
        }
    }
    assert!(
        unchecked.is_empty(),
        "{} figures neither claimed, nor given by a raw summary, nor marked ° with the page's legend (claims {}, raw {}, marked {}):\n{}",
        unchecked.len(),
        counts[0],
        counts[1],
        counts[2],
        unchecked.join("\n")
    );
    assert!(counts[0] >= 19 && counts[1] > 300, "{counts:?}");
}
