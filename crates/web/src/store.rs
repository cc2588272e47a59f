//! Games kept on disk: one SQLite file under the data directory. A change to a match in progress
//! is committed before the match shows it (the server applies it only once this store says it is
//! written), so what a client saw is what a restart resumes. Finished games keep their record
//! and a small summary row for the list of past games. One thread owns the writing connection
//! and does every write in order; reads (the list of past games, a record, a match opened again)
//! go to read-only connections of their own, so a flood of reads never holds up a move.
//!
//! At start the store checks what it is given: a directory it cannot write, or a file that is
//! damaged, is refused with what to do; rows that cannot be resumed are pruned, and so are
//! finished games beyond the retention settings.

use crate::session::{Stored, Write};
use meeple_game::Action;
use rusqlite::{Connection, ErrorCode, OpenFlags, OptionalExtension, params};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;
use tokio::sync::{Semaphore, oneshot};

/// The database file inside the data directory.
pub const FILE: &str = "meeple-web.sqlite";
/// The schema this code writes (`PRAGMA user_version`).
const SCHEMA: i64 = 2;
/// Read connections at once.
const READERS: usize = 2;
/// Rows pruned in one transaction, so pruning never holds the writer for long.
const PRUNE_BATCH: i64 = 500;

type Work = Box<dyn FnOnce(&mut Connection) + Send>;

/// What the store keeps, and how it meets trouble.
#[derive(Clone, Debug)]
pub struct Options {
    /// Finished games kept; the oldest go beyond it.
    pub keep_games: usize,
    /// Finished games, and matches in progress nobody has played, are kept this long (`None`:
    /// no limit by age).
    pub keep_days: Option<u32>,
    /// How long a write waits for a database another program holds locked before it fails.
    pub busy: Duration,
    /// A damaged file is moved aside (renamed, nothing deleted) and a fresh one started,
    /// instead of refusing to start.
    pub move_damaged: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options { keep_games: 5_000, keep_days: Some(180), busy: Duration::from_secs(5), move_damaged: false }
    }
}

/// A handle on the store.
#[derive(Clone)]
pub struct Store {
    work: mpsc::Sender<Work>,
    path: PathBuf,
    options: Options,
    readers: Arc<Readers>,
    /// Bumped whenever the list of finished games changes (a game ends, games are pruned).
    generation: Arc<AtomicU64>,
}

struct Readers {
    path: PathBuf,
    busy: Duration,
    idle: Mutex<Vec<Connection>>,
    gate: Semaphore,
}

/// A match in progress as the store has it.
pub struct LiveRow {
    pub id: String,
    pub stored: Stored,
    pub moves: Vec<(Action, Option<f32>)>,
}

/// A match the store has, looked up by id.
pub enum Kept {
    Live(LiveRow),
    /// A finished game's record.
    Over(String),
    /// A row that cannot be resumed, and why.
    Broken(String),
}

fn now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64)
}

fn damaged(e: &rusqlite::Error) -> bool {
    matches!(e.sqlite_error_code(), Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase))
}

fn read_only(e: &rusqlite::Error) -> bool {
    matches!(e.sqlite_error_code(), Some(ErrorCode::ReadOnly | ErrorCode::CannotOpen | ErrorCode::PermissionDenied))
}

/// Why a file cannot be used, in words that say what to do.
fn damaged_message(path: &Path, detail: &str) -> String {
    format!(
        "the game store '{}' is damaged ({detail}). Restore it from a backup, or start with --move-damaged-store \
         to move it aside (it is renamed, nothing is deleted) and begin a fresh one, or give another --data-dir",
        path.display()
    )
}

fn unwritable(dir: &Path, detail: &str) -> String {
    format!(
        "the data directory '{}' cannot be written ({detail}): give --data-dir a directory this user can write, \
         or --no-store to keep nothing",
        dir.display()
    )
}

/// The checks and the schema, on a fresh connection. `Err(true, why)`: the file is damaged.
fn prepare(conn: &mut Connection, busy: Duration) -> Result<(), (bool, String)> {
    let fail = |e: rusqlite::Error| (damaged(&e), e.to_string());
    conn.busy_timeout(busy).map_err(fail)?;
    let check: String = conn.query_row("PRAGMA quick_check(1)", [], |r| r.get(0)).map_err(fail)?;
    if check != "ok" {
        return Err((true, check));
    }
    if conn.is_readonly(rusqlite::MAIN_DB).unwrap_or(false) {
        return Err((false, "the file is read-only".into()));
    }
    conn.execute_batch(
        "PRAGMA journal_mode=WAL;
         PRAGMA synchronous=NORMAL;
         CREATE TABLE IF NOT EXISTS matches (
             id TEXT PRIMARY KEY, game TEXT NOT NULL, setup TEXT NOT NULL, status TEXT NOT NULL,
             created INTEGER NOT NULL, updated INTEGER NOT NULL, record TEXT);
         CREATE TABLE IF NOT EXISTS moves (
             match TEXT NOT NULL, ply INTEGER NOT NULL, action INTEGER NOT NULL, ms REAL,
             PRIMARY KEY (match, ply)) WITHOUT ROWID;
         CREATE INDEX IF NOT EXISTS matches_status ON matches (status, updated);
         CREATE TABLE IF NOT EXISTS summaries (
             id TEXT PRIMARY KEY, game TEXT NOT NULL, seats TEXT NOT NULL, returns TEXT,
             plies INTEGER NOT NULL, finished INTEGER NOT NULL);
         CREATE INDEX IF NOT EXISTS summaries_finished ON summaries (finished DESC, id DESC);",
    )
    .map_err(fail)?;
    // Finished games written before summaries were kept (or by another program) get theirs.
    let tx = conn.transaction().map_err(fail)?;
    {
        let mut missing = tx
            .prepare(
                "SELECT id, game, record, updated FROM matches
                 WHERE status = 'over' AND record IS NOT NULL AND id NOT IN (SELECT id FROM summaries)",
            )
            .map_err(fail)?;
        let rows: Vec<(String, String, String, i64)> = missing
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .map_err(fail)?
            .collect::<Result<_, _>>()
            .map_err(fail)?;
        for (id, game, record, updated) in rows {
            let rec: Value = serde_json::from_str(&record).unwrap_or_default();
            summarize(&tx, &id, &game, &rec, updated).map_err(fail)?;
        }
    }
    tx.pragma_update(None, "user_version", SCHEMA).map_err(fail)?;
    tx.commit().map_err(|e| (damaged(&e), e.to_string()))?;
    Ok(())
}

/// Writes the summary row of a finished game from its record.
fn summarize(c: &Connection, id: &str, game: &str, record: &Value, finished: i64) -> rusqlite::Result<()> {
    let plies = record["actions"].as_array().map_or(0, |a| a.len()) as i64;
    c.execute(
        "INSERT OR REPLACE INTO summaries (id, game, seats, returns, plies, finished) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![id, game, record["agents"].to_string(), record["returns"].to_string(), plies, finished],
    )?;
    Ok(())
}

/// Moves a damaged file (and its journal) aside; gives where it went.
fn move_aside(path: &Path) -> Result<PathBuf, String> {
    let stamp = now();
    let target = path.with_file_name(format!("{FILE}.damaged-{stamp}"));
    std::fs::rename(path, &target).map_err(|e| format!("cannot move '{}' aside: {e}", path.display()))?;
    for suffix in ["-wal", "-shm"] {
        let side = PathBuf::from(format!("{}{suffix}", path.display()));
        if side.exists() {
            let to = PathBuf::from(format!("{}{suffix}", target.display()));
            std::fs::rename(&side, &to).map_err(|e| format!("cannot move '{}' aside: {e}", side.display()))?;
        }
    }
    Ok(target)
}

impl Store {
    /// Opens (or creates) the store in `dir`, which is created if missing. Refuses a directory
    /// it cannot write and a damaged file (unless told to move it aside); gives what it did
    /// that the operator should hear of.
    pub fn open(dir: &Path, options: Options) -> Result<(Store, Vec<String>), String> {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create the data directory '{}': {e}", dir.display()))?;
        let probe = dir.join(".meeple-write-check");
        std::fs::write(&probe, b"meeple").map_err(|e| unwritable(dir, &e.to_string()))?;
        let _ = std::fs::remove_file(&probe);
        let path = dir.join(FILE);
        let mut notes = Vec::new();
        let mut conn = loop {
            let opened = Connection::open(&path);
            let result = match opened {
                Ok(mut c) => prepare(&mut c, options.busy).map(|()| c),
                Err(e) => Err((damaged(&e), e.to_string())),
            };
            match result {
                Ok(c) => break c,
                Err((true, detail)) if options.move_damaged => {
                    let aside = move_aside(&path)?;
                    notes.push(format!(
                        "the game store was damaged ({detail}): moved aside to '{}', starting a fresh one",
                        aside.display()
                    ));
                }
                Err((true, detail)) => return Err(damaged_message(&path, &detail)),
                Err((false, detail)) if detail.contains("read-only") || detail.contains("readonly") => {
                    return Err(unwritable(dir, &detail));
                }
                Err((false, detail)) => {
                    return Err(format!("the game store '{}' cannot be used: {detail}", path.display()));
                }
            }
        };
        let (work, jobs) = mpsc::channel::<Work>();
        let readers = Arc::new(Readers {
            path: path.clone(),
            busy: options.busy,
            idle: Mutex::new(Vec::new()),
            gate: Semaphore::new(READERS),
        });
        let store = Store { work, path, options, readers, generation: Arc::new(AtomicU64::new(0)) };
        let pruned = store.prune_now(&mut conn).map_err(|e| format!("the game store cannot prune: {e}"))?;
        if pruned > 0 {
            notes.push(format!("pruned {pruned} kept games beyond the retention settings"));
        }
        std::thread::Builder::new()
            .name("meeple-store".into())
            .spawn(move || {
                for job in jobs {
                    job(&mut conn);
                }
            })
            .map_err(|e| format!("cannot start the store's thread: {e}"))?;
        Ok((store, notes))
    }

    /// Where the file is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `f` on the writer's thread; its answer comes back when it is done.
    fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> oneshot::Receiver<Result<T, String>> {
        let (tx, rx) = oneshot::channel();
        let job: Work = Box::new(move |conn| {
            let _ = tx.send(f(conn).map_err(|e| {
                if damaged(&e) {
                    format!("the game store is damaged ({e}): restart the server to be told what to do")
                } else if read_only(&e) {
                    format!("the game store cannot be written ({e})")
                } else {
                    format!("the game store failed: {e}")
                }
            }));
        });
        if self.work.send(job).is_err() {
            let (tx, rx) = oneshot::channel();
            let _ = tx.send(Err("the game store has stopped".to_string()));
            return rx;
        }
        rx
    }

    /// Runs `f` on a read connection, off the writer's thread and the async threads; at most
    /// [`READERS`] at once, the others wait their turn (or are told the store is busy).
    async fn read<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T, String> {
        let readers = self.readers.clone();
        let _turn = tokio::time::timeout(Duration::from_secs(5), readers.gate.acquire())
            .await
            .map_err(|_| "the game store is busy: try again shortly".to_string())?
            .map_err(|_| "the game store has stopped".to_string())?;
        let inner = readers.clone();
        tokio::task::spawn_blocking(move || {
            let conn = inner.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
            let conn = match conn {
                Some(c) => c,
                None => {
                    let c = Connection::open_with_flags(
                        &inner.path,
                        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
                    )
                    .map_err(|e| format!("the game store cannot be read: {e}"))?;
                    c.busy_timeout(inner.busy).map_err(|e| e.to_string())?;
                    c
                }
            };
            let out = f(&conn).map_err(|e| format!("the game store cannot be read: {e}"));
            inner.idle.lock().unwrap_or_else(|e| e.into_inner()).push(conn);
            out
        })
        .await
        .map_err(|_| "the game store's reader stopped".to_string())?
    }

    /// Writes a new match and the moves it starts with (nature's deal).
    pub fn create(&self, id: &str, stored: &Stored, write: Write) -> oneshot::Receiver<Result<(), String>> {
        let (id, game, setup) =
            (id.to_string(), stored.game.clone(), serde_json::to_string(stored).unwrap_or_default());
        self.run(move |c| {
            let tx = c.transaction()?;
            let t = now();
            tx.execute(
                "INSERT OR REPLACE INTO matches (id, game, setup, status, created, updated) VALUES (?1, ?2, ?3, 'live', ?4, ?4)",
                params![id, game, setup, t],
            )?;
            insert_moves(&tx, &id, &write)?;
            tx.commit()
        })
    }

    /// Writes a change to a match in one transaction; queued at once, so the writes of one
    /// match keep their order.
    pub fn save(&self, id: &str, write: Write) -> oneshot::Receiver<Result<(), String>> {
        let id = id.to_string();
        let keep = self.options.keep_games;
        let generation = self.generation.clone();
        self.run(move |c| {
            let tx = c.transaction()?;
            insert_moves(&tx, &id, &write)?;
            let t = now();
            if let Some(s) = &write.setup {
                let setup = serde_json::to_string(s).unwrap_or_default();
                tx.execute("UPDATE matches SET setup = ?2, updated = ?3 WHERE id = ?1", params![id, setup, t])?;
            }
            let ended = write.finished.is_some();
            if let Some(record) = &write.finished {
                let text = record.to_json();
                tx.execute(
                    "UPDATE matches SET status = 'over', record = ?2, updated = ?3 WHERE id = ?1",
                    params![id, text, t],
                )?;
                tx.execute("DELETE FROM moves WHERE match = ?1", params![id])?;
                let game: String = tx.query_row("SELECT game FROM matches WHERE id = ?1", params![id], |r| r.get(0))?;
                let value: Value = serde_json::from_str(&text).unwrap_or_default();
                summarize(&tx, &id, &game, &value, t)?;
                // The oldest finished games go once there are more than the server keeps.
                tx.execute(
                    "DELETE FROM matches WHERE status = 'over' AND id IN
                       (SELECT id FROM summaries ORDER BY finished DESC, id DESC LIMIT -1 OFFSET ?1)",
                    params![keep as i64],
                )?;
                tx.execute(
                    "DELETE FROM summaries WHERE id IN (SELECT id FROM summaries ORDER BY finished DESC, id DESC LIMIT -1 OFFSET ?1)",
                    params![keep as i64],
                )?;
            } else {
                tx.execute("UPDATE matches SET updated = ?2 WHERE id = ?1", params![id, t])?;
            }
            tx.commit()?;
            if ended {
                generation.fetch_add(1, Ordering::Relaxed);
            }
            Ok(())
        })
    }

    /// Forgets a match in progress (deleted, or a row that cannot be resumed); finished games stay.
    pub fn forget(&self, id: &str) -> oneshot::Receiver<Result<(), String>> {
        let id = id.to_string();
        self.run(move |c| {
            c.execute("DELETE FROM moves WHERE match = ?1", params![id])?;
            c.execute("DELETE FROM matches WHERE id = ?1 AND status != 'over'", params![id])?;
            Ok(())
        })
    }

    /// Drops a row that cannot be used (a match that cannot be resumed), whatever it is.
    pub fn discard(&self, id: &str) -> oneshot::Receiver<Result<(), String>> {
        let id = id.to_string();
        let generation = self.generation.clone();
        self.run(move |c| {
            let tx = c.transaction()?;
            tx.execute("DELETE FROM moves WHERE match = ?1", params![id])?;
            tx.execute("DELETE FROM matches WHERE id = ?1", params![id])?;
            tx.execute("DELETE FROM summaries WHERE id = ?1", params![id])?;
            tx.commit()?;
            generation.fetch_add(1, Ordering::Relaxed);
            Ok(())
        })
    }

    /// Prunes what the retention settings no longer keep, on the writer's thread.
    pub fn prune(&self) -> oneshot::Receiver<Result<usize, String>> {
        let store = self.clone();
        self.run(move |c| store.prune_now(c))
    }

    /// Finished games beyond `keep_games` or older than `keep_days`, and matches in progress
    /// nobody has played for `keep_days`, in batches.
    fn prune_now(&self, c: &mut Connection) -> rusqlite::Result<usize> {
        let mut pruned = 0;
        let cutoff = self.options.keep_days.map_or(i64::MIN, |d| now() - i64::from(d) * 86_400);
        loop {
            let tx = c.transaction()?;
            let ids: Vec<String> = {
                let mut old = tx.prepare(
                    "SELECT id FROM summaries WHERE finished < ?1
                     UNION SELECT id FROM (SELECT id FROM summaries ORDER BY finished DESC, id DESC LIMIT -1 OFFSET ?2)
                     UNION SELECT id FROM matches WHERE status != 'over' AND updated < ?1
                     LIMIT ?3",
                )?;
                old.query_map(params![cutoff, self.options.keep_games as i64, PRUNE_BATCH], |r| r.get(0))?
                    .collect::<Result<_, _>>()?
            };
            for id in &ids {
                tx.execute("DELETE FROM moves WHERE match = ?1", params![id])?;
                tx.execute("DELETE FROM matches WHERE id = ?1", params![id])?;
                tx.execute("DELETE FROM summaries WHERE id = ?1", params![id])?;
            }
            tx.commit()?;
            pruned += ids.len();
            if (ids.len() as i64) < PRUNE_BATCH {
                break;
            }
        }
        if pruned > 0 {
            self.generation.fetch_add(1, Ordering::Relaxed);
        }
        Ok(pruned)
    }

    /// The matches in progress, most recently played first, at most `limit`.
    /// A row whose setup cannot be read comes back as `Err((id, why))`.
    #[allow(clippy::type_complexity)]
    pub fn live(&self, limit: usize) -> oneshot::Receiver<Result<Vec<Result<LiveRow, (String, String)>>, String>> {
        self.run(move |c| {
            let mut rows = Vec::new();
            let mut select =
                c.prepare("SELECT id, setup FROM matches WHERE status = 'live' ORDER BY updated DESC LIMIT ?1")?;
            let found: Vec<(String, String)> =
                select.query_map(params![limit as i64], |r| Ok((r.get(0)?, r.get(1)?)))?.collect::<Result<_, _>>()?;
            for (id, setup) in found {
                rows.push(match serde_json::from_str::<Stored>(&setup) {
                    Ok(stored) => Ok(LiveRow { moves: moves_of(c, &id)?, id, stored }),
                    Err(e) => Err((id, format!("its setup cannot be read: {e}"))),
                });
            }
            Ok(rows)
        })
    }

    /// [`Store::live`], waiting on this thread (start-up, before the server answers).
    #[allow(clippy::type_complexity)]
    pub fn live_blocking(&self, limit: usize) -> Result<Vec<Result<LiveRow, (String, String)>>, String> {
        let (tx, rx) = mpsc::channel();
        let inner = self.live(limit);
        std::thread::spawn(move || {
            let _ = tx.send(inner.blocking_recv());
        });
        rx.recv()
            .map_err(|_| "the game store has stopped".to_string())?
            .map_err(|_| "the game store has stopped".to_string())?
    }

    /// The match with this id, if the store has it (a match dropped from memory, a finished
    /// game's page after a restart).
    pub async fn load(&self, id: &str) -> Result<Option<Kept>, String> {
        let id = id.to_string();
        self.read(move |c| {
            let row: Option<(String, String, Option<String>)> = c
                .query_row("SELECT setup, status, record FROM matches WHERE id = ?1", params![id], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                })
                .optional()?;
            let Some((setup, status, record)) = row else { return Ok(None) };
            Ok(Some(match (status.as_str(), record) {
                ("over", Some(record)) => Kept::Over(record),
                ("live", _) => match serde_json::from_str::<Stored>(&setup) {
                    Ok(stored) => Kept::Live(LiveRow { moves: moves_of(c, &id)?, id, stored }),
                    Err(e) => Kept::Broken(format!("its setup cannot be read: {e}")),
                },
                (other, _) => Kept::Broken(format!("its status '{other}' is not one this server writes")),
            }))
        })
        .await
    }

    /// A page of finished games, newest first, from their summaries: at most `limit`, before
    /// the cursor `before` (from a previous page's `next`). Gives the games and the next cursor.
    pub async fn finished(
        &self,
        limit: usize,
        before: Option<(i64, String)>,
    ) -> Result<(Vec<Value>, Option<String>), String> {
        self.read(move |c| {
            let (t, id) = before.unwrap_or((i64::MAX, String::new()));
            let mut select = c.prepare(
                "SELECT id, game, seats, returns, plies, finished FROM summaries
                 WHERE (finished < ?1 OR (finished = ?1 AND id < ?2)) ORDER BY finished DESC, id DESC LIMIT ?3",
            )?;
            let rows: Vec<(String, String, String, String, i64, i64)> = select
                .query_map(params![t, id, limit as i64 + 1], |r| {
                    Ok((
                        r.get(0)?,
                        r.get(1)?,
                        r.get(2)?,
                        r.get::<_, Option<String>>(3)?.unwrap_or_default(),
                        r.get(4)?,
                        r.get(5)?,
                    ))
                })?
                .collect::<Result<_, _>>()?;
            let more = rows.len() > limit;
            let games: Vec<Value> = rows
                .iter()
                .take(limit)
                .map(|(id, game, seats, returns, plies, finished)| {
                    json!({
                        "id": id, "game": game,
                        "seats": serde_json::from_str::<Value>(seats).unwrap_or_default(),
                        "returns": serde_json::from_str::<Value>(returns).unwrap_or_default(),
                        "plies": plies, "finished": finished,
                    })
                })
                .collect();
            let next =
                more.then(|| games.last().map(|g| format!("{}:{}", g["finished"], g["id"].as_str().unwrap_or(""))));
            Ok((games, next.flatten()))
        })
        .await
    }

    /// Bumped whenever the list of finished games changes.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Relaxed)
    }

    /// The record of a finished game.
    pub async fn record(&self, id: &str) -> Result<Option<String>, String> {
        let id = id.to_string();
        self.read(move |c| {
            c.query_row("SELECT record FROM matches WHERE id = ?1 AND status = 'over'", params![id], |r| r.get(0))
                .optional()
        })
        .await
    }
}

fn moves_of(c: &Connection, id: &str) -> rusqlite::Result<Vec<(Action, Option<f32>)>> {
    let mut moves = c.prepare("SELECT action, ms FROM moves WHERE match = ?1 ORDER BY ply")?;
    moves
        .query_map(params![id], |r| Ok((r.get::<_, i64>(0)? as Action, r.get::<_, Option<f64>>(1)?.map(|m| m as f32))))?
        .collect()
}

fn insert_moves(tx: &rusqlite::Transaction<'_>, id: &str, write: &Write) -> rusqlite::Result<()> {
    tx.execute("DELETE FROM moves WHERE match = ?1 AND ply >= ?2", params![id, write.keep as i64])?;
    let mut insert = tx.prepare("INSERT INTO moves (match, ply, action, ms) VALUES (?1, ?2, ?3, ?4)")?;
    for (ply, action, ms) in &write.moves {
        insert.execute(params![id, *ply as i64, *action as i64, ms.map(f64::from)])?;
    }
    Ok(())
}

/// A cursor of [`Store::finished`]'s `next`: `finished:id`.
pub fn parse_cursor(text: &str) -> Option<(i64, String)> {
    let (t, id) = text.split_once(':')?;
    let t = t.parse().ok()?;
    (id.len() <= 64 && id.bytes().all(|b| b.is_ascii_alphanumeric())).then(|| (t, id.to_string()))
}
