#define _POSIX_C_SOURCE 200809L

#include "tt_common.h"
#include "tt_fpmode.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <signal.h>
#include <sys/prctl.h>
#endif

#include "tensortune.h"

#define TT_MAX_NUMBER 1000000000

static int fail(char* err, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, TT_ERR_LEN, fmt, ap);
  va_end(ap);
  return -1;
}

void tt_die_with_parent(const char* program) {
  const char* want = getenv("TT_PARENT_PID");
  if (!want || !*want) return;
  char* end;
  long parent = strtol(want, &end, 10);
  if (*end || parent <= 0) return;
#ifdef __linux__
  prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
  /* The parent may have died between fork and the request: then we were re-parented. */
  if ((long)getppid() != parent) {
    fprintf(stderr, "%s: parent process %ld is gone, exiting\n", program, parent);
    _exit(1);
  }
}

double tt_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

uint32_t tt_mix32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x85ebca6bu;
  x ^= x >> 13;
  x *= 0xc2b2ae35u;
  x ^= x >> 16;
  return x;
}

void tt_fill_uniform(float* dst, size_t n, uint32_t seed, uint32_t stream) {
  uint32_t key = tt_mix32(seed ^ tt_mix32(stream + 1u));
  for (size_t i = 0; i < n; i++) {
    uint32_t u = tt_mix32(key + (uint32_t)i * 0x9e3779b9u);
    dst[i] = (float)(u >> 8) * (1.0f / 16777216.0f);
  }
}

void tt_fill_nan(float* dst, size_t n) {
  for (size_t i = 0; i < n; i++) dst[i] = NAN;
}

float* tt_alloc_floats(size_t n) {
  if (n > (SIZE_MAX - 64) / sizeof(float)) return NULL;
  size_t bytes = n * sizeof(float);
  bytes = bytes < 64 ? 64 : (bytes + 63) / 64 * 64;
  return (float*)aligned_alloc(64, bytes);
}

uint64_t tt_fnv1a64(const void* data, size_t n, uint64_t h) {
  const unsigned char* p = (const unsigned char*)data;
  for (size_t i = 0; i < n; i++) {
    h ^= p[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}

int tt_host_is_little_endian(void) {
  const uint32_t one = 1;
  unsigned char b;
  memcpy(&b, &one, 1);
  return b == 1;
}

static void swap32(void* data, size_t count) {
  unsigned char* p = (unsigned char*)data;
  for (size_t i = 0; i < count; i++, p += 4) {
    unsigned char t = p[0];
    p[0] = p[3];
    p[3] = t;
    t = p[1];
    p[1] = p[2];
    p[2] = t;
  }
}

/* Opens a file for reading that must be a regular file. The open itself is non-blocking, so a
 * FIFO (which would wait for a writer) or a device is refused at once by the fstat check instead
 * of hanging; the descriptor is made blocking again before it is read. */
static FILE* open_regular(const char* what, const char* path, char* err) {
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    fail(err, "%s '%s': cannot open: %s", what, path, strerror(errno));
    return NULL;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    fail(err, "%s '%s': not a regular file", what, path);
    return NULL;
  }
  int flags = fcntl(fd, F_GETFL);
  if (flags >= 0) fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  FILE* f = fdopen(fd, "rb");
  if (!f) {
    close(fd);
    fail(err, "%s '%s': cannot open: %s", what, path, strerror(errno));
  }
  return f;
}

static uint64_t load_u64le(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

int tt_read_floats(const char* what, const char* path, float* dst, size_t count, char* err) {
  FILE* f = open_regular(what, path, err);
  if (!f) return -1;
  struct stat st;
  if (fstat(fileno(f), &st) != 0) {
    fclose(f);
    return fail(err, "%s '%s': cannot stat: %s", what, path, strerror(errno));
  }
  size_t want = count * sizeof(float);
  if ((uint64_t)st.st_size != (uint64_t)want) {
    fclose(f);
    return fail(err, "%s '%s': expected %zu bytes (%zu float32 values), the file has %lld bytes",
                what, path, want, count, (long long)st.st_size);
  }
  size_t got = count ? fread(dst, sizeof(float), count, f) : 0;
  fclose(f);
  if (got != count) return fail(err, "%s '%s': read error", what, path);
  if (!tt_host_is_little_endian()) swap32(dst, count);
  return 0;
}

int tt_write_floats(const char* path, const float* src, size_t count, char* err) {
  FILE* f = fopen(path, "wb");
  if (!f) return fail(err, "'%s': cannot write: %s", path, strerror(errno));
  int ok = 1;
  if (tt_host_is_little_endian()) {
    ok = count == 0 || fwrite(src, sizeof(float), count, f) == count;
  } else {
    for (size_t i = 0; i < count && ok; i++) {
      float v = src[i];
      swap32(&v, 1);
      ok = fwrite(&v, sizeof v, 1, f) == 1;
    }
  }
  if (fclose(f) != 0) ok = 0;
  if (!ok) return fail(err, "'%s': write error: %s", path, strerror(errno));
  return 0;
}

int tt_load_params(const char* path, int64_t expected, float** out, char* err) {
  *out = NULL;
  if (expected < 0) return fail(err, "the model reports a negative params size (%lld)", (long long)expected);
  FILE* f = open_regular("PARAMS.bin", path, err);
  if (!f) return -1;
  struct stat st;
  if (fstat(fileno(f), &st) != 0) {
    fclose(f);
    return fail(err, "PARAMS.bin '%s': cannot stat: %s", path, strerror(errno));
  }
  unsigned char h[TT_PARAMS_HEADER_BYTES];
  if (st.st_size < TT_PARAMS_HEADER_BYTES || fread(h, 1, sizeof h, f) != sizeof h) {
    fclose(f);
    return fail(err, "PARAMS.bin '%s': shorter than the %d-byte header, not a tensortune params file",
                path, TT_PARAMS_HEADER_BYTES);
  }
  if (memcmp(h, TT_PARAMS_MAGIC, 8) != 0) {
    fclose(f);
    return fail(err, "PARAMS.bin '%s': bad magic, expected \"%s\" (not a tensortune params file)", path,
                TT_PARAMS_MAGIC);
  }
  uint64_t count = load_u64le(h + 8), hash = load_u64le(h + 16), reserved = load_u64le(h + 24);
  if (reserved != 0) {
    fclose(f);
    return fail(err, "PARAMS.bin '%s': reserved header bytes 24..31 are not zero (written by a newer tensortune?)",
                path);
  }
  if (count != (uint64_t)expected) {
    fclose(f);
    return fail(err, "PARAMS.bin '%s': holds %llu float32 values, the model expects %lld", path,
                (unsigned long long)count, (long long)expected);
  }
  uint64_t want = TT_PARAMS_HEADER_BYTES + count * sizeof(float);
  if ((uint64_t)st.st_size != want) {
    fclose(f);
    return fail(err, "PARAMS.bin '%s': header says %llu values (%llu bytes in all), the file has %lld bytes",
                path, (unsigned long long)count, (unsigned long long)want, (long long)st.st_size);
  }
  float* data = tt_alloc_floats((size_t)count);
  if (!data) {
    fclose(f);
    return fail(err, "PARAMS.bin '%s': out of memory for %llu values", path, (unsigned long long)count);
  }
  size_t got = count ? fread(data, sizeof(float), (size_t)count, f) : 0;
  fclose(f);
  if (got != count) {
    free(data);
    return fail(err, "PARAMS.bin '%s': read error", path);
  }
  uint64_t actual = tt_fnv1a64(data, (size_t)count * sizeof(float), TT_FNV_OFFSET);
  if (actual != hash) {
    free(data);
    return fail(err, "PARAMS.bin '%s': payload hash mismatch (header %016llx, payload %016llx): the file is corrupt or truncated",
                path, (unsigned long long)hash, (unsigned long long)actual);
  }
  if (!tt_host_is_little_endian()) swap32(data, (size_t)count);
  *out = data;
  return 0;
}

int tt_time_runs(tt_run_fn run, tt_prep_fn prep, tt_clock_fn clock, void* ctx, const tt_timing* t,
                 double* runs_ms, int* number_used) {
  int rc;
  for (int w = 0; w < t->warmup; w++) {
    if (prep) prep(ctx);
    if ((rc = run(ctx)) != 0) return rc;
  }
  int number = t->number < 1 ? 1 : t->number;
  for (int r = 0; r < t->repeat; r++) {
    double total;
    for (;;) {
      total = 0;
      if (prep || clock) { /* each run timed alone */
        for (int k = 0; k < number; k++) {
          if (prep) prep(ctx);
          double t0 = tt_now_ms();
          if ((rc = run(ctx)) != 0) return rc;
          total += clock ? clock(ctx) : tt_now_ms() - t0;
        }
      } else {
        double t0 = tt_now_ms();
        for (int k = 0; k < number; k++)
          if ((rc = run(ctx)) != 0) return rc;
        total = tt_now_ms() - t0;
      }
      if (total >= t->min_repeat_ms || number >= TT_MAX_NUMBER) break;
      double next = number * 1.618;
      if (total > 0) {
        double predicted = t->min_repeat_ms / (total / number) + 1;
        if (predicted > next) next = predicted;
      }
      number = next >= TT_MAX_NUMBER ? TT_MAX_NUMBER : (int)ceil(next);
    }
    runs_ms[r] = total / number;
  }
  *number_used = number;
  return 0;
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

tt_stats tt_compute_stats(const double* v, int n) {
  tt_stats s = {0, 0, 0, 0, 0};
  if (n <= 0) return s;
  double* sorted = (double*)malloc(sizeof(double) * (size_t)n);
  if (!sorted) return s;
  memcpy(sorted, v, sizeof(double) * (size_t)n);
  qsort(sorted, (size_t)n, sizeof(double), cmp_double);
  double sum = 0;
  for (int i = 0; i < n; i++) sum += sorted[i];
  s.mean = sum / n;
  s.median = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  s.min = sorted[0];
  s.max = sorted[n - 1];
  double sq = 0;
  for (int i = 0; i < n; i++) sq += (sorted[i] - s.mean) * (sorted[i] - s.mean);
  s.std = sqrt(sq / n);
  free(sorted);
  return s;
}

double tt_cpu_ms(void) {
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) != 0) return -1;
  return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
         (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

long long tt_tensor_size(const tt_tensor_info* t) {
  if (!t || !t->name || t->ndim < 0 || t->ndim > 32 || (t->ndim > 0 && !t->shape)) return -1;
  long long n = 1;
  for (int d = 0; d < t->ndim; d++) {
    if (t->shape[d] < 0 || (t->shape[d] > 0 && n > (1LL << 40) / t->shape[d])) return -1;
    n *= t->shape[d];
  }
  return n;
}

int tt_parse_ull(const char* text, unsigned long long max, unsigned long long* out) {
  char* end;
  errno = 0;
  if (!text || *text < '0' || *text > '9') return -1;
  unsigned long long v = strtoull(text, &end, 10);
  if (errno || *end || v > max) return -1;
  *out = v;
  return 0;
}

void tt_flush_subnormals(void) { tt_fp_set_mode(tt_fp_flushing(tt_fp_mode())); }

void tt_chomp(char* line) {
  size_t n = strlen(line);
  while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = 0;
}

int tt_parse_timing_field(const char* key, const char* value, tt_timing* t, int* flush, uint32_t* seed, char* bad) {
  unsigned long long v;
  char* end;
  char why[TT_ERR_LEN] = "";
  if (!strcmp(key, "number") || !strcmp(key, "repeat") || !strcmp(key, "warmup")) {
    int is_warmup = key[0] == 'w';
    if (tt_parse_ull(value, 1000000000, &v) != 0 || (!is_warmup && v == 0))
      snprintf(why, sizeof why, "%s: expected a%s integer, got '%s'", key, is_warmup ? " non-negative" : " positive", value);
    else if (key[0] == 'n') t->number = (int)v;
    else if (key[0] == 'r') t->repeat = (int)v;
    else t->warmup = (int)v;
  } else if (!strcmp(key, "min_repeat_ms")) {
    double ms = strtod(value, &end);
    if (end == value || *end || !(ms >= 0) || ms > 1e7) snprintf(why, sizeof why, "min_repeat_ms: expected a non-negative number, got '%s'", value);
    else t->min_repeat_ms = ms;
  } else if (!strcmp(key, "flush")) {
    if (strcmp(value, "0") && strcmp(value, "1")) snprintf(why, sizeof why, "flush: expected 0 or 1, got '%s'", value);
    else *flush = value[0] == '1';
  } else if (!strcmp(key, "seed")) {
    if (tt_parse_ull(value, 4294967295ULL, &v) != 0) snprintf(why, sizeof why, "seed: expected a uint32, got '%s'", value);
    else *seed = (uint32_t)v;
  } else {
    return 0;
  }
  if (why[0] && !bad[0]) memcpy(bad, why, TT_ERR_LEN);
  return 1;
}

void tt_json_string(FILE* f, const char* s) {
  fputc('"', f);
  for (const unsigned char* p = (const unsigned char*)s; *p; p++) {
    switch (*p) {
      case '"': fputs("\\\"", f); break;
      case '\\': fputs("\\\\", f); break;
      case '\n': fputs("\\n", f); break;
      case '\r': fputs("\\r", f); break;
      case '\t': fputs("\\t", f); break;
      default:
        if (*p < 0x20) fprintf(f, "\\u%04x", *p);
        else fputc(*p, f);
    }
  }
  fputc('"', f);
}

void tt_json_number(FILE* f, double v) {
  if (isfinite(v)) fprintf(f, "%.9g", v);
  else fputs("null", f);
}

/* ---- device libraries ---------------------------------------------------------------- */

int tt_find_device_hooks(void* lib, const char* symbol, tt_device_hooks* h, char* err, size_t errlen) {
  /* The three required hooks, then the optional device clock. */
  static const char* suffixes[4] = {"_setup", "_finish", "_error", "_elapsed_ms"};
  void* found[4];
  int count = 0;
  size_t n = strlen(symbol) + 16;
  char* name = malloc(n);
  if (!name) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  for (int i = 0; i < 4; i++) {
    snprintf(name, n, "%s%s", symbol, suffixes[i]);
    found[i] = dlsym(lib, name);
    if (i < 3) count += found[i] != NULL;
  }
  free(name);
  if (count != 0 && count != 3) {
    int missing = !found[0] ? 0 : !found[1] ? 1 : 2;
    snprintf(err, errlen, "the library exports some device hooks of '%s' but not '%s%s' (a device library exports "
             "_setup, _finish and _error)", symbol, symbol, suffixes[missing]);
    return -1;
  }
  *(void**)&h->setup = found[0];
  *(void**)&h->finish = found[1];
  *(void**)&h->error = found[2];
  *(void**)&h->elapsed_ms = count == 3 ? found[3] : NULL;
  return count == 3;
}

/* The device library's own account of its last failure, never NULL. */
static const char* hook_message(const tt_device_hooks* h) {
  const char* m = h->error();
  return m ? m : "";
}

typedef struct {
  tt_hook_fn fn;
  float* const* bufs;
  tt_prep_fn flush;
  void* flush_ctx;
  double (*elapsed_ms)(void);
} measure_ctx;

static int measure_run(void* p) {
  measure_ctx* c = (measure_ctx*)p;
  return c->fn(c->bufs);
}

static double measure_clock(void* p) {
  return ((measure_ctx*)p)->elapsed_ms();
}

static void measure_flush(void* p) {
  measure_ctx* c = (measure_ctx*)p;
  c->flush(c->flush_ctx);
}

const char* tt_measure_kernel(void* lib, const char* symbol, tt_hook_fn fn, float* const* bufs, tt_timing* t,
                              tt_prep_fn flush, void* flush_ctx, double* runs_ms, int* number_used, char* err,
                              size_t errlen) {
  tt_device_hooks hooks = {NULL, NULL, NULL, NULL};
  int device = tt_find_device_hooks(lib, symbol, &hooks, err, errlen);
  if (device < 0) return "runtime_error";
  /* Flushing the CPU caches means nothing to a device, whose buffers live in its own
     memory: flush is ignored for device libraries (number and min_repeat_ms stand). */
  if (device) flush = NULL;
  if (flush) { /* every run is preceded by a flush, so each is timed alone */
    t->number = 1;
    t->min_repeat_ms = 0;
  }
  if (device) {
    int rc = hooks.setup(bufs);
    if (rc != 0) {
      const char* m = hook_message(&hooks);
      if (*m) snprintf(err, errlen, "%s", m);
      else snprintf(err, errlen, "'%s_setup' returned %d", symbol, rc);
      return rc == 2 ? "compile_error" : "runtime_error";
    }
  }
  measure_ctx ctx = {fn, bufs, flush, flush_ctx, hooks.elapsed_ms};
  *number_used = t->number;
  int rc = tt_time_runs(measure_run, flush ? measure_flush : NULL, hooks.elapsed_ms ? measure_clock : NULL, &ctx, t,
                        runs_ms, number_used);
  if (rc != 0) {
    const char* m = device ? hook_message(&hooks) : "";
    snprintf(err, errlen, "kernel '%s' returned %d%s%s", symbol, rc, *m ? ": " : "", m);
    if (device) hooks.finish(bufs); /* releases the device; its outputs are not kept */
    return "runtime_error";
  }
  if (device && (rc = hooks.finish(bufs)) != 0) {
    const char* m = hook_message(&hooks);
    snprintf(err, errlen, "'%s_finish' returned %d%s%s", symbol, rc, *m ? ": " : "", m);
    return "runtime_error";
  }
  return NULL;
}
