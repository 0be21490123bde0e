#!/usr/bin/env bash
# Packs branches for an A/B device run: for each branch, the files that differ from the base (default main) —
# sources, host code and the sm_90a cubins with the branch's manifest — into .device/ab/<branch>.tar. The device
# step `ab` of tools/gpu_run.sh copies the checkout once per tar, lays the tar over it, and runs the GPU tests and
# the roofline there, so several prepared branches are tested and measured in one device command:
#
#   bash tools/ab_pack.sh perf2-norm perf2-quant          # BASE=<rev> to diff against another base
#   STEPS=ab AB_FILES="tests/norm_gpu.test.ts" AB_ONLY=normForward,castBack bash tools/gpu_run.sh   # on the GPU
#
# A branch may carry its own tests and roofline ops, used instead of AB_FILES / AB_ONLY:
#   bash tools/ab_pack.sh "perf2-norm:tests/norm_gpu.test.ts@normForward,normBackward"     (@all: every roofline case)
#
# A variant of a packed branch travels as its difference from that branch (ON=<packed branch>; laid over it on the
# device, so a variant costs only its own files):
#   ON=perf2-all bash tools/ab_pack.sh "ab-pt2@normBackward"
#
# CMD="<shell command>" is run in the branch's copy after its roofline (e.g. a tuning script the branch adds):
#   CMD="deno run -A --no-check bench/norm_tuning.ts" bash tools/ab_pack.sh "perf3-norm@none"
#
# Only the branch's own changes since it left the base travel. When the base rebuilt binaries since then, the tar's
# manifest is the base's with the branch's entries for the binaries it carries (a file both changed is the branch's). sm_100a cubins
# are left out (the H200 loads sm_90a only; the loader checks the hash of what it loads).
set -euo pipefail
BASE=${BASE:-main}
mkdir -p .device/ab
for spec in "$@"; do
  b=${spec%%[:@]*}
  tests=; only=
  case $spec in *:*) tests=${spec#*:}; tests=${tests%%@*} ;; esac
  case $spec in *@*) only=${spec#*@} ;; esac
  mb=$(git merge-base "${ON:-$BASE}" "$b")
  # the branch's own changes since it left the base; the base's later changes stay as the checkout has them
  files=$(git diff --name-only --diff-filter=AM "$mb" "$b" -- | grep -v '^prebuilt/cuda/sm100a/' || true)
  name=${b//\//_}
  git archive --format=tar -o ".device/ab/$name.tar" "$b" $files
  if [ -z "${ON:-}" ] && ! git diff --quiet "$mb" "$BASE" -- prebuilt && echo "$files" | grep -qx prebuilt/manifest.json; then
    # The base rebuilt binaries since the branch left it: the branch's manifest would refuse them (the loader checks
    # every hash). The tar carries the base's manifest with the branch's entries for the binaries the tar carries.
    echo "$b: the base changed prebuilt/ since the branch left it: the tar's manifest is the base's, with the branch's entries for its own binaries" >&2
    t=$(mktemp -d); tar -C "$t" -xf ".device/ab/$name.tar"
    git show "$BASE:prebuilt/manifest.json" > "$t/base-manifest.json"
    python3 - "$t" $files <<'PY'
import json, sys
t, files = sys.argv[1], sys.argv[2:]
base = json.load(open(t + "/base-manifest.json"))
branch = json.load(open(t + "/prebuilt/manifest.json"))
for f in files:
    k = f[len("prebuilt/"):] if f.startswith("prebuilt/") else None
    if k in branch["binaries"]:
        base["binaries"][k] = branch["binaries"][k]
json.dump(base, open(t + "/prebuilt/manifest.json", "w"), indent=2)
PY
    (cd "$t" && tar -cf - $files) > ".device/ab/$name.tar"; rm -rf "$t"
  fi
  rm -f ".device/ab/$name.tests" ".device/ab/$name.only" ".device/ab/$name.base" ".device/ab/$name.cmd"
  [ -n "${CMD:-}" ] && echo "$CMD" > ".device/ab/$name.cmd"
  [ -n "${ON:-}" ] && echo "${ON//\//_}" > ".device/ab/$name.base"
  [ -n "$tests" ] && echo "${tests//,/ }" > ".device/ab/$name.tests"
  [ -n "$only" ] && echo "$only" > ".device/ab/$name.only"
  echo "$name: $(echo "$files" | wc -l) files, $(du -h ".device/ab/$name.tar" | cut -f1)"
done
