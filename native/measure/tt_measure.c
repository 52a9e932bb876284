/*
 * tt_measure: the long-lived measurement worker of the tuner.
 *
 * It reads commands on stdin, one field per line, and answers each with one JSON
 * line on stdout; the protocol is specified in native/README.md. A kernel that
 * crashes or hangs takes only this process down: the TypeScript driver
 * (engine/measure/worker.ts) enforces timeouts by killing it and starts a new one.
 *
 * The protocol channel is a private copy of the original stdout; file descriptor 1
 * is pointed at stderr, so a kernel that prints cannot corrupt the replies.
 *
 * A device library (an OpenCL candidate, say) also exports <symbol>_setup, _finish and
 * _error: setup moves the inputs to the device before the warm-up, the timed runs call
 * <symbol> alone, and finish copies the outputs back before they are written.
 */
#define _POSIX_C_SOURCE 200809L

#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef _OPENMP
#include <omp.h>
#endif
#if defined(__x86_64__) || defined(__i386__)
#include <emmintrin.h>
#endif

#include "tensortune.h"
#include "tt_common.h"

#define MAX_ARGS 1024
#define MAX_FLOATS_PER_ARG (1ULL << 34)

static FILE* proto;

typedef struct {
  int is_output;
  size_t count;
  char* path; /* input: read from here (else random); output: written here (else dropped) */
} arg_spec;

typedef struct {
  char id[64];
  char* lib;
  char* symbol;
  arg_spec args[MAX_ARGS];
  int nargs;
  tt_timing timing;
  int flush;
  unsigned char cold[MAX_ARGS]; /* `cold I` lines: the buffers a flush evicts */
  int ncold;
  uint32_t seed;
  double probe_ms; /* > 0: the host-rate probe runs this long before and after the timed runs */
  char bad[TT_ERR_LEN]; /* first problem found while reading the command, "" if none */
} request;

typedef struct {
  tt_kernel_fn fn;
  float** bufs;
  const request* req;
} run_ctx;

static void reply_error(const char* id, const char* kind, const char* message) {
  fputs("{\"id\":", proto);
  tt_json_string(proto, id);
  fputs(",\"ok\":false,\"error\":", proto);
  tt_json_string(proto, kind);
  fputs(",\"message\":", proto);
  tt_json_string(proto, message);
  fputs("}\n", proto);
  fflush(proto);
}

static void set_bad(request* r, const char* fmt, ...) {
  if (r->bad[0]) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->bad, sizeof r->bad, fmt, ap);
  va_end(ap);
}

static void free_request(request* r) {
  free(r->lib);
  free(r->symbol);
  for (int i = 0; i < r->nargs; i++) free(r->args[i].path);
  memset(r, 0, sizeof *r);
}

/* "in 12" / "out 12 /path with spaces/out.bin" */
static void parse_arg(request* r, int is_output, char* value) {
  if (r->nargs == MAX_ARGS) {
    set_bad(r, "more than %d buffers", MAX_ARGS);
    return;
  }
  char* path = strchr(value, ' ');
  if (path) *path++ = 0;
  unsigned long long count;
  if (tt_parse_ull(value, MAX_FLOATS_PER_ARG, &count) != 0) {
    set_bad(r, "buffer %d: expected an element count, got '%s'", r->nargs, value);
    return;
  }
  arg_spec* a = &r->args[r->nargs++];
  a->is_output = is_output;
  a->count = (size_t)count;
  a->path = path && *path ? strdup(path) : NULL;
}

static void parse_field(request* r, char* line) {
  char* value = strchr(line, ' ');
  if (value) *value++ = 0;
  else value = line + strlen(line);
  if (!strcmp(line, "lib")) {
    free(r->lib);
    r->lib = *value ? strdup(value) : NULL;
  } else if (!strcmp(line, "symbol")) {
    free(r->symbol);
    r->symbol = *value ? strdup(value) : NULL;
  } else if (!strcmp(line, "in") || !strcmp(line, "out")) {
    parse_arg(r, line[0] == 'o', value);
  } else if (!strcmp(line, "cold")) {
    unsigned long long i;
    if (tt_parse_ull(value, MAX_ARGS - 1, &i) != 0) set_bad(r, "cold: expected a buffer index below %d, got '%s'", MAX_ARGS, value);
    else if (!r->cold[i]) {
      r->cold[i] = 1;
      r->ncold++;
    }
  } else if (!strcmp(line, "probe_ms")) {
    char* end;
    double ms = strtod(value, &end);
    if (end == value || *end || !(ms >= 0) || ms > 1000) set_bad(r, "probe_ms: expected a number of ms in [0, 1000], got '%s'", value);
    else r->probe_ms = ms;
  } else if (!tt_parse_timing_field(line, value, &r->timing, &r->flush, &r->seed, r->bad)) {
    set_bad(r, "unknown field '%s'", line);
  }
}

/* Evicts buffers from the CPU caches before a timed run: those the request marks `cold`
   (a layer's weights, which a network reads cold), or without marks every buffer but the
   first (the first, usually the layer's input, would be warm in a network). */
static void flush_line(const char* p) {
#if defined(__x86_64__) || defined(__i386__)
  _mm_clflush(p);
#elif defined(__aarch64__)
  __asm__ volatile("dc civac, %0" ::"r"(p) : "memory");
#else
  (void)p;
#endif
}

static void flush_caches(void* p) {
  run_ctx* c = (run_ctx*)p;
#if defined(__x86_64__) || defined(__i386__) || defined(__aarch64__)
  for (int i = 0; i < c->req->nargs; i++) {
    if (c->req->ncold ? !c->req->cold[i] : i == 0) continue;
    const char* b = (const char*)c->bufs[i];
    for (size_t off = 0; off < c->req->args[i].count * sizeof(float); off += 64) flush_line(b + off);
  }
#if defined(__aarch64__)
  __asm__ volatile("dsb ish" ::: "memory");
#else
  _mm_mfence();
#endif
#else
  /* No cache-maintenance instruction known here: stream through 64 MiB instead. */
  static volatile char* sweep;
  const size_t bytes = (size_t)64 << 20;
  if (!sweep) sweep = calloc(bytes, 1);
  if (sweep)
    for (size_t off = 0; off < bytes; off += 64) sweep[off] += 1;
  (void)c;
#endif
}

/* The host's speed now: multiply-adds per nanosecond of a fixed loop over 16 independent
   float chains, the best of PROBE_CHUNKS runs that share `ms` (the best, so that a timer
   interrupt in one chunk does not count: a single 0.5 ms run strayed by more than 20% from
   the median one time in ten, the best of five 0.1 ms chunks one time in 400). Its rate
   follows what a kernel's does when the core's clock moves or another hardware thread of
   the same physical core (a neighbour on a cloud VM) takes its share of the floating-point
   units: measured against an AVX-512 FMA loop on a 2-vCPU cloud VM, the two moved together
   (correlation 0.99 over 1,500 pairs), both 1.6x faster in the rare phases when the
   neighbour was idle. The tuner compares the rate around each candidate with the rates of
   the candidates before it (engine/measure/host-rate.ts). Plain C, so it runs wherever
   tt_measure does. */
#define PROBE_CHUNKS 5
static volatile float probe_sink; /* keeps the probe's chains alive */

static double probe_rate(double ms) {
  volatile float seed_b = 0.999f, seed_c = 1e-3f;
  float b = seed_b, c = seed_c, a[16];
  for (int i = 0; i < 16; i++) a[i] = (float)i * 0.01f;
  double best = 0;
  for (int chunk = 0; chunk < PROBE_CHUNKS; chunk++) {
    long rounds = 0;
    double t0 = tt_now_ms(), elapsed;
    do {
      for (int k = 0; k < 64; k++)
        for (int i = 0; i < 16; i++) a[i] = a[i] * b + c;
      rounds += 64;
    } while ((elapsed = tt_now_ms() - t0) < ms / PROBE_CHUNKS);
    double rate = elapsed > 0 ? (double)rounds * 16 / (elapsed * 1e6) : 0;
    if (rate > best) best = rate;
  }
  float s = 0;
  for (int i = 0; i < 16; i++) s += a[i];
  probe_sink = s;
  return best;
}

static void execute(request* r) {
  /* Larger than TT_ERR_LEN: a device library's message may hold a build log. */
  char err[4 * TT_ERR_LEN];
  if (!r->bad[0] && !r->lib) set_bad(r, "missing field 'lib'");
  if (!r->bad[0] && !r->symbol) set_bad(r, "missing field 'symbol'");
  if (!r->bad[0] && r->nargs == 0) set_bad(r, "no buffers (fields 'in' / 'out')");
  for (int i = r->nargs; i < MAX_ARGS && !r->bad[0]; i++)
    if (r->cold[i]) set_bad(r, "cold %d: there are %d buffers", i, r->nargs);
  if (r->bad[0]) {
    reply_error(r->id, "bad_request", r->bad);
    return;
  }

  float* bufs[MAX_ARGS] = {0};
  double* runs = calloc((size_t)r->timing.repeat, sizeof(double));
  void* lib = NULL;
  const char* kind = NULL;
  if (!runs) {
    kind = "runtime_error";
    snprintf(err, sizeof err, "out of memory");
    goto done;
  }
  for (int i = 0; i < r->nargs; i++) {
    arg_spec* a = &r->args[i];
    bufs[i] = tt_alloc_floats(a->count);
    if (!bufs[i]) {
      kind = "runtime_error";
      snprintf(err, sizeof err, "out of memory for buffer %d (%zu floats)", i, a->count);
      goto done;
    }
    if (a->is_output) {
      tt_fill_nan(bufs[i], a->count);
    } else if (a->path) {
      char what[64];
      snprintf(what, sizeof what, "buffer %d", i);
      if (tt_read_floats(what, a->path, bufs[i], a->count, err) != 0) {
        kind = "bad_request";
        goto done;
      }
    } else {
      tt_fill_uniform(bufs[i], a->count, r->seed, (uint32_t)i);
    }
  }
  lib = dlopen(r->lib, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    kind = "runtime_error";
    snprintf(err, sizeof err, "cannot load kernel library: %s", dlerror());
    goto done;
  }
  run_ctx ctx = {NULL, bufs, r};
  *(void**)&ctx.fn = dlsym(lib, r->symbol);
  if (!ctx.fn) {
    kind = "runtime_error";
    snprintf(err, sizeof err, "symbol '%s' not found in '%s'", r->symbol, r->lib);
    goto done;
  }
  int number = r->timing.number;
  double rate_before = r->probe_ms > 0 ? probe_rate(r->probe_ms) : 0;
  if ((kind = tt_measure_kernel(lib, r->symbol, ctx.fn, bufs, &r->timing, r->flush ? flush_caches : NULL, &ctx, runs,
                                &number, err, sizeof err)))
    goto done;
  double rate_after = r->probe_ms > 0 ? probe_rate(r->probe_ms) : 0;
  for (int i = 0; i < r->nargs; i++) {
    if (!r->args[i].is_output || !r->args[i].path) continue;
    if (tt_write_floats(r->args[i].path, bufs[i], r->args[i].count, err) != 0) {
      kind = "bad_request";
      goto done;
    }
  }
  fputs("{\"id\":", proto);
  tt_json_string(proto, r->id);
  fputs(",\"ok\":true,\"costs_ms\":[", proto);
  for (int i = 0; i < r->timing.repeat; i++) {
    if (i) fputc(',', proto);
    tt_json_number(proto, runs[i]);
  }
  fprintf(proto, "],\"number\":%d", number);
  if (r->probe_ms > 0) {
    fputs(",\"host_rate\":[", proto);
    tt_json_number(proto, rate_before);
    fputc(',', proto);
    tt_json_number(proto, rate_after);
    fputc(']', proto);
  }
  fputs("}\n", proto);
  fflush(proto);

done:
  if (kind) reply_error(r->id, kind, err);
  if (lib) dlclose(lib);
  for (int i = 0; i < r->nargs; i++) free(bufs[i]);
  free(runs);
}

int main(int argc, char** argv) {
  tt_die_with_parent("tt_measure");
  tt_flush_subnormals();
  if (argc > 1 && !strcmp(argv[1], "--version")) {
    printf("%d\n", TT_ABI_VERSION);
    return 0;
  }
  int fd = dup(STDOUT_FILENO);
  if (fd < 0 || !(proto = fdopen(fd, "w")) || dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
    fprintf(stderr, "tt_measure: cannot set up the protocol channel: %s\n", strerror(errno));
    return 2;
  }
  int threads = 1;
#ifdef _OPENMP
  threads = omp_get_max_threads();
#endif
  fprintf(proto, "{\"ready\":true,\"abi_version\":%d,\"pid\":%ld,\"threads\":%d}\n", TT_ABI_VERSION,
          (long)getpid(), threads);
  fflush(proto);

  static request req;
  char* line = NULL;
  size_t cap = 0;
  while (getline(&line, &cap, stdin) >= 0) {
    tt_chomp(line);
    if (!line[0]) continue;
    if (!strcmp(line, "quit")) break;
    if (!strcmp(line, "ping")) {
      fputs("{\"ok\":true}\n", proto);
      fflush(proto);
      continue;
    }
    if (strncmp(line, "run ", 4) != 0) {
      reply_error("", "bad_request", "expected 'run <id>', 'ping' or 'quit'");
      continue;
    }
    free_request(&req);
    req.timing = (tt_timing){1, 1, 0, 1};
    const char* id = line + 4;
    if (strlen(id) >= sizeof req.id || strspn(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.") !=
                                           strlen(id) || !*id)
      set_bad(&req, "run: the id must be 1-63 characters of [A-Za-z0-9_.-]");
    else
      snprintf(req.id, sizeof req.id, "%s", id);
    int ended = 0;
    while (getline(&line, &cap, stdin) >= 0) {
      tt_chomp(line);
      if (!strcmp(line, "end")) {
        ended = 1;
        break;
      }
      if (line[0]) parse_field(&req, line);
    }
    if (!ended) break; /* stdin closed in the middle of a command */
    execute(&req);
  }
  free(line);
  free_request(&req);
  return 0;
}
