//! The page in a real browser: Debian's Chromium driven by playwright-core (npm) plays every game
//! to its end by clicking, takes a move back, replays a record with the arrow keys and
//! screenshots each board into `target/web-shots/`. Chromium and npm must be installed (`.ci/run`
//! installs them); the test fails, not skips, without them.

use std::path::{Path, PathBuf};
use std::process::Command;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// playwright-core, installed once into `target/web-node` from the pinned package.json.
fn playwright() -> PathBuf {
    let root = workspace();
    let dir = root.join("target/web-node");
    let module = dir.join("node_modules/playwright-core");
    let spec = root.join("crates/web/tests/browser/package.json");
    let stamp = dir.join("package.json");
    let fresh = std::fs::read(&stamp).ok() == std::fs::read(&spec).ok();
    if !(module.is_dir() && fresh) {
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(&spec, &stamp).unwrap();
        let status = Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--prefix"])
            .arg(&dir)
            .status()
            .expect("npm is needed for the browser tests (Debian: apt-get install npm)");
        assert!(status.success(), "npm install of playwright-core failed");
    }
    module
}

fn chromium() -> PathBuf {
    let path = std::env::var_os("CHROMIUM").map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from);
    assert!(path.exists(), "Chromium is needed for the browser tests: apt-get install chromium (or set CHROMIUM=PATH)");
    path
}

#[test]
fn every_game_is_played_by_clicking_in_chromium() {
    let module = playwright();
    let browser = chromium();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let addr = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, meeple_web::router(meeple_web::Config::default())).await });
        addr
    });
    let shots = workspace().join("target/web-shots");
    let out = Command::new("node")
        .arg(workspace().join("crates/web/tests/browser/play.cjs"))
        .arg(format!("http://{addr}"))
        .arg(&shots)
        .env("PLAYWRIGHT_CORE", &module)
        .env("CHROMIUM", &browser)
        .output()
        .expect("node is needed for the browser tests");
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "browser run failed:\n{stdout}");
    for game in ["tictactoe", "connect4", "santorini", "cathedral", "sagrada", "catan"] {
        let line = stdout
            .lines()
            .find(|l| l.contains(&format!("\"game\":\"{game}\"")))
            .unwrap_or_else(|| panic!("{game} did not run"));
        let report: serde_json::Value = serde_json::from_str(line).unwrap();
        assert!(report["result"].as_str().unwrap().starts_with("Game over"), "{line}");
        assert!(report["replayed"].as_u64().unwrap() > 0, "{line}");
        assert!(shots.join(format!("{game}.png")).exists());
    }
}
