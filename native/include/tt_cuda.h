/*
 * tensortune CUDA runtime: the host side of every CUDA program tensortune generates,
 * shared by measurement candidates (the tuner) and compiled models. The counterpart of
 * tt_opencl.h, with a cubin (compiled by nvcc ahead of time) instead of a source.
 *
 * A program is one cubin holding one or more `extern "C" __global__` kernels, a list of
 * float32 buffers and a list of launches. Every kernel argument is one of the buffers
 * (by index); launches run in order on the context's default stream.
 *
 * libcuda is not linked: tt_cuda.c opens the driver with dlopen("libcuda.so.1") at the
 * first tt_cu_create and declares the few driver types it uses itself, so a library built
 * with this runtime needs neither the CUDA toolkit's headers to build nor a driver to
 * load; it fails at tt_cu_create, with a message, where there is no driver.
 *
 * The device: TT_CUDA_DEVICE (environment), an index (0, 1, ...), default 0. Programs use
 * the device's primary context, retained at create and kept for the life of the process
 * (a measurement worker that loads hundreds of candidates creates it once).
 */
#ifndef TT_CUDA_H
#define TT_CUDA_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What a failed tt_cu_create reports in *kind. */
#define TT_CU_OK 0
#define TT_CU_RUNTIME_ERROR 1 /* no driver, no device, out of memory, a launch over a limit */
#define TT_CU_LOAD_ERROR 2    /* cuModuleLoadData failed (a cubin for another architecture, say) */

/* Buffer roles, as tt_opencl.h's. */
#define TT_CU_IN 0
#define TT_CU_OUT 1
#define TT_CU_TEMP 2
#define TT_CU_PARAM 3

typedef struct {
  size_t count; /* float32 elements, >= 1 */
  int role;     /* TT_CU_IN, TT_CU_OUT, TT_CU_TEMP or TT_CU_PARAM */
} tt_cu_buffer_spec;

typedef struct {
  const char* kernel;  /* kernel name in the cubin */
  int nargs;
  const int* args;     /* buffer index of each kernel argument, in order */
  unsigned grid[3];    /* blocks per dimension (>= 1) */
  unsigned block[3];   /* threads per block per dimension (>= 1) */
} tt_cu_launch;

typedef struct tt_cu_program tt_cu_program;

/*
 * Opens the device, loads `image` (a cubin of `image_size` bytes), looks up the kernels,
 * allocates the buffers. Checks each launch's block against the device's and the kernel's
 * limits (threads per block: cuFuncGetAttribute, which accounts for its registers).
 * Returns NULL on failure with *kind set and a one-paragraph message in err.
 */
tt_cu_program* tt_cu_create(const void* image, size_t image_size,
                            const tt_cu_buffer_spec* buffers, int nbuffers,
                            const tt_cu_launch* launches, int nlaunches,
                            int* kind, char* err, size_t errlen);

/* Copies buffer `index` from / to host memory (count floats). Blocking. 0 on success. */
int tt_cu_write(tt_cu_program* p, int index, const float* host);
int tt_cu_read(tt_cu_program* p, int index, float* host);

/* Makes every launch in order and waits for them. 0 on success. The device time of the
   launches (cuEvent) is kept for tt_cu_elapsed_ms. */
int tt_cu_run(tt_cu_program* p);

/* Milliseconds of device time of the last successful tt_cu_run (between events recorded
   before the first launch and after the last), or -1. */
double tt_cu_elapsed_ms(const tt_cu_program* p);

/* A launch that faults (an illegal address, a launch failure, a trap) leaves the CUDA
   context unusable for the rest of the process. With fatal set, such an error ends the
   process (exit code 70, the message on stderr) instead of returning, so that a process
   that can be restarted (the measurement worker) is; a model's host leaves it unset and
   gets the error back. */
void tt_cu_set_fatal_on_fault(tt_cu_program* p, int fatal);

/* The last failure of p ("" when none). Never NULL. */
const char* tt_cu_error(const tt_cu_program* p);

void tt_cu_destroy(tt_cu_program* p);

#ifdef __cplusplus
}
#endif

#endif /* TT_CUDA_H */
