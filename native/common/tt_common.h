/*
 * Helpers shared by tt_bench, tt_measure and tt_remote: clock, deterministic random fill,
 * aligned buffers, raw float32 files, the params loader, the timing loop and
 * summary statistics. Functions that can fail return 0 on success and otherwise
 * write one line (without a program prefix) into `err`.
 */
#ifndef TT_COMMON_H
#define TT_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tensortune.h"

#define TT_ERR_LEN 1024

/* When the environment names the parent (TT_PARENT_PID, set by the TypeScript driver),
   asks the kernel to SIGKILL this process as soon as that parent dies (Linux:
   PR_SET_PDEATHSIG), so a killed `tensortune` leaves no runner behind; if the parent is
   already gone (it died before the request was made), exits at once. Without
   TT_PARENT_PID (run by hand) it does nothing. Call it first thing in main. */
void tt_die_with_parent(const char* program);

/* Milliseconds on CLOCK_MONOTONIC. */
double tt_now_ms(void);

/* A 32-bit mixing function (the MurmurHash3 finalizer). */
uint32_t tt_mix32(uint32_t x);

/* Fills dst[0..n) with uniform floats in [0, 1), a pure function of (seed, stream, i):
     key  = mix32(seed ^ mix32(stream + 1))
     u_i  = mix32(key + i * 0x9E3779B9)            (all arithmetic mod 2^32)
     x_i  = (u_i >> 8) * 2^-24
   engine/runtime/random.ts computes the same values. */
void tt_fill_uniform(float* dst, size_t n, uint32_t seed, uint32_t stream);

/* Fills with quiet NaN, so that an element a kernel never writes is noticed. */
void tt_fill_nan(float* dst, size_t n);

/* n floats, 64-byte aligned, at least 64 bytes; free with free(). NULL when out of memory. */
float* tt_alloc_floats(size_t n);

/* FNV-1a-64, continued from `h` (start with TT_FNV_OFFSET). */
#define TT_FNV_OFFSET 0xcbf29ce484222325ULL
uint64_t tt_fnv1a64(const void* data, size_t n, uint64_t h);

int tt_host_is_little_endian(void);

/* Reads exactly `count` float32 values (little-endian) from `path`; a file of any
   other size is an error that names both sizes. `what` names the file in messages. */
int tt_read_floats(const char* what, const char* path, float* dst, size_t count, char* err);

/* Writes `count` float32 values as raw little-endian bytes. */
int tt_write_floats(const char* path, const float* src, size_t count, char* err);

/* Loads a params file (format in tensortune.h): checks the magic, the reserved
   bytes, `count` against `expected` and the file size, and the payload hash.
   On success *out is a 64-byte aligned buffer of `expected` floats (free()). */
int tt_load_params(const char* path, int64_t expected, float** out, char* err);

/* The timing loop of TVM's time_evaluator: `warmup` untimed runs, then `repeat`
   measurements of `number` consecutive runs each. While a measurement lasts less
   than min_repeat_ms, it is discarded and `number` grows (to at least 1.618x, and
   to the count the last measurement predicts would reach min_repeat_ms); the grown
   number is kept for later measurements. With a `prep` hook (cache flush), prep runs
   before every run and only the runs themselves are timed. With a `clock` (a device's own
   timer, CUDA events), each run counts what clock returns after it instead of the host's
   time around it: the launch and the wait for the device are then not counted. */
typedef struct {
  int number;
  int repeat;
  double min_repeat_ms;
  int warmup;
} tt_timing;

typedef int (*tt_run_fn)(void* ctx);
typedef void (*tt_prep_fn)(void* ctx);
typedef double (*tt_clock_fn)(void* ctx);

/* runs_ms[r] = duration of measurement r / number, in ms. Returns 0, or the first
   non-zero value `run` returned (the loop stops there). */
int tt_time_runs(tt_run_fn run, tt_prep_fn prep, tt_clock_fn clock, void* ctx, const tt_timing* t,
                 double* runs_ms, int* number_used);

typedef struct {
  double mean, median, max, min, std; /* std: population standard deviation */
} tt_stats;

tt_stats tt_compute_stats(const double* v, int n);

/* CPU time (user + system, all threads) this process used so far, in ms; -1 if unknown.
   tensortune subtracts it from the machine's busy time to see what else ran (timing-trust.ts). */
double tt_cpu_ms(void);

/* Number of elements of a model's input or output, or -1 when its description is malformed. */
long long tt_tensor_size(const tt_tensor_info* t);

/* ---- the workers' request fields (tt_measure, tt_remote; native/README.md) ---- */

/* A decimal integer of digits only, at most `max`: 0, else -1. */
int tt_parse_ull(const char* text, unsigned long long max, unsigned long long* out);

/* Cuts the line ending ('\n', '\r') off a line. */
void tt_chomp(char* line);

/* Flushes subnormal floats to zero on the calling thread from now on (x86: MXCSR's FTZ and
   DAZ; aarch64: FPCR.FZ), as a compiled model runs its kernels (native/pool/tt_pool.c,
   tt_fp_flush_begin): the workers call it first, so that candidates are timed and verified
   in the mode the model will run them in. */
void tt_flush_subnormals(void);

/* The timing fields both workers take: number, repeat, warmup, min_repeat_ms, flush, seed.
   Returns 0 when `key` is none of them; else 1, with the value stored, or with `bad`
   (TT_ERR_LEN) holding what was expected unless it already holds a problem. */
int tt_parse_timing_field(const char* key, const char* value, tt_timing* t, int* flush, uint32_t* seed, char* bad);

/* JSON output helpers: a quoted, escaped string; a finite number. */
void tt_json_string(FILE* f, const char* s);
void tt_json_number(FILE* f, double v);

/* ---- device libraries (native/README.md, "Device libraries"), both workers ---- */

/* The optional hooks of a kernel library that runs on a device (an OpenCL candidate):
   <symbol>_setup, <symbol>_finish and <symbol>_error, all three or none; and, beside them,
   <symbol>_elapsed_ms when the device times its own runs (CUDA events): the device time of
   the last run in ms, which the timing loop then counts instead of the host clock. */
typedef int (*tt_hook_fn)(float* const* args);
typedef struct {
  tt_hook_fn setup, finish;
  const char* (*error)(void);
  double (*elapsed_ms)(void); /* NULL: timed by the host clock */
} tt_device_hooks;

/* 1: `lib` exports all three hooks of `symbol`; 0: none; -1: some but not all (err says which). */
int tt_find_device_hooks(void* lib, const char* symbol, tt_device_hooks* h, char* err, size_t errlen);

/* One measurement of the kernel `fn` (`symbol` of the loaded library `lib`), as tt_measure
   and tt_remote run it. A device library (all three hooks) gets setup once before the
   warm-up (2: "compile_error", else "runtime_error", the hook's message), the timed runs
   call `fn` alone, then finish (the outputs are then the device's); after a failed run
   finish is still called to release the device. `flush`, when not NULL, runs before every
   run of a CPU kernel (number 1, min_repeat_ms 0 in *t); a device library ignores it. A
   device library's runs are timed by its <symbol>_elapsed_ms where it exports one.
   Returns NULL with runs_ms / *number_used set, or the error class with err set. */
const char* tt_measure_kernel(void* lib, const char* symbol, tt_hook_fn fn, float* const* bufs, tt_timing* t,
                              tt_prep_fn flush, void* flush_ctx, double* runs_ms, int* number_used, char* err,
                              size_t errlen);

#endif /* TT_COMMON_H */
