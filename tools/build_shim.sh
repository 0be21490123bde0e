#!/usr/bin/env bash
# Builds the two prebuilt launch shims (DESIGN §4) from ffi/native/tk_cuda.c, byte-reproducibly:
#   prebuilt/cuda/linux-x86_64/libtk_cuda.so   with gcc                   (on an x86_64 host)
#   prebuilt/cuda/linux-aarch64/libtk_cuda.so  with aarch64-linux-gnu-gcc (Debian/Ubuntu: gcc-aarch64-linux-gnu)
# No CUDA toolkit is needed. Both need no glibc symbol newer than 2.17 (checked by tools/check_glibc.sh, which
# this script runs at the end) and depend only on libc.so.6, libdl.so.2 and libpthread.so.0.
#
# Usage: tools/build_shim.sh [x86_64|aarch64 ...]      (default: both)
#   env CC_X86_64, CC_AARCH64 override the compilers.
#
# Smoke test (dlopens a shim; without libcuda/GPU it prints the TK_ERR_NO_DRIVER message and exits 0):
#   gcc -std=c11 -O1 -Wall -Wextra -o /tmp/tk_smoke ffi/native/smoke_test.c -ldl
#   /tmp/tk_smoke prebuilt/cuda/linux-x86_64/libtk_cuda.so
set -euo pipefail
export LC_ALL=C TZ=UTC
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
SRC=ffi/native/tk_cuda.c

CFLAGS=(-std=c11 -O2 -fPIC -fvisibility=hidden -Wall -Wextra -Werror
  -U_FORTIFY_SOURCE -fno-stack-protector
  "-ffile-prefix-map=$ROOT=." -Iffi/native)
# --no-as-needed + the sonames themselves: on glibc < 2.34 dlopen/dlsym/... come from libdl.so.2 (and the
# pthread_* from libpthread.so.0); on glibc >= 2.34 both are stubs and libc.so.6 has the old versions.
# (-ldl would pick the empty libdl.a of glibc >= 2.34 and record no dependency.)
# On x86_64 the thread-locals also make the dynamic loader itself (ld-linux-x86-64.so.2, __tls_get_addr@GLIBC_2.3)
# NEEDED, as for any x86_64 library with global-dynamic TLS; aarch64 uses TLS descriptors and does not need it.
LDFLAGS=(-shared -s -Wl,--build-id=none -Wl,-z,defs -Wl,-z,relro -Wl,-z,now -Wl,--hash-style=both
  -Wl,--push-state,--no-as-needed -l:libdl.so.2 -l:libpthread.so.0 -Wl,--pop-state)

build() { # arch cc
  local arch=$1 cc=$2 out=prebuilt/cuda/linux-$1/libtk_cuda.so
  if ! command -v "$cc" >/dev/null 2>&1; then
    echo "build_shim: $cc not found." >&2
    [ "$arch" = aarch64 ] &&
      echo "  install it with: apt-get update && apt-get install -y gcc-aarch64-linux-gnu" >&2
    exit 1
  fi
  local target
  target="$("$cc" -dumpmachine)"
  case "$target" in
    "$arch"-*) ;;
    *) echo "build_shim: $cc targets $target, not $arch (set CC_X86_64 / CC_AARCH64)" >&2; exit 1 ;;
  esac
  mkdir -p "$(dirname "$out")"
  rm -f "$out.tmp"
  local cmd=("$cc" "${CFLAGS[@]}" -o "$out.tmp" "$SRC" "${LDFLAGS[@]}")
  echo "+ ${cmd[*]}"
  "${cmd[@]}"
  mv -f "$out.tmp" "$out"
  echo "$(sha256sum "$out" | cut -d' ' -f1)  $out  ($(stat -c %s "$out") bytes, $("$cc" --version | head -n1))"
}

ARCHS=("$@")
[ ${#ARCHS[@]} -eq 0 ] && ARCHS=(x86_64 aarch64)
for a in "${ARCHS[@]}"; do
  case "$a" in
    x86_64) build x86_64 "${CC_X86_64:-gcc}" ;;
    aarch64) build aarch64 "${CC_AARCH64:-aarch64-linux-gnu-gcc}" ;;
    *) echo "build_shim: unknown arch '$a' (x86_64 or aarch64)" >&2; exit 2 ;;
  esac
done

"$ROOT/tools/check_glibc.sh"
