#!/bin/bash
# Usage: same-checkpoints.sh BINARY OUTDIR: tiny runs of every trainer with fixed seeds, then a
# hash of what each learned (learned-hash.py), to compare two builds.
H=$(cd "$(dirname "$0")" && pwd); B=$(realpath "$1"); O=$2; rm -rf $O; mkdir -p $O; cd $O
q() { "$@" > /dev/null 2>&1 || echo "FAILED: $*"; }
q $B train dqn tictactoe --games 60 --net mlp:layers=1,width=16 --learning-starts 50 --batch 16 --eval-minutes 0 --threads 1 --seed 3 --out dqn
q $B train dqn tictactoe --games 60 --net mlp:layers=1,width=16 --learning-starts 50 --batch 16 --explore epsilon --uniform --n-step 2 --no-double --eval-minutes 0 --threads 1 --seed 3 --out dqn2
q $B train ppo tictactoe --games 60 --net mlp:layers=1,width=16 --rollout 8 --eval-minutes 0 --threads 1 --seed 3 --out ppo
q $B train ppo tictactoe --games 60 --net mlp:layers=1,width=16 --rollout 8 --self-play pool --pool-size 2 --pool-every 10 --pool-sampling win-rate --eval-minutes 0 --threads 1 --seed 3 --out ppo2
q $B train td tictactoe --games 40 --net mlp:layers=1,width=16 --parallel 4 --lr 3e-3 --huber 0 --eval-minutes 0 --threads 1 --seed 3 --out td
q $B train value tictactoe --games 40 --net mlp:layers=1,width=16 --eval-minutes 0 --threads 1 --seed 3 --out vs
q $B train value tictactoe --data search --searcher mcts:iters=30 --min-visits 2 --games 6 --epochs 2 --net mlp:layers=1,width=16 --eval-minutes 0 --threads 1 --seed 3 --out vq
q $B train vae tictactoe --games 20 --epochs 2 --hidden 16 --latent 4 --threads 1 --seed 3 --out vae
q $B train treestrap santorini --eval linear8 --depth 1 --games 3 --seed 3 --out ts
q $B train az tictactoe --steps 6 --threads 1 --net mlp:layers=1,width=16 --sims 8 --games-per-generation 16 --batch 32 --eval-every 0 --seed 0 --out az
q $B train az tictactoe --steps 6 --threads 1 --net mlp:layers=1,width=16 --sims 8 --games-per-generation 16 --batch 32 --eval-every 0 --seed 0 --root puct --forced-playouts 2 --random-opening-share 0.5 --lr 1e-3 --out az2
python3 "$H/learned-hash.py" dqn dqn2 ppo ppo2 td vs vq vae ts az az2
