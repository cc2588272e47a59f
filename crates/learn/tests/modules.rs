//! The learning crate's modules depend one way: the loop (`run`) knows no learner, the trainer
//! table (`trainers`) knows them all, and no chain of `crate::` uses inside the crate comes back
//! to where it started (comments and tests aside).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Each top-level module and the modules its code (not its comments or tests) names by `crate::`.
fn uses() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut stack = vec![src.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let rel = path.strip_prefix(&src).unwrap().to_string_lossy().replace('\\', "/");
            // A module's unit tests in a file of their own are tests too.
            if rel.ends_with("/tests.rs") || rel.ends_with("_tests.rs") {
                continue;
            }
            let module = rel.trim_end_matches(".rs").split('/').next().unwrap().to_string();
            let text = std::fs::read_to_string(&path).unwrap();
            let code = text.split("#[cfg(test)]").next().unwrap();
            let set = out.entry(module.clone()).or_default();
            for line in code.lines().filter(|l| !l.trim_start().starts_with("//")) {
                for (i, _) in line.match_indices("crate::") {
                    let name: String =
                        line[i + 7..].chars().take_while(|c| c.is_ascii_lowercase() || *c == '_').collect();
                    if name != module && !name.is_empty() {
                        set.insert(name);
                    }
                }
            }
        }
    }
    let known: BTreeSet<String> = out.keys().cloned().collect();
    out.values_mut().for_each(|s| s.retain(|m| known.contains(m)));
    out
}

/// A chain of uses from `from` back to itself, if any.
fn circle(graph: &BTreeMap<String, BTreeSet<String>>, from: &str) -> Option<Vec<String>> {
    let mut stack = vec![(from.to_string(), vec![from.to_string()])];
    let mut seen = BTreeSet::new();
    while let Some((at, path)) = stack.pop() {
        for next in &graph[&at] {
            if next == from {
                return Some([path.clone(), vec![next.clone()]].concat());
            }
            if seen.insert(next.clone()) {
                stack.push((next.clone(), [path.clone(), vec![next.clone()]].concat()));
            }
        }
    }
    None
}

#[test]
fn the_loop_knows_no_learner_and_no_module_comes_back_to_itself() {
    let graph = uses();
    let learners = ["az", "td", "value", "dqn", "ppo", "vae", "strap", "trainers", "agents"];
    let run = &graph["run"];
    assert!(learners.iter().all(|l| !run.contains(*l)), "the loop (run/) uses {run:?}");
    for module in graph.keys() {
        assert_eq!(circle(&graph, module), None, "a circle of uses inside meeple-learn");
    }
    // The check can fail: a use from the loop back to a learner is a circle.
    let mut broken = graph.clone();
    broken.get_mut("run").unwrap().insert("td".into());
    assert!(circle(&broken, "run").is_some());
}
