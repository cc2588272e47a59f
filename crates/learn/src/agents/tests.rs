use super::*;

#[test]
fn a_sidecar_gives_play_defaults_and_refuses_a_wrong_type() {
    let dir = std::env::temp_dir().join(format!("meeple-play-default-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let model = dir.join("net.safetensors");
    let side = meeple_nn::sidecar_path(&model);
    std::fs::write(&side, r#"{"format": 1, "play": {"rescale": false}}"#).unwrap();
    assert_eq!(play_default(&model, "rescale").unwrap(), Some(false));
    assert_eq!(play_default(&model, "solver").unwrap(), None);
    std::fs::write(&side, r#"{"format": 1}"#).unwrap();
    assert_eq!(play_default(&model, "rescale").unwrap(), None);
    std::fs::write(&side, r#"{"format": 1, "play": {"rescale": "no"}}"#).unwrap();
    let e = play_default(&model, "rescale").unwrap_err().to_string();
    assert!(e.contains("play.rescale") && e.contains("true or false"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn offer_trade_is_refused_where_no_player_trades() {
    let refused = |game: &str, spec: &str| {
        meeple_games::with_game!(game, |g| make_agent(&g, spec, 0).err().map(|e| e.to_string()))
            .unwrap()
            .unwrap_or_else(|| panic!("{spec} on {game} was accepted"))
    };
    let e = refused("tictactoe", "value:model=none.safetensors,offer=trade");
    assert!(e.contains("no trading between players"), "{e}");
    let e = refused("catan", "catan-td:model=none.safetensors,offer=trade");
    assert!(e.contains("catan:trades=true has"), "{e}");
    let e = refused("catan:trades=true", "catan-td:model=none.safetensors,offer=bargain");
    assert!(e.contains("accepted: afterstate, trade"), "{e}");
}
