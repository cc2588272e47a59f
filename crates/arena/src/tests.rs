mod matches {
    use crate::config::*;
    use crate::play::*;
    use crate::records::*;
    use crate::schedule::*;
    use crate::summary::*;
    use crate::*;
    use meeple_game::Budget;
    use meeple_games::{Connect4, TicTacToe};

    fn config(agents: &[&str], games: usize, threads: Option<usize>) -> MatchConfig {
        MatchConfig { threads, ..MatchConfig::new(agents.iter().map(|s| s.to_string()).collect(), games, 7) }
    }

    #[test]
    fn seatings_are_all_permutations() {
        assert_eq!(seatings(2), vec![vec![0, 1], vec![1, 0]]);
        assert_eq!(seatings(3).len(), 6);
        assert_eq!(seatings(4).len(), 24);
        // Five and more: rotations, each agent once in each seat.
        for n in [5, 6] {
            let s = seatings(n);
            assert_eq!(s.len(), n);
            for seat in 0..n {
                let mut who: Vec<usize> = s.iter().map(|p| p[seat]).collect();
                who.sort_unstable();
                assert_eq!(who, (0..n).collect::<Vec<_>>());
            }
        }
    }

    #[test]
    fn multiplayer_matches_rotate_every_seating_with_the_same_dice() {
        // Three-player dice: each seed in all 6 seatings, with identical dice rolls each time.
        let game = meeple_game::testing::Dice { players: 3, bug: meeple_game::testing::Bug::None };
        let (s, games) = run_match(&game, &None, &config(&["random", "random", "first"], 12, None), |_| {}).unwrap();
        assert_eq!(games.len(), 12);
        let first_seed: Vec<&PlayedGame> = games.iter().filter(|g| g.record.seed == games[0].record.seed).collect();
        assert_eq!(first_seed.len(), 6);
        let dice = |g: &PlayedGame| g.record.actions[..3].to_vec();
        assert!(first_seed.iter().all(|g| dice(g) == dice(first_seed[0])), "common random numbers");
        assert!(s.pairwise.is_empty() && s.agents[0].elo.is_none(), "no pairwise Elo for three players");
        assert_eq!(s.agents.iter().map(|a| a.wins + a.draws + a.losses).collect::<Vec<_>>(), vec![12, 12, 12]);
    }

    #[test]
    fn same_seed_same_results_for_any_thread_count() {
        let game = Connect4::default();
        let (one, g1) = run_match(&game, &None, &config(&["first", "random"], 60, Some(1)), |_| {}).unwrap();
        let (two, g2) = run_match(&game, &None, &config(&["first", "random"], 60, Some(2)), |_| {}).unwrap();
        let counts = |s: &MatchSummary| s.agents.iter().map(|a| (a.wins, a.draws, a.losses)).collect::<Vec<_>>();
        assert_eq!(counts(&one), counts(&two));
        let records = |g: &[PlayedGame]| g.iter().map(|g| g.record.clone()).collect::<Vec<_>>();
        assert_eq!(records(&g1), records(&g2));
        for a in &one.agents {
            assert_eq!(a.wins + a.draws + a.losses, 60);
        }
        // Paired seats: each seed appears twice, with the agents swapped.
        assert_eq!(g1[0].record.seed, g1[1].record.seed);
        assert_eq!(g1[0].record.agents, vec!["first", "random"]);
        assert_eq!(g1[1].record.agents, vec!["random", "first"]);
        assert_ne!(g1[0].record.seed, g1[2].record.seed);
    }

    #[test]
    fn results_are_counted_from_returns() {
        // first vs first at tic-tac-toe: X fills a3 b3 c3 in seven plies and always wins.
        let (s, games) = run_match(&TicTacToe, &None, &config(&["first", "first"], 4, None), |_| {}).unwrap();
        assert!(games.iter().all(|g| g.record.returns == Some(vec![1.0, 0.0])));
        // Both agents are "first": each sits as X in half the games.
        assert_eq!((s.agents[0].wins, s.agents[0].losses), (2, 2));
        assert_eq!(s.agents[0].score, 0.5);
        // ... winning every game as X (seat 0) and losing every game as O.
        for a in &s.agents {
            let by_seat: Vec<(u64, u64, u64, f64)> =
                a.by_seat.iter().map(|r| (r.wins, r.draws, r.losses, r.score)).collect();
            assert_eq!(by_seat, vec![(2, 0, 0, 1.0), (0, 0, 2, 0.0)], "{}", a.name);
        }
        // Records replay.
        for g in &games {
            meeple_game::replay(&TicTacToe, &g.record).unwrap();
        }
    }

    #[test]
    fn first_beats_random_at_connect_four() {
        // "first" stacks column 1 and wins with a vertical four unless random happens to block
        // it, so it scores about 3/4; the interval must exclude an even match.
        let (s, _) = run_match(&Connect4::default(), &None, &config(&["random", "first"], 200, None), |_| {}).unwrap();
        let r = &s.agents[0];
        assert!(r.ci95[1] < 0.5, "first should beat random: {r:?}");
        assert_eq!(s.agents[1].wins, r.losses);
        assert!(r.ci95[0] <= r.score && r.score <= r.ci95[1]);
    }

    #[test]
    fn round_robin_rates_agents_in_the_right_order() {
        let game = Connect4::default();
        let agents = ["random", "first", "mcts:iters=300"];
        let (s, games) = run_match(&game, &None, &config(&agents, 40, None), |_| {}).unwrap();
        assert_eq!(games.len(), 3 * 40, "every pair plays 40 games");
        assert_eq!(s.pairwise.len(), 3);
        let elo: Vec<f64> = s.agents.iter().map(|a| a.elo.unwrap()).collect();
        assert_eq!(elo[0], 0.0, "random is the anchor");
        assert_eq!(s.anchor.as_deref(), Some("random"));
        assert!(elo[2] > elo[1] && elo[1] > elo[0], "{elo:?}");
        for a in &s.agents {
            assert_eq!(a.wins + a.draws + a.losses, 80, "each agent meets two others");
        }
        // Pairwise counts agree with per-agent totals.
        let mcts_wins: u64 = s.pairwise.iter().filter(|p| p.b == "mcts:iters=300").map(|p| p.losses).sum::<u64>()
            + s.pairwise.iter().filter(|p| p.a == "mcts:iters=300").map(|p| p.wins).sum::<u64>();
        assert_eq!(mcts_wins, s.agents[2].wins);
        // A gauntlet plays only the first agent's pairs.
        let g = MatchConfig { gauntlet: true, ..config(&agents, 10, None) };
        let (gs, _) = run_match(&game, &None, &g, |_| {}).unwrap();
        assert_eq!(gs.games, 20);
    }

    #[test]
    fn move_times_are_measured_against_budgets() {
        let game = Connect4::default();
        let c = MatchConfig {
            budget: Budget::time(std::time::Duration::from_millis(50)),
            ..config(&["mcts:time=5ms", "random"], 4, None)
        };
        let (s, _) = run_match(&game, &None, &c, |_| {}).unwrap();
        let m = &s.agents[0];
        assert_eq!(m.budget_ms, Some(5.0));
        assert!(m.mean_move_ms > 1.0 && m.mean_move_ms <= m.p99_move_ms + 1e-9 && m.p99_move_ms <= m.max_move_ms);
        assert_eq!(s.agents[1].budget_ms, Some(50.0));
        assert_eq!(s.agents[1].over_budget, 0, "random never needs 50 ms");
    }

    #[test]
    fn sprt_stops_early_on_a_clear_difference() {
        let game = Connect4::default();
        let sprt = ratings::Sprt { elo0: 0.0, elo1: 50.0, alpha: 0.05, beta: 0.05 };
        let (s, games) =
            run_sprt(&game, &None, &config(&["mcts:iters=300", "random"], 1000, None), sprt, |_| {}).unwrap();
        let r = s.sprt.unwrap();
        assert_eq!(r.decision, ratings::SprtDecision::AcceptH1);
        // Results files keep the words they always had.
        assert_eq!(serde_json::to_value(r.decision).unwrap(), serde_json::json!("H1"));
        assert!(games.len() < 1000 && games.len() % SPRT_BATCH == 0, "{} games", games.len());
        assert!(r.llr >= r.upper);
        // Same seed, any thread count: same stopping point.
        let (_, again) =
            run_sprt(&game, &None, &config(&["mcts:iters=300", "random"], 1000, Some(1)), sprt, |_| {}).unwrap();
        assert_eq!(again.len(), games.len());
    }

    #[test]
    fn resuming_plays_only_the_missing_games() {
        let game = Connect4::default();
        let c = config(&["random", "first"], 20, None);
        let (full, all) = run_match(&game, &None, &c, |_| {}).unwrap();
        // Keep every third game, as if the run had been killed; resume plays the rest.
        let kept: Vec<PlayedGame> = all.iter().filter(|g| g.index % 3 == 0).cloned().collect();
        let played = std::sync::atomic::AtomicUsize::new(0);
        let (resumed, games) = run_match_from(&game, &None, &c, kept.clone(), |_| {
            played.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        })
        .unwrap();
        assert_eq!(played.into_inner(), 20 - kept.len(), "only the missing games are played");
        assert_eq!(
            games.iter().map(|g| g.index).collect::<Vec<_>>(),
            (0..20).collect::<Vec<_>>(),
            "none lost, none twice"
        );
        let counts = |s: &MatchSummary| s.agents.iter().map(|a| (a.wins, a.draws, a.losses)).collect::<Vec<_>>();
        assert_eq!(counts(&resumed), counts(&full));
        // Records from other arguments are refused.
        let other = config(&["random", "first"], 20, None);
        let other = MatchConfig { seed: 8, ..other };
        let err = run_match_from(&game, &None, &other, kept.clone(), |_| {}).unwrap_err().to_string();
        assert!(err.contains("game 0: the records were made with --seed 7, this run has 8"), "{err}");
        let mut twice = kept.clone();
        twice.push(kept[0].clone());
        assert!(run_match_from(&game, &None, &c, twice, |_| {}).unwrap_err().to_string().contains("twice"));
    }

    #[test]
    fn bad_configurations_are_refused_before_playing() {
        let game = Connect4::default();
        let err = run_match(&game, &None, &config(&["random"], 10, None), |_| {}).unwrap_err().to_string();
        assert!(err.contains("has 2 seats: give 2 agent specs (or more, for a round robin), not 1"), "{err}");
        let err = run_match(&game, &None, &config(&["random", "first"], 7, None), |_| {}).unwrap_err().to_string();
        assert!(err.contains("multiple of 2"), "{err}");
        let err = run_match(&game, &None, &config(&["random", "bogus"], 10, None), |_| {}).unwrap_err().to_string();
        assert!(err.contains("unknown agent 'bogus'"), "{err}");
    }
}

mod resume_tests {
    use crate::config::*;
    use crate::play::*;
    use crate::records::*;
    use crate::*;
    use meeple_game::{Budget, limits};
    use meeple_games::{Connect4, TicTacToe};

    fn finished(config: &MatchConfig) -> Vec<PlayedGame> {
        run_match(&Connect4::default(), &None, config, |_| {}).unwrap().1
    }

    fn refusal(config: &MatchConfig, kept: Vec<PlayedGame>) -> String {
        run_match_from(&Connect4::default(), &None, config, kept, |_| {}).unwrap_err().to_string()
    }

    #[test]
    fn compressed_records_are_read_but_not_resumed() {
        let dir = std::env::temp_dir().join(format!("meeple-gz-resume-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("games.jsonl.gz");
        std::fs::write(&path, [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3]).unwrap();
        let err = resume(&path, 10).unwrap_err().to_string();
        assert!(err.contains("is gzip-compressed: a match goes on by appending plain lines"), "{err}");
        assert_eq!(std::fs::read(&path).unwrap().len(), 10, "the file is left as it was");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn resumed_records_are_replayed_and_checked() {
        let c = MatchConfig::new(vec!["random".into(), "first".into()], 10, 3);
        let games = finished(&c);
        let edit = |f: &dyn Fn(&mut PlayedGame)| {
            let mut g = games[0].clone();
            f(&mut g);
            vec![g]
        };
        // Flipped returns, a truncated returns list (once an index out of bounds), illegal moves.
        let flipped = edit(&|g| g.record.returns.as_mut().unwrap().reverse());
        assert!(refusal(&c, flipped).contains("game 0 in the records does not replay: record says returns"));
        let short = edit(&|g| g.record.returns = Some(vec![1.0]));
        assert!(refusal(&c, short).contains("does not replay"));
        let illegal = edit(&|g| g.record.actions = vec!["9".into(), "9".into(), "9".into()]);
        assert!(refusal(&c, illegal).contains("cannot read move '9'"));
        let unfinished = edit(&|g| {
            g.record.actions.pop();
            g.record.returns = None;
        });
        assert!(refusal(&c, unfinished).contains("did not finish"));
        let times = edit(&|g| g.move_ms.push(1.0));
        assert!(refusal(&c, times).contains("move times that do not fit"));
        let seats = edit(&|g| g.move_seats[0] = 7);
        assert!(refusal(&c, seats).contains("move times that do not fit"));
        let old = edit(&|g| g.settings = None);
        assert!(refusal(&c, old).contains("carries no match settings"));
        // Every setting that changes the games is compared.
        let opening = MatchConfig { opening_plies: 2, ..c.clone() };
        assert!(refusal(&opening, games.clone()).contains("made with --opening-plies 0, this run has 2"));
        let timed = MatchConfig { budget: Budget::time(std::time::Duration::from_millis(5)), ..c.clone() };
        assert!(refusal(&timed, games.clone()).contains("--move-time (ms) None, this run has Some(5.0)"));
        let sprt =
            MatchConfig { sprt: Some(ratings::Sprt { elo0: 0.0, elo1: 50.0, alpha: 0.05, beta: 0.05 }), ..c.clone() };
        assert!(refusal(&sprt, games.clone()).contains("--sprt"));
        // A larger --games extends a single pairing: the kept games keep their seeds and seats.
        let more = MatchConfig { games: 20, ..c.clone() };
        let (s, all) = run_match_from(&Connect4::default(), &None, &more, games.clone(), |_| {}).unwrap();
        assert_eq!((s.games, all.len()), (20, 20));
        assert_eq!(
            all[..10].iter().map(|g| &g.record).collect::<Vec<_>>(),
            games.iter().map(|g| &g.record).collect::<Vec<_>>()
        );
    }

    #[test]
    fn a_match_names_its_networks_by_sha256_and_refuses_to_resume_on_another() {
        let dir = std::env::temp_dir().join(format!("meeple-arena-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let weights = dir.join("w.txt");
        std::fs::write(&weights, "1,4,16,-1,-4,-16\n").unwrap();
        let spec = format!("alphabeta:depth=1,eval=(lines:weights={})", weights.display());
        let c = MatchConfig { threads: Some(1), ..MatchConfig::new(vec![spec, "random".into()], 2, 1) };
        let (summary, games) = run_match(&Connect4::default(), &None, &c, |_| {}).unwrap();
        let named = &summary.agents[0].files;
        assert_eq!(named.len(), 1);
        assert_eq!(named[0].sha256, sha256_file(&weights).unwrap());
        assert!(summary.agents[1].files.is_empty());
        assert_eq!(games[0].settings.as_ref().unwrap().files, *named, "records carry them too");
        // The same weights resume; other weights under the same name do not.
        run_match_from(&Connect4::default(), &None, &c, games.clone(), |_| {}).unwrap();
        std::fs::write(&weights, "2,4,16,-1,-4,-160\n").unwrap();
        let why = refusal(&c, games);
        assert!(why.contains("another network under the same name"), "{why}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_match_played_in_pieces_merges_to_the_whole() {
        let game = Connect4::default();
        let agents = vec!["random".to_string(), "first".to_string(), "mcts:iters=20".to_string()];
        let c = MatchConfig { threads: Some(1), ..MatchConfig::new(agents, 8, 7) };
        let (full, all) = run_match(&game, &None, &c, |_| {}).unwrap();
        let total = all.len();
        // Out of order, in uneven pieces, as workers on other machines would return them.
        let pieces: [Vec<usize>; 3] =
            [(10..total).collect(), vec![3, 0, 7], (0..10).filter(|i| ![0, 3, 7].contains(i)).collect()];
        let mut merged = Vec::new();
        for (k, piece) in pieces.iter().enumerate() {
            match merge_games(&game, &None, &c, merged.clone()).unwrap() {
                Merged::Missing(m) => assert_eq!(m.len(), total - merged.len(), "piece {k}"),
                Merged::Done(_) => panic!("done before piece {k}"),
            }
            merged.extend(play_games(&game, &None, &c, piece, |_| {}).unwrap());
        }
        let Merged::Done(s) = merge_games(&game, &None, &c, merged.clone()).unwrap() else { panic!("not done") };
        // The same summary, move times aside.
        let results = |s: &MatchSummary| {
            let agents: Vec<_> = s.agents.iter().map(|a| (a.name.clone(), a.wins, a.draws, a.losses, a.elo)).collect();
            let pairs: Vec<_> =
                s.pairwise.iter().map(|p| (p.a.clone(), p.b.clone(), p.wins, p.draws, p.losses)).collect();
            (agents, pairs)
        };
        assert_eq!(results(&s), results(&full));
        // Each game is the one the whole match played.
        merged.sort_by_key(|g| g.index);
        for (a, b) in merged.iter().zip(&all) {
            assert_eq!((a.index, &a.seating, &a.record), (b.index, &b.seating, &b.record));
        }
        // A game given twice, an index outside the match or asked for twice, another match's game.
        let mut twice = merged.clone();
        twice.push(merged[4].clone());
        assert!(merge_games(&game, &None, &c, twice).unwrap_err().to_string().contains("twice"));
        let err = play_games(&game, &None, &c, &[total], |_| {}).unwrap_err().to_string();
        assert!(err.contains(&format!("index {total} is beyond")), "{err}");
        assert!(play_games(&game, &None, &c, &[2, 2], |_| {}).unwrap_err().to_string().contains("twice"));
        let other = MatchConfig { seed: 8, ..c.clone() };
        assert!(merge_games(&game, &None, &other, merged).unwrap_err().to_string().contains("--seed 7"));
    }

    #[test]
    fn an_sprt_played_in_pieces_stops_where_one_process_stops() {
        let sprt = ratings::Sprt { elo0: 0.0, elo1: 50.0, alpha: 0.05, beta: 0.05 };
        let c = MatchConfig {
            sprt: Some(sprt),
            ..MatchConfig::new(vec!["mcts:iters=300".into(), "random".into()], 1000, 7)
        };
        let game = Connect4::default();
        let (full, all) = run_match(&game, &None, &c, |_| {}).unwrap();
        // Waves of three batches, as a driver with three workers asks for them.
        let mut merged = Vec::new();
        let summary = loop {
            match merge_games(&game, &None, &c, merged.clone()).unwrap() {
                Merged::Done(s) => break s,
                Merged::Missing(m) => {
                    let first = m[0];
                    let wave: Vec<usize> = (first..(first + 3 * SPRT_BATCH).min(1000)).collect();
                    merged.extend(play_games(&game, &None, &c, &wave, |_| {}).unwrap());
                }
            }
        };
        assert_eq!(summary.sprt, full.sprt);
        assert_eq!(
            summary.agents.iter().map(|a| a.wins).collect::<Vec<_>>(),
            full.agents.iter().map(|a| a.wins).collect::<Vec<_>>()
        );
        // Games played past the decision are not counted.
        assert!(merged.len() >= all.len());
    }

    #[test]
    fn an_sprt_resumes_where_it_stopped() {
        let sprt = ratings::Sprt { elo0: 0.0, elo1: 50.0, alpha: 0.05, beta: 0.05 };
        let c = MatchConfig {
            sprt: Some(sprt),
            ..MatchConfig::new(vec!["mcts:iters=300".into(), "random".into()], 1000, 7)
        };
        let (full, all) = run_match(&Connect4::default(), &None, &c, |_| {}).unwrap();
        let kept: Vec<PlayedGame> = all.iter().take(all.len() - 5).cloned().collect();
        let played = std::sync::atomic::AtomicUsize::new(0);
        let (again, games) = run_match_from(&Connect4::default(), &None, &c, kept, |_| {
            played.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        })
        .unwrap();
        assert_eq!(played.into_inner(), 5, "only the games missing from the records are played");
        assert_eq!(games.len(), all.len());
        assert_eq!(again.sprt, full.sprt);
    }

    #[test]
    fn openings_that_end_the_game_are_drawn_again() {
        // Eight random plies of tic-tac-toe often finish a line; no game may end before the
        // agents move, and every seating of a seed still shares its opening.
        let c = MatchConfig { opening_plies: 8, ..MatchConfig::new(vec!["first".into(), "random".into()], 40, 1) };
        let (_, games) = run_match(&TicTacToe, &None, &c, |_| {}).unwrap();
        assert!(games.iter().all(|g| !g.move_ms.is_empty()), "the agents made a move in every game");
        for pair in games.chunks(2) {
            assert_eq!(pair[0].record.actions[..8], pair[1].record.actions[..8]);
        }
        let nine = MatchConfig { opening_plies: 9, ..c };
        let err = run_match(&TicTacToe, &None, &nine, |_| {}).unwrap_err().to_string();
        assert!(err.contains("--opening-plies 9: 100 random openings of tictactoe all ended the game"), "{err}");
    }

    #[test]
    fn identical_specs_get_distinct_names() {
        let c = MatchConfig::new(vec!["random".into(), "random".into()], 20, 1);
        let (s, _) = run_match(&Connect4::default(), &None, &c, |_| {}).unwrap();
        let names: Vec<&str> = s.agents.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["random#1", "random#2"]);
        assert_eq!(s.anchor.as_deref(), Some("random#1"), "one anchor, not both");
        assert_eq!((s.pairwise[0].a.as_str(), s.pairwise[0].b.as_str()), ("random#1", "random#2"));
        let anchored = MatchConfig { anchor: Some("random#2".into()), ..c };
        let (s, _) = run_match(&Connect4::default(), &None, &anchored, |_| {}).unwrap();
        assert_eq!(s.agents[1].elo, Some(0.0));
        assert_eq!(agent_labels(&["a".into(), "b".into(), "a".into()]), ["a#1", "b", "a#2"]);
    }

    #[test]
    fn limits_are_checked_before_playing() {
        let game = Connect4::default();
        let c = |games: usize| MatchConfig::new(vec!["random".into(), "first".into()], games, 1);
        let err = validate(&game, &None, &c(limits::MAX_GAMES + 2)).unwrap_err().to_string();
        assert!(err.contains("more than the limit of 1000000 games"), "{err}");
        let err = validate(&game, &None, &MatchConfig { threads: Some(65535), ..c(2) }).unwrap_err().to_string();
        assert!(err.contains("--threads 65535: give 1 to"), "{err}");
        // Tables: each under half of the memory, together more than the machine holds.
        let half = limits::max_table_bytes() >> 20;
        let big = format!("alphabeta:depth=1,tt={half}mb");
        let two = MatchConfig { threads: Some(2), ..MatchConfig::new(vec![big.clone(), big], 2, 1) };
        let err = validate(&game, &None, &two).unwrap_err().to_string();
        assert!(err.contains("the agents' tables need about"), "{err}");
    }
}

mod opening_tests {
    use crate::config::*;
    use crate::play::*;
    use meeple_games::Connect4;

    #[test]
    fn random_openings_are_shared_by_both_seatings() {
        let config = MatchConfig {
            threads: Some(1),
            opening_plies: 4,
            ..MatchConfig::new(vec!["first".into(), "first".into()], 8, 3)
        };
        let (_, games) = run_match(&Connect4::default(), &None, &config, |_| {}).unwrap();
        for pair in games.chunks(2) {
            assert_eq!(pair[0].record.actions[..4], pair[1].record.actions[..4], "same opening in both seatings");
        }
        let openings: std::collections::BTreeSet<_> = games.iter().map(|g| g.record.actions[..4].to_vec()).collect();
        assert!(openings.len() >= 3, "seeds give different openings: {openings:?}");
        // The agents' own moves are not counted as opening: times exist only for them.
        assert!(games.iter().all(|g| g.move_ms.len() + 4 == g.record.actions.len()));
    }
}

mod table_tests {
    use crate::Table;
    use meeple_game::testing::{Bug, Dice};
    use meeple_game::{State, Turn, rng_from_seed};
    use meeple_games::{Connect4, TicTacToe};
    use rand::RngExt;

    #[test]
    fn every_position_is_rebuilt_from_the_checkpoints_as_it_was_played() {
        let mut table = Table::new(Connect4::default(), 3);
        let mut seen = vec![table.latest().to_string()];
        let (mut rng, mut legal) = (rng_from_seed(5), Vec::new());
        while !table.latest().is_terminal() {
            table.latest().legal_actions(&mut legal);
            table.push(legal[rng.random_range(0..legal.len())], Some(1.0)).unwrap();
            seen.push(table.latest().to_string());
        }
        assert!(table.ply() > 32, "the line crosses a checkpoint");
        for (k, s) in seen.iter().enumerate() {
            assert_eq!(&table.state_at(k).to_string(), s, "ply {k}");
        }
        table.truncate(33);
        assert_eq!(table.latest().to_string(), seen[33]);
        assert_eq!(table.state_at(31).to_string(), seen[31]);
        assert!(table.push(99, None).is_err(), "the rules are checked");
    }

    #[test]
    fn taking_moves_back_and_making_them_again_meets_the_same_dice() {
        let game = Dice { players: 2, bug: Bug::None };
        for seed in 0..20 {
            let mut table = Table::new(game.clone(), seed);
            table.resolve_chance();
            let dealt = table.ply();
            let reroll = table.latest().parse_action("reroll").unwrap();
            table.push(reroll, None).unwrap();
            table.resolve_chance();
            let after = table.latest().dice;
            table.truncate(dealt);
            table.push(reroll, None).unwrap();
            table.resolve_chance();
            assert_eq!(table.latest().dice, after, "seed {seed}");
        }
        // Another seed draws other dice somewhere.
        let deal = |seed| {
            let mut t = Table::new(game.clone(), seed);
            t.resolve_chance();
            t.latest().dice
        };
        assert!((1..20).any(|s| deal(s) != deal(0)));
    }

    #[test]
    fn undo_takes_back_a_persons_move_but_never_past_chance_or_the_end() {
        let mut table = Table::new(TicTacToe, 0);
        let person = |p: usize| p == 0;
        assert_eq!(table.undo_target(person).unwrap_err(), "there is no move of a person to take back");
        table.push(4, None).unwrap();
        table.push(0, Some(2.0)).unwrap();
        assert_eq!(table.undo_target(person), Ok((0, 0)));
        assert_eq!(table.mover(1), Some(1));
        for a in [1, 3, 7] {
            table.push(a, None).unwrap();
        }
        assert_eq!(table.latest().turn(), Turn::Terminal);
        assert_eq!(table.undo_target(person).unwrap_err(), "the game is over: its moves stand");

        let mut dice = Table::new(Dice { players: 2, bug: Bug::None }, 1);
        dice.resolve_chance();
        assert_eq!(dice.mover(0), None);
        assert!(dice.undo_target(|_| true).unwrap_err().contains("chance"));
        let stay = dice.latest().parse_action("stay").unwrap();
        dice.push(stay, None).unwrap();
        assert_eq!(dice.undo_target(|_| true), Ok((dice.ply() - 1, 0)));
    }
}
