//! `meeple train td GAME`: TD(λ) self-play of a value network on afterstates (report 002's Catan
//! learner), with a progress line, metrics, a ladder evaluation every few minutes, Ctrl-C to
//! stop with a checkpoint, and `--resume`.

use super::learner::{RunArgs, drive};
use anyhow::{Result, bail};
use clap::Args;
use meeple_game::{Game, limits};
use meeple_learn::td::{TdConfig, TdRun};

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
    /// Clip the gradient by its one global norm (PyTorch's `clip_grad_norm_`, as report 002
    /// trained) instead of each tensor's own norm (how the shipped Catan networks were trained).
    #[arg(long)]
    clip_global: bool,
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
    /// Start from this checkpoint's weights instead of fresh ones: a value network of the same
    /// shape, perhaps trained on another variant (the beginner board's for shuffled boards).
    /// Its --net is the checkpoint's.
    #[arg(long, value_name = "FILE", conflicts_with = "resume")]
    init: Option<String>,
    #[command(flatten)]
    run: RunArgs,
}

impl TdArgs {
    pub fn game(&self) -> &String {
        &self.game
    }
}

pub fn run<G: Game>(game: &G, args: &TdArgs) -> Result<()> {
    let threads = limits::check_threads("--threads", args.run.threads)?;
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
    config.train.clip_global = args.clip_global;
    config.train.huber = (args.huber > 0.0).then_some(args.huber);
    config.seed = args.run.seed;
    config.threads = threads;
    config.init = args.init.clone();
    config.undecided = args.undecided;
    config.score_weight = args.score_weight;
    if !(args.clip.is_finite() && args.clip > 0.0) {
        bail!("--clip {} must be a positive number", args.clip);
    }
    config.check()?;
    let options = args.run.options(&args.run.out("td"), threads, args.lr_decay);
    drive(game, &options, |resume| TdRun::new(game.clone(), config, resume))
}
