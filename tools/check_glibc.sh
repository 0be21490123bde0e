#!/usr/bin/env bash
# Checks the prebuilt launch shims (DESIGN §4) can load on glibc 2.17:
#   - no dynamic symbol needs a GLIBC_x.y version newer than 2.17 (objdump -T; readelf --dyn-syms as fallback),
#   - NEEDED libraries are only libc.so.6, libdl.so.2, libpthread.so.0 and glibc's dynamic loader
#     (ld-linux-x86-64.so.2 / ld-linux-aarch64.so.1: __tls_get_addr for the thread-locals) (readelf -d),
#   - the ELF machine matches the directory (x86-64 / AArch64).
# Needs binutils only (plain x86_64 objdump/readelf read aarch64 objects too). Exit 1 on any violation.
# Usage: tools/check_glibc.sh [shim.so ...]   (default: prebuilt/cuda/linux-{x86_64,aarch64}/libtk_cuda.so)
set -uo pipefail
export LC_ALL=C
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MAX_MAJOR=2 MAX_MINOR=17
ALLOWED_NEEDED="libc.so.6 libdl.so.2 libpthread.so.0 ld-linux-x86-64.so.2 ld-linux-aarch64.so.1"

for tool in readelf objdump; do
  command -v "$tool" >/dev/null 2>&1 || { echo "check_glibc: $tool not found (install binutils)" >&2; exit 1; }
done

FILES=("$@")
[ ${#FILES[@]} -eq 0 ] &&
  FILES=("$ROOT/prebuilt/cuda/linux-x86_64/libtk_cuda.so" "$ROOT/prebuilt/cuda/linux-aarch64/libtk_cuda.so")

status=0
for f in "${FILES[@]}"; do
  rel="${f#"$ROOT"/}"
  if [ ! -f "$f" ]; then
    echo "FAIL $rel: missing (run tools/build_shim.sh)"
    status=1
    continue
  fi
  bad=()

  machine="$(readelf -h "$f" 2>/dev/null | sed -n 's/^ *Machine: *//p')"
  case "$rel" in
    *linux-x86_64/*) [[ "$machine" == *X86-64* ]] || bad+=("machine is '$machine', expected X86-64") ;;
    *linux-aarch64/*) [[ "$machine" == *AArch64* ]] || bad+=("machine is '$machine', expected AArch64") ;;
  esac

  # "<version> <symbol>" for every dynamic symbol carrying a GLIBC_ version.
  syms="$(objdump -T "$f" 2>/dev/null |
    sed -n -E 's/.*[ (](GLIBC_[0-9][0-9.]*)\)? +([^ ]+)$/\1 \2/p')"
  if [ -z "$syms" ]; then # objdump unable to read this machine: readelf prints "name@GLIBC_x.y (n)"
    syms="$(readelf --dyn-syms -W "$f" 2>/dev/null |
      sed -n -E 's/.* ([^ @]+)@@?(GLIBC_[0-9][0-9.]*)( .*)?$/\2 \1/p')"
  fi
  [ -n "$syms" ] || bad+=("no GLIBC-versioned symbols found (not a dynamically linked glibc object?)")

  max="0.0"
  while read -r ver sym; do
    [ -n "$ver" ] || continue
    IFS=. read -r major minor _ <<<"${ver#GLIBC_}"
    minor=${minor:-0}
    if ((major > MAX_MAJOR || (major == MAX_MAJOR && minor > MAX_MINOR))); then
      bad+=("$sym needs $ver (> GLIBC_$MAX_MAJOR.$MAX_MINOR)")
    fi
    IFS=. read -r mmaj mmin _ <<<"$max"
    if ((major > mmaj || (major == mmaj && minor > mmin))); then max="$major.$minor"; fi
  done <<<"$syms"

  needed="$(readelf -d "$f" 2>/dev/null | sed -n -E 's/.*\(NEEDED\).*\[(.*)\]/\1/p' | tr '\n' ' ')"
  for lib in $needed; do
    [[ " $ALLOWED_NEEDED " == *" $lib "* ]] || bad+=("NEEDED $lib (only $ALLOWED_NEEDED allowed)")
  done

  nsyms=$(grep -c . <<<"$syms")
  if [ ${#bad[@]} -eq 0 ]; then
    echo "OK   $rel: $machine, $nsyms glibc symbols, newest GLIBC_$max, NEEDED ${needed% }"
  else
    status=1
    for b in "${bad[@]}"; do echo "FAIL $rel: $b"; done
  fi
done
exit $status
