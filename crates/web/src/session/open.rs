//! A match coming into being: created from a setup (its seats' agents built), restored from
//! the store after a restart, or opened as a replay of a record.

use super::*;

impl<G: Game> Live<G> {
    pub(super) fn blank(game: G, seed: u64, open: bool, owner: String, allowed: &Allowed) -> Self {
        Live {
            spec: game.spec().to_string(),
            table: Table::new(game, seed),
            open,
            owner,
            allowed: allowed.clone(),
            seats: Vec::new(),
            move_time: Duration::from_secs(1),
            delay: Duration::ZERO,
            paused: false,
            step: false,
            thinking: None,
            out: false,
            cancel: None,
            epoch: 0,
            error: None,
            capped: false,
            resigned: None,
            stalled: None,
            replay: false,
            ended: false,
            version: 0,
            saved: 0,
            saved_end: false,
        }
    }

    pub(super) fn new(
        game: G,
        setup: &Setup,
        allowed: &Allowed,
        tokens: &mut dyn FnMut() -> String,
        os_seed: u64,
    ) -> Result<Self, ApiError> {
        let n = game.num_players();
        if setup.seats.len() != n {
            return Err(ApiError::bad(format!(
                "{} has {n} seats; {} were given (an agent spec or \"human\" for each)",
                game.spec(),
                setup.seats.len()
            )));
        }
        if setup.move_time.is_zero() || setup.move_time > MAX_MOVE_TIME {
            return Err(ApiError::bad(format!(
                "move time {} ms is outside 1..={} ms",
                setup.move_time.as_millis(),
                MAX_MOVE_TIME.as_millis()
            )));
        }
        if setup.delay > MAX_DELAY {
            return Err(ApiError::bad(format!("delay is above {} ms", MAX_DELAY.as_millis())));
        }
        let persons: Vec<Player> = (0..n).filter(|&i| setup.seats[i].trim() == "human").collect();
        let play = setup.play.clone().unwrap_or_else(|| persons.iter().take(1).copied().collect());
        for (k, &p) in play.iter().enumerate() {
            if !persons.contains(&p) {
                return Err(ApiError::bad(format!(
                    "play: seat {p} is not a person's seat (the person seats are {persons:?}); list the seats you play yourself"
                )));
            }
            if play[..k].contains(&p) {
                return Err(ApiError::bad(format!("play: seat {p} is listed twice")));
            }
        }
        let seed = setup.seed.unwrap_or(os_seed);
        let mut live = Live::blank(game, seed, setup.seed.is_some(), tokens(), allowed);
        for (i, spec) in setup.seats.iter().enumerate() {
            let spec = spec.trim();
            let seat_seed = meeple_game::seat_seed(seed, i);
            if spec == "human" {
                // The creator holds the seats it plays; the others wait for whoever claims them.
                let (token, invite) = if play.contains(&i) { (Some(tokens()), None) } else { (None, Some(tokens())) };
                live.seats.push(Seat { spec: "human".into(), human: true, token, invite, agent: None, seed, bound: 0 });
                continue;
            }
            let agent = allowed
                .agent(live.table.game(), spec, seat_seed)
                .map_err(|e| ApiError::bad(format!("seat {i}: {} (or \"human\")", e.message)))?;
            let bound = agent.memory_bound();
            live.seats.push(Seat {
                spec: agent.spec(),
                human: false,
                token: None,
                invite: None,
                agent: Some(agent),
                seed: seat_seed,
                bound,
            });
        }
        live.move_time = setup.move_time;
        live.delay = setup.delay;
        live.resolve_chance();
        Ok(live)
    }

    pub(super) fn restore(
        game: G,
        stored: &Stored,
        moves: &[(Action, Option<f32>)],
        allowed: &Allowed,
    ) -> Result<Self, ApiError> {
        let n = game.num_players();
        let invites = if stored.invites.is_empty() { vec![None; n] } else { stored.invites.clone() };
        if stored.seats.len() != n || stored.tokens.len() != n || invites.len() != n {
            return Err(ApiError::bad(format!("a stored match of {} has {} seats", game.spec(), stored.seats.len())));
        }
        let mut live = Live::blank(game, stored.seed, stored.open, stored.owner.clone(), allowed);
        for (i, ((spec, token), invite)) in stored.seats.iter().zip(&stored.tokens).zip(invites).enumerate() {
            live.seats.push(Seat {
                spec: spec.clone(),
                human: spec == "human" || token.is_some(),
                token: token.clone(),
                invite,
                agent: None,
                seed: meeple_game::seat_seed(stored.seed, i),
                bound: 0,
            });
        }
        live.move_time = Duration::from_millis(stored.move_time_ms).clamp(Duration::from_millis(1), MAX_MOVE_TIME);
        live.delay = Duration::from_millis(stored.delay_ms).min(MAX_DELAY);
        live.paused = stored.paused;
        if let Some(p) = stored.resigned {
            if p >= n {
                return Err(ApiError::bad(format!("a stored match of {} says seat {p} resigned", live.spec)));
            }
            live.resigned = Some(p);
        }
        for (k, &(a, ms)) in moves.iter().enumerate() {
            live.push(a, ms).map_err(|e| ApiError::unprocessable(format!("stored ply {}: {e}", k + 1)))?;
        }
        // The store has these; nature's next draw, if one is due, is the same as before.
        live.saved = live.ply();
        live.resolve_chance();
        live.saved_end = live.finished() && live.saved == live.ply();
        Ok(live)
    }

    pub(super) fn replay(
        game: G,
        record: &GameRecord,
        max_plies: usize,
        owner: String,
        ended: bool,
    ) -> Result<Self, ApiError> {
        if record.actions.len() > max_plies {
            return Err(ApiError::unprocessable(format!(
                "the game has {} plies; this server replays games of at most {max_plies}",
                record.actions.len()
            )));
        }
        let mut live = Live::blank(game, record.seed, false, owner, &Allowed::default());
        live.replay = true;
        live.ended = ended;
        live.paused = true;
        live.saved_end = true;
        for i in 0..live.table.game().num_players() {
            let spec = record.agents.get(i).cloned().unwrap_or_else(|| "?".into());
            live.seats.push(Seat { spec, human: false, token: None, invite: None, agent: None, seed: 0, bound: 0 });
        }
        for (k, text) in record.actions.iter().enumerate() {
            let a = live
                .table
                .latest()
                .parse_action(text)
                .map_err(|e| ApiError::unprocessable(format!("ply {}: '{text}': {e}", k + 1)))?;
            live.push(a, None).map_err(|e| ApiError::unprocessable(format!("ply {}: '{text}': {e}", k + 1)))?;
        }
        if let Some(p) = record.resigned {
            if p >= live.seats.len() || live.table.latest().is_terminal() {
                return Err(ApiError::unprocessable(format!(
                    "the record says seat {p} resigned, in a game of {} seats that {}",
                    live.seats.len(),
                    if live.table.latest().is_terminal() { "its rules ended" } else { "it does not have" }
                )));
            }
            live.resigned = Some(p);
        }
        Ok(live)
    }
}
