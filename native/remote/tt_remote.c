/*
 * tt_remote: the device-side worker of remote measurement (native/README.md, "tt_remote").
 *
 * It runs on the device, started by a runner command (`ssh board {command}`,
 * `qemu-aarch64 -L <sysroot> {command}`), and speaks a versioned, framed protocol on
 * stdin/stdout: text header lines, and byte payloads whose length the line before them
 * gives. Everything travels in the stream (kernel libraries, compiled models, params,
 * outputs), so the device needs no shared filesystem and no scp. A library is written to
 * a private temp directory, dlopened, run with tt_common's timing loop (the one tt_measure
 * and tt_bench use), and removed. Outputs go back whole: the host verifies them against
 * its reference, as for local candidates.
 *
 * A kernel that crashes or runs past the request's timeout takes this process down, but
 * first a signal handler writes the reply (runtime_error / timeout) with write(2), so the
 * host can tell a bad candidate (a reply, then the end of the stream) from a lost device
 * (the stream ends with no reply). libc, libdl and libm only (OpenMP when built with it).
 */
#define _GNU_SOURCE

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/utsname.h>
#include <unistd.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "tensortune.h"
#include "tt_common.h"

/* The protocol's version: the first field of the hello line. The host refuses another. */
#define TT_REMOTE_PROTOCOL 1
#define MAX_ARGS 1024
/* An element count must also fit a size_t in bytes (a 32-bit device's is 4 GiB). */
#define MAX_FLOATS_PER_ARG ((unsigned long long)SIZE_MAX / sizeof(float) < (1ULL << 34) ? (unsigned long long)SIZE_MAX / sizeof(float) : (1ULL << 34))
#define MAX_BLOB_BYTES (1ULL << 30)

static FILE* proto;    /* a private copy of the original stdout */
static int proto_fd;
static char tmp_dir[4096]; /* private, removed at exit and on a fatal signal */
static char tmp_file[4200]; /* the library or model being run, "" when none */
static char tmp_params[4200];
static char fatal_reply[1024]; /* what a fatal signal replies for the request in flight */
static size_t fatal_len;
static const char* fatal_id = "";

/* ---- cleanup, fatal signals ------------------------------------------------ */

static void remove_temp(void) {
  if (tmp_file[0]) unlink(tmp_file);
  if (tmp_params[0]) unlink(tmp_params);
  if (tmp_dir[0]) rmdir(tmp_dir);
}

/* Removes the files of the request just answered, whichever way it ended. */
static void drop_request_files(void) {
  if (tmp_file[0]) unlink(tmp_file);
  if (tmp_params[0]) unlink(tmp_params);
  tmp_file[0] = tmp_params[0] = 0;
}

/* Only async-signal-safe calls: write the prepared reply, clean up, die of the signal. */
static void on_fatal(int sig) {
  if (fatal_len) {
    const char* what = sig == SIGALRM ? "timeout" : "runtime_error";
    char line[1400];
    size_t n = 0;
    const char* parts[] = {"{\"id\":\"", fatal_id, "\",\"ok\":false,\"error\":\"", what, "\",\"message\":\"", NULL};
    for (int i = 0; parts[i]; i++)
      for (const char* p = parts[i]; *p && n < sizeof line - 200; p++) line[n++] = *p;
    for (size_t i = 0; i < fatal_len && n < sizeof line - 200; i++) line[n++] = fatal_reply[i];
    const char* tail = sig == SIGALRM ? " ran past the request's timeout (worker exits)"
                       : sig == SIGSEGV ? " crashed the worker (SIGSEGV)"
                       : sig == SIGBUS  ? " crashed the worker (SIGBUS)"
                       : sig == SIGFPE  ? " crashed the worker (SIGFPE)"
                       : sig == SIGILL  ? " crashed the worker (SIGILL)"
                                        : " crashed the worker (SIGABRT)";
    for (const char* p = tail; *p; p++) line[n++] = *p;
    const char* exiting = "\",\"exiting\":true}";
    for (const char* p = exiting; *p; p++) line[n++] = *p;
    line[n++] = '\n';
    ssize_t w = write(proto_fd, line, n);
    (void)w;
  }
  remove_temp();
  signal(sig, SIG_DFL);
  raise(sig);
}

static void install_handlers(void) {
  int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGALRM};
  for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_fatal;
    sigemptyset(&sa.sa_mask);
    sigaction(sigs[i], &sa, NULL);
  }
  signal(SIGPIPE, SIG_DFL); /* the host went away: die quietly */
}

/* Arms the fatal reply of request `id` about `what` (JSON-escaped here, while it is safe). */
static void arm(const char* id, const char* what, unsigned timeout_ms) {
  fatal_id = id;
  fatal_len = 0;
  for (const char* p = what; *p && fatal_len < sizeof fatal_reply - 8; p++) {
    unsigned char c = (unsigned char)*p;
    if (c == '"' || c == '\\') fatal_reply[fatal_len++] = '\\';
    fatal_reply[fatal_len++] = c < 0x20 ? '?' : (char)c;
  }
  struct itimerval t = {{0, 0}, {timeout_ms / 1000, (timeout_ms % 1000) * 1000}};
  setitimer(ITIMER_REAL, &t, NULL);
}

static void disarm(void) {
  struct itimerval t = {{0, 0}, {0, 0}};
  setitimer(ITIMER_REAL, &t, NULL);
  fatal_len = 0;
}

/* ---- replies --------------------------------------------------------------- */

static void reply_error(const char* id, const char* kind, const char* fmt, ...) {
  char msg[4 * TT_ERR_LEN];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fputs("{\"id\":", proto);
  tt_json_string(proto, id);
  fputs(",\"ok\":false,\"error\":", proto);
  tt_json_string(proto, kind);
  fputs(",\"message\":", proto);
  tt_json_string(proto, msg);
  fputs("}\n", proto);
  fflush(proto);
}

/* ---- reading requests ------------------------------------------------------ */

typedef struct {
  char id[64];
  char verb[16];
  unsigned char* blob[2]; /* measure: lib; bench: model, params */
  size_t blob_len[2];
  char symbol[128];
  size_t counts[MAX_ARGS];
  int is_out[MAX_ARGS];
  int nargs;
  tt_timing timing;
  int flush, threads;
  uint32_t seed;
  unsigned timeout_ms;
  char bad[TT_ERR_LEN];
} request;

static void set_bad(request* r, const char* fmt, ...) {
  if (r->bad[0]) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->bad, sizeof r->bad, fmt, ap);
  va_end(ap);
}

/* Reads and drops n bytes (a payload that does not fit in memory); -1 when the stream ends first. */
static int skip_bytes(size_t n) {
  unsigned char buf[65536];
  while (n > 0) {
    size_t k = fread(buf, 1, n < sizeof buf ? n : sizeof buf, stdin);
    if (k == 0) return -1;
    n -= k;
  }
  return 0;
}

/* Reads a payload of n bytes; -1 when the stream ends first (the host is gone), -2 when
   it does not fit in memory (its bytes are read and dropped, so the stream stays in step). */
static int read_blob(size_t n, unsigned char** out) {
  unsigned char* b = malloc(n ? n : 1);
  if (!b) return skip_bytes(n) == 0 ? -2 : -1;
  size_t got = 0;
  while (got < n) {
    size_t k = fread(b + got, 1, n - got, stdin);
    if (k == 0) {
      free(b);
      return -1;
    }
    got += k;
  }
  *out = b;
  return 0;
}

/* One field line (`key value`); a blob field reads its payload. -1: the stream ended. */
static int parse_field(request* r, char* line) {
  char* value = strchr(line, ' ');
  if (value) *value++ = 0;
  else value = line + strlen(line);
  unsigned long long v;
  int blob = !strcmp(line, "lib") || !strcmp(line, "model") ? 0 : !strcmp(line, "params") ? 1 : -1;
  if (blob >= 0) {
    if (tt_parse_ull(value, MAX_BLOB_BYTES, &v) != 0) {
      /* Without a length the stream cannot be followed: the request and the session end. */
      set_bad(r, "%s: expected a byte count, got '%s'", line, value);
      return -1;
    }
    unsigned char* b = NULL;
    int rc = read_blob((size_t)v, &b);
    if (rc == -1) return -1;
    if (rc == -2) {
      set_bad(r, "out of memory for %s (%llu bytes)", line, v);
      return 0;
    }
    free(r->blob[blob]);
    r->blob[blob] = b;
    r->blob_len[blob] = (size_t)v;
  } else if (!strcmp(line, "symbol")) {
    if (!*value || strlen(value) >= sizeof r->symbol) set_bad(r, "symbol: expected a name of 1-%zu characters", sizeof r->symbol - 1);
    else snprintf(r->symbol, sizeof r->symbol, "%s", value);
  } else if (!strcmp(line, "in") || !strcmp(line, "out")) {
    if (r->nargs == MAX_ARGS) set_bad(r, "more than %d buffers", MAX_ARGS);
    else if (tt_parse_ull(value, MAX_FLOATS_PER_ARG, &v) != 0) set_bad(r, "buffer %d: expected an element count, got '%s'", r->nargs, value);
    else {
      r->is_out[r->nargs] = line[0] == 'o';
      r->counts[r->nargs++] = (size_t)v;
    }
  } else if (!strcmp(line, "threads") || !strcmp(line, "timeout_ms")) {
    if (tt_parse_ull(value, 1000000000, &v) != 0 || v == 0) set_bad(r, "%s: expected a positive integer, got '%s'", line, value);
    else if (line[1] == 'h') r->threads = (int)v;
    else r->timeout_ms = (unsigned)v;
  } else if (!tt_parse_timing_field(line, value, &r->timing, &r->flush, &r->seed, r->bad)) {
    set_bad(r, "unknown field '%s'", line);
  }
  return 0;
}

static void free_request(request* r) {
  free(r->blob[0]);
  free(r->blob[1]);
  memset(r, 0, sizeof *r);
}

/* Writes a payload to a fresh file of the temp directory (a new inode each time, so
   dlopen never mistakes it for the library of an earlier request). */
static int write_temp(char* path, size_t cap, const char* name, const unsigned char* data, size_t n, char* err) {
  static unsigned seq;
  snprintf(path, cap, "%s/%u-%s", tmp_dir, ++seq, name);
  FILE* f = fopen(path, "wb");
  if (!f || fwrite(data, 1, n, f) != n || fclose(f) != 0) {
    snprintf(err, TT_ERR_LEN, "cannot write '%s' on the device: %s", path, strerror(errno));
    if (f) fclose(f);
    unlink(path);
    path[0] = 0;
    return -1;
  }
  return 0;
}

/* A kernel library's thread pool (pool/tt_pool.c) reads OMP_NUM_THREADS when it first runs a
   parallel loop, i.e. after this, in each library this worker loads. */
static void set_threads(int n) {
  if (n <= 0) return;
  char s[16];
  snprintf(s, sizeof s, "%d", n);
  setenv("OMP_NUM_THREADS", s, 1);
#ifdef _OPENMP
  omp_set_num_threads(n);
#endif
}

/* ---- info: what the hardware fingerprint is made of ---------------------- */

/* The value of the first /proc/cpuinfo line whose key is one of `keys`, or "". */
static void cpuinfo_value(const char* const* keys, char* out, size_t cap) {
  out[0] = 0;
  FILE* f = fopen("/proc/cpuinfo", "r");
  if (!f) return;
  char line[4096];
  while (!out[0] && fgets(line, sizeof line, f)) {
    char* colon = strchr(line, ':');
    if (!colon) continue;
    size_t klen = (size_t)(colon - line);
    while (klen > 0 && (line[klen - 1] == ' ' || line[klen - 1] == '\t')) klen--;
    for (int i = 0; keys[i]; i++) {
      if (strlen(keys[i]) == klen && !strncmp(line, keys[i], klen)) {
        char* v = colon + 1;
        while (*v == ' ' || *v == '\t') v++;
        tt_chomp(v);
        snprintf(out, cap, "%s", v);
        break;
      }
    }
  }
  fclose(f);
}

/* The signature of a describe library's function (info's `lib` and `symbol`): one JSON
   value into `out`, 0; else non-zero with `err` set. OpenCL's is tt_opencl_describe
   (native/opencl/tt_opencl_describe.c): the device's platforms and devices, listed by
   the OpenCL runtime, which opens libOpenCL with dlopen, so this worker links nothing of it. */
typedef int (*describe_fn)(char* out, size_t outlen, char* err, size_t errlen);
#define DESCRIBE_BYTES (1 << 20)

/* Runs the request's describe library: its JSON (malloc'd), or NULL with `why` set. */
static char* run_describe(const request* r, char* why) {
  char err[TT_ERR_LEN];
  if (!r->symbol[0]) {
    snprintf(why, TT_ERR_LEN, "info: a describe library ('lib') needs its 'symbol'");
    return NULL;
  }
  if (write_temp(tmp_file, sizeof tmp_file, "describe.so", r->blob[0], r->blob_len[0], err) != 0) {
    snprintf(why, TT_ERR_LEN, "%s", err);
    return NULL;
  }
  char what[256];
  snprintf(what, sizeof what, "the describe library's '%s'", r->symbol);
  fflush(proto);
  arm(r->id, what, r->timeout_ms);
  void* lib = dlopen(tmp_file, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    disarm();
    snprintf(why, TT_ERR_LEN, "cannot load the describe library: %s", dlerror());
    return NULL;
  }
  describe_fn fn;
  *(void**)&fn = dlsym(lib, r->symbol);
  char* out = fn ? malloc(DESCRIBE_BYTES) : NULL;
  if (!fn) snprintf(why, TT_ERR_LEN, "symbol '%s' not found in the describe library", r->symbol);
  else if (!out) snprintf(why, TT_ERR_LEN, "out of memory");
  else if (fn(out, DESCRIBE_BYTES, err, sizeof err) != 0) {
    snprintf(why, TT_ERR_LEN, "%s", err);
    free(out);
    out = NULL;
  } else if (strchr(out, '\n')) { /* one reply line: a value that spans lines would break the stream */
    snprintf(why, TT_ERR_LEN, "'%s' wrote more than one line", r->symbol);
    free(out);
    out = NULL;
  }
  disarm();
  /* Not closed: a driver the library opened may have started threads that outlive it. */
  return out;
}

static void do_info(const request* r) {
  if (r->bad[0]) {
    reply_error(r->id, "bad_request", "%s", r->bad);
    return;
  }
  char describe_error[TT_ERR_LEN] = "";
  char* described = r->blob[0] ? run_describe(r, describe_error) : NULL;
  struct utsname u;
  if (uname(&u) != 0) memset(&u, 0, sizeof u);
  static const char* model_keys[] = {"model name", "Processor", "cpu model", "uarch", "Hardware", NULL};
  static const char* part_keys[] = {"CPU part", NULL};
  static const char* impl_keys[] = {"CPU implementer", NULL};
  static const char* feature_keys[] = {"flags", "Features", "isa", NULL};
  char model[512], part[64], impl[64], features[4096];
  cpuinfo_value(model_keys, model, sizeof model);
  cpuinfo_value(part_keys, part, sizeof part);
  cpuinfo_value(impl_keys, impl, sizeof impl);
  cpuinfo_value(feature_keys, features, sizeof features);
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  fputs("{\"id\":", proto);
  tt_json_string(proto, r->id);
  fputs(",\"ok\":true,\"machine\":", proto);
  tt_json_string(proto, u.machine);
  fputs(",\"sysname\":", proto);
  tt_json_string(proto, u.sysname);
  fputs(",\"release\":", proto);
  tt_json_string(proto, u.release);
  fputs(",\"cpu\":", proto);
  tt_json_string(proto, model);
  fputs(",\"cpu_implementer\":", proto);
  tt_json_string(proto, impl);
  fputs(",\"cpu_part\":", proto);
  tt_json_string(proto, part);
  fputs(",\"features\":", proto);
  tt_json_string(proto, features);
  fprintf(proto, ",\"cores\":%ld", cores);
  if (described) fprintf(proto, ",\"described\":%s", described);
  else if (describe_error[0]) {
    fputs(",\"describe_error\":", proto);
    tt_json_string(proto, describe_error);
  }
  fputs("}\n", proto);
  fflush(proto);
  free(described);
}

/* ---- measure: one candidate library ---------------------------------------- */

/* The outputs follow the reply line as raw float32 payloads, in the order of `lens`. */
static void reply_ok(const request* r, const double* runs, int repeat, int number, const char* extra, float** outs,
                     const size_t* lens, int nouts) {
  fputs("{\"id\":", proto);
  tt_json_string(proto, r->id);
  fputs(",\"ok\":true,\"runs_ms\":[", proto);
  for (int i = 0; i < repeat; i++) {
    if (i) fputc(',', proto);
    tt_json_number(proto, runs[i]);
  }
  fprintf(proto, "],\"number\":%d%s,\"outputs\":[", number, extra);
  for (int i = 0; i < nouts; i++) fprintf(proto, "%s%zu", i ? "," : "", lens[i] * sizeof(float));
  fputs("]}\n", proto);
  for (int i = 0; i < nouts; i++) fwrite(outs[i], sizeof(float), lens[i], proto); /* little-endian devices only */
  fflush(proto);
}

static void flush_caches(void* p) {
  /* Streams through 64 MiB: portable, and a device may lack the host's cache instructions. */
  static volatile char* sweep;
  const size_t bytes = (size_t)64 << 20;
  if (!sweep) sweep = calloc(bytes, 1);
  if (sweep)
    for (size_t off = 0; off < bytes; off += 64) sweep[off] += 1;
  (void)p;
}

static void do_measure(request* r) {
  char err[TT_ERR_LEN];
  if (!r->bad[0] && !r->blob[0]) set_bad(r, "missing field 'lib'");
  if (!r->bad[0] && !r->symbol[0]) set_bad(r, "missing field 'symbol'");
  if (!r->bad[0] && r->nargs == 0) set_bad(r, "no buffers (fields 'in' / 'out')");
  if (r->bad[0]) {
    reply_error(r->id, "bad_request", "%s", r->bad);
    return;
  }
  float* bufs[MAX_ARGS] = {0};
  float* outs[MAX_ARGS];
  size_t lens[MAX_ARGS];
  int nouts = 0;
  double* runs = calloc((size_t)r->timing.repeat, sizeof(double));
  void* lib = NULL;
  if (!runs) {
    reply_error(r->id, "runtime_error", "out of memory");
    return;
  }
  for (int i = 0; i < r->nargs; i++) {
    if (!(bufs[i] = tt_alloc_floats(r->counts[i]))) {
      reply_error(r->id, "runtime_error", "out of memory for buffer %d (%zu floats)", i, r->counts[i]);
      goto done;
    }
    if (r->is_out[i]) {
      tt_fill_nan(bufs[i], r->counts[i]);
      outs[nouts] = bufs[i];
      lens[nouts++] = r->counts[i];
    } else {
      tt_fill_uniform(bufs[i], r->counts[i], r->seed, (uint32_t)i);
    }
  }
  if (write_temp(tmp_file, sizeof tmp_file, "kernel.so", r->blob[0], r->blob_len[0], err) != 0) {
    reply_error(r->id, "runtime_error", "%s", err);
    goto done;
  }
  char what[256];
  snprintf(what, sizeof what, "kernel '%s'", r->symbol);
  fflush(proto);
  arm(r->id, what, r->timeout_ms);
  lib = dlopen(tmp_file, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    disarm();
    reply_error(r->id, "runtime_error", "cannot load kernel library: %s", dlerror());
    goto done;
  }
  tt_kernel_fn fn;
  *(void**)&fn = dlsym(lib, r->symbol);
  if (!fn) {
    disarm();
    reply_error(r->id, "runtime_error", "symbol '%s' not found in the library", r->symbol);
    goto done;
  }
  set_threads(r->threads);
  /* A device library (an OpenCL candidate) gets its setup and finish hooks around the timed
     runs, as in tt_measure: the setup builds the device program (a build failure is a
     compile_error with the build log), finish reads the device's outputs back. */
  char msg[4 * TT_ERR_LEN];
  int number = r->timing.number;
  const char* kind = tt_measure_kernel(lib, r->symbol, fn, bufs, &r->timing, r->flush ? flush_caches : NULL, NULL, runs,
                                       &number, msg, sizeof msg);
  disarm();
  if (kind) reply_error(r->id, kind, "%s", msg);
  else reply_ok(r, runs, r->timing.repeat, number, "", outs, lens, nouts);

done:
  if (lib) dlclose(lib);
  for (int i = 0; i < r->nargs; i++) free(bufs[i]);
  free(runs);
}

/* ---- bench: a compiled model (model.so + params.bin) ---------------------- */

typedef struct {
  int (*run)(const float* const*, float* const*);
  const float** inputs;
  float** outputs;
} model_ctx;

static int run_model(void* p) {
  model_ctx* c = (model_ctx*)p;
  return c->run(c->inputs, c->outputs);
}

static void do_bench(request* r) {
  char err[TT_ERR_LEN];
  if (!r->bad[0] && !r->blob[0]) set_bad(r, "missing field 'model'");
  if (!r->bad[0] && !r->blob[1]) set_bad(r, "missing field 'params'");
  if (r->bad[0]) {
    reply_error(r->id, "bad_request", "%s", r->bad);
    return;
  }
  /* The model stays loaded until the worker exits (its pool's threads outlive a run). */
  if (write_temp(tmp_file, sizeof tmp_file, "model.so", r->blob[0], r->blob_len[0], err) != 0 ||
      write_temp(tmp_params, sizeof tmp_params, "params.bin", r->blob[1], r->blob_len[1], err) != 0) {
    reply_error(r->id, "runtime_error", "%s", err);
    return;
  }
  arm(r->id, "the model", r->timeout_ms);
  void* lib = dlopen(tmp_file, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    disarm();
    reply_error(r->id, "runtime_error", "cannot load the model library: %s", dlerror());
    return;
  }
  const char* names[] = {"tt_abi_version", "tt_num_inputs", "tt_input_info", "tt_num_outputs", "tt_output_info",
                         "tt_params_size", "tt_init", "tt_run", "tt_set_num_threads", "tt_last_error"};
  void* f[10];
  for (int i = 0; i < 10; i++) {
    if (!(f[i] = dlsym(lib, names[i]))) {
      disarm();
      reply_error(r->id, "runtime_error", "the model library does not export %s (not a tensortune model)", names[i]);
      return;
    }
  }
  int (*abi)(void) = (int (*)(void))f[0];
  int (*nin_f)(void) = (int (*)(void))f[1];
  const tt_tensor_info* (*in_info)(int) = (const tt_tensor_info* (*)(int))f[2];
  int (*nout_f)(void) = (int (*)(void))f[3];
  const tt_tensor_info* (*out_info)(int) = (const tt_tensor_info* (*)(int))f[4];
  int64_t (*params_size)(void) = (int64_t (*)(void))f[5];
  int (*init)(const float*) = (int (*)(const float*))f[6];
  void (*set_nt)(int) = (void (*)(int))f[8];
  const char* (*last_error)(void) = (const char* (*)(void))f[9];
  if (abi() != TT_ABI_VERSION) {
    disarm();
    reply_error(r->id, "runtime_error", "the model speaks ABI version %d, this worker %d", abi(), TT_ABI_VERSION);
    return;
  }
  float* params = NULL;
  if (tt_load_params(tmp_params, params_size(), &params, err) != 0) {
    disarm();
    reply_error(r->id, "runtime_error", "params: %s", err);
    return;
  }
  int nin = nin_f(), nout = nout_f();
  model_ctx ctx;
  *(void**)&ctx.run = f[7];
  ctx.inputs = calloc((size_t)nin + 1, sizeof(float*));
  ctx.outputs = calloc((size_t)nout + 1, sizeof(float*));
  size_t* lens = calloc((size_t)nout + 1, sizeof(size_t));
  double* runs = calloc((size_t)r->timing.repeat, sizeof(double));
  int failed = !ctx.inputs || !ctx.outputs || !lens || !runs;
  for (int i = 0; !failed && i < nin; i++) {
    size_t n = (size_t)tt_tensor_size(in_info(i));
    float* b = tt_alloc_floats(n);
    if (!b) failed = 1;
    else tt_fill_uniform(b, n, r->seed, (uint32_t)i);
    ctx.inputs[i] = b;
  }
  for (int i = 0; !failed && i < nout; i++) {
    lens[i] = (size_t)tt_tensor_size(out_info(i));
    if (!(ctx.outputs[i] = tt_alloc_floats(lens[i]))) failed = 1;
    else tt_fill_nan(ctx.outputs[i], lens[i]);
  }
  if (failed) {
    disarm();
    reply_error(r->id, "runtime_error", "out of memory for the model's buffers");
  } else {
    int threads = r->threads > 0 ? r->threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
    set_nt(threads);
    if (init(params) != 0) {
      disarm();
      const char* m = last_error();
      reply_error(r->id, "runtime_error", "tt_init failed: %s", m ? m : "");
    } else {
      /* The device's 1-minute load average around the runs (the host's says nothing about it). */
      double load_before = -1, load_after = -1;
      if (getloadavg(&load_before, 1) != 1) load_before = -1;
      int number = r->timing.number;
      int rc = tt_time_runs(run_model, NULL, NULL, &ctx, &r->timing, runs, &number);
      if (getloadavg(&load_after, 1) != 1) load_after = -1;
      disarm();
      if (rc != 0) {
        const char* m = last_error();
        reply_error(r->id, "runtime_error", "tt_run failed (code %d): %s", rc, m ? m : "");
      } else {
        /* The summary tt_bench prints, computed by the same function. */
        tt_stats st = tt_compute_stats(runs, r->timing.repeat);
        char extra[400];
        snprintf(extra, sizeof extra, ",\"threads\":%d,\"cpu_ms\":%.3f,\"mean_ms\":%.17g,\"median_ms\":%.17g,\"max_ms\":%.17g,"
                 "\"min_ms\":%.17g,\"std_ms\":%.17g,\"load_before\":%.2f,\"load_after\":%.2f", threads, tt_cpu_ms(), st.mean,
                 st.median, st.max, st.min, st.std, load_before, load_after);
        reply_ok(r, runs, r->timing.repeat, number, extra, ctx.outputs, lens, nout);
      }
    }
  }
  for (int i = 0; ctx.inputs && i < nin; i++) free((void*)ctx.inputs[i]);
  for (int i = 0; ctx.outputs && i < nout; i++) free(ctx.outputs[i]);
  free(ctx.inputs);
  free(ctx.outputs);
  free(lens);
  free(runs);
  /* params stay alive with the loaded model (tt_init may keep pointers into them). */
}

/* ---- main ------------------------------------------------------------------ */

/* Removes the temp directories of workers that were killed (SIGKILL, a lost connection
   mid-kernel): `tt-remote-<pid>-XXXXXX` whose pid no longer runs. Their files are
   this program's own names, so nothing else is touched. */
static void sweep_stale(const char* base) {
  DIR* d = opendir(base);
  if (!d) return;
  struct dirent* e;
  while ((e = readdir(d))) {
    long pid;
    char rest[16];
    if (sscanf(e->d_name, "tt-remote-%ld-%15s", &pid, rest) != 2 || strlen(rest) != 6 || pid <= 0) continue;
    if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
    char dir[4096], path[4400];
    snprintf(dir, sizeof dir, "%s/%s", base, e->d_name);
    DIR* inner = opendir(dir);
    if (inner) {
      struct dirent* f;
      while ((f = readdir(inner)))
        if (strcmp(f->d_name, ".") && strcmp(f->d_name, "..")) {
          snprintf(path, sizeof path, "%s/%s", dir, f->d_name);
          unlink(path);
        }
      closedir(inner);
    }
    rmdir(dir);
  }
  closedir(d);
}

/* FNV-1a-64 of this program's own file, so the host can check what it installed. */
static uint64_t self_hash(void) {
  FILE* f = fopen("/proc/self/exe", "rb");
  if (!f) return 0;
  uint64_t h = TT_FNV_OFFSET;
  unsigned char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) h = tt_fnv1a64(buf, n, h);
  fclose(f);
  return h;
}

int main(int argc, char** argv) {
  tt_flush_subnormals();
  if (argc > 1 && !strcmp(argv[1], "--version")) {
    printf("tt_remote %d abi %d\n", TT_REMOTE_PROTOCOL, TT_ABI_VERSION);
    return 0;
  }
  if (!tt_host_is_little_endian()) {
    fprintf(stderr, "tt_remote: big-endian devices are not supported\n");
    return 2;
  }
  proto_fd = dup(STDOUT_FILENO);
  if (proto_fd < 0 || !(proto = fdopen(proto_fd, "w")) || dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
    fprintf(stderr, "tt_remote: cannot set up the protocol channel: %s\n", strerror(errno));
    return 2;
  }
  const char* base = getenv("TMPDIR");
  sweep_stale(base && *base ? base : "/tmp");
  snprintf(tmp_dir, sizeof tmp_dir, "%s/tt-remote-%ld-XXXXXX", base && *base ? base : "/tmp", (long)getpid());
  if (!mkdtemp(tmp_dir)) {
    fprintf(stderr, "tt_remote: cannot create a temp directory '%s': %s\n", tmp_dir, strerror(errno));
    return 2;
  }
  atexit(remove_temp);
  install_handlers();
  struct utsname u;
  if (uname(&u) != 0) snprintf(u.machine, sizeof u.machine, "unknown");
  int threads = 1;
#ifdef _OPENMP
  threads = omp_get_max_threads();
#endif
  fprintf(proto, "{\"tt_remote\":%d,\"abi_version\":%d,\"pid\":%ld,\"machine\":", TT_REMOTE_PROTOCOL, TT_ABI_VERSION,
          (long)getpid());
  tt_json_string(proto, u.machine);
  fprintf(proto, ",\"threads\":%d,\"self_fnv\":\"%016llx\"}\n", threads, (unsigned long long)self_hash());
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
    free_request(&req);
    req.timing = (tt_timing){1, 1, 0, 1};
    req.timeout_ms = 60000;
    char* id = strchr(line, ' ');
    if (id) *id++ = 0;
    snprintf(req.verb, sizeof req.verb, "%s", line);
    if (strcmp(line, "measure") && strcmp(line, "bench") && strcmp(line, "info")) {
      /* Not a request this protocol knows: the stream cannot be followed any further. */
      reply_error("", "bad_request", "expected 'measure <id>', 'bench <id>', 'info <id>', 'ping' or 'quit' (protocol %d)",
                  TT_REMOTE_PROTOCOL);
      break;
    }
    if (!id || !*id || strlen(id) >= sizeof req.id ||
        strspn(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.") != strlen(id))
      set_bad(&req, "the id must be 1-63 characters of [A-Za-z0-9_.-]");
    else
      snprintf(req.id, sizeof req.id, "%s", id);
    int ended = 0;
    while (getline(&line, &cap, stdin) >= 0) {
      tt_chomp(line);
      if (!strcmp(line, "end")) {
        ended = 1;
        break;
      }
      if (line[0] && parse_field(&req, line) != 0) break;
    }
    if (!ended) {
      if (req.bad[0]) reply_error(req.id, "bad_request", "%s", req.bad);
      break; /* the stream ended in the middle of a request, or cannot be followed */
    }
    if (req.verb[0] == 'i') do_info(&req);
    else if (req.verb[0] == 'm') do_measure(&req);
    else do_bench(&req);
    /* A loaded library or model runs from memory: its file goes, however the request ended. */
    drop_request_files();
  }
  free(line);
  free_request(&req);
  return 0;
}
