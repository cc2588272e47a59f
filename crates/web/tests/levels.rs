//! The front page's levels against the computer: every game has them, every level's agent is
//! built as the page would ask for it, each level was measured against the level below, and
//! every figure the page states is recomputed here from the raw arena JSON of that match
//! (`experiments/web-levels/`), so a figure that does not match its file fails.

use meeple_game::Game;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

fn levels() -> Value {
    serde_json::from_str(&std::fs::read_to_string(workspace().join("crates/web/static/levels.json")).unwrap()).unwrap()
}

/// The 95% Wilson interval of a score over `n` games, as the arena gives it.
fn wilson(score: f64, n: f64) -> (f64, f64) {
    let z = 1.959963984540054f64;
    let centre = (score + z * z / (2.0 * n)) / (1.0 + z * z / n);
    let half = z * (score * (1.0 - score) / n + z * z / (4.0 * n * n)).sqrt() / (1.0 + z * z / n);
    (centre - half, centre + half)
}

fn agent<'a>(result: &'a Value, name: &str) -> &'a Value {
    result["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == name || a["name"] == format!("{name}#1"))
        .unwrap_or_else(|| panic!("no agent {name} in the match"))
}

/// Whether `stated` is `x` as written to one decimal (half a tenth either way).
fn to_a_tenth(stated: f64, x: f64) -> bool {
    (stated - x).abs() <= 0.05 + 1e-9
}

/// Whether `stated` is a time `x` as written to two figures.
fn to_two_figures(stated: f64, x: f64) -> bool {
    (stated - x).abs() <= (x.abs() * 0.05).max(0.5e-3)
}

/// Builds a level's agent in the game `spec` as the page asks for it: files only from the
/// shipped models.
fn build(spec: &str, level: &Value) {
    let models = workspace().join("models");
    let agent = level["agent"].as_str().unwrap();
    meeple_games::with_game!(spec, |g| {
        meeple_game::access::restricted(std::slice::from_ref(&models), || meeple_learn::make_agent(&g, agent, 1))
            .unwrap_or_else(|e| panic!("{spec}, level {}: {e}", level["name"]));
    })
    .unwrap_or_else(|e| panic!("{spec}: {e}"));
}

/// Builds every level's agent in the game `spec` as the page asks for it (files only from the
/// shipped models), and checks each measured level's figures against its match's raw JSON;
/// `measured` says every level above the first must have been measured in this setting.
fn check_levels(game: &str, spec: &str, levels: &[Value], measured: bool) {
    let canonical = meeple_games::with_game!(spec, |g| g.spec().to_string()).unwrap();
    for (k, level) in levels.iter().enumerate() {
        let name = level["name"].as_str().unwrap();
        let spec_of_agent = level["agent"].as_str().unwrap();
        build(spec, level);
        if k == 0 {
            assert!(level["measured"].is_null(), "{game}: the first level is the baseline");
            continue;
        }
        let m = &level["measured"];
        if m.is_null() && !measured {
            continue;
        }
        assert!(m.is_object(), "{game} {name}: every level above the first is measured");
        // The match measured this level's agent (models named by their shipped path) against
        // the level below's.
        assert_eq!(m["as"].as_str().unwrap().replace("models/", ""), spec_of_agent, "{game} {name}");
        assert_eq!(
            m["against"].as_str().unwrap().replace("models/", ""),
            levels[k - 1]["agent"].as_str().unwrap(),
            "{game} {name}"
        );
        let file = workspace().join(format!("experiments/web-levels/{}.json", m["file"].as_str().unwrap()));
        let result: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        let played = meeple_games::with_game!(result["game"].as_str().unwrap(), |g| g.spec().to_string()).unwrap();
        assert_eq!(played, canonical, "{game} {name}: the match was of the game the page plays");
        let me = agent(&result, m["as"].as_str().unwrap());
        let them = agent(&result, m["against"].as_str().unwrap());
        let (w, d, l) = (me["wins"].as_f64().unwrap(), me["draws"].as_f64().unwrap(), me["losses"].as_f64().unwrap());
        let n = w + d + l;
        let score = (w + d / 2.0) / n;
        let (lo, hi) = wilson(score, n);
        assert_eq!(m["games"].as_f64().unwrap(), n, "{game} {name}");
        let stated = m["score"].as_f64().unwrap();
        assert!(to_a_tenth(stated, 100.0 * score), "{game} {name}: the score {stated}, not {}", 100.0 * score);
        let ci: Vec<f64> = m["ci"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
        assert!(
            to_a_tenth(ci[0], 100.0 * lo) && to_a_tenth(ci[1], 100.0 * hi),
            "{game} {name}: the interval {ci:?}, not [{}, {}]",
            100.0 * lo,
            100.0 * hi
        );
        let ms: Vec<f64> = m["ms"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
        let (mine, theirs) = (me["mean_move_ms"].as_f64().unwrap(), them["mean_move_ms"].as_f64().unwrap());
        assert!(
            to_two_figures(ms[0], mine) && to_two_figures(ms[1], theirs),
            "{game} {name}: the times {ms:?}, not [{mine}, {theirs}]"
        );
        // The words the page shows carry those figures.
        let strength = level["strength"].as_str().unwrap();
        for figure in [format!("{stated:.1}%"), format!("[{:.1}, {:.1}]", ci[0], ci[1]), format!("{n}")] {
            assert!(strength.contains(&figure), "{game} {name}: '{strength}' lacks {figure}");
        }
        // Stronger than the level below: the interval's lower end above an equal seat.
        let seats = result["agents"].as_array().unwrap().len() as f64;
        assert!(lo > 1.0 / seats, "{game} {name}: {strength}");
    }
}

#[test]
fn every_level_is_built_and_measured_against_the_one_below() {
    let all = levels();
    for info in meeple_games::GAMES {
        let entry = &all["games"][info.name];
        let levels = entry["levels"].as_array().unwrap_or_else(|| panic!("{}: no levels", info.name));
        assert!(levels.len() >= 3, "{}: at least three levels", info.name);
        assert!(!entry["blurb"].as_str().unwrap_or("").is_empty(), "{}: a line on how it plays", info.name);
        check_levels(info.name, entry["spec"].as_str().unwrap(), levels, true);
    }
}

/// The variants the front page offers: each a setting of its game, named, with levels of its
/// own (measured where they say so) or the game's levels, which must then play in it too; a
/// variant whose gods (or other part) are picked at the table plays with every pick.
#[test]
fn every_variant_plays_its_levels() {
    let all = levels();
    let mut seen = 0;
    for info in meeple_games::GAMES {
        let entry = &all["games"][info.name];
        let Some(variants) = entry["variants"].as_array() else { continue };
        assert!(entry["variant"].is_string(), "{}: the game's own setting is named beside its variants", info.name);
        let mut names = vec![entry["variant"].as_str().unwrap()];
        for v in variants {
            let name = v["name"].as_str().unwrap();
            assert!(!names.contains(&name), "{}: two variants called {name}", info.name);
            names.push(name);
            assert!(!v["about"].as_str().unwrap_or("").is_empty(), "{} {name}: a line on what changes", info.name);
            let spec = v["spec"].as_str().unwrap();
            let levels = match v["levels"].as_array() {
                Some(own) => {
                    check_levels(info.name, spec, own, false);
                    own
                }
                // The game's levels, measured in its own setting: they must play here too.
                None => {
                    let levels = entry["levels"].as_array().unwrap();
                    levels.iter().for_each(|level| build(spec, level));
                    levels
                }
            };
            if let Some(pick) = v["pick"].as_object() {
                // Every name offered, for each seat, makes a game its levels play.
                let from: Vec<&str> = pick["from"].as_array().unwrap().iter().map(|x| x.as_str().unwrap()).collect();
                let param = pick["param"].as_str().unwrap();
                for (i, a) in from.iter().enumerate() {
                    let b = from[(i + 1) % from.len()];
                    let picked = format!("{spec},{param}={a}+{b}").replace(&format!("{param}=random,"), "");
                    let picked = picked.replace(&format!(",{param}=random"), "");
                    levels.iter().for_each(|level| build(&picked, level));
                }
            }
            seen += 1;
        }
    }
    assert!(seen >= 3, "the front page offers variants");
}
