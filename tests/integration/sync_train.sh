#!/usr/bin/env bash
# Consistency models on the mlp (Fashion-MNIST; skips without it), 4 workers, 2 servers:
# ssp with staleness 0 ends with exactly bsp's parameters (params.bin, byte for byte); asp,
# ssp(3) and backup workers (b = 1) under transient stragglers reach 83 % test accuracy in
# two epochs, and time_to_target_s is reported.
source "$(dirname "$0")/lib.sh"
need_fmnist
root=${ORDO_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
common=(--cluster.workers=4 --output.dir="$T/runs" --output.progress_every=0)

run() {
  local name=$1; shift
  timeout 280 "$root/scripts/ordo-launch" "$root/conf/mlp.ini" --bin "$BIN" "${common[@]}" \
    --output.run="$name" "$@" > "$T/$name.log" 2>&1 || fail "run $name ($*) exited non-zero"
}
field() { python3 -c "import json;d=json.load(open('$T/runs/$1/summary.json'));print(d$2)"; }

run bsp --model.epochs=0 --model.iterations=60 --output.save_params=true
run ssp0 --model.epochs=0 --model.iterations=60 --output.save_params=true --sync.mode=ssp --sync.staleness=0
cmp -s "$T/runs/bsp/params.bin" "$T/runs/ssp0/params.bin" || fail "ssp with staleness 0 differs from bsp"
ok "ssp staleness 0: params.bin equal to bsp's byte for byte"

strag=(--model.epochs=2 --straggle.probability=0.1 --straggle.delay_ms=20 --model.eval_every=100
       --model.target_accuracy=0.8)
for m in "asp" "ssp3 --sync.mode=ssp --sync.staleness=3" "backup1 --sync.backup=1"; do
  name=${m%% *}
  if [ "$name" = asp ]; then run asp "${strag[@]}" --sync.mode=asp; else run $m "${strag[@]}"; fi
  acc=$(field "$name" "['test_accuracy']")
  python3 -c "import sys; sys.exit(0 if $acc >= 0.83 else 1)" || fail "$name: test accuracy $acc < 0.83"
  ttt=$(field "$name" "['time_to_target_s']")
  [ "$ttt" != None ] || fail "$name: no time to 80 %"
  ok "$name: test accuracy $acc after 2 epochs with transient stragglers, 80 % after $ttt s"
done
echo "4 passed, 0 failed"
