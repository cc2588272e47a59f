//! The page in a real browser: Debian's Chromium driven by playwright-core (npm) plays every game
//! to its end by clicking, takes a move back, replays a record with the arrow keys and
//! screenshots each board into `target/web-shots/`. It needs Chromium, node and npm (`.ci/run`
//! installs them and sets `MEEPLE_FULL_TESTS=1`, under which their absence is a failure);
//! without them and without that variable the test says so and passes, so that `cargo test
//! --workspace` works on a machine with only the toolchain.

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

/// A server on `port` (0: any) in its own runtime, keeping games in `data`; dropping the runtime
/// stops it as a kill would (no shutdown step runs).
fn start(port: u16, data: &Path) -> (tokio::runtime::Runtime, std::net::SocketAddr) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    // Every page here comes from this machine, one client: its share is the whole server.
    let config = meeple_web::Config {
        data_dir: Some(data.to_path_buf()),
        max_matches_per_client: 100,
        ..meeple_web::Config::default()
    };
    let (tx, rx) = std::sync::mpsc::channel();
    runtime.spawn(async move {
        meeple_web::serve("127.0.0.1", port, config, move |a| tx.send(a).unwrap()).await.unwrap();
    });
    let addr = rx.recv_timeout(std::time::Duration::from_secs(30)).expect("the server starts");
    (runtime, addr)
}

/// Whether the tools the browser test needs are here; where not, and not required, it is skipped
/// with a line saying how to run it.
fn tools_present() -> bool {
    let have = |tool: &str| Command::new(tool).arg("--version").output().is_ok_and(|o| o.status.success());
    let chromium = std::env::var_os("CHROMIUM").map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from);
    let missing: Vec<&str> = [("chromium", chromium.exists()), ("node", have("node")), ("npm", have("npm"))]
        .into_iter()
        .filter_map(|(name, here)| (!here).then_some(name))
        .collect();
    if missing.is_empty() || std::env::var_os("MEEPLE_FULL_TESTS").is_some() {
        return true;
    }
    // Written past the test harness's capture, so a passing run still says what it left out.
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "skipping the browser test: {} missing (Debian: apt-get install chromium nodejs npm; `.ci/run` installs them and requires them)",
        missing.join(", ")
    );
    false
}

#[test]
fn every_game_is_played_by_clicking_in_chromium() {
    use std::io::{BufRead, Write};
    if !tools_present() {
        return;
    }
    let module = playwright();
    let browser = chromium();
    let data = std::env::temp_dir().join(format!("meeple-browser-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&data);
    let (mut server, addr) = start(0, &data);
    let shots = workspace().join("target/web-shots");
    let mut node = Command::new("node")
        .arg(workspace().join("crates/web/tests/browser/play.cjs"))
        .arg(format!("http://localhost:{}", addr.port()))
        .arg(&shots)
        .env("PLAYWRIGHT_CORE", &module)
        .env("CHROMIUM", &browser)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("node is needed for the browser tests");
    let mut stdin = node.stdin.take().unwrap();
    let mut stdout = String::new();
    for line in std::io::BufReader::new(node.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        println!("{line}");
        if line == "RESTART" {
            // Stop the server at once and start another on the same port and data directory.
            server.shutdown_background();
            std::thread::sleep(std::time::Duration::from_millis(200));
            server = start(addr.port(), &data).0;
            writeln!(stdin, "ok").unwrap();
            continue;
        }
        stdout.push_str(&line);
        stdout.push('\n');
    }
    let status = node.wait().unwrap();
    drop(server);
    let _ = std::fs::remove_dir_all(&data);
    assert!(status.success(), "browser run failed:\n{stdout}");
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
    for check in [
        "front",
        "variants",
        "two-players",
        "hot-seat",
        "big-seed",
        "turn-notice",
        "resign",
        "pace",
        "phone-catan",
        "analysis",
        "last-turn",
        "secrets",
        "catan-trades-hot",
        "catan-trades-join",
        "santorini-gods-hot",
        "santorini-gods-join",
        "god-steps",
        "sagrada-marker",
        "restart",
    ] {
        let line = stdout
            .lines()
            .find(|l| l.contains(&format!("\"check\":\"{check}\"")))
            .unwrap_or_else(|| panic!("{check} did not run"));
        let report: serde_json::Value = serde_json::from_str(line).unwrap();
        assert!(report["error"].is_null(), "{line}");
    }
}
