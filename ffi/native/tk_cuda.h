/*
 * libtk_cuda: the launch shim of @tk/kernels (DESIGN §4).
 *
 * Plain C, no CUDA toolkit needed to build: the shim dlopen()s libcuda.so.1 at tk_init() and resolves the driver
 * entry points it needs with cuGetProcAddress. Every function returns a status (TK_OK = 0 on success); on failure
 * tk_last_error() returns a readable, thread-local message naming the driver call and its CUresult name.
 *
 * Device memory addresses, streams, events, modules and functions cross the boundary as uint64_t handles.
 * Stream handle 0 is the legacy default stream of the device's primary context.
 *
 * Thread safety: every entry point may be called from any thread. The primary context of a device is retained
 * once (under a mutex) and made current lazily on each calling thread.
 */
#ifndef TK_CUDA_H
#define TK_CUDA_H
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
  TK_OK = 0,
  TK_ERR_NO_DRIVER = 1,      /* libcuda.so.1 could not be opened or lacks an entry point */
  TK_ERR_NOT_INITIALIZED = 2,/* tk_init has not succeeded */
  TK_ERR_INVALID = 3,        /* bad argument to the shim (device index, null pointer, ...) */
  TK_ERR_CUDA = 4,           /* a driver call failed: tk_last_cuda_error() gives the CUresult */
  TK_ERR_OUT_OF_MEMORY = 5   /* CUDA_ERROR_OUT_OF_MEMORY from an allocation */
};

/* Version of this ABI; bumped on any incompatible change. */
#define TK_ABI_VERSION 1
int32_t tk_abi_version(void);

/* Opens libcuda.so.1 (or the path in `driver_path` when non-NULL), calls cuInit(0). Idempotent. */
int32_t tk_init(const char *driver_path);
/* Thread-local text of the last failure on this thread ("" when none). */
const char *tk_last_error(void);
/* CUresult of the last failing driver call on this thread (0 when none). */
int32_t tk_last_cuda_error(void);

int32_t tk_driver_version(int32_t *out);
int32_t tk_device_count(int32_t *out);
/* Copies the device name, NUL-terminated, into buf (len bytes). */
int32_t tk_device_name(int32_t dev, char *buf, int32_t len);
/* Any CUdevice_attribute by its numeric value (e.g. 75/76 = compute capability major/minor, 16 = SM count). */
int32_t tk_device_attribute(int32_t dev, int32_t attr, int32_t *out);
int32_t tk_device_total_mem(int32_t dev, uint64_t *out);
/* Retains the primary context (once per process), makes it current, returns free/total memory. */
int32_t tk_mem_info(int32_t dev, uint64_t *free_bytes, uint64_t *total_bytes);

/* Retains the primary context of `dev` (once per process), creates the device error word (16 zeroed bytes) and
 * sets the default memory pool's release threshold to UINT64_MAX, so stream-ordered frees keep memory pooled. */
int32_t tk_context_init(int32_t dev);

/* Stream-ordered allocation on the device's default memory pool (cuMemAllocAsync / cuMemFreeAsync). A zero-byte
 * request returns address 0 and succeeds; freeing address 0 is a no-op. */
int32_t tk_malloc_async(int32_t dev, uint64_t nbytes, uint64_t stream, uint64_t *out_ptr);
int32_t tk_free_async(int32_t dev, uint64_t ptr, uint64_t stream);

/* Copies; the *_async forms are ordered on `stream` and return at once (host memory must stay alive and, for
 * D2H, unread until the stream is synchronised). The plain forms synchronise the stream before returning. */
int32_t tk_memcpy_htod_async(int32_t dev, uint64_t dst, const void *src, uint64_t nbytes, uint64_t stream);
int32_t tk_memcpy_dtoh_async(int32_t dev, void *dst, uint64_t src, uint64_t nbytes, uint64_t stream);
int32_t tk_memcpy_dtod_async(int32_t dev, uint64_t dst, uint64_t src, uint64_t nbytes, uint64_t stream);
int32_t tk_memset_d8_async(int32_t dev, uint64_t dst, uint32_t value, uint64_t nbytes, uint64_t stream);
int32_t tk_memcpy_htod(int32_t dev, uint64_t dst, const void *src, uint64_t nbytes, uint64_t stream);
int32_t tk_memcpy_dtoh(int32_t dev, void *dst, uint64_t src, uint64_t nbytes, uint64_t stream);
/* 2-D copy device → host of `rows` rows of `width` bytes, strided on the device (a strided view's rows). */
int32_t tk_memcpy_dtoh_2d(int32_t dev, void *dst, uint64_t dst_pitch, uint64_t src, uint64_t src_pitch,
                          uint64_t width, uint64_t rows, uint64_t stream);

/* Streams (non-blocking), events (timing enabled). */
int32_t tk_stream_create(int32_t dev, uint64_t *out);
int32_t tk_stream_destroy(int32_t dev, uint64_t stream);
int32_t tk_stream_synchronize(int32_t dev, uint64_t stream);
int32_t tk_event_create(int32_t dev, uint64_t *out);
int32_t tk_event_destroy(int32_t dev, uint64_t ev);
int32_t tk_event_record(int32_t dev, uint64_t ev, uint64_t stream);
int32_t tk_event_synchronize(int32_t dev, uint64_t ev);
int32_t tk_event_elapsed_ms(int32_t dev, uint64_t start, uint64_t end, float *out_ms);

/* Loads a cubin/fatbin image from memory into the device's primary context (cuModuleLoadData) and looks up
 * a function. The image bytes may be freed after the call. */
int32_t tk_module_load(int32_t dev, const void *image, uint64_t nbytes, uint64_t *out_module);
int32_t tk_module_unload(int32_t dev, uint64_t module);
int32_t tk_module_function(int32_t dev, uint64_t module, const char *name, uint64_t *out_fn);
/* Sets CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES. */
int32_t tk_function_set_max_dynamic_smem(int32_t dev, uint64_t fn, int32_t bytes);
/* Sets CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT: the shared-memory share of the unified L1/shared storage
 * the driver should configure for this function, in percent (100: the most shared memory; -1: no preference). */
int32_t tk_function_set_smem_carveout(int32_t dev, uint64_t fn, int32_t percent);

/*
 * Launch with one packed buffer: a tk_launch_header followed directly by the kernel's Params struct
 * (at offset TK_LAUNCH_HEADER_BYTES). The kernel must take exactly one parameter, the struct, by value
 * (`__grid_constant__ const Params p`); the shim passes a pointer to the bytes after the header as that
 * parameter. Uses cuLaunchKernelEx when pdl or a cluster is asked for, cuLaunchKernel otherwise.
 */
typedef struct tk_launch_header {
  uint64_t fn;          /* from tk_module_function */
  uint64_t stream;
  uint32_t grid[3];
  uint32_t block[3];
  uint32_t shared_bytes;/* dynamic shared memory */
  uint32_t flags;       /* bit 0: programmatic dependent launch (programmatic stream serialization) */
  uint32_t cluster[3];  /* all 0 or all 1: no cluster */
  int32_t dev;
} tk_launch_header; /* 64 bytes: the Params struct starts at offset 64 (the driver knows its size) */
#define TK_LAUNCH_HEADER_BYTES 64
#define TK_LAUNCH_PDL 1u
int32_t tk_launch(const void *packet);

/* The device error word (DESIGN §6): 16 bytes on the device, zeroed by tk_context_init.
 *   u32[0] op id of the first fault (atomicCAS from 0), u32[1] condition bits (atomicOr),
 *   u32[2] number of faults (atomicAdd), u32[3] reserved.
 * tk_error_word_ptr gives its device address (kernels receive it in their Params). */
int32_t tk_error_word_ptr(int32_t dev, uint64_t *out);
/* Synchronises `stream`, then reads the error word into out[4] and, if any word is non-zero, clears it on the
 * device. One call per sync point. */
int32_t tk_sync_and_check(int32_t dev, uint64_t stream, uint32_t *out);

#ifdef __cplusplus
}
#endif
#endif
