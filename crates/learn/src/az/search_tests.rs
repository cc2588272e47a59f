use super::*;
use meeple_game::Game;
use meeple_games::TicTacToe;

/// A Gumbel search on the empty tic-tac-toe board whose root the network has valued at 0.5
/// with logits 1, 0, -1 for a1, a2, a3 and -2 elsewhere.
fn expanded(root: Root) -> Search<<TicTacToe as Game>::State> {
    let mut s = Search::new(TicTacToe.initial_state(), 2, SearchConfig::new(root, 64), 3);
    assert_eq!(s.gather(1), 1);
    let mut logits = [-2.0f32; 9];
    logits[..3].copy_from_slice(&[1.0, 0.0, -1.0]);
    s.deliver_all(&logits, &[0.5, 0.5], 9, 2);
    s
}

/// Gives root child `k` `visits` visits with mean value `q` for the mover (X, seat 0).
fn visit(s: &mut Search<<TicTacToe as Game>::State>, k: usize, visits: u32, q: f32) {
    let i = s.nodes[0].first_child as usize + k;
    s.nodes[i].visits = visits;
    s.sums[i * 2] = q * visits as f32;
    s.sums[i * 2 + 1] = (1.0 - q) * visits as f32;
}

/// The logits of [`expanded`]'s root and, by hand, the completed Q after a1 got 3 visits at
/// 0.8 and a2 1 at 0.2: priors p = softmax(logits); the others at v_mix = (v + N / (p0 + p1)
/// (p0 q0 + p1 q1)) / (1 + N) with N = 4 visits.
fn by_hand_completed_q() -> ([f64; 9], Vec<f64>) {
    let logits = [1.0f64, 0.0, -1.0, -2.0, -2.0, -2.0, -2.0, -2.0, -2.0];
    let z: f64 = logits.iter().map(|l| l.exp()).sum();
    let (p0, p1) = (1f64.exp() / z, 1.0 / z);
    let v_mix = (0.5 + 4.0 / (p0 + p1) * (p0 * 0.8 + p1 * 0.2)) / 5.0;
    assert!((0.2..0.8).contains(&v_mix), "{v_mix}");
    (logits, (0..9).map(|k| [0.8, 0.2].get(k).copied().unwrap_or(v_mix)).collect())
}

/// `pi` is the softmax of `scores`.
fn assert_softmax(pi: &[f32], scores: &[f64]) {
    let total: f64 = scores.iter().map(|x| x.exp()).sum();
    for (k, score) in scores.iter().enumerate() {
        let expected = score.exp() / total;
        assert!((pi[k] as f64 - expected).abs() < 1e-5, "move {k}: {} against {expected}", pi[k]);
    }
}

#[test]
fn the_improved_policy_is_softmax_of_logits_and_sigma_of_normalised_completed_q() {
    let mut s = expanded(Root::Gumbel);
    visit(&mut s, 0, 3, 0.8);
    visit(&mut s, 1, 1, 0.2);
    let pi = s.improved_policy(0);
    // q-hat = (Q - min) / (max - min); sigma = (c_visit + max visits) c_scale q-hat = (50 + 3) 0.1 q-hat.
    let (logits, q) = by_hand_completed_q();
    let scores: Vec<f64> = (0..9).map(|k| logits[k] + 53.0 * 0.1 * (q[k] - 0.2) / 0.6).collect();
    assert_softmax(&pi, &scores);
    // Raw win probabilities (no normalisation) give a1 less weight: here 0.8 - 0.2 is
    // stretched to 1 - 0.
    let raw: Vec<f64> = (0..9).map(|k| (logits[k] + 5.3 * q[k]).exp()).collect();
    let raw_a1 = raw[0] / raw.iter().sum::<f64>();
    assert!(pi[0] as f64 > raw_a1 + 0.05, "{} against {raw_a1}", pi[0]);
}

#[test]
fn without_rescaling_sigma_takes_the_completed_q_as_it_is() {
    let mut s = expanded(Root::Gumbel);
    s.config.rescale = false;
    visit(&mut s, 0, 3, 0.8);
    visit(&mut s, 1, 1, 0.2);
    let pi = s.improved_policy(0);
    // As above, but sigma = (50 + 3) 0.1 Q on the win probabilities themselves.
    let (logits, q) = by_hand_completed_q();
    let scores: Vec<f64> = (0..9).map(|k| logits[k] + 5.3 * q[k]).collect();
    assert_softmax(&pi, &scores);
    // Two values a hair apart stay a hair apart (rescaled, they would be 0 and 1).
    let mut s = expanded(Root::Gumbel);
    s.config.rescale = false;
    visit(&mut s, 0, 1, 0.501);
    visit(&mut s, 1, 1, 0.500);
    let pi = s.improved_policy(0);
    let ratio = pi[0] as f64 / pi[1] as f64;
    assert!((ratio - (1.0f64 + 51.0 * 0.1 * 0.001).exp()).abs() < 1e-3, "{ratio}");
    s.config.rescale = true;
    let pi = s.improved_policy(0);
    assert!(pi[0] as f64 / pi[1] as f64 > 1f64.exp() * 100.0, "rescaled: {:?}", &pi[..2]);
}

#[test]
fn an_unvisited_candidate_scores_with_the_mixed_value_not_as_a_loss() {
    let mut s = expanded(Root::Gumbel);
    visit(&mut s, 1, 2, 0.1);
    let first = s.nodes[0].first_child;
    let score = s.root_scores();
    // a1 (unvisited, logit 1) and a2 (visited and poor, logit 0); no noise.
    let (unvisited, poor) = (score(&(first, 0.0)), score(&(first + 1, 0.0)));
    // v_mix = (0.5 + 2 x 0.1) / 3 = 0.2333 for every unvisited move: the largest completed
    // value, so q-hat 1 for them and 0 for a2: a1 scores 1 + (50 + 2) x 0.1 x 1, a2 0.
    assert!((unvisited - (1.0 + 5.2)).abs() < 1e-4 && poor.abs() < 1e-4, "{unvisited} {poor}");
}

#[test]
fn a_search_extended_midway_runs_to_its_new_budget() {
    use meeple_games::Connect4;
    let game = Connect4::default();
    let run = |extend: Option<(u32, u32)>| {
        let mut config = SearchConfig::new(Root::Gumbel, 40);
        config.solver = false;
        let mut s = Search::new(game.initial_state(), 2, config, 5);
        let uniform = [0.0f32; 7];
        loop {
            if let Some((at, to)) = extend
                && s.sims() == at
            {
                s.extend_to(to);
                s.extend_to(to / 2);
            }
            let n = s.gather(1);
            if n == 0 {
                break;
            }
            s.deliver_all(&uniform, &[0.5, 0.5], 7, 2);
        }
        (s.sims(), s.planned(), s.result())
    };
    let (sims, planned, plain) = run(None);
    assert_eq!((sims, planned), (40, 40));
    // Raised to 120 after 20 simulations (and not lowered by a smaller ask): the halving's
    // later phases share the larger budget, and every simulation reaches a root child.
    let (sims, planned, grown) = run(Some((20, 120)));
    assert_eq!((sims, planned), (120, 120));
    let visits = |r: &SearchResult| r.visits.iter().map(|v| v.1).sum::<u32>();
    assert_eq!((visits(&plain), visits(&grown)), (39, 119));
    let most = |r: &SearchResult| r.visits.iter().map(|v| v.1).max().unwrap();
    assert!(most(&grown) > 2 * most(&plain), "{:?} against {:?}", grown.visits, plain.visits);
}

/// Keeps the moves whose number is even, or none at all.
struct EvenMoves(bool);

impl meeple_game::Evaluator<<TicTacToe as Game>::State> for EvenMoves {
    fn evaluate(&self, _: &<TicTacToe as Game>::State, _: meeple_game::Player) -> f64 {
        0.0
    }

    fn filter(&self, _: &<TicTacToe as Game>::State, actions: &mut Vec<Action>) {
        actions.retain(|&a| self.0 && a % 2 == 0);
    }
}

#[test]
fn a_filter_prunes_every_expanded_node_and_never_leaves_one_without_moves() {
    for root in [Root::Gumbel, Root::Puct] {
        let run = |keep: bool| {
            let mut config = SearchConfig::new(root, 200).quiet();
            config.solver = false;
            let mut s = Search::new(TicTacToe.initial_state(), 2, config, 5)
                .with_filter(Some(std::sync::Arc::new(EvenMoves(keep))));
            while s.gather(4) > 0 {
                s.deliver_all(&[0.0f32; 9 * 4], &[0.5f32; 2 * 4], 9, 2);
            }
            s
        };
        let mut s = run(true);
        // Every node with children has only even moves (a1, a3, b2, c1, c3 where all are
        // open), or, where every even square is taken, all its moves, which are odd: never a mix.
        let expanded: Vec<&Node> = s.nodes.iter().filter(|n| n.children > 0).collect();
        assert!(expanded.len() > 20, "{} nodes expanded", expanded.len());
        assert_eq!(s.nodes[0].children, 5);
        for n in &expanded {
            let kids: Vec<Action> = s.nodes[n.first_child as usize..(n.first_child + n.children) as usize]
                .iter()
                .map(|k| k.action)
                .collect();
            let even = kids.iter().filter(|&&a| a % 2 == 0).count();
            assert!(even == kids.len() || even == 0, "{kids:?}");
        }
        assert_eq!(s.result().action % 2, 0);
        // A filter that would drop every move drops none.
        assert_eq!(run(false).nodes[0].children, 9);
    }
}

#[test]
fn a_halving_waits_for_the_values_of_pending_leaves() {
    let mut s = expanded(Root::Gumbel);
    let h = s.halving.clone().expect("a Gumbel root plans its halving");
    for &(i, _) in &h.remaining {
        s.nodes[i as usize].visits = h.target;
    }
    // Every candidate is at the phase's target, but a leaf still waits for its value.
    let (node, path, state) = (h.remaining[0].0, vec![0, h.remaining[0].0], s.root);
    s.pending.push(Pending { node, path, state });
    assert_eq!(s.next_root_child(), None, "no halving while a value is pending");
    assert_eq!(s.halving.as_ref().unwrap().remaining.len(), h.remaining.len());
    s.pending.clear();
    assert!(s.next_root_child().is_some());
    let after = s.halving.as_ref().unwrap();
    assert_eq!(after.remaining.len(), (h.remaining.len() / 2).max(2), "halved once the values are in");
    assert!(after.target > h.target);
}

/// The exact value of a tic-tac-toe position for X (seat 0), by full minimax.
fn ttt_value(state: &<TicTacToe as Game>::State) -> f64 {
    match state.turn() {
        Turn::Terminal => state.returns().unwrap().as_slice()[0],
        Turn::Player(p) => {
            let mut legal = Vec::new();
            state.legal_actions(&mut legal);
            let values = legal.iter().map(|&a| {
                let mut next = *state;
                next.apply_unchecked(a);
                ttt_value(&next)
            });
            if p == 0 { values.fold(0.0, f64::max) } else { values.fold(1.0, f64::min) }
        }
        Turn::Chance => unreachable!("tic-tac-toe has no chance"),
    }
}

#[test]
fn the_look_ahead_decides_only_what_its_plies_decide_and_never_wrongly() {
    let mut s = Search::new(TicTacToe.initial_state(), 2, SearchConfig::new(Root::Puct, 64), 3);
    // Nine plies decide the whole game: a draw.
    let v = s.prove(&TicTacToe.initial_state(), 9, 0).expect("the whole game is within nine plies");
    assert_eq!(v.as_slice(), &[0.5, 0.5]);
    assert_eq!(s.prove(&TicTacToe.initial_state(), 8, 0), None, "eight plies leave games open");
    // Along random games: whatever a shallow look decides is the position's exact value, and
    // a mover with a winning move is found to win at one ply.
    let mut rng = rng_from_seed(5);
    let (mut decided, mut wins) = (0, 0);
    let mut legal = Vec::new();
    for _ in 0..200 {
        let mut state = TicTacToe.initial_state();
        while let Turn::Player(p) = state.turn() {
            for depth in 1..=3 {
                if let Some(v) = s.prove(&state, depth, 0) {
                    decided += 1;
                    assert_eq!(v.as_slice()[0], ttt_value(&state), "{state} at {depth} plies");
                }
            }
            state.legal_actions(&mut legal);
            let wins_now = legal.iter().any(|&a| {
                let mut next = state;
                next.apply_unchecked(a);
                next.returns().is_some_and(|r| r.as_slice()[p] == 1.0)
            });
            if wins_now {
                wins += 1;
                assert_eq!(s.prove(&state, 1, 0).map(|v| v.as_slice()[p]), Some(1.0), "{state}");
            }
            state.apply_unchecked(legal[rng.random_range(0..legal.len())]);
        }
    }
    assert!(decided > 100 && wins > 50, "{decided} decided, {wins} wins at hand");
}

#[test]
fn leaves_decided_by_the_look_ahead_solve_the_root_without_the_network() {
    // After the root's own evaluation, every root child is a leaf that eight more plies
    // decide: the root is solved (a draw) in nine descents and no leaf waits. Without the
    // look-ahead the children go to the network.
    for prove in [8, 0] {
        let mut config = SearchConfig::new(Root::Puct, 64);
        config.prove = prove;
        let mut s = Search::new(TicTacToe.initial_state(), 2, config, 3);
        assert_eq!(s.gather(1), 1);
        s.deliver_all(&[0.0; 9], &[0.5, 0.5], 9, 2);
        let waiting = s.gather(1);
        if prove > 0 {
            assert_eq!(waiting, 0);
            assert!(s.nodes[0].solved && s.is_over());
            assert_eq!(s.q(0, 0), 0.5);
            assert!(s.children(0).all(|i| s.nodes[i].solved));
        } else {
            assert_eq!(waiting, 1);
            assert!(!s.nodes[0].solved);
        }
    }
}

#[test]
fn the_prior_temperature_divides_the_logits_before_the_softmax() {
    let logits: [f32; 9] = [1.0, 0.0, -1.0, -2.0, -2.0, -2.0, -2.0, -2.0, -2.0];
    let priors = |t: f32| -> Vec<f32> {
        let config = SearchConfig { prior_temp: t, ..SearchConfig::new(Root::Puct, 64).quiet() };
        let mut s = Search::new(TicTacToe.initial_state(), 2, config, 3);
        s.gather(1);
        s.deliver_all(&logits, &[0.5, 0.5], 9, 2);
        s.children(0).map(|i| s.nodes[i].prior).collect()
    };
    for t in [1.0f32, 2.0, 0.5] {
        let z: f64 = logits.iter().map(|&l| (l as f64 / t as f64).exp()).sum();
        for (k, &p) in priors(t).iter().enumerate() {
            let want = (logits[k] as f64 / t as f64).exp() / z;
            assert!((p as f64 - want).abs() < 1e-6, "T {t}, a{}: {p} against {want}", k + 1);
        }
    }
    // By hand at T 2: a1's share e^0.5 / (e^0.5 + 1 + e^-0.5 + 6 e^-1) = 0.3018.
    assert!((priors(2.0)[0] - 0.3018).abs() < 1e-3);
    assert!(priors(2.0)[0] < priors(1.0)[0], "a higher temperature flattens the favourite");
}

#[test]
fn dirichlet_noise_mixes_into_the_puct_root_priors() {
    let noised = expanded(Root::Puct);
    let mut config = SearchConfig::new(Root::Puct, 64);
    config.dirichlet_eps = 0.0;
    let with: Vec<f32> = noised.children(0).map(|i| noised.nodes[i].prior).collect();
    let mut s = Search::new(TicTacToe.initial_state(), 2, config, 3);
    s.gather(1);
    let mut logits = [-2.0f32; 9];
    logits[..3].copy_from_slice(&[1.0, 0.0, -1.0]);
    s.deliver_all(&logits, &[0.5, 0.5], 9, 2);
    let without: Vec<f32> = s.children(0).map(|i| s.nodes[i].prior).collect();
    assert_ne!(with, without, "eps 0.25 by default: the self-play root is noised");
    // (1 - eps) p + eps x noise: each prior at least 0.75 of the network's, all summing to 1.
    let network: Vec<f64> = {
        let z: f64 = logits.iter().map(|&l| (l as f64).exp()).sum();
        logits.iter().map(|&l| (l as f64).exp() / z).collect()
    };
    for (k, &p) in with.iter().enumerate() {
        assert!(p as f64 >= 0.75 * network[k] - 1e-6, "{k}: {p} {}", network[k]);
    }
    assert!((with.iter().sum::<f32>() - 1.0).abs() < 1e-5);
    for (k, &p) in without.iter().enumerate() {
        assert!((p as f64 - network[k]).abs() < 1e-6, "eps 0: the network's priors ({k})");
    }
}

/// A PUCT search of the empty board whose network puts almost all the prior on a1, with
/// every value 0.5.
fn puct_run(forced: f32) -> (SearchResult, Vec<(f32, u32)>) {
    let config = SearchConfig { forced_playouts: forced, dirichlet_eps: 0.0, ..SearchConfig::new(Root::Puct, 400) };
    let mut s = Search::new(TicTacToe.initial_state(), 2, config, 5);
    let mut logits = [-3.0f32; 9];
    logits[0] = 3.0;
    while s.gather(1) > 0 {
        s.deliver_all(&logits, &[0.5, 0.5], 9, 2);
    }
    let children = s.children(0).map(|i| (s.nodes[i].prior, s.nodes[i].visits)).collect();
    (s.result(), children)
}

#[test]
fn forced_playouts_visit_every_root_child_to_its_quota_and_the_target_takes_them_back() {
    let (plain, plain_children) = puct_run(0.0);
    let (forced, children) = puct_run(2.0);
    let total: u32 = children.iter().map(|c| c.1).sum();
    for (k, &(prior, visits)) in children.iter().enumerate() {
        // The quota grows as the search goes on, so a child may trail the final one by a visit.
        assert!(visits as f32 + 1.0 >= puct::forced_quota(2.0, prior, total), "child {k}: {visits} of {total}");
    }
    let rare = |c: &[(f32, u32)]| c[1..].iter().map(|c| c.1).sum::<u32>();
    assert!(rare(&children) > rare(&plain_children), "{children:?} against {plain_children:?}");
    assert_eq!(forced.action, plain.action);
    // The pruned target gives a1 more than its share of the visits, and still sums to 1.
    let share = forced.policy[0].1;
    assert!(share > children[0].1 as f32 / total as f32, "{share} {children:?}");
    assert!((forced.policy.iter().map(|p| p.1).sum::<f32>() - 1.0).abs() < 1e-5);
    // Without forced playouts the target is the visit counts, as before.
    let plain_total: u32 = plain_children.iter().map(|c| c.1).sum();
    assert!((plain.policy[0].1 - plain_children[0].1 as f32 / plain_total as f32).abs() < 1e-6);
    // Play and evaluation never force: quiet() turns it off.
    assert_eq!(SearchConfig { forced_playouts: 2.0, ..SearchConfig::new(Root::Puct, 8) }.quiet().forced_playouts, 0.0);
}
