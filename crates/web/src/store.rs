//! Games kept on disk: one SQLite file under the data directory. Matches in progress are written
//! move by move as each is accepted (the server answers once the move is committed), so a killed
//! server loses at most the move being written; finished games keep their record for the page's
//! list of past games. One thread owns the connection and does every write and read in order.

use crate::session::{Stored, Unsaved};
use meeple_game::Action;
use rusqlite::{Connection, OptionalExtension, params};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use tokio::sync::oneshot;

/// The database file inside the data directory.
pub const FILE: &str = "meeple-web.sqlite";

type Work = Box<dyn FnOnce(&mut Connection) + Send>;

/// A handle on the store's thread.
#[derive(Clone)]
pub struct Store {
    work: mpsc::Sender<Work>,
    path: PathBuf,
    /// Finished games kept; the oldest go beyond it.
    keep: usize,
}

/// A match in progress as the store has it.
pub struct LiveRow {
    pub id: String,
    pub stored: Stored,
    pub moves: Vec<(Action, Option<f32>)>,
}

fn now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64)
}

impl Store {
    /// Opens (or creates) the store in `dir`, which is created if missing.
    pub fn open(dir: &Path, keep_finished: usize) -> Result<Store, String> {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create the data directory '{}': {e}", dir.display()))?;
        let path = dir.join(FILE);
        let mut conn =
            Connection::open(&path).map_err(|e| format!("cannot open the game store '{}': {e}", path.display()))?;
        conn.execute_batch(
            "PRAGMA journal_mode=WAL;
             PRAGMA synchronous=NORMAL;
             PRAGMA busy_timeout=5000;
             CREATE TABLE IF NOT EXISTS matches (
                 id TEXT PRIMARY KEY, game TEXT NOT NULL, setup TEXT NOT NULL, status TEXT NOT NULL,
                 created INTEGER NOT NULL, updated INTEGER NOT NULL, record TEXT);
             CREATE TABLE IF NOT EXISTS moves (
                 match TEXT NOT NULL, ply INTEGER NOT NULL, action INTEGER NOT NULL, ms REAL,
                 PRIMARY KEY (match, ply)) WITHOUT ROWID;
             CREATE INDEX IF NOT EXISTS matches_status ON matches (status, updated);",
        )
        .map_err(|e| format!("the game store '{}' cannot be used: {e}", path.display()))?;
        let (work, jobs) = mpsc::channel::<Work>();
        std::thread::Builder::new()
            .name("meeple-store".into())
            .spawn(move || {
                for job in jobs {
                    job(&mut conn);
                }
            })
            .map_err(|e| format!("cannot start the store's thread: {e}"))?;
        Ok(Store { work, path, keep: keep_finished })
    }

    /// Where the file is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `f` on the store's thread; its answer comes back when it is done.
    fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> oneshot::Receiver<Result<T, String>> {
        let (tx, rx) = oneshot::channel();
        let job: Work = Box::new(move |conn| {
            let _ = tx.send(f(conn).map_err(|e| format!("the game store failed: {e}")));
        });
        if self.work.send(job).is_err() {
            let (tx, rx) = oneshot::channel();
            let _ = tx.send(Err("the game store has stopped".to_string()));
            return rx;
        }
        rx
    }

    /// Writes a new match. The write is queued at once (so it comes before the match's first
    /// moves); the answer says when it is committed.
    pub fn create(&self, id: &str, stored: &Stored) -> oneshot::Receiver<Result<(), String>> {
        let (id, game, setup) =
            (id.to_string(), stored.game.clone(), serde_json::to_string(stored).unwrap_or_default());
        self.run(move |c| {
            let t = now();
            c.execute(
                "INSERT OR REPLACE INTO matches (id, game, setup, status, created, updated) VALUES (?1, ?2, ?3, 'live', ?4, ?4)",
                params![id, game, setup, t],
            )?;
            Ok(())
        })
    }

    /// Writes what a match did since the last call, in one transaction; queued at once, so the
    /// writes of one match keep their order.
    pub fn save(&self, id: &str, stored: Option<Stored>, unsaved: Unsaved) -> oneshot::Receiver<Result<(), String>> {
        let id = id.to_string();
        let keep = self.keep;
        self.run(move |c| {
            let tx = c.transaction()?;
            tx.execute("DELETE FROM moves WHERE match = ?1 AND ply >= ?2", params![id, unsaved.keep as i64])?;
            {
                let mut insert = tx.prepare("INSERT INTO moves (match, ply, action, ms) VALUES (?1, ?2, ?3, ?4)")?;
                for (ply, action, ms) in &unsaved.moves {
                    insert.execute(params![id, *ply as i64, *action as i64, ms.map(f64::from)])?;
                }
            }
            let t = now();
            if let Some(s) = stored {
                let setup = serde_json::to_string(&s).unwrap_or_default();
                tx.execute("UPDATE matches SET setup = ?2, updated = ?3 WHERE id = ?1", params![id, setup, t])?;
            }
            if let Some(record) = &unsaved.finished {
                tx.execute(
                    "UPDATE matches SET status = 'over', record = ?2, updated = ?3 WHERE id = ?1",
                    params![id, record.to_json(), t],
                )?;
                tx.execute("DELETE FROM moves WHERE match = ?1", params![id])?;
                // The oldest finished games go once there are more than the server keeps.
                tx.execute(
                    "DELETE FROM matches WHERE status = 'over' AND id NOT IN
                       (SELECT id FROM matches WHERE status = 'over' ORDER BY updated DESC, id LIMIT ?1)",
                    params![keep as i64],
                )?;
            } else {
                tx.execute("UPDATE matches SET updated = ?2 WHERE id = ?1", params![id, t])?;
            }
            tx.commit()
        })
    }

    /// Forgets a match in progress (deleted, or dropped as idle); finished games stay.
    pub fn forget(&self, id: &str) -> oneshot::Receiver<Result<(), String>> {
        let id = id.to_string();
        self.run(move |c| {
            c.execute("DELETE FROM moves WHERE match = ?1", params![id])?;
            c.execute("DELETE FROM matches WHERE id = ?1 AND status = 'live'", params![id])?;
            Ok(())
        })
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
            let mut moves = c.prepare("SELECT action, ms FROM moves WHERE match = ?1 ORDER BY ply")?;
            for (id, setup) in found {
                let list: Vec<(Action, Option<f32>)> = moves
                    .query_map(params![id], |r| {
                        Ok((r.get::<_, i64>(0)? as Action, r.get::<_, Option<f64>>(1)?.map(|m| m as f32)))
                    })?
                    .collect::<Result<_, _>>()?;
                rows.push(match serde_json::from_str::<Stored>(&setup) {
                    Ok(stored) => Ok(LiveRow { id, stored, moves: list }),
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

    /// Finished games, newest first: `(id, game, seats, finished at (Unix seconds), returns)`.
    pub fn finished(&self, limit: usize) -> oneshot::Receiver<Result<Vec<serde_json::Value>, String>> {
        self.run(move |c| {
            let mut select =
                c.prepare("SELECT id, game, record, updated FROM matches WHERE status = 'over' ORDER BY updated DESC, id LIMIT ?1")?;
            let rows = select
                .query_map(params![limit as i64], |r| {
                    let (id, game, record, updated): (String, String, String, i64) =
                        (r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?);
                    let rec: serde_json::Value = serde_json::from_str(&record).unwrap_or_default();
                    Ok(serde_json::json!({
                        "id": id, "game": game, "seats": rec["agents"], "returns": rec["returns"],
                        "plies": rec["actions"].as_array().map_or(0, |a| a.len()), "finished": updated,
                    }))
                })?
                .collect::<Result<_, _>>()?;
            Ok(rows)
        })
    }

    /// The record of a finished game.
    pub fn record(&self, id: &str) -> oneshot::Receiver<Result<Option<String>, String>> {
        let id = id.to_string();
        self.run(move |c| {
            c.query_row("SELECT record FROM matches WHERE id = ?1 AND status = 'over'", params![id], |r| r.get(0))
                .optional()
        })
    }
}
