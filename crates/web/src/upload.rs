//! Opening a replay. Small requests are JSON (a file the server was started with, a kept game,
//! or a few records inline); a records file is uploaded as it is, JSON lines
//! (`Content-Type: application/x-ndjson`), and read as it streams: its memory is reserved from
//! the client's share before a byte is read (the declared length, or the cap when none is
//! given), only the line asked for is kept, and the cap is checked as the bytes arrive.

use crate::routes::{json_body, stored_record};
use crate::{ApiError, App, MAX_BODY, MAX_RECORDS_BODY, Peer, Shared, random_token};
use axum::body::Body;
use axum::extract::{Extension, Query, Request};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use http_body_util::BodyExt;
use meeple_arena::records;
use meeple_game::GameRecord;
use serde_json::json;
use std::collections::HashMap;

/// Whether a content type is JSON lines.
pub(crate) fn is_lines(content_type: &str) -> bool {
    let t = content_type.split(';').next().unwrap_or("").trim();
    ["application/x-ndjson", "application/jsonl", "application/x-jsonlines"].iter().any(|k| t.eq_ignore_ascii_case(k))
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ReplayRequest {
    /// A few records as text (JSON lines) within the 64 KiB of a command, or
    records: Option<String>,
    /// the number of a file the server was started with (`GET /api/records`), or
    file: Option<usize>,
    /// a finished game the server keeps (`GET /api/games`).
    game: Option<String>,
    /// Which game of the records (0 = the first).
    #[serde(default)]
    index: usize,
}

/// The `index`-th game of records text: lines are counted, only the one asked for is read.
fn pick_record(text: &str, index: usize, max_plies: usize) -> Result<(GameRecord, usize), ApiError> {
    let lines: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    let count = lines.len();
    let line = lines.get(index).copied().ok_or_else(|| beyond(index, count))?;
    Ok((parse(line, index, max_plies)?, count))
}

fn beyond(index: usize, count: usize) -> ApiError {
    if count == 0 {
        ApiError::bad("the records hold no game")
    } else {
        ApiError::bad(format!("index {index} is beyond the {count} games in these records"))
    }
}

/// Commas a record line may hold beyond one per ply (agent specs, scores, figures).
const OTHER_COMMAS: usize = 4096;

fn parse(line: &str, index: usize, max_plies: usize) -> Result<GameRecord, ApiError> {
    // A record becomes a string per ply once read, ten times or more the bytes of its line: a
    // game longer than this server replays is refused by counting before it is read (a 12 MB
    // line of two million plies took about 60 MB each, past the memory budget).
    let commas = line.bytes().filter(|&b| b == b',').count();
    if commas > max_plies + OTHER_COMMAS {
        return Err(ApiError::unprocessable(format!(
            "the records, game {}: about {commas} plies; this server replays games of at most {max_plies}",
            index + 1
        )));
    }
    records::parse_line(line, true)
        .map(|e| e.into_record())
        .map_err(|e| ApiError::unprocessable(format!("the records, game {}: {e}", index + 1)))
}

/// Reads an upload of JSON lines as it streams, keeping game `index` (blank lines do not
/// count); gives it and how many games the upload holds.
async fn read_lines(app: &App, mut body: Body, index: usize) -> Result<(GameRecord, usize), ApiError> {
    struct Lines {
        index: usize,
        /// Games (non-blank lines) finished so far.
        count: usize,
        /// Whether the line being read has anything but spaces.
        filled: bool,
        /// The line being read, kept only while it may be the one asked for.
        current: Vec<u8>,
        chosen: Option<Vec<u8>>,
        /// Commas of the line asked for so far, and the most a replayable game has: past it
        /// the line is not kept, and the upload is refused as it arrives.
        commas: usize,
        limit: usize,
    }
    impl Lines {
        fn push(&mut self, part: &[u8]) {
            self.filled |= part.iter().any(|b| !b.is_ascii_whitespace());
            if self.count == self.index && self.chosen.is_none() && self.commas <= self.limit {
                self.commas += part.iter().filter(|&&b| b == b',').count();
                if self.commas <= self.limit {
                    self.current.extend_from_slice(part);
                } else {
                    self.current = Vec::new();
                }
            }
        }
        fn end(&mut self) {
            if self.filled {
                if self.count == self.index {
                    self.chosen = Some(std::mem::take(&mut self.current));
                }
                self.count += 1;
            }
            self.current.clear();
            self.filled = false;
        }
    }
    let max_plies = app.config.max_plies;
    let mut lines = Lines {
        index,
        count: 0,
        filled: false,
        current: Vec::new(),
        chosen: None,
        commas: 0,
        limit: max_plies + OTHER_COMMAS,
    };
    let mut total = 0usize;
    let read = async {
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|_| ApiError::bad("the upload was cut off"))?;
            let Ok(data) = frame.into_data() else { continue };
            total += data.len();
            if total > MAX_RECORDS_BODY {
                return Err(ApiError::too_large(format!("the records are larger than {} MB", MAX_RECORDS_BODY >> 20)));
            }
            for part in data.split_inclusive(|&b| b == b'\n') {
                match part.strip_suffix(b"\n") {
                    Some(rest) => {
                        lines.push(rest);
                        lines.end();
                    }
                    None => lines.push(part),
                }
            }
            if lines.commas > lines.limit {
                return Err(ApiError::unprocessable(format!(
                    "the records, game {}: more than {} plies; this server replays games of at most {max_plies}",
                    index + 1,
                    lines.limit
                )));
            }
        }
        lines.end();
        Ok::<(), ApiError>(())
    };
    tokio::time::timeout(app.config.body_timeout, read).await.map_err(|_| {
        ApiError::timeout(format!("the records did not arrive within {} s", app.config.body_timeout.as_secs()))
    })??;
    let chosen = lines.chosen.ok_or_else(|| beyond(index, lines.count))?;
    let text = std::str::from_utf8(&chosen)
        .map_err(|_| ApiError::bad(format!("the records, game {}: not UTF-8 text", index + 1)))?;
    Ok((parse(text.trim(), index, app.config.max_plies)?, lines.count))
}

/// `POST /api/replays`: a records upload (JSON lines, `?index=N`), or JSON `{file}`, `{game}`
/// or `{records}` with `index`.
pub(crate) async fn open_replay(
    axum::extract::State(app): Shared,
    peer: Option<Extension<Peer>>,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
    request: Request,
) -> Result<Response, ApiError> {
    let client = app.caller(peer, &headers);
    let content_type = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    let (record, count, reading) = if is_lines(content_type) {
        let index = match query.get("index") {
            None => 0,
            Some(v) => {
                v.trim().parse::<usize>().map_err(|_| ApiError::bad(format!("index '{v}' is not a game number")))?
            }
        };
        let declared = headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok());
        if declared.is_some_and(|n| n > MAX_RECORDS_BODY as u64) {
            return Err(ApiError::too_large(format!("the records are larger than {} MB", MAX_RECORDS_BODY >> 20)));
        }
        // Budget before bytes: what the upload may hold while it is read.
        let reading =
            app.budget.reserve(declared.unwrap_or(MAX_RECORDS_BODY as u64), "the uploaded records", client)?;
        let (record, count) = read_lines(&app, request.into_body(), index).await?;
        (record, count, Some(reading))
    } else {
        if !query.is_empty() {
            return Err(ApiError::bad("a JSON replay request gives its index in the body, not the address"));
        }
        let body = axum::body::to_bytes(request.into_body(), MAX_BODY)
            .await
            .map_err(|_| ApiError::too_large(format!("a JSON replay request is at most {} KB; upload a records file as JSON lines (Content-Type: application/x-ndjson)", MAX_BODY >> 10)))?;
        let req: ReplayRequest = json_body(
            &body,
            "a replay ({\"file\": N} or {\"game\": ID} or {\"records\": TEXT}, and \"index\"; a records file is uploaded as JSON lines)",
        )?;
        let (record, count) = match (req.records, req.file, req.game) {
            (Some(t), None, None) => pick_record(&t, req.index, app.config.max_plies)?,
            (None, Some(k), None) => {
                let path = app.config.records.get(k).cloned().ok_or_else(|| {
                    ApiError::not_found(format!("no records file {k}: the server has {}", app.config.records.len()))
                })?;
                let reading = app.budget.reserve(2 * MAX_RECORDS_BODY as u64, "a records file", client)?;
                let text = tokio::task::spawn_blocking(move || read_capped(&path))
                    .await
                    .map_err(|e| ApiError::bad(e.to_string()))??;
                let picked = pick_record(&text, req.index, app.config.max_plies)?;
                drop(reading);
                picked
            }
            (None, None, Some(id)) => pick_record(&stored_record(&app, &id).await?, req.index, app.config.max_plies)?,
            _ => {
                return Err(ApiError::bad(
                    "give one of \"records\" (a few records' text), \"file\" (a served file's number) or \"game\" (a kept game's id); upload a records file as JSON lines",
                ));
            }
        };
        (record, count, None)
    };
    let slot = app.slot(client)?;
    let max_plies = app.config.max_plies;
    let bytes = meeple_games::with_game!(record.game.as_str(), |g| app.config.match_bytes(&g))?;
    drop(reading);
    let memory = app.budget.reserve(bytes, "a replay", client)?;
    let owner = random_token();
    let given = owner.clone();
    let session = tokio::task::spawn_blocking(move || crate::session::open_replay(&record, max_plies, given, false))
        .await
        .map_err(|e| ApiError::bad(e.to_string()))??;
    let plies = session.ply();
    let id = random_token();
    app.insert(id.clone(), session, client, memory, false);
    drop(slot);
    Ok((
        StatusCode::CREATED,
        axum::Json(json!({ "id": id, "url": format!("/m/{id}"), "owner": owner, "plies": plies, "games": count })),
    )
        .into_response())
}

fn read_capped(path: &std::path::Path) -> Result<String, ApiError> {
    // The operator named this file at start-up; its name is shown, the system's message is not.
    let name = path.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
    meeple_game::limits::read_text(path, MAX_RECORDS_BODY as u64, "records file")
        .map_err(|_| ApiError::unprocessable(format!("records file '{name}' cannot be read, or is over 16 MB")))
}
