/*
 * Smoke test of libtk_cuda: dlopens the shim given as argv[1] and exercises the ABI of tk_cuda.h.
 *
 *   gcc -std=c11 -O1 -Wall -Wextra -o /tmp/tk_smoke ffi/native/smoke_test.c -ldl
 *   /tmp/tk_smoke prebuilt/cuda/linux-x86_64/libtk_cuda.so
 *
 * Without a driver (no libcuda.so.1) or without a GPU it prints the shim's message and exits 0. With a GPU it
 * allocates, memsets, copies (1-D and 2-D), creates/destroys streams and events, loads a tiny PTX kernel and
 * launches it through tk_launch (plain and, where supported, with PDL), and round-trips the device error word.
 * Exit status 1 on any unexpected result.
 */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tk_cuda.h"

#define FN(ret, name, args) ret(*name) args;
#define TK_FUNCS(X)                                                                                              \
  X(int32_t, tk_abi_version, (void))                                                                             \
  X(int32_t, tk_init, (const char *))                                                                            \
  X(const char *, tk_last_error, (void))                                                                         \
  X(int32_t, tk_last_cuda_error, (void))                                                                         \
  X(int32_t, tk_driver_version, (int32_t *))                                                                     \
  X(int32_t, tk_device_count, (int32_t *))                                                                       \
  X(int32_t, tk_device_name, (int32_t, char *, int32_t))                                                         \
  X(int32_t, tk_device_attribute, (int32_t, int32_t, int32_t *))                                                 \
  X(int32_t, tk_device_total_mem, (int32_t, uint64_t *))                                                         \
  X(int32_t, tk_mem_info, (int32_t, uint64_t *, uint64_t *))                                                     \
  X(int32_t, tk_context_init, (int32_t))                                                                         \
  X(int32_t, tk_malloc_async, (int32_t, uint64_t, uint64_t, uint64_t *))                                         \
  X(int32_t, tk_free_async, (int32_t, uint64_t, uint64_t))                                                       \
  X(int32_t, tk_memcpy_htod_async, (int32_t, uint64_t, const void *, uint64_t, uint64_t))                        \
  X(int32_t, tk_memcpy_dtoh_async, (int32_t, void *, uint64_t, uint64_t, uint64_t))                              \
  X(int32_t, tk_memcpy_dtod_async, (int32_t, uint64_t, uint64_t, uint64_t, uint64_t))                            \
  X(int32_t, tk_memset_d8_async, (int32_t, uint64_t, uint32_t, uint64_t, uint64_t))                              \
  X(int32_t, tk_memcpy_htod, (int32_t, uint64_t, const void *, uint64_t, uint64_t))                              \
  X(int32_t, tk_memcpy_dtoh, (int32_t, void *, uint64_t, uint64_t, uint64_t))                                    \
  X(int32_t, tk_memcpy_dtoh_2d, (int32_t, void *, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t))   \
  X(int32_t, tk_stream_create, (int32_t, uint64_t *))                                                            \
  X(int32_t, tk_stream_destroy, (int32_t, uint64_t))                                                             \
  X(int32_t, tk_stream_synchronize, (int32_t, uint64_t))                                                         \
  X(int32_t, tk_event_create, (int32_t, uint64_t *))                                                             \
  X(int32_t, tk_event_destroy, (int32_t, uint64_t))                                                              \
  X(int32_t, tk_event_record, (int32_t, uint64_t, uint64_t))                                                     \
  X(int32_t, tk_event_synchronize, (int32_t, uint64_t))                                                          \
  X(int32_t, tk_event_elapsed_ms, (int32_t, uint64_t, uint64_t, float *))                                        \
  X(int32_t, tk_module_load, (int32_t, const void *, uint64_t, uint64_t *))                                      \
  X(int32_t, tk_module_unload, (int32_t, uint64_t))                                                              \
  X(int32_t, tk_module_function, (int32_t, uint64_t, const char *, uint64_t *))                                  \
  X(int32_t, tk_function_set_max_dynamic_smem, (int32_t, uint64_t, int32_t))                                     \
  X(int32_t, tk_function_set_smem_carveout, (int32_t, uint64_t, int32_t))                                        \
  X(int32_t, tk_launch, (const void *))                                                                          \
  X(int32_t, tk_error_word_ptr, (int32_t, uint64_t *))                                                           \
  X(int32_t, tk_sync_and_check, (int32_t, uint64_t, uint32_t *))
/* The shim's entry points, by the names of tk_cuda.h. */
static struct {
  TK_FUNCS(FN)
} T;

static int failures;
#define CHECK(call)                                                                                              \
  do {                                                                                                           \
    int32_t s_ = (call);                                                                                         \
    if (s_ != TK_OK) {                                                                                           \
      printf("FAIL %s -> %d: %s\n", #call, s_, T.tk_last_error());                                                 \
      failures++;                                                                                                \
    }                                                                                                            \
  } while (0)
#define EXPECT(cond)                                                                                             \
  do {                                                                                                           \
    if (!(cond)) {                                                                                               \
      printf("FAIL %s (line %d)\n", #cond, __LINE__);                                                            \
      failures++;                                                                                                \
    }                                                                                                            \
  } while (0)

/* Kernel taking one by-value struct { u64 out; u32 value; u32 pad; }: *out = value. */
static const char kPtx[] = ".version 7.0\n.target sm_75\n.address_size 64\n"
                           ".visible .entry tk_smoke(.param .align 8 .b8 p[16])\n{\n"
                           "  .reg .b64 %rd<3>;\n  .reg .b32 %r<2>;\n"
                           "  ld.param.u64 %rd1, [p];\n  ld.param.u32 %r1, [p+8];\n"
                           "  cvta.to.global.u64 %rd2, %rd1;\n  st.global.u32 [%rd2], %r1;\n  ret;\n}\n";

static void gpu_tests(void) {
  int32_t ver = 0, n = 0;
  CHECK(T.tk_driver_version(&ver));
  CHECK(T.tk_device_count(&n));
  printf("driver CUDA %d.%d, %d device(s)\n", ver / 1000, ver % 1000 / 10, n);
  if (n == 0) return;
  const int dev = 0;
  char name[256] = {0};
  int32_t sms = 0, ccmaj = 0, ccmin = 0;
  uint64_t total = 0, freeb = 0, total2 = 0;
  CHECK(T.tk_device_name(dev, name, sizeof name));
  CHECK(T.tk_device_attribute(dev, 16, &sms));
  CHECK(T.tk_device_attribute(dev, 75, &ccmaj));
  CHECK(T.tk_device_attribute(dev, 76, &ccmin));
  CHECK(T.tk_device_total_mem(dev, &total));
  printf("device 0: %s, sm_%d%d, %d SMs, %.1f GiB\n", name, ccmaj, ccmin, sms, total / 1073741824.0);
  CHECK(T.tk_context_init(dev));
  CHECK(T.tk_mem_info(dev, &freeb, &total2));
  EXPECT(total2 == total && freeb <= total);

  uint64_t s = 0, e0 = 0, e1 = 0, buf = 0, buf2 = 0, zero = 1;
  CHECK(T.tk_stream_create(dev, &s));
  CHECK(T.tk_event_create(dev, &e0));
  CHECK(T.tk_event_create(dev, &e1));
  CHECK(T.tk_malloc_async(dev, 0, s, &zero));
  EXPECT(zero == 0);
  CHECK(T.tk_free_async(dev, 0, s));
  const uint64_t N = 1 << 20;
  unsigned char *h = malloc(N);
  CHECK(T.tk_event_record(dev, e0, s));
  CHECK(T.tk_malloc_async(dev, N, s, &buf));
  CHECK(T.tk_malloc_async(dev, N, s, &buf2));
  CHECK(T.tk_memset_d8_async(dev, buf, 0xAB, N, s));
  CHECK(T.tk_memcpy_dtoh(dev, h, buf, N, s));
  int ok = 1;
  for (uint64_t i = 0; i < N; i++) ok &= h[i] == 0xAB;
  EXPECT(ok);
  for (uint64_t i = 0; i < N; i++) h[i] = (unsigned char)(i * 7);
  CHECK(T.tk_memcpy_htod(dev, buf, h, N, s));
  CHECK(T.tk_memcpy_dtod_async(dev, buf2, buf, N, s));
  unsigned char rows[4 * 16];
  CHECK(T.tk_memcpy_dtoh_2d(dev, rows, 16, buf2 + 3, 256, 16, 4, s)); /* 4 rows of 16 bytes, device pitch 256 */
  ok = 1;
  for (int r = 0; r < 4; r++)
    for (int c = 0; c < 16; c++) ok &= rows[r * 16 + c] == (unsigned char)((3 + r * 256 + c) * 7);
  EXPECT(ok);
  CHECK(T.tk_event_record(dev, e1, s));
  CHECK(T.tk_event_synchronize(dev, e1));
  float ms = -1;
  CHECK(T.tk_event_elapsed_ms(dev, e0, e1, &ms));
  printf("copies took %.3f ms\n", ms);

  /* Launch through the packed buffer. */
  uint64_t mod = 0, fn = 0;
  CHECK(T.tk_module_load(dev, kPtx, sizeof kPtx, &mod));
  CHECK(T.tk_module_function(dev, mod, "tk_smoke", &fn));
  CHECK(T.tk_function_set_max_dynamic_smem(dev, fn, 0));
  CHECK(T.tk_function_set_smem_carveout(dev, fn, 100));
  _Alignas(8) unsigned char packet[TK_LAUNCH_HEADER_BYTES + 16];
  memset(packet, 0, sizeof packet);
  tk_launch_header *lh = (tk_launch_header *)packet;
  lh->fn = fn;
  lh->stream = s;
  lh->grid[0] = lh->grid[1] = lh->grid[2] = 1;
  lh->block[0] = lh->block[1] = lh->block[2] = 1;
  lh->dev = dev;
  uint32_t value = 0x12345678u, got = 0;
  memcpy(packet + TK_LAUNCH_HEADER_BYTES, &buf, 8);
  memcpy(packet + TK_LAUNCH_HEADER_BYTES + 8, &value, 4);
  CHECK(T.tk_launch(packet));
  CHECK(T.tk_memcpy_dtoh(dev, &got, buf, 4, s));
  EXPECT(got == value);
  if (ccmaj >= 9) { /* PDL and a 1x1x1 grid in a cluster of 1 are fine on sm_90+ */
    value = 0xCAFEF00Du;
    memcpy(packet + TK_LAUNCH_HEADER_BYTES + 8, &value, 4);
    lh->flags = TK_LAUNCH_PDL;
    CHECK(T.tk_launch(packet));
    CHECK(T.tk_memcpy_dtoh(dev, &got, buf, 4, s));
    EXPECT(got == value);
    lh->flags = 0;
  }
  lh->fn = 0; /* a driver error must come back as a status and a message naming the call */
  int32_t st = T.tk_launch(packet);
  printf("launch with fn 0 -> %d (cuda %d): %s\n", st, T.tk_last_cuda_error(), T.tk_last_error());
  EXPECT(st == TK_ERR_CUDA && strstr(T.tk_last_error(), "cuLaunchKernel") != NULL);
  CHECK(T.tk_module_unload(dev, mod));

  /* Device error word: set it by hand, read and clear it at the sync point. */
  uint64_t ew = 0;
  uint32_t word[4] = {1, 2, 3, 0}, seen[4] = {9, 9, 9, 9};
  CHECK(T.tk_error_word_ptr(dev, &ew));
  CHECK(T.tk_sync_and_check(dev, s, seen));
  EXPECT(seen[0] == 0 && seen[1] == 0 && seen[2] == 0 && seen[3] == 0);
  CHECK(T.tk_memcpy_htod_async(dev, ew, word, 16, s));
  CHECK(T.tk_sync_and_check(dev, s, seen));
  EXPECT(seen[0] == 1 && seen[1] == 2 && seen[2] == 3);
  CHECK(T.tk_sync_and_check(dev, s, seen));
  EXPECT(seen[0] == 0 && seen[1] == 0 && seen[2] == 0);

  /* Out of memory is its own status. */
  uint64_t huge = 0;
  st = T.tk_malloc_async(dev, 1ull << 50, s, &huge);
  printf("1 PiB allocation -> %d: %s\n", st, T.tk_last_error());
  EXPECT(st == TK_ERR_OUT_OF_MEMORY);

  CHECK(T.tk_free_async(dev, buf, s));
  CHECK(T.tk_free_async(dev, buf2, s));
  CHECK(T.tk_stream_synchronize(dev, s));
  CHECK(T.tk_event_destroy(dev, e0));
  CHECK(T.tk_event_destroy(dev, e1));
  CHECK(T.tk_stream_destroy(dev, s));
  EXPECT(T.tk_stream_destroy(dev, 0) == TK_ERR_INVALID);
  EXPECT(T.tk_context_init(n) == TK_ERR_INVALID);
  free(h);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s path/to/libtk_cuda.so\n", argv[0]);
    return 2;
  }
  void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    printf("FAIL dlopen(%s): %s\n", argv[1], dlerror());
    return 1;
  }
#define LOAD(ret, name, args)                                                                                    \
  if ((*(void **)&T.name = dlsym(lib, #name)) == NULL) {                                                           \
    printf("FAIL the shim does not export %s\n", #name);                                                         \
    return 1;                                                                                                    \
  }
  TK_FUNCS(LOAD)
  printf("libtk_cuda ABI %d\n", T.tk_abi_version());
  EXPECT(T.tk_abi_version() == TK_ABI_VERSION);

  /* Before init: a status, not a crash. */
  int32_t n = -1;
  uint64_t p = 0;
  EXPECT(T.tk_device_count(&n) == TK_ERR_NOT_INITIALIZED);
  EXPECT(T.tk_malloc_async(0, 16, 0, &p) == TK_ERR_NOT_INITIALIZED);
  tk_launch_header h0;
  memset(&h0, 0, sizeof h0);
  EXPECT(T.tk_launch(&h0) == TK_ERR_NOT_INITIALIZED);
  printf("before init: %s\n", T.tk_last_error());

  int32_t st = T.tk_init("/nonexistent/libcuda.so.1");
  printf("tk_init(\"/nonexistent/libcuda.so.1\") -> %d: %s\n", st, T.tk_last_error());
  EXPECT(st == TK_ERR_NO_DRIVER && strstr(T.tk_last_error(), "/nonexistent/libcuda.so.1") != NULL);

  st = T.tk_init(NULL);
  if (st == TK_ERR_NO_DRIVER) {
    printf("tk_init(NULL) -> TK_ERR_NO_DRIVER: %s\n", T.tk_last_error());
    EXPECT(T.tk_device_count(&n) == TK_ERR_NOT_INITIALIZED);
  } else if (st == TK_ERR_CUDA) {
    printf("tk_init(NULL) -> TK_ERR_CUDA (CUresult %d): %s\n", T.tk_last_cuda_error(), T.tk_last_error());
  } else if (st != TK_OK) {
    printf("FAIL tk_init(NULL) -> %d: %s\n", st, T.tk_last_error());
    failures++;
  } else {
    EXPECT(T.tk_init(NULL) == TK_OK); /* idempotent */
    gpu_tests();
  }
  printf("%s (%d failure%s)\n", failures ? "FAILED" : "OK", failures, failures == 1 ? "" : "s");
  return failures ? 1 : 0;
}
