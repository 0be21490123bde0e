#!/usr/bin/env bash
# One device command on the one-GPU machine that does what tools/gpu_run.sh's `ab`, `test` and sanitizer steps do,
# with the GPU's idle time filled: every timing first, one after another on a quiet GPU, then every test and
# sanitizer job at once (they are CPU-bound: the 16 cores run them side by side). Carry [".device"].
#   1. main's roofline rows:           MAIN_ONLY=normBackward,perTokenCast
#   2. each branch packed by tools/ab_pack.sh (.device/ab/<b>.tar laid over a copy of the checkout): its roofline
#      rows and its CMD, unless .device/ab/<b>.notime exists (tests only) or SKIP_TIME=1
#   3. at once: each branch's test files (unless SKIP_TEST=1), main's MAIN_TESTS, memcheck + racecheck of main's
#      MAIN_SAN files and of EXTRA_SAN="<branch>:<test file> ..." in the branch's copy
# Limits per job: TLIM (timings, 200 s), XLIM (tests and sanitizers, 400 s). Logs: $OUT/ab-logs.tgz, roofline-main.*.
# DEADLINE (seconds from the start, default 570) caps both so the logs are packed before the run's limit: a timing
# starts only while XLIM is still left after it, and the tests get what is left (at least 60 s).
#   MAIN_ONLY=normForward MAIN_TESTS="tests/norm_gpu.test.ts" MAIN_SAN="tests/norm_gpu.test.ts" bash tools/ab_one_gpu.sh
# RT=bun (with bun packed instead of deno) runs everything under Bun: main's rows, the branches' rows, CMD (write it
# for Bun then: CMD="bun bench/x.ts"), tests and sanitizers.
cd "$(dirname "$0")/.." || exit 1   # the repository root
root=$PWD; ab=$root/.device/ab
XLIM=${XLIM:-400}
tlim() { local l=$(( ${DEADLINE:-570} - XLIM - SECONDS )); [ "$l" -gt "${TLIM:-200}" ] && l=${TLIM:-200}; echo "$l"; }
STEPS=none RT=${RT:-deno} bash tools/gpu_run.sh > /dev/null 2>&1; export PATH=/tmp:$PATH NO_COLOR=1
rt_run="deno run -A --no-check"; rt_test="deno test -A --no-check"
[ "${RT:-deno}" = bun ] && { rt_run="bun"; rt_test="bun test"; }
[ -d "$ab" ] && for tb in "$ab"/*.tar; do n=$(basename "$tb" .tar); d=/tmp/ab/$n; rm -rf "$d"; mkdir -p "$d"
  tar -C . --exclude=./.device -cf - . | tar -C "$d" -xf -; tar -C "$d" -xf "$tb"; done
if [ -n "${MAIN_ONLY:-}" ]; then t0=$SECONDS   # main's own roofline rows first, on a quiet GPU
  timeout $(tlim) $rt_run bench/roofline.ts --only "$MAIN_ONLY" --json "$OUT/roofline-main.json" > "$OUT/roofline-main.log" 2>&1
  echo "== main roofline rc=$? $((SECONDS - t0)) s"; grep -E '^tk |^torch' "$OUT/roofline-main.log"; fi
if [ -z "${SKIP_TIME:-}" ]; then for tb in "$ab"/*.tar; do n=$(basename "$tb" .tar); d=/tmp/ab/$n; t0=$SECONDS
  [ -f "$tb" ] || continue; [ -f "$ab/$n.notime" ] && continue
  [ "$(tlim)" -lt 20 ] && { echo "== time $n skipped: the deadline"; continue; }
  only=none; [ -f "$ab/$n.only" ] && only=$(cat "$ab/$n.only")
  ( cd "$d" && timeout $(tlim) $rt_run bench/roofline.ts --only "$only" > "$OUT/time-$n.txt" 2>&1
    [ -f "$ab/$n.cmd" ] && { echo "===== $(cat "$ab/$n.cmd")"; timeout $(tlim) bash "$ab/$n.cmd"; } >> "$OUT/time-$n.txt" 2>&1 )
  echo "== time $n $((SECONDS - t0)) s"; grep -E '^tk ' "$OUT/time-$n.txt"; sed -n '/^=====/,$p' "$OUT/time-$n.txt" | tail -n 45; done; fi
l=$(( ${DEADLINE:-570} - SECONDS )); [ "$l" -lt "$XLIM" ] && XLIM=$l; [ "$XLIM" -lt 60 ] && XLIM=60
echo "== tests and sanitizers: ${XLIM} s each, from $SECONDS s"
[ -n "${SKIP_TEST:-}" ] || for tb in "$ab"/*.tar; do n=$(basename "$tb" .tar); d=/tmp/ab/$n; [ -f "$tb" ] || continue
  for f in $(cat "$ab/$n.tests" 2>/dev/null); do
    ( cd "$d" && t0=$SECONDS; timeout $XLIM $rt_test "$f" > "$OUT/test-$n-$(basename "$f" .test.ts).txt" 2>&1
      echo "== test $n $f rc=$? $((SECONDS - t0)) s: $(grep -E '^(ok|FAILED) \|' "$OUT/test-$n-$(basename "$f" .test.ts).txt")" ) &
  done; done
summary='^(ok|FAILED) \||^ *[0-9]+ (pass|fail)$|SUMMARY'
for f in ${MAIN_TESTS:-}; do ( t0=$SECONDS; timeout $XLIM $rt_test "$f" > "$OUT/test-main-$(basename "$f" .test.ts).txt" 2>&1
  echo "== test main $f rc=$? $((SECONDS - t0)) s: $(grep -E "$summary" "$OUT/test-main-$(basename "$f" .test.ts).txt" | tr '\n' ' ')" ) & done
# MAIN_SAN: memcheck + racecheck; MAIN_MEM: memcheck only
for f in ${MAIN_SAN:-} ${MAIN_MEM:-}; do tools="memcheck racecheck"; case " ${MAIN_SAN:-} " in *" $f "*) ;; *) tools=memcheck ;; esac
  for tool in $tools; do ( t0=$SECONDS; timeout $XLIM compute-sanitizer --tool $tool --error-exitcode 9 $rt_test "$f" > "$OUT/san-main-$(basename "$f" .test.ts)-$tool.txt" 2>&1
  echo "== $tool main $f rc=$? $((SECONDS - t0)) s: $(grep -E "$summary" "$OUT/san-main-$(basename "$f" .test.ts)-$tool.txt" | tr '\n' ' ')" ) & done; done
for s in ${EXTRA_SAN:-}; do b=${s#*:}; n=${s%%:*}   # "<branch>:<test file>" memcheck + racecheck in that copy
  for tool in memcheck racecheck; do ( cd /tmp/ab/$n && t0=$SECONDS; timeout $XLIM compute-sanitizer --tool $tool --error-exitcode 9 $rt_test "$b" > "$OUT/san-$n-$tool.txt" 2>&1
    echo "== $tool $n rc=$? $((SECONDS - t0)) s: $(grep -E 'SUMMARY|^ok \||^FAILED' "$OUT/san-$n-$tool.txt" | tr '\n' ' ')" ) & done; done
wait
cd "$OUT" && tar czf ab-logs.tgz time-*.txt test-*.txt san-*.txt 2>/dev/null; rm -f time-*.txt test-*.txt san-*.txt; ls -la
