/*
 * tensortune CUDA runtime (the contract is in native/include/tt_cuda.h), over the CUDA
 * driver API.
 *
 * libcuda is opened with dlopen and the driver entry points used here are resolved by hand
 * into a function table (`cu` below). The driver's types, enum values and function
 * signatures are declared here, by hand, from the CUDA Driver API reference (cuda.h), rather
 * than taken from cuda.h: then the runtime builds where no CUDA toolkit is installed (every
 * machine that builds tensortune's native tools, and cross compilers for a Jetson host) and
 * a library that contains it loads where there is no driver. Only the handful below is
 * used; they are part of the driver's stable ABI (the `_v2` names are what cuda.h maps the
 * plain names to on 64-bit hosts since CUDA 4.0 / 11.0; cuEventElapsedTime is the first
 * version, which drivers keep exporting, where cuda.h 13 maps the plain name to `_v2`).
 *
 * Driver calls act on the calling thread's current context, so every entry point makes the
 * program's context current first: a model may be run from another thread than tt_init's.
 *
 * Not thread-safe: one thread at a time may call into a program. libcuda, once opened, is
 * never closed (the measurement worker loads and unloads candidate libraries that each
 * contain a copy of this file; dlopen's reference count makes them share one driver).
 */
#include "tt_cuda.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TT_CU_ERR_LEN 4096

/* ---- the driver's types and constants (cuda.h, declared by hand: see above) ---- */

typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st* CUcontext;
typedef struct CUmod_st* CUmodule;
typedef struct CUfunc_st* CUfunction;
typedef struct CUstream_st* CUstream;
typedef struct CUevent_st* CUevent;
typedef unsigned long long CUdeviceptr; /* CUdeviceptr_v2: 64-bit hosts only */

#define CUDA_SUCCESS 0
#define CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK 1
#define CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X 2
#define CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X 5
#define CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK 0
#define CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES 1
#define CU_FUNC_ATTRIBUTE_NUM_REGS 4
#define CU_EVENT_DEFAULT 0

#define TT_CU_FUNCTIONS(X)                                                                         \
  X(cuInit, (unsigned int))                                                                        \
  X(cuDeviceGetCount, (int*))                                                                      \
  X(cuDeviceGet, (CUdevice*, int))                                                                 \
  X(cuDeviceGetName, (char*, int, CUdevice))                                                       \
  X(cuDeviceGetAttribute, (int*, int, CUdevice))                                                   \
  X(cuDevicePrimaryCtxRetain, (CUcontext*, CUdevice))                                              \
  X(cuCtxSetCurrent, (CUcontext))                                                                  \
  X(cuModuleLoadData, (CUmodule*, const void*))                                                    \
  X(cuModuleUnload, (CUmodule))                                                                    \
  X(cuModuleGetFunction, (CUfunction*, CUmodule, const char*))                                     \
  X(cuFuncGetAttribute, (int*, int, CUfunction))                                                   \
  X(cuMemAlloc_v2, (CUdeviceptr*, size_t))                                                         \
  X(cuMemFree_v2, (CUdeviceptr))                                                                   \
  X(cuMemcpyHtoD_v2, (CUdeviceptr, const void*, size_t))                                           \
  X(cuMemcpyDtoH_v2, (void*, CUdeviceptr, size_t))                                                 \
  X(cuLaunchKernel, (CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,       \
                    unsigned, CUstream, void**, void**))                                           \
  X(cuEventCreate, (CUevent*, unsigned int))                                                       \
  X(cuEventRecord, (CUevent, CUstream))                                                            \
  X(cuEventSynchronize, (CUevent))                                                                 \
  X(cuEventElapsedTime, (float*, CUevent, CUevent))                                                \
  X(cuEventDestroy_v2, (CUevent))                                                                  \
  X(cuGetErrorName, (CUresult, const char**))

static struct {
#define TT_CU_MEMBER(f, params) CUresult(*f) params;
  TT_CU_FUNCTIONS(TT_CU_MEMBER)
#undef TT_CU_MEMBER
} cu;
static int cu_loaded;

static void setf(char* err, size_t errlen, const char* fmt, ...) {
  if (!err || errlen == 0) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
}

/* Opens the driver: $TT_CUDA_LIBRARY when set, else libcuda.so.1; then cuInit. */
static int load_cuda(char* err, size_t errlen) {
  if (cu_loaded) return 0;
  const char* env = getenv("TT_CUDA_LIBRARY");
  const char* name = env && *env ? env : "libcuda.so.1";
  void* lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* e = dlerror();
    setf(err, errlen, "no CUDA driver: %s (install the NVIDIA driver, or set TT_CUDA_LIBRARY)", e ? e : name);
    return -1;
  }
#define TT_CU_RESOLVE(f, params)                                                \
  if (!(*(void**)&cu.f = dlsym(lib, #f))) {                                     \
    setf(err, errlen, "the CUDA driver %s lacks %s (too old a driver)", name, #f); \
    return -1;                                                                  \
  }
  TT_CU_FUNCTIONS(TT_CU_RESOLVE)
#undef TT_CU_RESOLVE
  CUresult rc = cu.cuInit(0);
  if (rc != CUDA_SUCCESS) {
    const char* n = NULL;
    cu.cuGetErrorName(rc, &n);
    setf(err, errlen, "cuInit failed: %s (no usable NVIDIA GPU, or the driver does not match the kernel module)", n ? n : "unknown error");
    return -1;
  }
  cu_loaded = 1;
  return 0;
}

/* "CUDA_ERROR_ILLEGAL_ADDRESS", or "CUDA error 999". */
static const char* cu_err(CUresult rc) {
  static char unknown[40];
  const char* name = NULL;
  if (cu_loaded && cu.cuGetErrorName(rc, &name) == CUDA_SUCCESS && name) return name;
  snprintf(unknown, sizeof unknown, "CUDA error %d", rc);
  return unknown;
}

/* Errors after which the context is unusable (cuda.h: "the process must be terminated"). */
static int is_fault(CUresult rc) {
  return rc == 700 /* ILLEGAL_ADDRESS */ || rc == 702 /* LAUNCH_TIMEOUT */ || rc == 710 /* ASSERT */ ||
         (rc >= 714 && rc <= 719) /* HARDWARE_STACK_ERROR .. LAUNCH_FAILED */ || rc == 721 /* TENSOR_MEMORY_LEAK */ ||
         rc == 911 /* EXTERNAL_DEVICE */;
}

/* TT_CUDA_DEVICE: unset or empty is device 0, else 1 to 6 decimal digits (as cudaDeviceIndex
   in engine/native/cuda.ts reads it); -1 for anything else. */
static int device_index(const char* text) {
  if (!text || !*text) return 0;
  int v = 0, n = 0;
  for (const char* c = text; *c; c++, n++) {
    if (*c < '0' || *c > '9' || n == 6) return -1;
    v = v * 10 + (*c - '0');
  }
  return v;
}

/* ---- programs ------------------------------------------------------------------ */

struct tt_cu_program {
  CUdevice device;
  CUcontext context;
  CUmodule module;
  int nbuffers, nlaunches;
  tt_cu_buffer_spec* specs;
  CUdeviceptr* buffers;
  tt_cu_launch* launches;
  CUfunction* functions;
  void*** params; /* per launch: pointers to its buffers' CUdeviceptr */
  CUevent start, stop;
  double elapsed_ms;
  int fatal;
  char error[TT_CU_ERR_LEN];
};

static int fail(tt_cu_program* p, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(p->error, sizeof p->error, fmt, ap);
  va_end(ap);
  return -1;
}

/* A failed call: a fault ends the process when p->fatal (tt_cu_set_fatal_on_fault). */
static int check(tt_cu_program* p, CUresult rc, const char* what) {
  if (rc == CUDA_SUCCESS) return 0;
  fail(p, "%s failed: %s", what, cu_err(rc));
  if (is_fault(rc)) {
    if (p->fatal) {
      fprintf(stderr, "tt_cuda: %s (the CUDA context is unusable after this error; exiting so that the worker restarts)\n", p->error);
      fflush(stderr);
      _exit(70);
    }
    size_t n = strlen(p->error);
    snprintf(p->error + n, sizeof p->error - n, " (the CUDA context is unusable now: restart the process)");
  }
  return -1;
}

tt_cu_program* tt_cu_create(const void* image, size_t image_size,
                            const tt_cu_buffer_spec* buffers, int nbuffers,
                            const tt_cu_launch* launches, int nlaunches,
                            int* kind, char* err, size_t errlen) {
  int k = TT_CU_RUNTIME_ERROR;
  if (kind) *kind = k;
  if (!image || image_size == 0 || nbuffers < 0 || nlaunches < 0) {
    setf(err, errlen, "tt_cu_create: no image or bad counts");
    return NULL;
  }
  if (load_cuda(err, errlen) != 0) return NULL;
  tt_cu_program* p = calloc(1, sizeof *p);
  if (!p) {
    setf(err, errlen, "out of memory");
    return NULL;
  }
  p->elapsed_ms = -1;
  p->nbuffers = nbuffers;
  p->nlaunches = nlaunches;
  p->specs = calloc((size_t)nbuffers + 1, sizeof *p->specs);
  p->buffers = calloc((size_t)nbuffers + 1, sizeof *p->buffers);
  p->launches = calloc((size_t)nlaunches + 1, sizeof *p->launches);
  p->functions = calloc((size_t)nlaunches + 1, sizeof *p->functions);
  p->params = calloc((size_t)nlaunches + 1, sizeof *p->params);
  if (!p->specs || !p->buffers || !p->launches || !p->functions || !p->params) {
    fail(p, "out of memory");
    goto failed;
  }
  memcpy(p->specs, buffers, (size_t)nbuffers * sizeof *buffers);
  memcpy(p->launches, launches, (size_t)nlaunches * sizeof *launches);

  const char* dev_env = getenv("TT_CUDA_DEVICE");
  int index = device_index(dev_env), count = 0;
  if (index < 0) {
    fail(p, "TT_CUDA_DEVICE='%s': expected a device index (0, 1, ...)", dev_env);
    goto failed;
  }
  if (check(p, cu.cuDeviceGetCount(&count), "cuDeviceGetCount") != 0) goto failed;
  if (index >= count) {
    fail(p, "TT_CUDA_DEVICE=%d, but the driver sees %d CUDA device(s)", index, count);
    goto failed;
  }
  if (check(p, cu.cuDeviceGet(&p->device, index), "cuDeviceGet") != 0) goto failed;
  if (check(p, cu.cuDevicePrimaryCtxRetain(&p->context, p->device), "cuDevicePrimaryCtxRetain") != 0) {
    p->context = NULL;
    goto failed;
  }
  if (check(p, cu.cuCtxSetCurrent(p->context), "cuCtxSetCurrent") != 0) goto failed;
  CUresult rc = cu.cuModuleLoadData(&p->module, image);
  if (rc != CUDA_SUCCESS) {
    p->module = NULL;
    char name[256] = "?";
    cu.cuDeviceGetName(name, sizeof name, p->device);
    fail(p, "cuModuleLoadData failed: %s (a cubin built for another architecture than %s's?)", cu_err(rc), name);
    k = TT_CU_LOAD_ERROR;
    goto failed;
  }
  int max_threads = 0, max_block[3] = {0, 0, 0}, max_grid[3] = {0, 0, 0};
  if (check(p, cu.cuDeviceGetAttribute(&max_threads, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, p->device), "cuDeviceGetAttribute") != 0)
    goto failed;
  for (int d = 0; d < 3; d++) {
    if (check(p, cu.cuDeviceGetAttribute(&max_block[d], CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X + d, p->device), "cuDeviceGetAttribute") != 0 ||
        check(p, cu.cuDeviceGetAttribute(&max_grid[d], CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X + d, p->device), "cuDeviceGetAttribute") != 0)
      goto failed;
  }
  for (int i = 0; i < nlaunches; i++) {
    const tt_cu_launch* l = &p->launches[i];
    if (!l->kernel || l->nargs < 0 || (l->nargs > 0 && !l->args)) {
      fail(p, "launch %d: no kernel name, or a bad argument list", i);
      goto failed;
    }
    if (check(p, cu.cuModuleGetFunction(&p->functions[i], p->module, l->kernel), l->kernel) != 0) goto failed;
    int fn_threads = 0, regs = 0;
    if (check(p, cu.cuFuncGetAttribute(&fn_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, p->functions[i]), "cuFuncGetAttribute") != 0 ||
        check(p, cu.cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, p->functions[i]), "cuFuncGetAttribute") != 0)
      goto failed;
    unsigned long threads = (unsigned long)l->block[0] * l->block[1] * l->block[2];
    for (int d = 0; d < 3; d++) {
      if (l->block[d] < 1 || l->grid[d] < 1 || (long)l->block[d] > max_block[d] || (long)l->grid[d] > max_grid[d]) {
        fail(p, "launch %d (%s): grid %ux%ux%u, block %ux%ux%u is outside the device's limits", i, l->kernel,
             l->grid[0], l->grid[1], l->grid[2], l->block[0], l->block[1], l->block[2]);
        goto failed;
      }
    }
    if ((long)threads > max_threads || (long)threads > fn_threads) {
      fail(p, "launch %d (%s): %lu threads per block, more than the %s allows (%d; the kernel uses %d registers per thread)",
           i, l->kernel, threads, (long)threads > max_threads ? "device" : "kernel", (long)threads > max_threads ? max_threads : fn_threads, regs);
      goto failed;
    }
    for (int a = 0; a < l->nargs; a++) {
      if (l->args[a] < 0 || l->args[a] >= nbuffers) {
        fail(p, "launch %d (%s): argument %d names buffer %d of %d", i, l->kernel, a, l->args[a], nbuffers);
        goto failed;
      }
    }
    p->params[i] = calloc((size_t)l->nargs + 1, sizeof(void*));
    if (!p->params[i]) {
      fail(p, "out of memory");
      goto failed;
    }
    for (int a = 0; a < l->nargs; a++) p->params[i][a] = &p->buffers[l->args[a]];
  }
  for (int b = 0; b < nbuffers; b++) {
    size_t count_b = p->specs[b].count ? p->specs[b].count : 1;
    if (check(p, cu.cuMemAlloc_v2(&p->buffers[b], count_b * sizeof(float)), "cuMemAlloc") != 0) {
      p->buffers[b] = 0;
      goto failed;
    }
  }
  if (check(p, cu.cuEventCreate(&p->start, CU_EVENT_DEFAULT), "cuEventCreate") != 0 ||
      check(p, cu.cuEventCreate(&p->stop, CU_EVENT_DEFAULT), "cuEventCreate") != 0)
    goto failed;
  if (kind) *kind = TT_CU_OK;
  return p;

failed:
  setf(err, errlen, "%s", p->error);
  if (kind) *kind = k;
  tt_cu_destroy(p);
  return NULL;
}

/* Makes p's context the calling thread's current one (every entry point, see the top). */
static int use_context(tt_cu_program* p) {
  return check(p, cu.cuCtxSetCurrent(p->context), "cuCtxSetCurrent");
}

/* A copy's arguments: a buffer of p and a host pointer. */
static int bad_copy(tt_cu_program* p, int index, const void* host) {
  if (index < 0 || index >= p->nbuffers) return fail(p, "buffer %d of %d", index, p->nbuffers);
  if (!host) return fail(p, "buffer %d: no host memory (NULL)", index);
  return use_context(p);
}

int tt_cu_write(tt_cu_program* p, int index, const float* host) {
  if (!p || bad_copy(p, index, host) != 0) return -1;
  return check(p, cu.cuMemcpyHtoD_v2(p->buffers[index], host, p->specs[index].count * sizeof(float)), "cuMemcpyHtoD");
}

int tt_cu_read(tt_cu_program* p, int index, float* host) {
  if (!p || bad_copy(p, index, host) != 0) return -1;
  return check(p, cu.cuMemcpyDtoH_v2(host, p->buffers[index], p->specs[index].count * sizeof(float)), "cuMemcpyDtoH");
}

int tt_cu_run(tt_cu_program* p) {
  if (!p) return -1;
  p->elapsed_ms = -1;
  if (use_context(p) != 0) return -1;
  if (check(p, cu.cuEventRecord(p->start, NULL), "cuEventRecord") != 0) return -1;
  for (int i = 0; i < p->nlaunches; i++) {
    const tt_cu_launch* l = &p->launches[i];
    CUresult rc = cu.cuLaunchKernel(p->functions[i], l->grid[0], l->grid[1], l->grid[2], l->block[0], l->block[1], l->block[2],
                                    0, NULL, p->params[i], NULL);
    if (rc != CUDA_SUCCESS) {
      char what[320];
      snprintf(what, sizeof what, "cuLaunchKernel (launch %d, %s)", i, l->kernel);
      return check(p, rc, what);
    }
  }
  if (check(p, cu.cuEventRecord(p->stop, NULL), "cuEventRecord") != 0) return -1;
  /* A fault in a kernel is reported here, by the first call that waits for it. */
  if (check(p, cu.cuEventSynchronize(p->stop), "running the kernels (cuEventSynchronize)") != 0) return -1;
  float ms = 0;
  if (check(p, cu.cuEventElapsedTime(&ms, p->start, p->stop), "cuEventElapsedTime") != 0) return -1;
  p->elapsed_ms = ms;
  return 0;
}

double tt_cu_elapsed_ms(const tt_cu_program* p) {
  return p ? p->elapsed_ms : -1;
}

void tt_cu_set_fatal_on_fault(tt_cu_program* p, int fatal) {
  if (p) p->fatal = fatal;
}

const char* tt_cu_error(const tt_cu_program* p) {
  return p ? p->error : "no program";
}

void tt_cu_destroy(tt_cu_program* p) {
  if (!p) return;
  if (p->context) cu.cuCtxSetCurrent(p->context);
  if (p->start) cu.cuEventDestroy_v2(p->start);
  if (p->stop) cu.cuEventDestroy_v2(p->stop);
  if (p->buffers)
    for (int b = 0; b < p->nbuffers; b++)
      if (p->buffers[b]) cu.cuMemFree_v2(p->buffers[b]);
  if (p->params)
    for (int i = 0; i < p->nlaunches; i++) free(p->params[i]);
  if (p->module) cu.cuModuleUnload(p->module);
  /* The device's primary context is not released: it stays retained for the life of the
     process. Releasing the last reference destroys the context, and the next program would
     create it again (a tenth of a second or more on a large GPU), once per candidate in a
     measurement worker that loads hundreds of them. The driver frees it at exit. */
  free(p->specs);
  free(p->buffers);
  free(p->launches);
  free(p->functions);
  free(p->params);
  free(p);
}
