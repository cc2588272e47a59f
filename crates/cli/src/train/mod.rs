//! `meeple train KIND GAME`: the command line of every trainer. A trainer's flags are its
//! config's fields (`meeple_learn::flags`); `learner` holds what every trainer shares: the run
//! options, the one Ctrl-C handler and the progress display around `meeple_learn::run`. AlphaZero
//! (`az`) and the bootstrap learners (`strap`, with its several starts) add commands of their own.

mod az;
pub mod learner;
mod strap;

use learner::LearnerArgs;
use meeple_learn::trainers::{Dqn, Ppo, Td, Vae};
use meeple_learn::{dqn::DqnConfig, ppo::PpoConfig, td::TdConfig, vae::VaeRunConfig, value::ValueFlags};

use anyhow::Result;
use clap::Subcommand;
use meeple_games::with_game;

#[derive(Subcommand, Debug)]
pub enum TrainCommand {
    /// AlphaZero (Silver et al. 2018; Gumbel root of Danihelka et al. 2022): batched self-play
    /// with a network-guided search, training on its games.
    Az(az::AzArgs),
    /// RootStrap(αβ): a linear evaluator's weights learned by self-play, the root of each
    /// alpha-beta search pulled toward its search value (Veness, Silver, Uther and Blair 2009).
    Rootstrap(strap::StrapArgs),
    /// TreeStrap(αβ): as RootStrap, every node alpha-beta valued pulled toward its value within
    /// the bound the search proved there.
    Treestrap(strap::StrapArgs),
    /// TD-Leaf(λ): as RootStrap, each player's successive search values and the result as
    /// temporal differences, credited to the principal variation's leaf (KnightCap: Baxter,
    /// Tridgell and Weaver 2000).
    Tdleaf(strap::StrapArgs),
    /// TD(λ): a value network trained by self-play on afterstates, each prediction toward the
    /// mover's later ones and the result (Sutton 1988; TD-Gammon's recipe on Catan); plays as
    /// `value:model=F` (`catan-td:model=F` on Catan). The defaults shown are the Catan
    /// self-play study's; on Catan they are the recipe of meeple's shipped Catan networks
    /// (`--net resmlp:blocks=2,width=256 --lambda 0.9 --lr 1e-3 --minibatch 256 --batch-games 2
    /// --score-weight 0.5 --undecided 0`), which learns where the study's did not.
    Td(LearnerArgs<TdConfig>),
    /// A value-only network, from ε-greedy one-ply games against an opponent, or fitted to a
    /// search's values (an MLP or a small CNN; from MCTS's root values or its trees); plays as
    /// `value:model=F`, evaluates as `eval=(net:model=F)`.
    Value(LearnerArgs<ValueFlags>),
    /// DQN (Mnih et al. 2015; double DQN of van Hasselt et al. 2016, prioritized replay of
    /// Schaul et al. 2016): prioritized or uniform replay, n-step returns, ε-greedy
    /// or Boltzmann exploration, self-play or play against a fixed agent; plays as
    /// `dqn:model=F`.
    Dqn(LearnerArgs<DqnConfig>),
    /// PPO (Schulman et al. 2017): clipped objective, GAE, entropy bonus, minibatch epochs; self-play
    /// against a softly updated older self, a pool of snapshots or itself, or play against a
    /// fixed agent; plays as `ppo:model=F`.
    Ppo(LearnerArgs<PpoConfig>),
    /// An observation autoencoder (a VAE, Kingma and Welling 2014): positions from games of given agents,
    /// the reconstruction measured on held-out ones; DQN and PPO read it with `--encoder`.
    Vae(LearnerArgs<VaeRunConfig>),
}

pub fn run(command: &TrainCommand) -> Result<()> {
    match command {
        TrainCommand::Az(args) => with_game!(args.game.as_str(), |game| az::run(&game, args))?,
        TrainCommand::Rootstrap(args) => {
            with_game!(args.game().as_str(), |game| strap::run(&game, meeple_learn::strap::Strap::Root, args))?
        }
        TrainCommand::Treestrap(args) => {
            with_game!(args.game().as_str(), |game| strap::run(&game, meeple_learn::strap::Strap::Tree, args))?
        }
        TrainCommand::Tdleaf(args) => {
            with_game!(args.game().as_str(), |game| strap::run(&game, meeple_learn::strap::Strap::Leaf, args))?
        }
        TrainCommand::Td(args) => with_game!(args.game().as_str(), |game| args.run(&game, &Td { value: false }))?,
        TrainCommand::Value(args) => with_game!(args.game().as_str(), |game| args.run_named(&game, "value"))?,
        TrainCommand::Dqn(args) => with_game!(args.game().as_str(), |game| args.run(&game, &Dqn))?,
        TrainCommand::Ppo(args) => with_game!(args.game().as_str(), |game| args.run(&game, &Ppo))?,
        TrainCommand::Vae(args) => with_game!(args.game().as_str(), |game| args.run(&game, &Vae))?,
    }
}
