#!/usr/bin/env bash
# ordo-slurm's glue, against stand-ins for Slurm's srun and scontrol (no Slurm here): inside a
# pretend allocation of two nodes ("localhost" and "127.0.0.1", both this host), ordo-slurm
# must put the scheduler on the first node, one server and one worker on each, and start
# every process through ordo-srun-exec -> srun --nodelist=NODE; the synthetic job checks
# every pulled value. Then a [worker] command (examples/hello_ordo.c, built here) as the
# workers of a declared model: each gets its rank, local rank and the conf copy in its
# environment and checks every value. The stand-in srun logs each node it is asked for and runs the command
# here, as srun would there. What this cannot show is Slurm itself placing the tasks.
source "$(dirname "$0")/lib.sh"
SRC=${ORDO_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
mkdir -p "$T/fake"
cat > "$T/fake/scontrol" <<'FAKE'
#!/usr/bin/env bash
# stand-in: scontrol show hostnames A,B,... prints one host per line
[ "$1 $2" = "show hostnames" ] || { echo "stand-in scontrol: only 'show hostnames'" >&2; exit 1; }
tr ',' '\n' <<<"$3"
FAKE
cat > "$T/fake/srun" <<FAKE
#!/usr/bin/env bash
# stand-in: srun --nodes=1 --ntasks=1 --nodelist=HOST --quiet bash -c CMD runs CMD here
node=""
while [ \$# -gt 0 ]; do
  case "\$1" in
    --nodelist=*) node=\${1#--nodelist=}; shift ;;
    --nodes=1|--ntasks=1|--overlap|--quiet) shift ;;
    --*) echo "stand-in srun: unexpected option \$1" >&2; exit 1 ;;
    *) break ;;
  esac
done
[ -n "\$node" ] || { echo "stand-in srun: no --nodelist" >&2; exit 1; }
echo "\$node \$*" >> "$T/srun.calls"
exec "\$@"
FAKE
chmod +x "$T/fake/scontrol" "$T/fake/srun"

# outside an allocation it says so
out=$("$SRC/scripts/ordo-slurm" "$SRC/conf/synthetic.ini" 2>&1) && fail "ran outside an allocation"
grep -q "not inside a Slurm allocation" <<<"$out" || fail "no clear message outside an allocation: $out"
ok "outside an allocation: ${out#ordo-slurm: }"

PATH="$T/fake:$PATH" SLURM_JOB_NODELIST="localhost,127.0.0.1" \
  "$SRC/scripts/ordo-slurm" "$SRC/conf/synthetic.ini" --bin "$BIN" --model.iterations=20 \
  --output.dir="$T/out" --output.run=slurm --output.progress_every=0 > "$T/run.log" 2>&1 ||
  { cat "$T/run.log"; fail "ordo-slurm failed"; }
grep -q "ordo-slurm: 2 nodes (localhost 127.0.0.1): 2 servers, 2 workers" "$T/run.log" ||
  fail "ordo-slurm did not report the layout"
grep -q "over ssh: scheduler on localhost, servers on localhost 127.0.0.1, workers on localhost 127.0.0.1" "$T/run.log" ||
  fail "the launcher did not place the roles as asked"
[ "$(grep -c '^\[worker [01]\] .* 0 wrong' "$T/run.log")" = 2 ] || fail "a worker saw wrong values"
for role in scheduler server worker; do
  for node in localhost 127.0.0.1; do
    [ $role = scheduler ] && [ $node = 127.0.0.1 ] && continue
    grep -q "^$node bash -c .*ordo-$role -c " "$T/srun.calls" || fail "no $role started through srun on $node"
  done
done
grep -q "^127.0.0.1 bash -c .*ordo-scheduler" "$T/srun.calls" && fail "a scheduler on the second node"
[ -f "$T/out/slurm/summary.json" ] || fail "no summary.json"
ok "2 nodes: scheduler on the first, a server and a worker on each, all through srun; 0 wrong values"

build=$(cd "$BIN/.." && pwd)
cc -std=c11 -I"$SRC/include" -I"$build/include" "$SRC/examples/hello_ordo.c" -L"$build/client" \
  -l:libordo.so.0 -Wl,-rpath,"$build/client" -o "$T/hello_ordo" || fail "cannot build hello_ordo"
cat > "$T/command.ini" <<INI
[optimizer]
lr = 1
aggregate = sum
[worker]
command = echo "env \$ORDO_WORKER_RANK \$ORDO_LOCAL_RANK/\$ORDO_LOCAL_SIZE \$ORDO_CONF" && exec $T/hello_ordo
INI
PATH="$T/fake:$PATH" SLURM_JOB_NODELIST="localhost,127.0.0.1" \
  "$SRC/scripts/ordo-slurm" "$T/command.ini" --bin "$BIN" --output.dir="$T/out" \
  --output.run=command > "$T/command.log" 2>&1 || { cat "$T/command.log"; fail "ordo-slurm with a worker command failed"; }
[ "$(grep -c '^\[worker [01]\] .*values checked, 0 wrong' "$T/command.log")" = 2 ] ||
  { cat "$T/command.log"; fail "the worker commands did not check their values"; }
grep -q '^\[worker 1\] env 1 0/1 /tmp/ordo-launch-' "$T/command.log" ||
  fail "worker 1's environment is wrong"
grep -q "^127.0.0.1 bash -c .*env .*ORDO_WORKER_RANK=1 .*hello_ordo" "$T/srun.calls" ||
  fail "worker 1's command was not started through srun on its node"
ok "[worker] command under ordo-slurm: rank, local rank and the conf copy in its environment; 0 wrong values"
echo "3 passed, 0 failed"
