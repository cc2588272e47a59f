//! Event streams: a `state` event on every change of a match, for one viewer. A browser's
//! `EventSource` cannot send headers, and a token in the address would be in every proxy's log,
//! so a seat's page first trades its token (in the header) for a ticket that opens one stream,
//! once, within a minute. Spectators need none. A match's seats each have streams of their own,
//! so a stranger holding its spectators' streams never locks its players out; spectators'
//! streams count against a share per client and a total. Every stream ends after a while (the
//! page opens another) and once the game is over.

use crate::session::Access;
use crate::{ApiError, App, Entry, Shared, Table, parse_viewer, random_token};
use axum::extract::Query;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use meeple_game::Player;
use serde_json::json;
use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a ticket may wait to be used.
const TICKET_LIFE: Duration = Duration::from_secs(60);
/// Tickets outstanding at once, in all and per client (a page needs one at a time; a client's
/// newest voids its oldest beyond its share).
const MAX_TICKETS: usize = 4096;
const TICKETS_PER_CLIENT: usize = 16;

struct Ticket {
    id: String,
    access: Access,
    /// The generation of the seat's token it was given for.
    epoch: u64,
    client: Option<crate::Client>,
    expires: Instant,
}

/// Tickets given and not yet used.
#[derive(Default)]
pub(crate) struct Tickets {
    open: Mutex<HashMap<String, Ticket>>,
}

impl Tickets {
    fn give(&self, id: &str, access: Access, epoch: u64, client: Option<crate::Client>) -> Result<String, ApiError> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        // At its share a client's oldest unused ticket makes way: every address of this machine
        // is one client, and a local process hoarding tickets must not keep the person's page
        // from its streams (the page uses its ticket at once).
        if client.is_some() {
            let mine: Vec<(&String, Instant)> = open
                .iter()
                .filter(|(_, t)| t.client == client && t.expires > now)
                .map(|(k, t)| (k, t.expires))
                .collect();
            if mine.len() >= TICKETS_PER_CLIENT
                && let Some(oldest) = mine.iter().min_by_key(|x| x.1).map(|x| x.0.clone())
            {
                open.remove(&oldest);
            }
        }
        if open.len() >= MAX_TICKETS {
            open.retain(|_, t| t.expires > now);
            if open.len() >= MAX_TICKETS {
                return Err(ApiError::busy("the server has all the stream tickets it gives out; try again shortly"));
            }
        }
        let ticket = random_token();
        open.insert(ticket.clone(), Ticket { id: id.to_string(), access, epoch, client, expires: now + TICKET_LIFE });
        Ok(ticket)
    }

    /// Uses a ticket: what it grants on match `id`, and for which generation of the seat's
    /// token, if it is that match's and still good.
    fn take(&self, id: &str, ticket: &str) -> Option<(Access, u64)> {
        let t = self.open.lock().unwrap_or_else(|e| e.into_inner()).remove(ticket)?;
        (t.id == id && t.expires > Instant::now()).then_some((t.access, t.epoch))
    }

    pub(crate) fn sweep(&self) {
        let now = Instant::now();
        self.open.lock().unwrap_or_else(|e| e.into_inner()).retain(|_, t| t.expires > now);
    }
}

/// `POST /api/matches/{id}/ticket` with a seat's (or the owner's) token: a ticket for one
/// event stream with what that token sees.
pub(crate) async fn ticket(
    axum::extract::State(app): Shared,
    table: Table,
) -> Result<axum::Json<serde_json::Value>, ApiError> {
    let access = table.entry.lock().access(table.token.as_deref());
    if access.seat.is_none() && !access.owner {
        return Err(ApiError::forbidden(
            "a stream ticket needs a seat's or the owner's token (a spectator opens a stream without one)",
        ));
    }
    let epoch = access.seat.map_or(0, |p| table.entry.epoch(p));
    let ticket = app.tickets.give(&table.id, access, epoch, table.client)?;
    Ok(axum::Json(json!({ "ticket": ticket, "seconds": TICKET_LIFE.as_secs() })))
}

/// A stream's place, given back when the stream ends.
enum Place {
    Seat(Arc<Entry>, Player),
    Spectator { app: Arc<App>, entry: Arc<Entry>, client: Option<crate::Client> },
}

impl Drop for Place {
    fn drop(&mut self) {
        match self {
            Place::Seat(entry, seat) => {
                entry.seat_streams[*seat].fetch_sub(1, Ordering::Relaxed);
            }
            Place::Spectator { app, entry, client } => {
                entry.spectators.fetch_sub(1, Ordering::Relaxed);
                app.streams.fetch_sub(1, Ordering::Relaxed);
                if let Some(c) = client {
                    app.client_streams.give(*c);
                }
            }
        }
    }
}

/// Takes a stream's place: a seat's own, or a spectator's within the caps.
fn place(
    app: &Arc<App>,
    entry: &Arc<Entry>,
    viewer: Option<Player>,
    access: Access,
    client: Option<crate::Client>,
) -> Result<Place, ApiError> {
    if let Some(v) = viewer.filter(|&v| access.seat == Some(v))
        && let Some(count) = entry.seat_streams.get(v)
    {
        if count.fetch_add(1, Ordering::Relaxed) >= app.config.seat_streams {
            count.fetch_sub(1, Ordering::Relaxed);
            return Err(ApiError::too_many(format!(
                "seat {v} has its {} event streams open already (close a tab)",
                app.config.seat_streams
            )));
        }
        // A person sat down: an agent of theirs that waits for threads now waits as a person's.
        app.thinkers.recheck();
        return Ok(Place::Seat(entry.clone(), v));
    }
    if entry.spectators.fetch_add(1, Ordering::Relaxed) >= app.config.max_spectators {
        entry.spectators.fetch_sub(1, Ordering::Relaxed);
        return Err(ApiError::too_many(format!("this match has its {} spectators", app.config.max_spectators)));
    }
    if let Some(c) = client
        && !app.client_streams.take_fair(
            c,
            app.config.max_streams,
            app.streams.load(Ordering::Relaxed),
            app.config.max_streams_per_client,
        )
    {
        entry.spectators.fetch_sub(1, Ordering::Relaxed);
        return Err(ApiError::too_many(format!(
            "this address holds its share of the event streams (at most {}, and half of what others leave free)",
            app.config.max_streams_per_client
        )));
    }
    if app.streams.fetch_add(1, Ordering::Relaxed) >= app.config.max_streams {
        app.streams.fetch_sub(1, Ordering::Relaxed);
        entry.spectators.fetch_sub(1, Ordering::Relaxed);
        if let Some(c) = client {
            app.client_streams.give(c);
        }
        return Err(ApiError::busy("the server has all the event streams it serves"));
    }
    Ok(Place::Spectator { app: app.clone(), entry: entry.clone(), client })
}

/// `GET /api/matches/{id}/events?viewer=N|spectator&ticket=T` (or the token in the header, for
/// clients that can send one).
pub(crate) async fn events(
    axum::extract::State(app): Shared,
    table: Table,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Response, ApiError> {
    let Table { id, entry, client, token } = table;
    let (access, epoch) = match query.get("ticket") {
        Some(t) => app.tickets.take(&id, t.trim()).ok_or_else(|| {
            ApiError::forbidden(
                "this stream ticket is not good (each opens one stream, within a minute): ask for another",
            )
        })?,
        None => {
            let access = entry.lock().access(token.as_deref());
            (access, access.seat.map_or(0, |p| entry.epoch(p)))
        }
    };
    // A seat's stream lives as long as the token it was opened with.
    let seat = access.seat;
    if seat.is_some_and(|p| entry.epoch(p) != epoch) {
        return Err(ApiError::forbidden("this ticket was given for a seat token that has since been replaced"));
    }
    let viewer = {
        let s = entry.lock();
        let viewer = parse_viewer(&query, access)?;
        s.check_viewer(viewer, access)?;
        viewer
    };
    let place = place(&app, &entry, viewer, access, client)?;
    let deadline = tokio::time::Instant::now() + app.config.stream_life;
    struct Follow {
        rx: tokio::sync::watch::Receiver<u64>,
        entry: Arc<Entry>,
        id: String,
        /// The ply this stream last sent, so each event carries only the new log lines (or those
        /// from where an undo took the game back), not the whole log.
        sent: Option<usize>,
        first: bool,
        over: bool,
        _place: Place,
    }
    let follow =
        Follow { rx: entry.version.subscribe(), entry, id, sent: None, first: true, over: false, _place: place };
    let stream = futures_util::stream::unfold(follow, move |mut f| async move {
        if f.over {
            return None;
        }
        if !f.first {
            tokio::select! {
                changed = f.rx.changed() => changed.ok()?,
                _ = tokio::time::sleep_until(deadline) => return None,
            }
        }
        f.first = false;
        if *f.rx.borrow_and_update() == u64::MAX || seat.is_some_and(|p| f.entry.epoch(p) != epoch) {
            return None;
        }
        let snap = {
            let s = f.entry.lock();
            let latest = s.ply();
            let from = f.sent.map(|p| p.min(latest));
            s.snapshot(viewer, None, from)
        };
        let event = match snap {
            Ok(mut s) => {
                f.sent = s["ply"].as_u64().map(|p| p as usize);
                // A finished game changes no more: its last state ends the stream.
                f.over = s["result"].is_object() || s["status"] == "stopped";
                s["id"] = json!(f.id);
                Event::default().event("state").id(s["ply"].to_string()).data(s.to_string())
            }
            Err(e) => Event::default().event("problem").data(json!({ "error": e.message }).to_string()),
        };
        Some((Ok::<Event, Infallible>(event), f))
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()).into_response())
}
