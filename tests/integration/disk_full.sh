#!/usr/bin/env bash
# Full disks and damaged checkpoints (docs/durability.md, "Disks"). The run folder lives on a 1 MiB
# tmpfs; a 2-server, 2-worker job (a 32768-float profile model, momentum, a checkpoint every 10
# updates) fills it up mid-run:
#   - fault.disk_full = retry: each failed checkpoint is logged naming the file and errno, the
#     previous checkpoint stays whole (a resume from a copy of the folder taken while the disk
#     was full ends with the fault-free run's params.bin, bit for bit), the next checkpoint is
#     written once there is room, and the run itself ends as the fault-free one;
#   - fault.disk_full = stop: the run stops with the error naming the file, every process ends;
#   - a checkpoint.bin with a flipped byte is refused naming the file and the checksum, and the
#     resume takes checkpoint.prev.bin (same final values); both damaged: refused, naming both.
# Needs root (mount); skips otherwise.
source "$(dirname "$0")/lib.sh"
LAUNCH=${ORDO_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}/scripts/ordo-launch
DISK=$T/disk
mkdir -p "$DISK"
mount -t tmpfs -o size=1m tmpfs "$DISK" 2>"$T/mount.err" ||
  skip "cannot mount a tmpfs for the run folder: $(cat "$T/mount.err")"
cleanup_disk() {
  for p in "${PID[@]}"; do kill -TERM "$p" 2>/dev/null; done
  sleep 0.5
  umount -l "$DISK" 2>/dev/null
  cleanup_all
}
trap cleanup_disk EXIT

python3 - "$T/small.json" <<'EOF'
import json, sys
json.dump({"format": "ordo-model/1", "name": "small", "batch": 1, "dtype": "float32",
           "params": [{"name": "w%d" % i, "shape": [16384]} for i in range(2)],
           "ops": [{"name": "l%d" % i, "inputs": ["l%d" % (i - 1)] if i else [],
                    "params": ["w%d" % i], "fwd_us": 10000.0, "bwd_us": 20000.0}
                   for i in range(2)]}, open(sys.argv[1], "w"))
EOF
conf=$T/empty.ini
: > "$conf"
common=(--model.trainer=profile "--model.file=$T/small.json" --model.compute=emulate
        --model.iterations=120 --model.seed=3 --optimizer.lr=0.05 --optimizer.momentum=0.9
        --cluster.servers=2 --cluster.workers=2 --fault.timeout_ms=5000
        --fault.heartbeat_ms=250 --fault.checkpoint_every=10 --output.save_params=true
        --output.progress_every=0)

"$LAUNCH" "$conf" --bin "$BIN" "${common[@]}" --output.dir="$T" --output.run=ref \
  > "$T/ref.log" 2>&1 || fail "the fault-free run failed: $(tail -n 5 "$T/ref.log")"

# wait_for FILE PATTERN SECONDS: until grep finds PATTERN in FILE (fails the test otherwise)
wait_for() {
  for _ in $(seq 1 $(($3 * 20))); do
    grep -q "$2" "$1" && return 0
    sleep 0.05
  done
  fail "no '$2' in $1 within $3 s"
}

# full POLICY: run a job on the tmpfs; once its checkpoint after 20 updates is written, fill
# the disk; its status goes to $st once it ends (at most 120 s)
full() {
  local job=$1
  rm -rf "${DISK:?}"/*
  start "$job" "$LAUNCH" "$conf" --bin "$BIN" "${common[@]}" --output.dir="$DISK" \
    --output.run="$job" --fault.disk_full="$job"
  wait_for "$T/$job.log" "checkpoint: $DISK/$job/checkpoint.bin after 20 updates" 60
  dd if=/dev/zero of="$DISK/filler" bs=4k 2>/dev/null # until ENOSPC
}

full retry
wait_for "$T/retry.log" "ERROR checkpoint after [0-9]* updates: cannot write $DISK/retry/checkpoint.*\.bin: No space left on device" 60
sleep 0.2 # a server's and worker 0's files of the same checkpoint fail one after the other
mkdir "$T/snap"
cp "$DISK"/retry/checkpoint*.bin "$T/snap/"
rm -f "$DISK/filler" # room again: the next checkpoint is written
finish retry 120
[ "$st" = 0 ] || fail "fault.disk_full = retry: the job ended with '$st'"
grep -q "worker 0.*(fault.disk_full = retry)" "$T/retry.log" ||
  fail "worker 0 did not log its failed checkpoint under retry"
last_fail=$(grep -o "ERROR checkpoint after [0-9]* updates: cannot write $DISK/retry/checkpoint.bin" "$T/retry.log" | tail -1 | awk '{print $4}')
[ -n "$last_fail" ] || fail "no failed checkpoint.bin was logged"
grep -q "checkpoint: $DISK/retry/checkpoint.bin after $((last_fail + 10)) updates" "$T/retry.log" ||
  fail "no checkpoint.bin was written after the disk had room again (last failure after $last_fail updates)"
cmp -s "$T/ref/params.bin" "$DISK/retry/params.bin" ||
  fail "the run whose checkpoints failed ends with other values than the fault-free run"
ok "retry: the failed checkpoints were logged naming the file and errno, the one after $((last_fail + 10)) updates was written, and the run ended as the fault-free one"

# resume RUN FROM: a run resuming from folder FROM (status in $st)
resume() {
  start "$1" "$LAUNCH" "$conf" --bin "$BIN" "${common[@]}" --output.dir="$T" \
    --output.run="$1" --fault.resume="$2"
  finish "$1" 120
}
resume again "$T/snap"
[ "$st" = 0 ] || fail "the resume from the checkpoint kept while the disk was full ended with '$st'"
t0=$(grep -o "resume: iterations [0-9]*" "$T/again.log" | head -1 | awk '{print $3}')
[ -n "$t0" ] && [ "$t0" -ge 20 ] || fail "the resume did not start from the checkpoint (t0 '$t0')"
cmp -s "$T/ref/params.bin" "$T/again/params.bin" ||
  fail "the resume from the kept checkpoint (after $t0 updates) ends with other values"
ok "the checkpoint left while the disk was full (after $t0 updates) loads, and the resumed run ends bit for bit as the fault-free one"

# a flipped byte in checkpoint.bin: refused, the previous one used
python3 - "$T/snap/checkpoint.bin" <<'EOF'
import sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
b[len(b) // 2] ^= 0x10
open(p, "wb").write(b)
EOF
resume flipped "$T/snap"
[ "$st" = 0 ] || fail "the resume past a corrupt checkpoint.bin ended with '$st'"
grep -q "resume: checkpoint.bin refused ($T/snap/checkpoint.bin: offset [0-9]*: checksum mismatch" "$T/flipped.log" ||
  fail "the corrupt checkpoint.bin was not refused naming the file and the checksum"
t1=$(grep -o "resume: iterations [0-9]*" "$T/flipped.log" | head -1 | awk '{print $3}')
[ "$t1" = $((t0 - 10)) ] || fail "the resume took the checkpoint after '$t1' updates, not the previous one ($((t0 - 10)))"
cmp -s "$T/ref/params.bin" "$T/flipped/params.bin" ||
  fail "the resume from checkpoint.prev.bin ends with other values"
ok "a flipped byte in checkpoint.bin is refused naming the file and the checksum; the resume took checkpoint.prev.bin and ended as the fault-free run"

truncate -s 1000 "$T/snap/checkpoint.prev.bin"
resume broken "$T/snap"
[ "$st" != 0 ] && [ "$st" != timeout ] || fail "a resume from two damaged checkpoints ended with '$st'"
grep -q "no whole checkpoint in $T/snap: $T/snap/checkpoint.bin: offset [0-9]*: checksum mismatch.*; $T/snap/checkpoint.prev.bin: offset [0-9]*: .*more than the file holds" "$T/broken.log" ||
  fail "the refusal does not name both files and their checks"
ok "two damaged checkpoints: the resume is refused naming both files and the checks (status $st)"

full stop
finish stop 120
[ "$st" != 0 ] && [ "$st" != timeout ] || fail "fault.disk_full = stop: the job ended with '$st'"
grep -q "checkpoint (fault.disk_full = stop): cannot write $DISK/stop/checkpoint.bin: No space left on device" "$T/stop.log" ||
  fail "the stop does not name the file and errno"
ok "stop: the run stopped (status $st) naming the file and errno; every process ended"
echo "5 passed, 0 failed"
