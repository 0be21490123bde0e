/*
 * libtk_cuda: the launch shim of @tk/kernels (DESIGN §4; ABI in tk_cuda.h).
 *
 * No CUDA toolkit header is included: the few driver types are declared below, with layouts copied from cuda.h
 * (CUDA 12.x / 13.0, 64-bit Linux). libcuda.so.1 is dlopen()ed at tk_init; cuGetProcAddress_v2 (or
 * cuGetProcAddress on 11.3-11.8 drivers) is found with dlsym and every other entry point is resolved through it
 * by version, so the ABI of each function is the one declared here whatever the driver's age.
 *
 * Build: tools/build_shim.sh (gcc / aarch64-linux-gnu-gcc, glibc 2.17 symbol versions).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tk_cuda.h"

/* ---- glibc 2.17 symbol versions ------------------------------------------------------------------------------
 * glibc 2.34 moved dl* into libc.so.6 under a new version; bind the old versions, which glibc >= 2.34 still
 * provides (as compat symbols of libc.so.6) and glibc < 2.34 provides from libdl.so.2 (linked as NEEDED). */
#if defined(__x86_64__)
#define TK_GLIBC_BASE "GLIBC_2.2.5"
#elif defined(__aarch64__)
#define TK_GLIBC_BASE "GLIBC_2.17"
#else
#error "libtk_cuda is built for x86_64 and aarch64 Linux only"
#endif
__asm__(".symver dlopen,dlopen@" TK_GLIBC_BASE);
__asm__(".symver dlsym,dlsym@" TK_GLIBC_BASE);
__asm__(".symver dlerror,dlerror@" TK_GLIBC_BASE);
__asm__(".symver dlclose,dlclose@" TK_GLIBC_BASE);
__asm__(".symver pthread_mutex_lock,pthread_mutex_lock@" TK_GLIBC_BASE);
__asm__(".symver pthread_mutex_unlock,pthread_mutex_unlock@" TK_GLIBC_BASE);

#define TK_API __attribute__((visibility("default")))
#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

_Static_assert(sizeof(void *) == 8, "64-bit only");
_Static_assert(sizeof(tk_launch_header) == 64 && TK_LAUNCH_HEADER_BYTES == 64, "launch header is 64 bytes");
_Static_assert(offsetof(tk_launch_header, grid) == 16 && offsetof(tk_launch_header, block) == 28 &&
                   offsetof(tk_launch_header, shared_bytes) == 40 && offsetof(tk_launch_header, flags) == 44 &&
                   offsetof(tk_launch_header, cluster) == 48 && offsetof(tk_launch_header, dev) == 60,
               "launch header layout");

/* ---- driver types (cuda.h) ------------------------------------------------------------------------------------ */
typedef int CUresult; /* enum cudaError_enum */
typedef int CUdevice; /* CUdevice_v1 */
typedef unsigned long long CUdeviceptr; /* CUdeviceptr_v2 */
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUmemPoolHandle_st *CUmemoryPool;
typedef struct CUarray_st *CUarray;

enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CU_STREAM_NON_BLOCKING = 0x1,
  CU_EVENT_DEFAULT = 0x0,
  CU_MEMORYTYPE_HOST = 0x01,
  CU_MEMORYTYPE_DEVICE = 0x02,
  CU_MEMPOOL_ATTR_RELEASE_THRESHOLD = 4,            /* value type cuuint64_t */
  CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
  CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT = 9,
  CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4,
  CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6,
  CU_GET_PROC_ADDRESS_LEGACY_STREAM = 1,            /* stream 0 = legacy default stream, never the _ptsz forms */
  CU_GET_PROC_ADDRESS_SUCCESS = 0,
  CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND = 1,
  CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT = 2
};

typedef union CUlaunchAttributeValue {
  char pad[64];
  struct { unsigned int x, y, z; } clusterDim;
  int programmaticStreamSerializationAllowed;
  struct { CUevent event; int flags; int triggerAtBlockStart; } programmaticEvent; /* gives the 8-byte alignment */
} CUlaunchAttributeValue;

typedef struct CUlaunchAttribute {
  int id; /* CUlaunchAttributeID */
  char pad[8 - sizeof(int)];
  CUlaunchAttributeValue value;
} CUlaunchAttribute;

typedef struct CUlaunchConfig {
  unsigned int gridDimX, gridDimY, gridDimZ;
  unsigned int blockDimX, blockDimY, blockDimZ;
  unsigned int sharedMemBytes;
  CUstream hStream;
  CUlaunchAttribute *attrs;
  unsigned int numAttrs;
} CUlaunchConfig;

typedef struct CUDA_MEMCPY2D { /* CUDA_MEMCPY2D_v2 */
  size_t srcXInBytes, srcY;
  int srcMemoryType; /* CUmemorytype */
  const void *srcHost;
  CUdeviceptr srcDevice;
  CUarray srcArray;
  size_t srcPitch;
  size_t dstXInBytes, dstY;
  int dstMemoryType;
  void *dstHost;
  CUdeviceptr dstDevice;
  CUarray dstArray;
  size_t dstPitch;
  size_t WidthInBytes, Height;
} CUDA_MEMCPY2D;

_Static_assert(sizeof(CUlaunchAttributeValue) == 64, "CUlaunchAttributeValue");
_Static_assert(sizeof(CUlaunchAttribute) == 72 && offsetof(CUlaunchAttribute, value) == 8, "CUlaunchAttribute");
_Static_assert(offsetof(CUlaunchConfig, hStream) == 32 && offsetof(CUlaunchConfig, attrs) == 40 &&
                   offsetof(CUlaunchConfig, numAttrs) == 48 && sizeof(CUlaunchConfig) == 56,
               "CUlaunchConfig");
_Static_assert(offsetof(CUDA_MEMCPY2D, srcMemoryType) == 16 && offsetof(CUDA_MEMCPY2D, srcHost) == 24 &&
                   offsetof(CUDA_MEMCPY2D, srcPitch) == 48 && offsetof(CUDA_MEMCPY2D, dstMemoryType) == 72 &&
                   offsetof(CUDA_MEMCPY2D, dstHost) == 80 && offsetof(CUDA_MEMCPY2D, dstPitch) == 104 &&
                   offsetof(CUDA_MEMCPY2D, Height) == 120 && sizeof(CUDA_MEMCPY2D) == 128,
               "CUDA_MEMCPY2D");

/* ---- entry points ---------------------------------------------------------------------------------------------
 * X(name, minimum CUDA version of the ABI declared here, required?, return, args). Requested with the base name
 * and cudaVersion = min(12000, driver version): the driver returns the newest variant as of that version
 * (cuMemAlloc -> cuMemAlloc_v2, cuStreamDestroy -> cuStreamDestroy_v2, cuMemcpy2DAsync -> cuMemcpy2DAsync_v2,
 * cuDevicePrimaryCtxRelease -> _v2, ...), never the per-thread-stream (_ptsz/_ptds) forms. */
#define TK_DRIVER_FUNCS(X)                                                                                       \
  X(cuGetErrorName, 6000, 1, (CUresult, const char **))                                                          \
  X(cuGetErrorString, 6000, 1, (CUresult, const char **))                                                        \
  X(cuInit, 2000, 1, (unsigned int))                                                                             \
  X(cuDeviceGetCount, 2000, 1, (int *))                                                                          \
  X(cuDeviceGet, 2000, 1, (CUdevice *, int))                                                                     \
  X(cuDeviceGetName, 2000, 1, (char *, int, CUdevice))                                                           \
  X(cuDeviceGetAttribute, 2000, 1, (int *, int, CUdevice))                                                       \
  X(cuDeviceTotalMem, 3020, 1, (size_t *, CUdevice))                                                             \
  X(cuDevicePrimaryCtxRetain, 7000, 1, (CUcontext *, CUdevice))                                                  \
  X(cuCtxSetCurrent, 4000, 1, (CUcontext))                                                                       \
  X(cuCtxSynchronize, 2000, 1, (void)) /* 12000 gives the v1 form; cuCtxSynchronize_v2(CUcontext) is newer */      \
  X(cuMemGetInfo, 3020, 1, (size_t *, size_t *))                                                                 \
  X(cuMemAlloc, 3020, 1, (CUdeviceptr *, size_t))                                                                \
  X(cuDeviceGetDefaultMemPool, 11020, 1, (CUmemoryPool *, CUdevice))                                             \
  X(cuMemPoolSetAttribute, 11020, 1, (CUmemoryPool, int, void *))                                                \
  X(cuMemAllocAsync, 11020, 1, (CUdeviceptr *, size_t, CUstream))                                                \
  X(cuMemFreeAsync, 11020, 1, (CUdeviceptr, CUstream))                                                           \
  X(cuMemcpyHtoDAsync, 3020, 1, (CUdeviceptr, const void *, size_t, CUstream))                                   \
  X(cuMemcpyDtoHAsync, 3020, 1, (void *, CUdeviceptr, size_t, CUstream))                                         \
  X(cuMemcpyDtoDAsync, 3020, 1, (CUdeviceptr, CUdeviceptr, size_t, CUstream))                                    \
  X(cuMemcpy2DAsync, 3020, 1, (const CUDA_MEMCPY2D *, CUstream))                                                 \
  X(cuMemsetD8Async, 3020, 1, (CUdeviceptr, unsigned char, size_t, CUstream))                                    \
  X(cuStreamCreate, 2000, 1, (CUstream *, unsigned int))                                                         \
  X(cuStreamDestroy, 4000, 1, (CUstream))                                                                        \
  X(cuStreamSynchronize, 2000, 1, (CUstream))                                                                    \
  X(cuEventCreate, 2000, 1, (CUevent *, unsigned int))                                                           \
  X(cuEventDestroy, 4000, 1, (CUevent))                                                                          \
  X(cuEventRecord, 2000, 1, (CUevent, CUstream))                                                                 \
  X(cuEventSynchronize, 2000, 1, (CUevent))                                                                      \
  X(cuEventElapsedTime, 2000, 1, (float *, CUevent, CUevent))                                                    \
  X(cuModuleLoadData, 2000, 1, (CUmodule *, const void *))                                                       \
  X(cuModuleUnload, 2000, 1, (CUmodule))                                                                         \
  X(cuModuleGetFunction, 2000, 1, (CUfunction *, CUmodule, const char *))                                        \
  X(cuFuncSetAttribute, 9000, 1, (CUfunction, int, int))                                                         \
  X(cuLaunchKernel, 4000, 1,                                                                                     \
    (CUfunction, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int,             \
     unsigned int, CUstream, void **, void **))                                                                  \
  X(cuLaunchKernelEx, 11060, 0, (const CUlaunchConfig *, CUfunction, void **, void **))

#define X(name, ver, req, args) static CUresult (*p_##name) args;
TK_DRIVER_FUNCS(X)
#undef X

typedef CUresult (*pfn_getproc_v2)(const char *, void **, int, uint64_t, int *);
typedef CUresult (*pfn_getproc_v1)(const char *, void **, int, uint64_t);
typedef CUresult (*pfn_driver_version)(int *);

/* ---- global and per-thread state ------------------------------------------------------------------------------ */
#define TK_MAX_DEVICES 64
#define TK_API_VERSION 12000 /* ABI of the declarations above */

typedef struct tk_device {
  CUdevice cu;
  CUcontext ctx;      /* retained primary context (never released) */
  int pool_set;       /* default pool release threshold set */
  CUdeviceptr errword;/* 16 bytes */
  int ready;          /* all of the above done */
} tk_device;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static void *g_lib;         /* libcuda handle, kept open for the life of the process */
static int g_ready;         /* tk_init succeeded (read with acquire) */
static int g_driver_version;
static int g_ndev;
static tk_device g_dev[TK_MAX_DEVICES];

static __thread char tl_err[512];
static __thread int32_t tl_cuerr;
static __thread int32_t tl_dev = -1; /* device whose primary context this thread made current */

/* ---- errors --------------------------------------------------------------------------------------------------- */
static int32_t fail(int32_t status, const char *fmt, ...) __attribute__((format(printf, 2, 3), noinline, cold));
static int32_t fail(int32_t status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(tl_err, sizeof tl_err, fmt, ap);
  va_end(ap);
  tl_cuerr = 0;
  return status;
}

/* "<call> failed: CUDA_ERROR_X (text)"; returns TK_ERR_OUT_OF_MEMORY for CUDA_ERROR_OUT_OF_MEMORY. */
static int32_t cu_fail(CUresult r, const char *fmt, ...) __attribute__((format(printf, 2, 3), noinline, cold));
static int32_t cu_fail(CUresult r, const char *fmt, ...) {
  const char *name = NULL, *text = NULL;
  char unknown[32];
  if (p_cuGetErrorName == NULL || p_cuGetErrorName(r, &name) != CUDA_SUCCESS) name = NULL;
  if (p_cuGetErrorString == NULL || p_cuGetErrorString(r, &text) != CUDA_SUCCESS) text = NULL;
  if (name == NULL) {
    snprintf(unknown, sizeof unknown, "CUresult %d", r);
    name = unknown;
  }
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tl_err, sizeof tl_err, fmt, ap);
  va_end(ap);
  if (n < 0) n = 0;
  if ((size_t)n < sizeof tl_err)
    snprintf(tl_err + n, sizeof tl_err - (size_t)n, " failed: %s (%s)", name, text ? text : "unknown error");
  tl_cuerr = r;
  return r == CUDA_ERROR_OUT_OF_MEMORY ? TK_ERR_OUT_OF_MEMORY : TK_ERR_CUDA;
}

static int32_t not_initialized(void) __attribute__((noinline, cold));
static int32_t not_initialized(void) {
  return fail(TK_ERR_NOT_INITIALIZED, "the CUDA driver is not initialised: call tk_init first");
}

#define NEED(cond, what)                                                                                         \
  do {                                                                                                           \
    if (UNLIKELY(!(cond))) return fail(TK_ERR_INVALID, "%s: %s", __func__, what);                                \
  } while (0)

static inline int is_ready(void) { return __atomic_load_n(&g_ready, __ATOMIC_ACQUIRE); }

static inline CUstream S(uint64_t h) { return (CUstream)(uintptr_t)h; }
static inline CUevent E(uint64_t h) { return (CUevent)(uintptr_t)h; }

/* ---- init ----------------------------------------------------------------------------------------------------- */
static int32_t load_driver(const char *path) {
  const char *shown = path ? path : "libcuda.so.1";
  void *lib = dlopen(path ? path : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    const char *e = dlerror();
    return fail(TK_ERR_NO_DRIVER, "%s %s (dlopen: %s); install the NVIDIA driver or run on the CPU backend", shown,
                path ? "could not be loaded" : "not found", e ? e : "unknown error");
  }
  pfn_driver_version drv_version = (pfn_driver_version)dlsym(lib, "cuDriverGetVersion");
  pfn_getproc_v2 gp2 = (pfn_getproc_v2)dlsym(lib, "cuGetProcAddress_v2");
  pfn_getproc_v1 gp1 = gp2 ? NULL : (pfn_getproc_v1)dlsym(lib, "cuGetProcAddress");
  int version = 0;
  if (drv_version == NULL || (gp2 == NULL && gp1 == NULL) || drv_version(&version) != CUDA_SUCCESS) {
    dlclose(lib);
    return fail(TK_ERR_NO_DRIVER,
                "%s lacks cuDriverGetVersion/cuGetProcAddress (driver older than CUDA 11.3); update the NVIDIA "
                "driver or run on the CPU backend", shown);
  }
  int request = version < TK_API_VERSION ? version : TK_API_VERSION;
#define X(name, ver, req, args)                                                                                  \
  {                                                                                                              \
    void *fn = NULL;                                                                                             \
    int found = CU_GET_PROC_ADDRESS_SUCCESS;                                                                     \
    CUresult r = CUDA_SUCCESS;                                                                                   \
    if ((ver) <= request)                                                                                        \
      r = gp2 ? gp2(#name, &fn, request, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &found)                              \
              : gp1(#name, &fn, request, CU_GET_PROC_ADDRESS_LEGACY_STREAM);                                     \
    if (r != CUDA_SUCCESS || found != CU_GET_PROC_ADDRESS_SUCCESS) fn = NULL;                                    \
    if (fn == NULL && (req)) {                                                                                   \
      dlclose(lib);                                                                                              \
      return fail(TK_ERR_NO_DRIVER,                                                                              \
                  "%s (driver for CUDA %d.%d) lacks %s (needs CUDA %d.%d; cuGetProcAddress: %d, status %d); "    \
                  "update the NVIDIA driver or run on the CPU backend",                                          \
                  shown, version / 1000, version % 1000 / 10, #name, (ver) / 1000, (ver) % 1000 / 10, r, found); \
    }                                                                                                            \
    p_##name = (__typeof__(p_##name))fn;                                                                         \
  }
  TK_DRIVER_FUNCS(X)
#undef X
  g_lib = lib;
  g_driver_version = version;
  return TK_OK;
}

TK_API int32_t tk_abi_version(void) { return TK_ABI_VERSION; }

TK_API int32_t tk_init(const char *driver_path) {
  if (is_ready()) return TK_OK;
  pthread_mutex_lock(&g_lock);
  int32_t st = TK_OK;
  if (!g_ready) {
    if (g_lib == NULL) st = load_driver(driver_path);
    if (st == TK_OK) {
      CUresult r = p_cuInit(0);
      if (r != CUDA_SUCCESS) st = cu_fail(r, "cuInit(0)");
    }
    int n = 0;
    if (st == TK_OK) {
      CUresult r = p_cuDeviceGetCount(&n);
      if (r != CUDA_SUCCESS) st = cu_fail(r, "cuDeviceGetCount");
    }
    if (n > TK_MAX_DEVICES) n = TK_MAX_DEVICES;
    for (int i = 0; st == TK_OK && i < n; i++) {
      CUresult r = p_cuDeviceGet(&g_dev[i].cu, i);
      if (r != CUDA_SUCCESS) st = cu_fail(r, "cuDeviceGet(%d)", i);
    }
    if (st == TK_OK) {
      g_ndev = n;
      __atomic_store_n(&g_ready, 1, __ATOMIC_RELEASE);
    }
  }
  pthread_mutex_unlock(&g_lock);
  return st;
}

TK_API const char *tk_last_error(void) { return tl_err; }
TK_API int32_t tk_last_cuda_error(void) { return tl_cuerr; }

/* ---- devices and contexts ------------------------------------------------------------------------------------- */
static int32_t check_dev(int32_t dev) {
  if (UNLIKELY(!is_ready())) return not_initialized();
  if (UNLIKELY(dev < 0 || dev >= g_ndev))
    return fail(TK_ERR_INVALID, "device %d does not exist (%d CUDA device%s)", dev, g_ndev, g_ndev == 1 ? "" : "s");
  return TK_OK;
}

/* Retains the primary context, creates the error word, sets the pool threshold: once per device (under g_lock). */
static int32_t device_setup(int32_t dev) {
  tk_device *d = &g_dev[dev];
  CUresult r;
  if (d->ctx == NULL) {
    CUcontext ctx = NULL;
    if ((r = p_cuDevicePrimaryCtxRetain(&ctx, d->cu)) != CUDA_SUCCESS)
      return cu_fail(r, "cuDevicePrimaryCtxRetain(device %d)", dev);
    d->ctx = ctx;
  }
  if ((r = p_cuCtxSetCurrent(d->ctx)) != CUDA_SUCCESS) return cu_fail(r, "cuCtxSetCurrent(device %d)", dev);
  if (!d->pool_set) {
    CUmemoryPool pool = NULL;
    uint64_t threshold = UINT64_MAX;
    if ((r = p_cuDeviceGetDefaultMemPool(&pool, d->cu)) != CUDA_SUCCESS)
      return cu_fail(r, "cuDeviceGetDefaultMemPool(device %d)", dev);
    if ((r = p_cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold)) != CUDA_SUCCESS)
      return cu_fail(r, "cuMemPoolSetAttribute(device %d, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD)", dev);
    d->pool_set = 1;
  }
  if (d->errword == 0) {
    CUdeviceptr p = 0;
    if ((r = p_cuMemAlloc(&p, 16)) != CUDA_SUCCESS) return cu_fail(r, "cuMemAlloc(16 bytes, device %d)", dev);
    if ((r = p_cuMemsetD8Async(p, 0, 16, NULL)) != CUDA_SUCCESS || (r = p_cuStreamSynchronize(NULL)) != CUDA_SUCCESS)
      return cu_fail(r, "zeroing the error word (device %d)", dev);
    d->errword = p;
  }
  __atomic_store_n(&d->ready, 1, __ATOMIC_RELEASE);
  return TK_OK;
}

/* Makes `dev`'s primary context current on this thread, setting the device up on first use. */
static int32_t use_dev_slow(int32_t dev) __attribute__((noinline));
static int32_t use_dev_slow(int32_t dev) {
  int32_t st = check_dev(dev);
  if (st != TK_OK) return st;
  tk_device *d = &g_dev[dev];
  if (!__atomic_load_n(&d->ready, __ATOMIC_ACQUIRE)) {
    pthread_mutex_lock(&g_lock);
    st = d->ready ? TK_OK : device_setup(dev);
    pthread_mutex_unlock(&g_lock);
    if (st != TK_OK) return st;
  }
  CUresult r = p_cuCtxSetCurrent(d->ctx);
  if (r != CUDA_SUCCESS) return cu_fail(r, "cuCtxSetCurrent(device %d)", dev);
  tl_dev = dev;
  return TK_OK;
}

/* The only per-call cost on the hot path: a thread-local compare. */
static inline int32_t use_dev(int32_t dev) {
  if (LIKELY(dev == tl_dev && dev >= 0)) return TK_OK;
  return use_dev_slow(dev);
}

#define USE_DEV(dev)                                                                                             \
  do {                                                                                                           \
    int32_t st_ = use_dev(dev);                                                                                  \
    if (UNLIKELY(st_ != TK_OK)) return st_;                                                                      \
  } while (0)

TK_API int32_t tk_driver_version(int32_t *out) {
  if (!is_ready()) return not_initialized();
  NEED(out, "out is NULL");
  *out = g_driver_version;
  return TK_OK;
}

TK_API int32_t tk_device_count(int32_t *out) {
  if (!is_ready()) return not_initialized();
  NEED(out, "out is NULL");
  *out = g_ndev;
  return TK_OK;
}

TK_API int32_t tk_device_name(int32_t dev, char *buf, int32_t len) {
  int32_t st = check_dev(dev);
  if (st != TK_OK) return st;
  NEED(buf && len > 0, "buf is NULL or len <= 0");
  CUresult r = p_cuDeviceGetName(buf, len, g_dev[dev].cu);
  if (r != CUDA_SUCCESS) return cu_fail(r, "cuDeviceGetName(device %d)", dev);
  buf[len - 1] = '\0';
  return TK_OK;
}

TK_API int32_t tk_device_attribute(int32_t dev, int32_t attr, int32_t *out) {
  int32_t st = check_dev(dev);
  if (st != TK_OK) return st;
  NEED(out, "out is NULL");
  int v = 0;
  CUresult r = p_cuDeviceGetAttribute(&v, attr, g_dev[dev].cu);
  if (r != CUDA_SUCCESS) return cu_fail(r, "cuDeviceGetAttribute(attribute %d, device %d)", attr, dev);
  *out = v;
  return TK_OK;
}

TK_API int32_t tk_device_total_mem(int32_t dev, uint64_t *out) {
  int32_t st = check_dev(dev);
  if (st != TK_OK) return st;
  NEED(out, "out is NULL");
  size_t v = 0;
  CUresult r = p_cuDeviceTotalMem(&v, g_dev[dev].cu);
  if (r != CUDA_SUCCESS) return cu_fail(r, "cuDeviceTotalMem(device %d)", dev);
  *out = v;
  return TK_OK;
}

TK_API int32_t tk_mem_info(int32_t dev, uint64_t *free_bytes, uint64_t *total_bytes) {
  USE_DEV(dev);
  NEED(free_bytes && total_bytes, "free_bytes or total_bytes is NULL");
  size_t f = 0, t = 0;
  CUresult r = p_cuMemGetInfo(&f, &t);
  if (r != CUDA_SUCCESS) return cu_fail(r, "cuMemGetInfo(device %d)", dev);
  *free_bytes = f;
  *total_bytes = t;
  return TK_OK;
}

TK_API int32_t tk_context_init(int32_t dev) {
  USE_DEV(dev);
  return TK_OK;
}

/* ---- memory --------------------------------------------------------------------------------------------------- */
TK_API int32_t tk_malloc_async(int32_t dev, uint64_t nbytes, uint64_t stream, uint64_t *out_ptr) {
  NEED(out_ptr, "out_ptr is NULL");
  USE_DEV(dev);
  if (nbytes == 0) {
    *out_ptr = 0;
    return TK_OK;
  }
  CUdeviceptr p = 0;
  CUresult r = p_cuMemAllocAsync(&p, (size_t)nbytes, S(stream));
  if (UNLIKELY(r == CUDA_ERROR_OUT_OF_MEMORY)) {
    /* Frees still pending on other streams return their memory to the pool once they run: wait, retry once. */
    if (p_cuCtxSynchronize() == CUDA_SUCCESS) r = p_cuMemAllocAsync(&p, (size_t)nbytes, S(stream));
  }
  if (UNLIKELY(r != CUDA_SUCCESS))
    return cu_fail(r, "cuMemAllocAsync(%llu bytes, device %d)", (unsigned long long)nbytes, dev);
  *out_ptr = p;
  return TK_OK;
}

TK_API int32_t tk_free_async(int32_t dev, uint64_t ptr, uint64_t stream) {
  if (ptr == 0) return TK_OK;
  USE_DEV(dev);
  CUresult r = p_cuMemFreeAsync(ptr, S(stream));
  if (UNLIKELY(r != CUDA_SUCCESS)) return cu_fail(r, "cuMemFreeAsync(0x%llx, device %d)", (unsigned long long)ptr, dev);
  return TK_OK;
}

TK_API int32_t tk_memcpy_htod_async(int32_t dev, uint64_t dst, const void *src, uint64_t nbytes, uint64_t stream) {
  if (nbytes == 0) return TK_OK;
  NEED(src, "src is NULL");
  USE_DEV(dev);
  CUresult r = p_cuMemcpyHtoDAsync(dst, src, (size_t)nbytes, S(stream));
  if (UNLIKELY(r != CUDA_SUCCESS))
    return cu_fail(r, "cuMemcpyHtoDAsync(%llu bytes to 0x%llx)", (unsigned long long)nbytes, (unsigned long long)dst);
  return TK_OK;
}

TK_API int32_t tk_memcpy_dtoh_async(int32_t dev, void *dst, uint64_t src, uint64_t nbytes, uint64_t stream) {
  if (nbytes == 0) return TK_OK;
  NEED(dst, "dst is NULL");
  USE_DEV(dev);
  CUresult r = p_cuMemcpyDtoHAsync(dst, src, (size_t)nbytes, S(stream));
  if (UNLIKELY(r != CUDA_SUCCESS))
    return cu_fail(r, "cuMemcpyDtoHAsync(%llu bytes from 0x%llx)", (unsigned long long)nbytes, (unsigned long long)src);
  return TK_OK;
}

TK_API int32_t tk_memcpy_dtod_async(int32_t dev, uint64_t dst, uint64_t src, uint64_t nbytes, uint64_t stream) {
  if (nbytes == 0) return TK_OK;
  USE_DEV(dev);
  CUresult r = p_cuMemcpyDtoDAsync(dst, src, (size_t)nbytes, S(stream));
  if (UNLIKELY(r != CUDA_SUCCESS))
    return cu_fail(r, "cuMemcpyDtoDAsync(%llu bytes, 0x%llx -> 0x%llx)", (unsigned long long)nbytes,
                   (unsigned long long)src, (unsigned long long)dst);
  return TK_OK;
}

TK_API int32_t tk_memset_d8_async(int32_t dev, uint64_t dst, uint32_t value, uint64_t nbytes, uint64_t stream) {
  NEED(value <= 0xFF, "value is not a byte (0..255)");
  if (nbytes == 0) return TK_OK;
  USE_DEV(dev);
  CUresult r = p_cuMemsetD8Async(dst, (unsigned char)value, (size_t)nbytes, S(stream));
  if (UNLIKELY(r != CUDA_SUCCESS))
    return cu_fail(r, "cuMemsetD8Async(%llu bytes at 0x%llx)", (unsigned long long)nbytes, (unsigned long long)dst);
  return TK_OK;
}

TK_API int32_t tk_stream_synchronize(int32_t dev, uint64_t stream) {
  USE_DEV(dev);
  CUresult r = p_cuStreamSynchronize(S(stream));
  if (r != CUDA_SUCCESS) return cu_fail(r, "cuStreamSynchronize(device %d)", dev);
  return TK_OK;
}

TK_API int32_t tk_memcpy_htod(int32_t dev, uint64_t dst, const void *src, uint64_t nbytes, uint64_t stream) {
  int32_t st = tk_memcpy_htod_async(dev, dst, src, nbytes, stream);
  return st != TK_OK ? st : tk_stream_synchronize(dev, stream);
}

TK_API int32_t tk_memcpy_dtoh(int32_t dev, void *dst, uint64_t src, uint64_t nbytes, uint64_t stream) {
  int32_t st = tk_memcpy_dtoh_async(dev, dst, src, nbytes, stream);
  return st != TK_OK ? st : tk_stream_synchronize(dev, stream);
}

TK_API int32_t tk_memcpy_dtoh_2d(int32_t dev, void *dst, uint64_t dst_pitch, uint64_t src, uint64_t src_pitch,
                                 uint64_t width, uint64_t rows, uint64_t stream) {
  if (width == 0 || rows == 0) return tk_stream_synchronize(dev, stream);
  NEED(dst, "dst is NULL");
  NEED(dst_pitch >= width && src_pitch >= width, "a pitch is smaller than the row width");
  USE_DEV(dev);
  CUDA_MEMCPY2D c;
  memset(&c, 0, sizeof c);
  c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  c.srcDevice = src;
  c.srcPitch = (size_t)src_pitch;
  c.dstMemoryType = CU_MEMORYTYPE_HOST;
  c.dstHost = dst;
  c.dstPitch = (size_t)dst_pitch;
  c.WidthInBytes = (size_t)width;
  c.Height = (size_t)rows;
  CUresult r = p_cuMemcpy2DAsync(&c, S(stream));
  if (r != CUDA_SUCCESS)
    return cu_fail(r, "cuMemcpy2DAsync(%llu rows of %llu bytes, src pitch %llu, dst pitch %llu)",
                   (unsigned long long)rows, (unsigned long long)width, (unsigned long long)src_pitch,
                   (unsigned long long)dst_pitch);
  return tk_stream_synchronize(dev, stream);
}

/* ---- streams and events --------------------------------------------------------------------------------------- */
TK_API int32_t tk_stream_create(int32_t dev, uint64_t *out) {
  NEED(out, "out is NULL");
  USE_DEV(dev);
  CUstream s = NULL;
  CUresult r = p_cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
  if (r != CUDA_SUCCESS) return cu_fail(r, "cuStreamCreate(device %d)", dev);
  *out = (uint64_t)(uintptr_t)s;
  return TK_OK;
}

TK_API int32_t tk_stream_destroy(int32_t dev, uint64_t stream) {
  NEED(stream != 0, "stream 0 (the default stream) cannot be destroyed");
  USE_DEV(dev);
  CUresult r = p_cuStreamDestroy(S(stream));
  if (r != CUDA_SUCCESS) return cu_fail(r, "cuStreamDestroy(device %d)", dev);
  return TK_OK;
}

TK_API int32_t tk_event_create(int32_t dev, uint64_t *out) {
  NEED(out, "out is NULL");
  USE_DEV(dev);
  CUevent e = NULL;
  CUresult r = p_cuEventCreate(&e, CU_EVENT_DEFAULT);
  if (r != CUDA_SUCCESS) return cu_fail(r, "cuEventCreate(device %d)", dev);
  *out = (uint64_t)(uintptr_t)e;
  return TK_OK;
}

TK_API int32_t tk_event_destroy(int32_t dev, uint64_t ev) {
  NEED(ev != 0, "event handle is 0");
  USE_DEV(dev);
  CUresult r = p_cuEventDestroy(E(ev));
  if (r != CUDA_SUCCESS) return cu_fail(r, "cuEventDestroy(device %d)", dev);
  return TK_OK;
}

TK_API int32_t tk_event_record(int32_t dev, uint64_t ev, uint64_t stream) {
  NEED(ev != 0, "event handle is 0");
  USE_DEV(dev);
  CUresult r = p_cuEventRecord(E(ev), S(stream));
  if (UNLIKELY(r != CUDA_SUCCESS)) return cu_fail(r, "cuEventRecord(device %d)", dev);
  return TK_OK;
}

TK_API int32_t tk_event_synchronize(int32_t dev, uint64_t ev) {
  NEED(ev != 0, "event handle is 0");
  USE_DEV(dev);
  CUresult r = p_cuEventSynchronize(E(ev));
  if (r != CUDA_SUCCESS) return cu_fail(r, "cuEventSynchronize(device %d)", dev);
  return TK_OK;
}

TK_API int32_t tk_event_elapsed_ms(int32_t dev, uint64_t start, uint64_t end, float *out_ms) {
  NEED(start != 0 && end != 0, "event handle is 0");
  NEED(out_ms, "out_ms is NULL");
  USE_DEV(dev);
  float ms = 0.0f;
  CUresult r = p_cuEventElapsedTime(&ms, E(start), E(end));
  if (r != CUDA_SUCCESS) return cu_fail(r, "cuEventElapsedTime(device %d)", dev);
  *out_ms = ms;
  return TK_OK;
}

/* ---- modules -------------------------------------------------------------------------------------------------- */
TK_API int32_t tk_module_load(int32_t dev, const void *image, uint64_t nbytes, uint64_t *out_module) {
  NEED(image && nbytes > 0, "image is NULL or empty");
  NEED(out_module, "out_module is NULL");
  USE_DEV(dev);
  CUmodule m = NULL;
  CUresult r = p_cuModuleLoadData(&m, image);
  if (r != CUDA_SUCCESS)
    return cu_fail(r, "cuModuleLoadData(%llu-byte image, device %d)", (unsigned long long)nbytes, dev);
  *out_module = (uint64_t)(uintptr_t)m;
  return TK_OK;
}

TK_API int32_t tk_module_unload(int32_t dev, uint64_t module) {
  NEED(module != 0, "module handle is 0");
  USE_DEV(dev);
  CUresult r = p_cuModuleUnload((CUmodule)(uintptr_t)module);
  if (r != CUDA_SUCCESS) return cu_fail(r, "cuModuleUnload(device %d)", dev);
  return TK_OK;
}

TK_API int32_t tk_module_function(int32_t dev, uint64_t module, const char *name, uint64_t *out_fn) {
  NEED(module != 0, "module handle is 0");
  NEED(name && out_fn, "name or out_fn is NULL");
  USE_DEV(dev);
  CUfunction f = NULL;
  CUresult r = p_cuModuleGetFunction(&f, (CUmodule)(uintptr_t)module, name);
  if (r != CUDA_SUCCESS) return cu_fail(r, "cuModuleGetFunction(\"%.300s\", device %d)", name, dev);
  *out_fn = (uint64_t)(uintptr_t)f;
  return TK_OK;
}

TK_API int32_t tk_function_set_max_dynamic_smem(int32_t dev, uint64_t fn, int32_t bytes) {
  NEED(fn != 0, "function handle is 0");
  NEED(bytes >= 0, "bytes < 0");
  USE_DEV(dev);
  CUresult r = p_cuFuncSetAttribute((CUfunction)(uintptr_t)fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes);
  if (r != CUDA_SUCCESS)
    return cu_fail(r, "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES = %d, device %d)", bytes, dev);
  return TK_OK;
}

TK_API int32_t tk_function_set_smem_carveout(int32_t dev, uint64_t fn, int32_t percent) {
  NEED(fn != 0, "function handle is 0");
  NEED(percent >= -1 && percent <= 100, "percent outside [-1, 100]");
  USE_DEV(dev);
  CUresult r = p_cuFuncSetAttribute((CUfunction)(uintptr_t)fn, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, percent);
  if (r != CUDA_SUCCESS)
    return cu_fail(r, "cuFuncSetAttribute(PREFERRED_SHARED_MEMORY_CARVEOUT = %d, device %d)", percent, dev);
  return TK_OK;
}

/* ---- launch --------------------------------------------------------------------------------------------------- */
static int32_t launch_fail(const tk_launch_header *h, const char *call, CUresult r) __attribute__((noinline, cold));
static int32_t launch_fail(const tk_launch_header *h, const char *call, CUresult r) {
  return cu_fail(r, "%s(grid %ux%ux%u, block %ux%ux%u, %u B dynamic smem, cluster %ux%ux%u, flags 0x%x, device %d)",
                 call, h->grid[0], h->grid[1], h->grid[2], h->block[0], h->block[1], h->block[2], h->shared_bytes,
                 h->cluster[0], h->cluster[1], h->cluster[2], h->flags, h->dev);
}

static int32_t launch_ex(const tk_launch_header *h, void **params) __attribute__((noinline));
static int32_t launch_ex(const tk_launch_header *h, void **params) {
  if ((h->flags & ~TK_LAUNCH_PDL) != 0) return fail(TK_ERR_INVALID, "tk_launch: unknown flags 0x%x", h->flags);
  if (p_cuLaunchKernelEx == NULL)
    return fail(TK_ERR_NO_DRIVER, "cuLaunchKernelEx (programmatic dependent launch, clusters) needs a driver for "
                                  "CUDA 11.6 or newer; this one is for CUDA %d.%d",
                g_driver_version / 1000, g_driver_version % 1000 / 10);
  CUlaunchAttribute attrs[2];
  unsigned int n = 0;
  memset(attrs, 0, sizeof attrs);
  if (h->flags & TK_LAUNCH_PDL) {
    attrs[n].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attrs[n].value.programmaticStreamSerializationAllowed = 1;
    n++;
  }
  if ((h->cluster[0] | h->cluster[1] | h->cluster[2]) > 1u) {
    attrs[n].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attrs[n].value.clusterDim.x = h->cluster[0] ? h->cluster[0] : 1u;
    attrs[n].value.clusterDim.y = h->cluster[1] ? h->cluster[1] : 1u;
    attrs[n].value.clusterDim.z = h->cluster[2] ? h->cluster[2] : 1u;
    n++;
  }
  CUlaunchConfig cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.gridDimX = h->grid[0];
  cfg.gridDimY = h->grid[1];
  cfg.gridDimZ = h->grid[2];
  cfg.blockDimX = h->block[0];
  cfg.blockDimY = h->block[1];
  cfg.blockDimZ = h->block[2];
  cfg.sharedMemBytes = h->shared_bytes;
  cfg.hStream = S(h->stream);
  cfg.attrs = n ? attrs : NULL;
  cfg.numAttrs = n;
  CUresult r = p_cuLaunchKernelEx(&cfg, (CUfunction)(uintptr_t)h->fn, params, NULL);
  if (r != CUDA_SUCCESS) return launch_fail(h, "cuLaunchKernelEx", r);
  return TK_OK;
}

TK_API int32_t tk_launch(const void *packet) {
  const tk_launch_header *h = (const tk_launch_header *)packet;
  NEED(h, "packet is NULL");
  USE_DEV(h->dev);
  void *params[1] = {(void *)((const char *)packet + TK_LAUNCH_HEADER_BYTES)};
  if (LIKELY(h->flags == 0 && (h->cluster[0] | h->cluster[1] | h->cluster[2]) <= 1u)) {
    CUresult r = p_cuLaunchKernel((CUfunction)(uintptr_t)h->fn, h->grid[0], h->grid[1], h->grid[2], h->block[0],
                                  h->block[1], h->block[2], h->shared_bytes, S(h->stream), params, NULL);
    if (UNLIKELY(r != CUDA_SUCCESS)) return launch_fail(h, "cuLaunchKernel", r);
    return TK_OK;
  }
  return launch_ex(h, params);
}

/* ---- device error word (DESIGN §6) ---------------------------------------------------------------------------- */
TK_API int32_t tk_error_word_ptr(int32_t dev, uint64_t *out) {
  NEED(out, "out is NULL");
  USE_DEV(dev);
  *out = g_dev[dev].errword;
  return TK_OK;
}

/* Ordered on `stream` itself (not the legacy default stream), so a sync point on one stream never waits for
 * other streams' work. */
TK_API int32_t tk_sync_and_check(int32_t dev, uint64_t stream, uint32_t *out) {
  NEED(out, "out is NULL");
  USE_DEV(dev);
  CUdeviceptr w = g_dev[dev].errword;
  CUresult r = p_cuStreamSynchronize(S(stream));
  if (r != CUDA_SUCCESS) return cu_fail(r, "cuStreamSynchronize(device %d)", dev);
  uint32_t word[4] = {0, 0, 0, 0};
  if ((r = p_cuMemcpyDtoHAsync(word, w, sizeof word, S(stream))) != CUDA_SUCCESS ||
      (r = p_cuStreamSynchronize(S(stream))) != CUDA_SUCCESS)
    return cu_fail(r, "reading the error word (cuMemcpyDtoHAsync, 16 bytes, device %d)", dev);
  memcpy(out, word, sizeof word);
  if (UNLIKELY((word[0] | word[1] | word[2] | word[3]) != 0)) {
    if ((r = p_cuMemsetD8Async(w, 0, sizeof word, S(stream))) != CUDA_SUCCESS ||
        (r = p_cuStreamSynchronize(S(stream))) != CUDA_SUCCESS)
      return cu_fail(r, "clearing the error word (cuMemsetD8Async, 16 bytes, device %d)", dev);
  }
  return TK_OK;
}
