//! The `az` agent: a search over the network's policy and values, at a budget of simulations or
//! of time.

use super::*;

/// The search with a network.
pub struct AzAgent<S: State> {
    net: Arc<Network>,
    config: SearchConfig,
    sims: Option<u32>,
    time: Option<Duration>,
    seats: usize,
    rng: Rng,
    spec: String,
    verbose: bool,
    /// Leaves per network call (`None`: from the planned simulations).
    batch: Option<usize>,
    /// Seconds per simulation, measured on the last searches (to plan timed searches).
    sim_seconds: Option<f64>,
    obs: Vec<f32>,
    one: Vec<f32>,
    legal: Vec<Action>,
    /// The leaves' legal moves end to end, where each leaf's start, for the network to compute
    /// their logits alone; and those logits put back at their ids for the search.
    listed: Vec<Action>,
    starts: Vec<usize>,
    logits: Vec<f32>,
    moves: Vec<Action>,
    /// Root visits of the last search, most first.
    last: Vec<(Action, u64)>,
    /// The last search's expected line and each root move's value for the mover (one world).
    last_line: Vec<Action>,
    last_values: Vec<(Action, f32)>,
    /// Searches a move, each from its own determinization.
    worlds: u32,
    /// The mixed leaf value: the playout, as `mcts` and `ismcts` run theirs (none: the
    /// network's value alone), the playout's share, and its result's share on the score margin.
    rollout: Option<meeple_search::rollout::Rollout<S>>,
    lambda: f32,
    rollout_score: f64,
    /// Whether each playout starts from its own sample of what the searching player cannot see.
    resample: bool,
    /// Forward pruning of the tree's moves (`filter=true`).
    filter: Option<Arc<dyn GameEvaluator<S>>>,
    /// The leaves' playout results (a value per seat) and the values mixed from them.
    rolled: Vec<f32>,
    mixed: Vec<f32>,
    _state: std::marker::PhantomData<S>,
}

/// Simulations that fit in 90% of the time left until `stop` at `per` seconds each.
pub(super) fn sims_to_fit(stop: Instant, per: f64) -> u32 {
    let left = stop.saturating_duration_since(Instant::now()).as_secs_f64();
    (left / per.max(1e-7) * 0.9).min(u32::MAX as f64) as u32
}

impl<S: State> AzAgent<S> {
    pub(super) fn from_spec<G: Game<State = S>>(game: &G, spec: &Spec, seed: u64) -> Result<Self, Error> {
        let o = spec.options("agent az", AZ_INFO.params)?;
        let model = model_path(&o, "az")?;
        let net = load_network(game, &model, threads(&o, "az")?)?;
        let rescale =
            if o.given("rescale") { o.get_bool("rescale")? } else { play_default(&model, "rescale")?.unwrap_or(true) };
        let root = match o.get::<String>("root")?.as_str() {
            "gumbel" => Root::Gumbel,
            "puct" => Root::Puct,
            other => return Err(o.bad_value("root", other)),
        };
        // Settings a search never reads would silently do nothing.
        if root == Root::Gumbel {
            for key in ["c", "fpu"] {
                if o.given(key) {
                    return Err(o.bad_value(
                        key,
                        &format!(
                            "{} (PUCT's: the Gumbel root selects every node by its improved policy; give root=puct)",
                            o.get::<String>(key)?
                        ),
                    ));
                }
            }
        }
        if o.given("prove") && o.given("solver") && !o.get_bool("solver")? {
            return Err(o.bad_value(
                "prove",
                &format!(
                    "{} (it proves leaves for the solver; solver=false turns that off)",
                    o.get::<String>("prove")?
                ),
            ));
        }
        if o.given("rescale") && root == Root::Puct {
            return Err(o.bad_value(
                "rescale",
                &format!(
                    "{} (it stretches the Gumbel root's completed Q before sigma; root=puct selects by PUCT and reads \
                     no such scale)",
                    o.get::<String>("rescale")?
                ),
            ));
        }
        if o.given("m") && root == Root::Puct {
            return Err(o.bad_value(
                "m",
                &format!("{} (the Gumbel root's candidates; root=puct has none)", o.get::<String>("m")?),
            ));
        }
        let time = o.get_duration("time")?;
        let sims: u32 = o.get_in("sims", 1..=10_000_000)?;
        let c: f32 = o.get("c")?;
        if !(c.is_finite() && c >= 0.0) {
            return Err(o.bad_value("c", &c.to_string()));
        }
        let config = SearchConfig {
            c_puct: c,
            fpu: o.get_in("fpu", 0.0..=1.0)?,
            prior_temp: o.get_in("prior_temp", 0.1..=10.0)?,
            gumbel_m: o.get_in("m", 1..=256)?,
            solver: o.get_bool("solver")?,
            rescale,
            prove: o.get_in("prove", 0..=6)?,
            ..SearchConfig::new(root, sims)
        }
        .quiet();
        let share = |key: &str| -> Result<f64, Error> {
            let x: f64 = o.get(key)?;
            if (0.0..=1.0).contains(&x) { Ok(x) } else { Err(o.bad_value(key, &x.to_string())) }
        };
        let (lambda, rollout_score) = (share("lambda")? as f32, share("rollout_score")?);
        let rollout_spec: String = o.get("rollout")?;
        let eval_spec: String = o.get("eval")?;
        let eval = meeple_search::make_evaluator_with(game, &eval_spec, &extension())
            .map_err(|e| o.bad_value("eval", &format!("{eval_spec} ({e})")))?;
        let shaping = meeple_search::rollout::RolloutConfig::from_options(&o)?;
        let resample = o.get_bool("resample")?;
        let rollout = if rollout_spec.trim().is_empty() {
            // Playout settings without a playout would silently do nothing.
            for key in ["margin", "margin_unit", "cutoff", "eval_scale", "lambda", "rollout_score", "resample"] {
                if o.given(key) {
                    return Err(o.bad_value(key, &format!("{} (only with rollout=AGENT)", o.get::<String>(key)?)));
                }
            }
            None
        } else {
            if rollout_score > 0.0 && game.initial_state().score_scale().is_none() {
                return Err(
                    o.bad_value("rollout_score", &format!("{rollout_score} ({} has no score margin)", game.spec()))
                );
            }
            // `random` takes the fast built-in playout; any other spec plays every seat.
            let playout = if rollout_spec.trim() == "random" {
                None
            } else {
                Some(
                    make_agent(game, &rollout_spec, meeple_game::derive_seed(seed, 0x5011))
                        .map_err(|e| o.bad_value("rollout", &format!("{rollout_spec} ({e})")))?,
                )
            };
            Some(meeple_search::rollout::Rollout::new(playout, eval.clone(), shaping, game.num_players()))
        };
        let filter = o.get_bool("filter")?.then_some(eval);
        if o.given("eval") && filter.is_none() && !(rollout.is_some() && o.given("cutoff")) {
            return Err(o.bad_value("eval", &format!("{eval_spec} (read only by filter=true and a playout's cutoff)")));
        }
        Ok(AzAgent {
            net,
            sims: (o.given("sims") || time.is_none()).then_some(sims),
            config,
            time,
            seats: game.num_players(),
            rng: rng_from_seed(seed),
            spec: spec.to_string(),
            verbose: o.get_bool("verbose")?,
            worlds: o.get_in("worlds", 1..=64)?,
            batch: match o.get_opt::<usize>("batch")? {
                Some(b) if (1..=256).contains(&b) => Some(b),
                Some(b) => return Err(o.bad_value("batch", &b.to_string())),
                None => None,
            },
            sim_seconds: None,
            obs: Vec::new(),
            one: Vec::new(),
            legal: Vec::new(),
            listed: Vec::new(),
            starts: Vec::new(),
            logits: Vec::new(),
            moves: Vec::new(),
            last: Vec::new(),
            last_line: Vec::new(),
            last_values: Vec::new(),
            rollout,
            lambda,
            rollout_score,
            resample,
            filter,
            rolled: Vec::new(),
            mixed: Vec::new(),
            _state: std::marker::PhantomData,
        })
    }

    /// Runs `search` for `searcher`'s move to its end (or `stop`), evaluating its leaves in
    /// batches; returns the network evaluations made. A timed search may grow to `cap` simulations.
    fn run(
        &mut self,
        search: &mut Search<S>,
        searcher: Player,
        stop: Option<Instant>,
        cancel: Option<meeple_game::Cancel>,
        cap: u32,
    ) -> Result<u32, Error> {
        let mut evaluated = 0u32;
        let began = Instant::now();
        let mut replanned = false;
        // The longest batch so far: a timed search does not start one that would end past its
        // stop (the first batches of a Cathedral opening, each expanding nodes with a child per
        // placement, took the moves a few milliseconds past their time).
        let mut longest = Duration::ZERO;
        loop {
            // Halfway through a timed search, its own pace so far replans the rest: the pace
            // carried over from the last move is stale where simulations get cheaper as the game
            // goes on (Cathedral's nodes have fewer children each move), and a search planned on
            // it would stop with much of its time unspent.
            if let Some(stop) =
                stop.filter(|_| !replanned && search.sims() >= search.planned() / 2 && search.sims() > 0)
            {
                replanned = true;
                let per = began.elapsed().as_secs_f64() / search.sims() as f64;
                search.extend_to(search.sims().saturating_add(sims_to_fit(stop, per)).min(cap));
            }
            if stop.is_some_and(|s| search.sims() > 0 && Instant::now() + longest >= s) {
                return Ok(evaluated);
            }
            let batch_began = Instant::now();
            let batch = self.batch.unwrap_or((search.planned() / 64).clamp(1, 8) as usize);
            let n = search.gather_until(batch, stop);
            if n == 0 {
                if search.is_over() || stop.is_some_and(|s| Instant::now() >= s) {
                    return Ok(evaluated);
                }
                continue;
            }
            self.obs.clear();
            self.listed.clear();
            self.starts.clear();
            self.starts.push(0);
            for leaf in search.leaves() {
                let mover = leaf.current_player().expect("leaves that wait for the network are decisions");
                leaf.observation(mover, &mut self.one);
                self.obs.extend_from_slice(&self.one);
                leaf.legal_actions(&mut self.moves);
                self.listed.extend_from_slice(&self.moves);
                self.starts.push(self.listed.len());
            }
            let out = PolicyValue::evaluate_listed(self.net.as_ref(), &self.obs, n, &self.listed, &self.starts, false)?;
            // The search reads each leaf's legal moves' logits alone: the others keep stale values.
            let actions = self.net.actions();
            self.logits.resize(n * actions, 0.0);
            for (b, w) in self.starts.windows(2).enumerate() {
                for j in w[0]..w[1] {
                    self.logits[b * actions + self.listed[j] as usize] = out.logits[j];
                }
            }
            let values = if let Some(rollout) = self.rollout.as_mut() {
                rollout.set_deadline(stop);
                self.rolled.clear();
                for leaf in search.leaves() {
                    let mover = leaf.current_player().expect("leaves that wait for the network are decisions");
                    let start =
                        if self.resample { leaf.determinize_open(searcher, &mut self.rng) } else { leaf.clone() };
                    let end = rollout.play(start, &mut self.rng);
                    let reward = rollout.reward(&end);
                    let margins = if self.rollout_score > 0.0 { crate::az::train::margin_values(&end) } else { None };
                    // Mover first, as the network gives its values.
                    for k in 0..reward.len() {
                        let p = (mover + k) % reward.len();
                        let m = margins.as_ref().map_or(reward[p], |m| m[p]);
                        self.rolled.push(((1.0 - self.rollout_score) * reward[p] + self.rollout_score * m) as f32);
                    }
                }
                let lambda = self.lambda;
                self.mixed.clear();
                self.mixed.extend(out.values.iter().zip(&self.rolled).map(|(&v, &r)| (1.0 - lambda) * v + lambda * r));
                &self.mixed[..]
            } else {
                &out.values[..]
            };
            search.deliver_all(&self.logits, values, actions, self.net.seats());
            evaluated += n as u32;
            longest = longest.max(batch_began.elapsed());
            // A tree at the process's cap stops growing: the search answers with what it has.
            if stop.is_some_and(|s| Instant::now() >= s)
                || cancel.is_some_and(meeple_game::Cancel::is_set)
                || search.memory_bytes() >= meeple_game::limits::max_tree_bytes()
            {
                return Ok(evaluated);
            }
        }
    }
}

impl<S: State> Agent<S> for AzAgent<S> {
    fn spec(&self) -> String {
        self.spec.clone()
    }

    fn memory_bound(&self) -> u64 {
        meeple_game::limits::max_tree_bytes()
    }

    fn analysis(&self) -> Vec<meeple_game::MoveStat> {
        self.last
            .iter()
            .map(|&(action, n)| meeple_game::MoveStat {
                action,
                visits: Some(n),
                value: self.last_values.iter().find(|v| v.0 == action).map(|v| v.1 as f64),
            })
            .collect()
    }

    fn line(&self) -> Vec<Action> {
        self.last_line.clone()
    }

    fn act(&mut self, state: &S, budget: &Budget) -> Result<Action, Error> {
        let Some(mover) = state.current_player() else {
            return Err(Error::Agent { agent: "az".into(), reason: "no decision to make in this state".into() });
        };
        let start = Instant::now();
        state.legal_actions(&mut self.legal);
        if self.legal.len() == 1 && budget.is_timed(self.time) {
            return Ok(self.legal[0]);
        }
        let stop = budget.stop_at(start, self.time);
        // Plan the simulations: the cap given, and what fits the time at the pace of the last
        // searches (a short trial search measures it the first time). Gumbel's sequential
        // halving shares out a known budget, so a timed search must know its size up front.
        if self.sim_seconds.is_none() && stop.is_some() && self.config.root == Root::Gumbel {
            let t = Instant::now();
            let trial = SearchConfig { sims: 32, ..self.config.clone() };
            let root = state.determinize_open(mover, &mut self.rng);
            let mut search = Search::new(root, self.seats, trial, self.rng.random()).with_filter(self.filter.clone());
            self.run(&mut search, mover, stop, budget.cancel, 0)?;
            self.sim_seconds = Some(t.elapsed().as_secs_f64() / search.sims().max(1) as f64);
        }
        // With several worlds each search gets an even share of the simulations and of the time
        // left, and the moves' root visits are summed over them.
        let worlds = self.worlds;
        let iterations = budget.iterations.map(|n| n.min(u32::MAX as u64) as u32);
        let mut visits: Vec<(Action, u64)> = Vec::new();
        let (mut evaluated, mut nodes, mut value, mut first) = (0u32, 0usize, 0.0f32, None);
        for w in 0..worlds {
            let share = |n: u32| (n / worlds).max(1);
            let stop_w = stop.map(|s| {
                let left = s.saturating_duration_since(Instant::now());
                Instant::now() + left / (worlds - w)
            });
            let mut sims = self.sims.map_or(u32::MAX, share);
            // A PUCT root needs no budget up front: a timed one runs to its stop. (Planned at
            // the last move's pace, it stopped with a tenth of its time or more unspent.)
            if let (Some(stop), Some(per), Root::Gumbel) = (stop_w, self.sim_seconds, self.config.root) {
                sims = sims.min(sims_to_fit(stop, per)).max(1);
            }
            // The most a replanned search may run: the caps the spec and the budget set.
            let cap = iterations.map_or(u32::MAX, share).min(self.sims.map_or(u32::MAX, share));
            if let Some(n) = iterations {
                sims = sims.min(share(n)).max(1);
            }
            let root = state.determinize_open(mover, &mut self.rng);
            let config = SearchConfig { sims, ..self.config.clone() };
            let mut search = Search::new(root, self.seats, config, self.rng.random()).with_filter(self.filter.clone());
            let began = Instant::now();
            evaluated += self.run(&mut search, mover, stop_w, budget.cancel, cap)?;
            if search.sims() >= 16 {
                // Late in a game many simulations end at terminal states without the network: the
                // newest pace matters most.
                let per = began.elapsed().as_secs_f64() / search.sims() as f64;
                self.sim_seconds = Some(self.sim_seconds.map_or(per, |e| 0.3 * e + 0.7 * per));
            }
            if worlds == 1 {
                self.last_line = search.line();
                self.last_values = search.root_values(mover);
            } else {
                self.last_line.clear();
                self.last_values.clear();
            }
            let result = search.result();
            first.get_or_insert(result.action);
            nodes += search.nodes();
            value += result.value.get(mover).copied().unwrap_or(0.0) / worlds as f32;
            for &(a, n) in &result.visits {
                match visits.iter_mut().find(|v| v.0 == a) {
                    Some(v) => v.1 += n as u64,
                    None => visits.push((a, n as u64)),
                }
            }
            if budget.cancel.is_some_and(meeple_game::Cancel::is_set) {
                break;
            }
        }
        // One world: the search's own choice (Gumbel's halving winner); more: the most visited
        // over them all.
        let chosen = if worlds == 1 {
            first.expect("a search ran")
        } else {
            visits.iter().max_by_key(|&&(a, n)| (n, std::cmp::Reverse(a))).map_or(self.legal[0], |v| v.0)
        };
        let action = if self.legal.contains(&chosen) { chosen } else { self.legal[0] };
        self.last = visits;
        self.last.sort_by_key(|&(a, n)| (std::cmp::Reverse(n), a));
        if self.verbose {
            let shown: Vec<String> =
                self.last.iter().take(5).map(|&(a, n)| format!("{} {n}v", state.action_to_string(a))).collect();
            eprintln!(
                "az: {evaluated} evaluations in {:.3} s, {} nodes, value {:.3}, plays {}; top {}",
                start.elapsed().as_secs_f64(),
                nodes,
                value,
                state.action_to_string(action),
                shown.join(", ")
            );
        }
        Ok(action)
    }
}
