/*
 * tensortune OpenCL runtime: the host side of every OpenCL program tensortune
 * generates, shared by measurement candidates (the tuner) and compiled models.
 *
 * A program is one OpenCL C source holding one or more __kernel functions, a list
 * of float32 buffers and a list of launches. Every kernel argument is one of the
 * buffers (by index); launches run in order on one in-order queue.
 *
 * libOpenCL is not linked: tt_opencl.c opens the ICD loader with dlopen at the
 * first tt_cl_create (libOpenCL.so.1, then libOpenCL.so), so a library built with
 * this runtime loads on a machine without OpenCL and cross-compiles without an
 * OpenCL library for the target architecture; only CL/cl.h is needed to build it.
 *
 * The device: TT_OPENCL_PLATFORM and TT_OPENCL_DEVICE (environment), each either
 * an index (0, 1, ...) or a case-insensitive substring of the platform / device
 * name. Default: the first platform that has a device, its first device.
 */
#ifndef TT_OPENCL_H
#define TT_OPENCL_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What a failed tt_cl_create reports in *kind. */
#define TT_CL_OK 0
#define TT_CL_RUNTIME_ERROR 1 /* no ICD loader, no device, out of memory, bad launch */
#define TT_CL_BUILD_ERROR 2   /* clBuildProgram failed: the message holds the build log's first lines */

/* Buffer roles: what the caller does with each buffer. */
#define TT_CL_IN 0    /* written by the caller (tt_cl_write) before runs */
#define TT_CL_OUT 1   /* read by the caller (tt_cl_read) after runs */
#define TT_CL_TEMP 2  /* only the kernels touch it */
#define TT_CL_PARAM 3 /* written once (tt_cl_write), read-only afterwards */

typedef struct {
  size_t count; /* float32 elements, >= 1 */
  int role;     /* TT_CL_IN, TT_CL_OUT, TT_CL_TEMP or TT_CL_PARAM */
} tt_cl_buffer_spec;

typedef struct {
  const char* kernel; /* __kernel function name in the source */
  int nargs;
  const int* args;    /* buffer index of each kernel argument, in order */
  size_t global[3];   /* global work size = groups x local, per dimension (>= 1) */
  size_t local[3];    /* work-group size per dimension (>= 1) */
} tt_cl_launch;

typedef struct tt_cl_program tt_cl_program;

/*
 * Opens the device, builds `source` (options: "-cl-std=CL1.2" plus `build_options`
 * if not NULL), creates the kernels, their buffers and arguments. Checks each
 * launch's work-group size against the device's and the kernel's limits (over a
 * limit is a TT_CL_RUNTIME_ERROR naming the launch, never a crash).
 * Returns NULL on failure with *kind set and a one-paragraph message in err.
 */
tt_cl_program* tt_cl_create(const char* source, const char* build_options,
                            const tt_cl_buffer_spec* buffers, int nbuffers,
                            const tt_cl_launch* launches, int nlaunches,
                            int* kind, char* err, size_t errlen);

/* Copies buffer `index` from / to host memory (count floats). Blocking. 0 on success. */
int tt_cl_write(tt_cl_program* p, int index, const float* host);
int tt_cl_read(tt_cl_program* p, int index, float* host);

/* Enqueues every launch in order and waits for them (clFinish). 0 on success. */
int tt_cl_run(tt_cl_program* p);

/* The last failure of p ("" when none). Never NULL. */
const char* tt_cl_error(const tt_cl_program* p);

void tt_cl_destroy(tt_cl_program* p);

/* Writes a JSON description of every platform and device to `out` (see
   native/README.md, "tt_opencl_info"). 0 on success, else non-zero with err set
   (no ICD loader, no platform, no device at all). When the selectors match nothing,
   "selected" is null and "selection_error" says why (the message tt_cl_create gives). */
int tt_cl_describe(char* out, size_t outlen, char* err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif /* TT_OPENCL_H */
