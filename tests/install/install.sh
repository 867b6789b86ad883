#!/usr/bin/env bash
# install: `cmake --install` the build into a fresh prefix, check what it holds (header,
# libordo.so with its soname and symlinks, exactly the header's functions exported, ordo.pc,
# the binaries), then build examples/hello_ordo.c and tests/install/api_errors.c with nothing
# but `pkg-config --cflags --libs ordo`, run hello_ordo as the two workers of a cluster started
# from the installed binaries (every pulled value exact), and check the API's error paths,
# among them a declared tensor that does not match the cluster's.
source "$ORDO_SOURCE_DIR/tests/integration/lib.sh"
cd "$T" || exit 1
P=$T/prefix
cmake --install "$ORDO_BUILD_DIR" --prefix "$P" > install.log 2>&1 || { cat install.log; fail "cmake --install"; }
pc=$(find "$P" -name ordo.pc)
[ -n "$pc" ] || fail "no ordo.pc under $P"
LIB=$(dirname "$(dirname "$pc")")
for f in include/ordo/ordo.h include/ordo/version.h bin/ordo-scheduler bin/ordo-server \
         bin/ordo-worker bin/ordo-plan bin/ordo-bench; do
  [ -e "$P/$f" ] || fail "$f was not installed"
done
[ -L "$LIB/libordo.so" ] && [ -L "$LIB/libordo.so.0" ] && [ -f "$LIB/libordo.so.$ORDO_VERSION" ] ||
  fail "libordo.so, libordo.so.0, libordo.so.$ORDO_VERSION: $(ls "$LIB")"
soname=$(readelf -d "$LIB/libordo.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = libordo.so.0 ] || fail "soname '$soname', expected libordo.so.0"
ok "installed into $P: header, $(cd "$LIB" && echo libordo.so*), ordo.pc, five binaries"

# exported: exactly the functions the header declares
want=$(grep -o 'ORDO_API [^(]*(' "$P/include/ordo/ordo.h" | grep -o 'ordo_[a-z_]*($' | tr -d '(' | sort)
have=$(nm -D --defined-only "$LIB/libordo.so" | awk '$2 == "T" {sub(/@.*/, "", $3); print $3}' | sort)
[ "$want" = "$have" ] || fail "exported symbols differ from the header: $(diff <(echo "$want") <(echo "$have") | grep '^[<>]' | tr '\n' ' ')"
ok "libordo.so exports the header's $(echo "$want" | wc -l) functions and nothing else"

# libordo loads where CUDA is absent: its NCCL backend is a plugin beside it (client/intra.h)
needed=$(readelf -d "$LIB/libordo.so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
case "$needed" in *cuda*|*nccl*) fail "libordo.so needs CUDA or NCCL: $needed";; esac
ok "libordo.so needs no CUDA or NCCL library ($needed)"
if [ -e "$ORDO_BUILD_DIR/client/libordo_nccl.so" ]; then
  [ -f "$LIB/libordo_nccl.so" ] || fail "the build has libordo_nccl.so, $LIB has not: $(ls "$LIB")"
  plugin=$(nm -D --defined-only "$LIB/libordo_nccl.so" | awk '$2 == "T" {print $3}' | tr '\n' ' ')
  [ "$plugin" = "ordo__intra_nccl_plugin " ] || fail "libordo_nccl.so exports: $plugin"
  ok "the NCCL plugin is installed beside libordo, exporting only its entry point"
fi
# ordo-worker maps no cuBLAS or cudart of its own: its cuda compute backend is a plugin
# beside libordo (worker/compute_backend.h), which the installed ordo-worker finds there
needed=$(readelf -d "$P/bin/ordo-worker" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
case "$needed" in *cublas*) fail "ordo-worker needs cuBLAS: $needed";; esac
ok "ordo-worker needs no cuBLAS ($needed)"
if [ -e "$ORDO_BUILD_DIR/bin/libordo_compute_cuda.so" ]; then
  [ -f "$LIB/libordo_compute_cuda.so" ] || fail "the build has libordo_compute_cuda.so, $LIB has not"
  plugin=$(nm -D --defined-only "$LIB/libordo_compute_cuda.so" | awk '$2 == "T" {print $3}' | tr '\n' ' ')
  [ "$plugin" = "ordo__compute_cuda_plugin " ] || fail "libordo_compute_cuda.so exports: $plugin"
  ok "the cuda compute plugin is installed beside libordo, exporting only its entry point"
fi

# build against the installed files only
export PKG_CONFIG_PATH=$LIB/pkgconfig
flags=$(pkg-config --cflags --libs ordo) || fail "pkg-config ordo"
case "$flags" in *"$ORDO_SOURCE_DIR"*|*"$ORDO_BUILD_DIR"*) fail "pkg-config points into the tree: $flags";; esac
[ "$(pkg-config --modversion ordo)" = "$ORDO_VERSION" ] || fail "ordo.pc version $(pkg-config --modversion ordo)"
cp "$ORDO_SOURCE_DIR/examples/hello_ordo.c" "$ORDO_SOURCE_DIR/examples/hello_ordo.ini" \
   "$ORDO_SOURCE_DIR/tests/install/api_errors.c" .
for prog in hello_ordo api_errors; do
  # a sanitized build's library needs its runtime in the program too
  ${CC:-cc} -std=c11 -Wall -Wextra -Werror ${ORDO_SANITIZE:+-fsanitize=$ORDO_SANITIZE} $prog.c $flags -o $prog > $prog.build.log 2>&1 ||
    { cat $prog.build.log; fail "building $prog with: $flags"; }
done
ok "hello_ordo and api_errors built with: $flags"
export LD_LIBRARY_PATH=$LIB

./api_errors local "$T" > errors.log 2>&1 || { cat errors.log; fail "api_errors local"; }
sed 's/^/  /' errors.log

# hello_ordo as both workers of a cluster of the installed daemons
common=(-c hello_ordo.ini --output.dir="$T" --output.run=hello)
start scheduler "$P/bin/ordo-scheduler" "${common[@]}" --cluster.scheduler=tcp://127.0.0.1:0
ep=$(ready scheduler)
for i in 0 1; do start server$i "$P/bin/ordo-server" "${common[@]}" --cluster.scheduler="$ep"; done
for i in 0 1; do start hello$i ./hello_ordo hello_ordo.ini cluster.scheduler="$ep"; done
for n in hello0 hello1 server0 server1 scheduler; do
  finish $n 60
  [ "$st" = 0 ] || fail "$n ended with '$st'"
done
for i in 0 1; do
  grep -q "5 iterations, 410112 values checked, 0 wrong" "$T/hello$i.log" ||
    fail "hello$i: $(tail -n 3 "$T/hello$i.log")"
done
ok "two hello_ordo workers: $(grep -h 'values checked' "$T"/hello*.log | tr '\n' ' ')"

# a program declaring a tensor of another size than the cluster's is refused, naming it; the
# cluster ends (the scheduler aborts the run) instead of waiting for it
one=(-c hello_ordo.ini --cluster.servers=1 --cluster.workers=1 "--model.tensors=256KiB,2KiB,10KiB"
     --output.dir="$T" --output.run=mismatch)
start scheduler "$P/bin/ordo-scheduler" "${one[@]}" --cluster.scheduler=tcp://127.0.0.1:0
ep=$(ready scheduler)
start server0 "$P/bin/ordo-server" "${one[@]}" --cluster.scheduler="$ep"
./api_errors mismatch hello_ordo.ini "$ep" > mismatch.log 2>&1 || { cat mismatch.log; fail "api_errors mismatch"; }
sed 's/^/  /' mismatch.log
for n in server0 scheduler; do
  finish $n 30
  [ "$st" != 0 ] && [ "$st" != timeout ] || fail "$n ended with '$st' after the refused join, expected an abort"
done
ok "the refused worker aborted the run: $(grep -o 'layer1.bias[^;]*' "$T/scheduler.log" | head -1)"
echo "install: all checks passed"
