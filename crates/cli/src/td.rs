//! `meeple train td GAME`: TD(λ) self-play of a value network on afterstates (report 002's Catan
//! learner), with a progress line, metrics, a ladder evaluation every few minutes, Ctrl-C to
//! stop with a checkpoint, and `--resume`.

use crate::learner::{command_line, drive, equal_time};
use anyhow::{Result, bail};
use clap::Args;
use meeple_game::{Game, limits};
use meeple_learn::td::{TdConfig, TdRun};
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct TdArgs {
    /// Game spec, e.g. `catan:players=3` or `catan:players=3,board=random` (shuffled boards).
    game: String,
    /// The value network: `resmlp:blocks=B,width=W` (report 002: blocks=4,width=500, the
    /// default), `mlp:layers=L,width=W`, or `resnet:...` for board planes.
    #[arg(long, value_name = "SPEC", default_value = "resmlp:blocks=4,width=500")]
    net: String,
    /// λ of the λ-returns: 0 trains each prediction toward the mover's next one (report 002),
    /// 1 toward the game's result.
    #[arg(long, default_value_t = 0.0)]
    lambda: f64,
    /// Chance of a uniformly random move at each decision (report 002: 1 in 1,000).
    #[arg(long, default_value_t = 1e-3)]
    epsilon: f64,
    /// Games played side by side; their afterstates go through the network in one pass.
    #[arg(long, default_value_t = 32)]
    parallel: usize,
    /// Finished games per training round (report 002: 1, later 2 and 4).
    #[arg(long, default_value_t = 1)]
    batch_games: usize,
    /// Positions per optimiser step within a round (default: the whole round in one step, as
    /// the report).
    #[arg(long, default_value_t = 65_536)]
    minibatch: usize,
    /// AdamW's learning rate (report 002: 5e-5, later 1e-5).
    #[arg(long, default_value_t = 5e-5)]
    lr: f64,
    /// Anneal the learning rate by a cosine to a tenth of --lr over the run (its --minutes or
    /// --games, whichever it reaches first at its pace so far); default: constant.
    #[arg(long)]
    lr_decay: bool,
    /// AdamW's decoupled weight decay.
    #[arg(long, default_value_t = 1e-2)]
    weight_decay: f64,
    /// Largest gradient norm (report 002: 0.1).
    #[arg(long, default_value_t = 0.1)]
    clip: f64,
    /// Threshold of the Huber value loss on the [0, 1] value scale (report 002's smooth L1 has
    /// 1 on a 1-3 place scale, i.e. 0.5 here); 0 for the squared error.
    #[arg(long, default_value_t = 0.5)]
    huber: f64,
    /// Every seat's target when a game ends undecided (Catan's turn limit): 0 teaches that
    /// stalling loses; default: the game's own returns (an even split).
    #[arg(long, value_name = "V")]
    undecided: Option<f64>,
    /// Share of each seat's final target from its score against the best score (0: the
    /// result alone): a denser signal, as report 002 trained toward finishing places.
    #[arg(long, default_value_t = 0.0)]
    score_weight: f64,
    /// Stop after this many minutes (this session and earlier ones together).
    #[arg(long, value_name = "M")]
    minutes: Option<f64>,
    /// Stop after this many games.
    #[arg(long, value_name = "N")]
    games: Option<u64>,
    /// Evaluate against the ladder (and keep a checkpoint) every this many minutes; 0 never.
    #[arg(long, default_value_t = 15.0)]
    eval_minutes: f64,
    /// Games against each ladder opponent per evaluation, a multiple of the seatings.
    #[arg(long)]
    eval_games: Option<usize>,
    /// Ladder opponents (repeat; default: random and the game's own ladder agents).
    #[arg(long = "opponent", value_name = "SPEC")]
    opponents: Vec<String>,
    /// An opponent given the evaluated agent's own mean time a move in each evaluation (an
    /// agent spec without time=), so the curves show strength at equal cost; "none" leaves it out.
    #[arg(long, value_name = "SPEC", default_value = meeple_learn::ladder::DEFAULT_EQUAL_TIME)]
    equal_time: String,
    /// The run directory (run.json, metrics.jsonl, ladder.json, ckpt/last.safetensors with its
    /// sidecar and optimiser state, and the checkpoints kept at evaluations).
    #[arg(long, value_name = "DIR", default_value = "runs/td")]
    out: PathBuf,
    /// Continue the run in --out from its last checkpoint.
    #[arg(long)]
    resume: bool,
    /// Start from this checkpoint's weights instead of fresh ones: a value network of the same
    /// shape, perhaps trained on another variant (the beginner board's for shuffled boards).
    /// Its --net is the checkpoint's.
    #[arg(long, value_name = "FILE", conflicts_with = "resume")]
    init: Option<String>,
    /// Seed of the network's initial weights and of the games.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Threads: the games in flight are shared among them (each builds and values its games'
    /// afterstates), and the optimiser's steps use them too.
    #[arg(long, default_value_t = 2)]
    threads: usize,
}

impl TdArgs {
    pub fn game(&self) -> &String {
        &self.game
    }
}

pub fn run<G: Game>(game: &G, args: &TdArgs) -> Result<()> {
    let threads = limits::check_threads("--threads", args.threads)?;
    let mut config = TdConfig::report(&game.spec().to_string());
    config.net = args.net.clone();
    config.lambda = args.lambda;
    config.epsilon = args.epsilon;
    config.parallel = args.parallel;
    config.batch_games = args.batch_games;
    config.minibatch = args.minibatch;
    config.train.lr = args.lr;
    if args.lr_decay {
        config.train.decay = 0;
    }
    config.train.weight_decay = args.weight_decay;
    config.train.clip_norm = args.clip;
    config.train.huber = (args.huber > 0.0).then_some(args.huber);
    config.seed = args.seed;
    config.threads = threads;
    config.init = args.init.clone();
    config.undecided = args.undecided;
    config.score_weight = args.score_weight;
    if !(args.clip.is_finite() && args.clip > 0.0) {
        bail!("--clip {} must be a positive number", args.clip);
    }
    config.check()?;
    let options = meeple_learn::run::RunOptions {
        resume: args.resume,
        minutes: args.minutes,
        games: args.games,
        seed: args.seed,
        threads,
        eval_minutes: args.eval_minutes,
        eval_games: args.eval_games,
        ladder: args.opponents.clone(),
        equal_time: equal_time(&args.equal_time),
        commands: vec![command_line()],
        needs_limit: args.lr_decay.then_some("--lr-decay anneals the learning rate over the run"),
        ..meeple_learn::run::RunOptions::new(&args.out)
    };
    drive(game, &options, |resume| TdRun::new(game.clone(), config, resume))
}
