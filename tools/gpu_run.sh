#!/usr/bin/env bash
# One full device command on the GPU machine (no Deno/Bun/network there): unpacks the runtime that
# ../shared/tools/device-runtime.sh packed into .device/, then runs the steps named in $STEPS (space separated)
# and writes every log under $OUT. Run from the repository root with carry [".device"]:
#
#   STEPS="test bench" bash tools/gpu_run.sh          # deno (or bun: RT=bun)
#
# Steps: test (every GPU test file, each in its own process: a kernel fault poisons its CUDA context), memcheck / racecheck (compute-sanitizer over $SAN_FILES;
# PAR=2 on the two-GPU machine runs test / memcheck / racecheck files two at a time, one per GPU), peers
# (bench/peers.py), bench (bench/roofline.ts with the peers file when present), decode (bench/decode.ts, and bench/peers_decode.py once), ab (tools/ab_pack.sh's branches, each
# in its own copy: AB_FILES tests, roofline --only AB_ONLY), ncu (Nsight Compute of the $NCU_CASES, summarised), variants (the roofline of each
# prebuilt tree under .device/var/*), torchprobe (bench/torch_probe.py: torch.compile's norm kernels dumped, timed and
# profiled by ncu like ours, all in $OUT/torchprobe.tgz; docs/perf-notes/perf7-probe.md).
set -u
RT=${RT:-deno}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
# The packed runtime when there is one (the lent GPU machine); otherwise the deno / bun on PATH.
# Unpacked once: a second gpu_run.sh on the other GPU (CUDA_VISIBLE_DEVICES=1 ... &) reuses it.
if [ -f ".device/$RT.xz" ]; then
  [ -x "/tmp/$RT" ] || { python3 -c "import lzma,shutil;shutil.copyfileobj(lzma.open('.device/$RT.xz'),open('/tmp/$RT.part','wb'))" && chmod +x /tmp/$RT.part && mv /tmp/$RT.part /tmp/$RT; }
  export PATH=/tmp:$PATH
fi
export NO_COLOR=1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv > "$OUT/gpu.txt" 2>&1
GPU_FILES=${GPU_FILES:-$(ls tests/*_gpu.test.ts)}
# Logs are appended to a few files (a run brings back only a handful): tests-$RT.log, sanitizer-$RT.log, bench.
LOGS=/tmp/gpu-run-logs
mkdir -p $LOGS
# stdin appended to $1 as one block (under a lock: PAR queues finish jobs at the same time)
append() { if command -v flock > /dev/null; then flock "$LOGS/$(basename "$1").lock" sh -c 'cat >> "$0"' "$1"; else cat >> "$1"; fi; }
run_tests() { # $1 label, rest: files
  local label=$1; shift
  local t0=$SECONDS rc
  if [ "$RT" = deno ]; then deno test -A --no-check "$@" > "$LOGS/$label.log" 2>&1; else bun test "$@" > "$LOGS/$label.log" 2>&1; fi
  rc=$?
  { echo "===== $label rc=$rc"; cat "$LOGS/$label.log"; } | append "$OUT/tests-$RT.log"
  echo "$label rc=$rc $((SECONDS - t0)) s: $(grep -E '^(ok|FAILED) \||^ *[0-9]+ (pass|fail|skip)' "$LOGS/$label.log" | tr '\n' ' ')"
}
sanitize() { # $1 tool, $2 file
  local b t0=$SECONDS rc
  b=$(basename "$2" .test.ts)
  if [ "$RT" = deno ]; then compute-sanitizer --tool "$1" --error-exitcode 9 deno test -A --no-check "$2" ${SAN_ARGS:-} > "$LOGS/$1-$b.log" 2>&1
  else compute-sanitizer --tool "$1" --error-exitcode 9 bun test "$2" ${SAN_ARGS:-} > "$LOGS/$1-$b.log" 2>&1; fi
  rc=$?
  { echo "===== $1 $b rc=$rc"; cat "$LOGS/$1-$b.log"; } | append "$OUT/sanitizer-$RT.log"
  echo "$1 $b rc=$rc $((SECONDS - t0)) s: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|^ok \||^FAILED|[0-9]+ (pass|fail)' "$LOGS/$1-$b.log" | tr '\n' ' ')"
}
# One job per file; with PAR=n (a machine of n GPUs) the files are dealt round-robin to n queues, queue i on GPU i
# (CUDA_VISIBLE_DEVICES), the queues run at once. Each job's log lands whole in the shared file when it ends.
per_file() { # $1 function, $2 its first argument (or ""), rest: files
  local fn=$1 arg=$2 n=${PAR:-1} i=0 q f
  shift 2
  if [ "$n" -le 1 ]; then
    for f in "$@"; do if [ -n "$arg" ]; then "$fn" "$arg" "$f"; else "$fn" "test-$RT-$(basename "$f" .test.ts)" "$f"; fi; done
    return
  fi
  local -a queues
  for f in "$@"; do queues[i % n]+="$f "; i=$((i + 1)); done
  for q in $(seq 0 $((n - 1))); do
    ( export CUDA_VISIBLE_DEVICES=$q
      for f in ${queues[q]:-}; do if [ -n "$arg" ]; then "$fn" "$arg" "$f"; else "$fn" "test-$RT-$(basename "$f" .test.ts)" "$f"; fi; done ) &
  done
  wait
}
# Nsight Compute: the sections of the `ncu` and `torchprobe` steps, and extra raw metrics (DRAM bytes, global load /
# store instructions and sectors: the access width) that tools/ncu_summary.py prints; NCU_METRICS= (empty) drops them
NCU_SECTIONS="--section SpeedOfLight --section Occupancy --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis --section WarpStateStats --section LaunchStats --section SchedulerStats"
NCU_METRICS=${NCU_METRICS-dram__bytes_read.sum,dram__bytes_write.sum,smsp__inst_executed_op_global_ld.sum,smsp__inst_executed_op_global_st.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum}
# ncu_csv REGEX FILE cmd...: ncu's raw CSV rows of the kernels matching REGEX launched by cmd between
# cuProfilerStart/Stop, written to FILE (stderr in $LOGS/ncu-err.log); when nothing was profiled with the extra metrics
# (a name this ncu does not know) and ncu did not time out, once more without them
ncu_csv() {
  local filter=$1 file=$2 rc; shift 2
  local -a extra=(); [ -n "$NCU_METRICS" ] && extra=(--metrics "$NCU_METRICS")
  timeout ${NCU_TIMEOUT:-240} ncu --csv --page raw --profile-from-start off -k "regex:$filter" $NCU_SECTIONS ${extra[@]+"${extra[@]}"} "$@" \
    2> "$LOGS/ncu-err.log" | grep -E '^"' > "$file"
  rc=${PIPESTATUS[0]}
  if [ ${#extra[@]} -gt 0 ] && [ "$rc" != 124 ] && [ "$(grep -c . "$file")" -lt 3 ]; then
    echo "ncu: nothing profiled with --metrics (rc=$rc; $(tail -n 1 "$LOGS/ncu-err.log")); again without them"
    timeout ${NCU_TIMEOUT:-240} ncu --csv --page raw --profile-from-start off -k "regex:$filter" $NCU_SECTIONS "$@" \
      2> "$LOGS/ncu-err.log" | grep -E '^"' > "$file"
    rc=${PIPESTATUS[0]}
  fi
  return "$rc"
}
for step in ${STEPS:-test}; do
  case $step in
    test) per_file run_tests "" $GPU_FILES ;;
    memcheck | racecheck) per_file sanitize "$step" ${SAN_FILES:-$GPU_FILES} ;;
    peers) python3 bench/peers.py --json "$OUT/peers.json" --budget "${PEERS_BUDGET:-240}" ${PEERS_ARGS:-} > "$OUT/peers.log" 2>&1; echo "peers rc=$?" ;;
    bench)
      p=(); [ -f "$OUT/peers.json" ] && p=(--peers "$OUT/peers.json")
      if [ "$RT" = deno ]; then deno run -A --no-check bench/roofline.ts --json "$OUT/roofline-$RT.json" "${p[@]}" ${BENCH_ARGS:-} > "$OUT/roofline-$RT.log" 2>&1
      else bun bench/roofline.ts --json "$OUT/roofline-$RT.json" "${p[@]}" ${BENCH_ARGS:-} > "$OUT/roofline-$RT.log" 2>&1; fi
      echo "bench rc=$?"; tail -n 60 "$OUT/roofline-$RT.log" ;;
    decode)
      if [ "$RT" = deno ]; then deno run -A --no-check bench/decode.ts --json "$OUT/decode-$RT.json" > "$OUT/decode-$RT.log" 2>&1
      else bun bench/decode.ts --json "$OUT/decode-$RT.json" > "$OUT/decode-$RT.log" 2>&1; fi
      echo "decode rc=$?"; cat "$OUT/decode-$RT.log"
      [ -f "$OUT/decode-peers.json" ] || { python3 bench/peers_decode.py --json "$OUT/decode-peers.json" > "$OUT/decode-peers.log" 2>&1; echo "decode peers rc=$?"; cat "$OUT/decode-peers.log"; } ;;
    ab) # one copy of the checkout per .device/ab/<branch>.tar (tools/ab_pack.sh), each with its tests and roofline
      ab=${AB_DIR:-.device/ab}   # AB_DIR: another folder of tars (a second gpu_run.sh on the other GPU)
      for tb in "$ab"/*.tar; do
        n=$(basename "$tb" .tar); d=/tmp/ab/$n
        rm -rf "$d"; mkdir -p "$d"
        tar -C . --exclude=./.device -cf - . | tar -C "$d" -xf -
        [ -f "$ab/$n.base" ] && tar -C "$d" -xf "$ab/$(cat "$ab/$n.base").tar"   # a variant of another packed branch
        tar -C "$d" -xf "$tb"
        files=${AB_FILES:-}; [ -f "$ab/$n.tests" ] && files=$(cat "$ab/$n.tests")
        only=${AB_ONLY:-none}; [ -f "$ab/$n.only" ] && only=$(cat "$ab/$n.only")
        root=$PWD
        ( cd "$d" && for f in $files; do run_tests "ab-$n-$(basename "$f" .test.ts)" "$f"; done
          sel=(--only "$only"); [ "$only" = all ] && sel=()   # all: every family's cases
          if [ "$RT" = deno ]; then deno run -A --no-check bench/roofline.ts "${sel[@]}" > "$LOGS/ab-$n-bench.log" 2>&1
          else bun bench/roofline.ts "${sel[@]}" > "$LOGS/ab-$n-bench.log" 2>&1; fi
          { echo "===== ab $n roofline"; cat "$LOGS/ab-$n-bench.log"; } >> "$OUT/ab-$RT.log"
          echo "ab $n:"; grep -E '^tk ' "$LOGS/ab-$n-bench.log"
          if [ -f "$root/$ab/$n.cmd" ]; then   # the branch's own extra command (ab_pack.sh CMD=...)
            bash "$root/$ab/$n.cmd" > "$LOGS/ab-$n-cmd.log" 2>&1
            { echo "===== ab $n command rc=$?: $(cat "$root/$ab/$n.cmd")"; cat "$LOGS/ab-$n-cmd.log"; } >> "$OUT/ab-$RT.log"
            tail -n 40 "$LOGS/ab-$n-cmd.log"
          fi )
      done ;;
    ncu) # Nsight Compute of the cases in $NCU_CASES ("op tokens variant-substring" separated by ';'), raw metrics as
      # CSV appended to $OUT/ncu.csv with a "### case" line before each; python3 tools/ncu_summary.py reads it
      IFS=';' read -ra cases <<< "${NCU_CASES:-normForward 16384}"
      for c in "${cases[@]}"; do
        read -r op tok var <<< "$c"
        echo "### case $op $tok ${var:-}" >> "$OUT/ncu.csv"
        if [ "$RT" = deno ]; then set -- deno run -A --no-check bench/profile.ts "$op" "$tok" ${var:+"$var"}; else set -- bun bench/profile.ts "$op" "$tok" ${var:+"$var"}; fi
        ncu_csv tk_ "$LOGS/ncu-one.csv" "$@"
        echo "ncu $op $tok ${var:-}: rc=$? $(grep -c . "$LOGS/ncu-err.log") stderr lines"; tail -n 3 "$LOGS/ncu-err.log"
        cat "$LOGS/ncu-one.csv" >> "$OUT/ncu.csv"
      done
      python3 tools/ncu_summary.py "$OUT/ncu.csv" | tee "$OUT/ncu-summary.txt" ;;
    torchprobe) # torch.compile's kernels of the norm cases (bench/torch_probe.py: output code, Triton source, PTX, cubin,
      # SASS, chosen config, times; our norm kernels' SASS beside), then ncu of them per case with the ncu step's
      # sections, appended to $OUT/ncu.csv too (a later `ncu` step summarises ours and theirs in one ncu-summary.txt).
      # Everything in one file, $OUT/torchprobe.tgz (the Triton / Inductor caches: only their .py/.json/.ptx files)
      pd=/tmp/torchprobe; rm -rf "$pd"; mkdir -p "$pd"
      pc=${PROBE_CASES:-normForward normForwardAndPerTokenCast normBackward}; pt=${PROBE_TOKENS:-16384}
      ours=$(ls prebuilt/cuda/sm90a/norm_*.cubin 2> /dev/null | paste -sd, -)
      PYTHONUNBUFFERED=1 timeout ${PROBE_TIMEOUT:-400} python3 bench/torch_probe.py --out "$pd" --cases "$(echo $pc | tr ' ' ,)" \
        --tokens "$pt" --ours "$ours" ${PROBE_ARGS:-} > "$pd/probe.log" 2>&1
      echo "torchprobe rc=$?"; grep -vE '^ +File "|^Traceback|^    [^ ]' "$pd/probe.log" | tail -n 120
      for c in $pc; do
        echo "### case torch.compile $c $pt" | tee -a "$pd/ncu-torch.csv" >> "$OUT/ncu.csv"
        ncu_csv triton_ "$LOGS/ncu-one.csv" python3 bench/torch_probe.py --ncu --out "$pd" --cases "$c" --tokens "$pt"
        echo "ncu torch.compile $c $pt: rc=$? $(grep -c . "$LOGS/ncu-err.log") stderr lines"; tail -n 3 "$LOGS/ncu-err.log"
        cp "$LOGS/ncu-err.log" "$pd/ncu-err-$c.log"
        tee -a "$pd/ncu-torch.csv" < "$LOGS/ncu-one.csv" >> "$OUT/ncu.csv"
      done
      python3 tools/ncu_summary.py "$pd/ncu-torch.csv" > "$pd/ncu-torch-summary.txt" 2>&1; cat "$pd/ncu-torch-summary.txt"
      ( cd /tmp && find torchprobe -type f \( ! -path 'torchprobe/cache/*' -o -name '*.py' -o -name '*.json' -o -name '*.ptx' \
          -o -name '*.best_config' \) > /tmp/torchprobe.list && tar -czf "$OUT/torchprobe.tgz" -T /tmp/torchprobe.list )
      if [ "$(stat -c %s "$OUT/torchprobe.tgz" 2> /dev/null || echo 0)" -gt 15000000 ]; then   # a file comes back up to 16 MiB
        ( cd /tmp && grep -v '^torchprobe/cache/' /tmp/torchprobe.list > /tmp/torchprobe.small && tar -czf "$OUT/torchprobe.tgz" -T /tmp/torchprobe.small )
        echo "torchprobe.tgz without the caches (too large with them)"
      fi
      echo "torchprobe.tgz: $(stat -c %s "$OUT/torchprobe.tgz" 2> /dev/null) bytes, $(tar -tzf "$OUT/torchprobe.tgz" 2> /dev/null | wc -l) files" ;;
    variants)
      for v in .device/var/*/; do
        n=$(basename "$v")
        TK_PREBUILT_DIR=$PWD/$v deno run -A --no-check bench/roofline.ts --only none > "$LOGS/variant-$n.log" 2>&1
        { echo "===== variant $n"; cat "$LOGS/variant-$n.log"; } >> "$OUT/variants.log"
        echo "variant $n: $(grep -E '^tk ' "$LOGS/variant-$n.log" | tr -s ' ' | tr '\n' '|')"
      done ;;
  esac
done
