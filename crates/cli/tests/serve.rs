//! `meeple serve` as a process: a game in progress survives `kill -9` and a restart on the same
//! data directory, and the server warns when it listens beyond this machine.

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn meeple() -> Command {
    Command::new(env!("CARGO_BIN_EXE_meeple"))
}

/// A server process that is killed when dropped, so a failing assertion leaves none behind.
struct Server(Child);

impl Server {
    fn kill(&mut self) -> std::io::Result<()> {
        self.0.kill()
    }

    fn wait(&mut self) -> std::io::Result<std::process::ExitStatus> {
        self.0.wait()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `meeple serve` on a free port; gives the server and its port once it listens.
fn serve(data: &std::path::Path) -> (Server, u16) {
    let mut child = meeple()
        .args(["serve", "--port", "0", "--data-dir"])
        .arg(data)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let port = loop {
        let line = lines.next().expect("the server says where it serves").unwrap();
        if let Some(rest) = line.strip_prefix("meeple is serving at http://127.0.0.1:") {
            break rest.split('/').next().unwrap().parse().unwrap();
        }
    };
    (Server(child), port)
}

/// One HTTP/1.1 request; the status and the JSON body.
fn http(port: u16, method: &str, path: &str, token: Option<&str>, body: Option<Value>) -> (u16, Value) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: localhost:{port}\r\nConnection: close\r\n");
    if let Some(t) = token {
        req += &format!("X-Meeple-Token: {t}\r\n");
    }
    if !body.is_empty() {
        req += &format!("Content-Type: application/json\r\nContent-Length: {}\r\n", body.len());
    }
    req += "\r\n";
    req += &body;
    s.write_all(req.as_bytes()).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let status = out[9..12].parse().unwrap();
    let text = out.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    // Bodies come whole or chunked; the JSON is the part between the first '{' and the last '}'.
    let json = match (text.find('{'), text.rfind('}')) {
        (Some(a), Some(b)) => serde_json::from_str(&text[a..=b]).unwrap_or(Value::Null),
        _ => Value::Null,
    };
    (status, json)
}

#[test]
fn a_game_in_progress_survives_kill_9_and_a_restart() {
    let data = std::env::temp_dir().join(format!("meeple-serve-kill-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&data);
    let (mut server, port) = serve(&data);
    let (status, made) = http(
        port,
        "POST",
        "/api/matches",
        None,
        Some(json!({ "game": "connect4", "seats": ["human", "first"], "move_time_ms": 50 })),
    );
    assert_eq!(status, 201, "{made}");
    let id = made["id"].as_str().unwrap().to_string();
    let token = made["seats"][0]["token"].as_str().unwrap().to_string();
    let snapshot = |port: u16| http(port, "GET", &format!("/api/matches/{id}"), Some(&token), None);
    let wait_for = |port: u16, ply: u64| {
        let start = Instant::now();
        loop {
            let (status, snap) = snapshot(port);
            assert_eq!(status, 200, "{snap}");
            if snap["ply"] == ply && !snap["legal"].as_array().unwrap().is_empty() {
                return snap;
            }
            assert!(start.elapsed() < Duration::from_secs(30), "{snap}");
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    for (ply, column) in [(0, "4"), (2, "3")] {
        let (status, body) = http(
            port,
            "POST",
            &format!("/api/matches/{id}/moves"),
            Some(&token),
            Some(json!({ "ply": ply, "action": column })),
        );
        assert_eq!(status, 200, "{body}");
        wait_for(port, ply + 2);
    }
    let before = wait_for(port, 4);
    // No goodbye: the process is killed outright.
    server.kill().unwrap();
    server.wait().unwrap();
    let (mut server, port) = serve(&data);
    let after = wait_for(port, 4);
    assert_eq!(after["view"], before["view"]);
    assert_eq!(after["log"], before["log"]);
    let (status, body) =
        http(port, "POST", &format!("/api/matches/{id}/moves"), Some(&token), Some(json!({ "ply": 4, "action": "5" })));
    assert_eq!(status, 200, "the game goes on: {body}");
    wait_for(port, 6);
    server.kill().unwrap();
    server.wait().unwrap();
    std::fs::remove_dir_all(&data).unwrap();
}

/// Starts `meeple serve` with `args` on `data`, reads the first line it writes to stderr, and
/// stops it.
fn first_error_line(args: &[&str], data: &std::path::Path) -> String {
    let mut child = Server(
        meeple()
            .args(["serve", "--port", "0"])
            .args(args)
            .arg("--data-dir")
            .arg(data)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut err = BufReader::new(child.0.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    line
}

#[test]
fn listening_beyond_this_machine_is_warned_about() {
    let data = std::env::temp_dir().join(format!("meeple-serve-warn-{}", std::process::id()));
    let line = first_error_line(&["--host", "0.0.0.0"], &data);
    let _ = std::fs::remove_dir_all(&data);
    assert!(line.starts_with("warning: meeple is listening on 0.0.0.0"), "{line}");
    assert!(line.contains("--allow-host"), "{line}");
}

#[test]
fn options_that_would_do_nothing_or_contradict_are_refused() {
    for (args, says) in [
        (vec!["--trusted-proxy", "127.0.0.1"], "has no effect without --client-header"),
        (vec!["--client-header", "X Forwarded"], "is not a header name"),
        (vec!["--memory-budget", "100mb", "--client-memory", "200mb"], "more than the memory budget"),
    ] {
        let out = meeple().args(["serve", "--no-store", "--port", "0"]).args(&args).output().unwrap();
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

#[test]
fn a_damaged_store_is_refused_with_what_to_do_and_can_be_moved_aside() {
    let data = std::env::temp_dir().join(format!("meeple-serve-damaged-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&data);
    std::fs::create_dir_all(&data).unwrap();
    let file = data.join("meeple-web.sqlite");
    std::fs::write(&file, vec![0x5a; 64 * 1024]).unwrap();
    let out = meeple().args(["serve", "--port", "0", "--data-dir"]).arg(&data).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("is damaged") && err.contains("--move-damaged-store"), "{err}");
    assert!(err.contains(&file.display().to_string()), "{err}");
    // Moved aside, the server starts on a fresh store; the damaged file is kept.
    let line = first_error_line(&["--move-damaged-store"], &data);
    assert!(line.contains("moved aside"), "{line}");
    let aside = std::fs::read_dir(&data)
        .unwrap()
        .filter_map(|e| e.ok())
        .any(|e| e.file_name().to_string_lossy().starts_with("meeple-web.sqlite.damaged-"));
    assert!(aside, "the damaged file is kept beside the new one");
    std::fs::remove_dir_all(&data).unwrap();
}
