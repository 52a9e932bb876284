/*
 * tensortune native ABI, version 2.
 *
 * Two kinds of shared library meet the native binaries in this directory:
 *
 *  1. A compiled model (`model.so`, emitted by `tensortune compile`), loaded by
 *     tt_bench. It exports the tt_* functions declared below. Every tensor is
 *     dense and row-major, of 4-byte elements: float32, int32, or bool stored as
 *     int32 0/1 (tt_tensor_info.dtype). An ONNX model's int64 tensors are int32 here.
 *
 *  2. A measurement kernel (one candidate schedule of one task, emitted by the
 *     tuner), loaded by tt_measure. It exports one function of type
 *     tt_kernel_fn under a symbol named in the measurement command.
 *
 * The params file that tt_init receives is described at the end of this file.
 * Bump TT_ABI_VERSION (and ABI_VERSION in engine/runtime/abi.ts) on any change
 * to these declarations or to the params format.
 */
#ifndef TENSORTUNE_H
#define TENSORTUNE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TT_ABI_VERSION 2

/* Generated code marks its exported entry points with TT_EXPORT so that they stay
   visible when the library is built with -fvisibility=hidden. */
#if defined(__GNUC__) || defined(__clang__)
#define TT_EXPORT __attribute__((visibility("default")))
#else
#define TT_EXPORT
#endif

/* ---- 1. compiled model ---------------------------------------------------- */

/* Element types of tt_tensor_info.dtype. Every element is 4 bytes. */
#define TT_FLOAT32 0
#define TT_INT32 1
#define TT_BOOL 2 /* int32 holding 0 or 1 */

/* One input or output: its name, rank, extents and element type, row-major. The
   strings and arrays are owned by the library and live as long as it is loaded. */
typedef struct {
  const char* name;
  int ndim;
  const int64_t* shape;
  int dtype;
} tt_tensor_info;

/* TT_ABI_VERSION as seen by the library when it was built. A loader refuses a
   library whose version differs from its own. */
int tt_abi_version(void);

int tt_num_inputs(void);
const tt_tensor_info* tt_input_info(int i);
int tt_num_outputs(void);
const tt_tensor_info* tt_output_info(int i);

/* Number of float32 values the model's params blob must hold. */
int64_t tt_params_size(void);

/* Hands the params payload (tt_params_size() floats, 64-byte aligned by the
   loaders in native/) to the model. The model keeps the pointer; the caller keeps
   the memory alive until the library is unloaded. Returns 0 on success, otherwise
   non-zero with a message in tt_last_error(). */
int tt_init(const float* params);

/* Runs the model once: inputs[i] holds the elements of tt_input_info(i), outputs[i]
   receives tt_output_info(i) (pointers to 4-byte words: cast int32 and bool tensors'
   buffers to float* to pass them). Returns 0 on success, otherwise non-zero with a
   message in tt_last_error(). tt_init must have succeeded first. */
int tt_run(const float* const* inputs, float* const* outputs);

/* Number of threads tt_run may use (n >= 1). The default: OMP_NUM_THREADS when set, else
   the CPUs the process may run on. */
void tt_set_num_threads(int n);

/* A description of the last failure, or "" when there was none. Never NULL. */
const char* tt_last_error(void);

/* Optional (CPU models from this version on; a loader checks with dlsym): the
   per-kernel profile. tt_num_calls() kernel calls make one tt_run, in order;
   tt_call_symbol(i) names the kernel function call i runs (the manifest's
   kernels[].symbol). tt_run_profiled is tt_run that adds the wall time of call i,
   in ms, to ms[i] (the caller zeroes ms). */
int tt_num_calls(void);
const char* tt_call_symbol(int i);
int tt_run_profiled(const float* const* inputs, float* const* outputs, double* ms);

/* ---- 2. measurement kernel ------------------------------------------------ */

/* args[i] is the i-th buffer listed in the measurement command (by convention
   the task's inputs, then its outputs, in the compute DAG's order). Each buffer is
   64-byte aligned. Returns 0 on success; anything else is a runtime error. The
   thread count comes from OMP_NUM_THREADS, set when the worker is started. */
typedef int (*tt_kernel_fn)(float* const* args);

/* ---- params file ---------------------------------------------------------- */

/* A 32-byte header followed by `count` little-endian float32 values:
     bytes  0..7   magic "TTPARAM1"
     bytes  8..15  count, uint64 little-endian
     bytes 16..23  FNV-1a-64 of the payload bytes, uint64 little-endian
     bytes 24..31  reserved, zero
   Writer and reader on the TypeScript side: engine/runtime/params.ts. */
#define TT_PARAMS_MAGIC "TTPARAM1"
#define TT_PARAMS_HEADER_BYTES 32

#ifdef __cplusplus
}
#endif

#endif /* TENSORTUNE_H */
