/*
 * tt_bench: loads a compiled model (tensortune.h ABI) and its params, runs it on
 * seeded random or given inputs, and prints TVM's execution time summary.
 * Usage and exit codes: see usage() below and native/README.md.
 */
#define _POSIX_C_SOURCE 200809L

#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tensortune.h"
#include "tt_common.h"

enum { EXIT_USAGE = 2, EXIT_MODEL = 3 };

static void usage(void) {
  fputs("usage: tt_bench MODEL.so PARAMS.bin [--repeat R] [--number N] [--min-repeat-ms M]\n"
        "                [--warmup W] [--threads T] [--alternate-threads A] [--seed S]\n"
        "                [--input NAME=FILE ...] [--save-outputs DIR] [--json FILE|-] [--profile]\n"
        "       tt_bench --version   (prints the ABI version this runner speaks)\n",
        stdout);
}

static void die(int code, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("tt_bench: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(code);
}

static long long parse_int(const char* flag, const char* text, long long min, long long max) {
  char* end;
  errno = 0;
  long long v = strtoll(text, &end, 10);
  if (errno || end == text || *end || v < min || v > max)
    die(EXIT_USAGE, "%s: expected an integer in [%lld, %lld], got '%s'", flag, min, max, text);
  return v;
}

static double parse_nonneg(const char* flag, const char* text) {
  char* end;
  errno = 0;
  double v = strtod(text, &end);
  if (errno || end == text || *end || !(v >= 0) || v > 1e9)
    die(EXIT_USAGE, "%s: expected a non-negative number of milliseconds, got '%s'", flag, text);
  return v;
}

typedef struct {
  const char* name;
  const char* file;
  int used;
} input_file;

typedef struct {
  int (*abi_version)(void);
  int (*num_inputs)(void);
  const tt_tensor_info* (*input_info)(int);
  int (*num_outputs)(void);
  const tt_tensor_info* (*output_info)(int);
  int64_t (*params_size)(void);
  int (*init)(const float*);
  int (*run)(const float* const*, float* const*);
  void (*set_num_threads)(int);
  const char* (*last_error)(void);
} model_api;

typedef struct {
  model_api api;
  const float** inputs;
  float** outputs;
} run_ctx;

static int run_once(void* p) {
  run_ctx* c = (run_ctx*)p;
  return c->api.run(c->inputs, c->outputs);
}

static void* need_symbol(void* lib, const char* path, const char* name) {
  void* sym = dlsym(lib, name);
  if (!sym)
    die(EXIT_USAGE, "MODEL.so '%s': not a tensortune model library (missing symbol %s)", path, name);
  return sym;
}

static const char* model_error(const model_api* api) {
  const char* e = api->last_error();
  return e && *e ? e : "(no message)";
}

static void describe_shape(const tt_tensor_info* t, char* buf, size_t len) {
  size_t used = (size_t)snprintf(buf, len, "[");
  for (int d = 0; d < t->ndim && used < len; d++)
    used += (size_t)snprintf(buf + used, len - used, d ? ",%lld" : "%lld", (long long)t->shape[d]);
  if (used < len) snprintf(buf + used, len - used, "]");
}

/* Output names become file names (engine/runtime/abi.ts: outputFileName): the first
   FILE_NAME_KEEP bytes, each byte outside [A-Za-z0-9._-] turned into '_' ("", "." and
   ".." into "_"); a name that had to change gets "-" and the FNV-1a-32 of all its bytes
   (8 hex digits) appended, so "a/b:0" and "a_b:0" stay apart and "a_b_0" keeps its name.
   `buf` holds at least FILE_NAME_MAX bytes. */
enum { FILE_NAME_KEEP = 64, FILE_NAME_MAX = FILE_NAME_KEEP + 10 };
static void file_name_for(const char* name, char* buf) {
  size_t n = strlen(name), i = 0;
  int changed = n > FILE_NAME_KEEP;
  for (; i < n && i < FILE_NAME_KEEP; i++) {
    char c = name[i];
    int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
             c == '_' || c == '-';
    if (!ok) changed = 1;
    buf[i] = ok ? c : '_';
  }
  buf[i] = 0;
  if (!strcmp(buf, "") || !strcmp(buf, ".") || !strcmp(buf, "..")) {
    strcpy(buf, "_");
    changed = 1;
  }
  if (changed) {
    uint32_t h = 2166136261u;
    for (const unsigned char* p = (const unsigned char*)name; *p; p++) h = (h ^ *p) * 16777619u;
    snprintf(buf + strlen(buf), FILE_NAME_MAX - strlen(buf), "-%08x", (unsigned)h);
  }
}

static void make_dirs(const char* dir) {
  char path[4096];
  if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path)
    die(EXIT_USAGE, "--save-outputs: path too long");
  for (char* p = path + 1;; p++) {
    if (*p == '/' || *p == 0) {
      char saved = *p;
      *p = 0;
      if (mkdir(path, 0777) != 0 && errno != EEXIST)
        die(EXIT_USAGE, "--save-outputs '%s': cannot create directory '%s': %s", dir, path, strerror(errno));
      *p = saved;
      if (!saved) break;
    }
  }
  struct stat st;
  if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
    die(EXIT_USAGE, "--save-outputs '%s': not a directory", dir);
}

/* One row of the summary as Python's f"{x:^12}" joined by spaces, trailing blanks dropped. */
static void print_row(const char* cells[5]) {
  char line[256];
  size_t used = 0;
  for (int i = 0; i < 5; i++) {
    int len = (int)strlen(cells[i]);
    int pad = len < 12 ? 12 - len : 0;
    used += (size_t)snprintf(line + used, sizeof line - used, "%s%*s%s%*s", i ? " " : "", pad / 2, "",
                             cells[i], pad - pad / 2, "");
  }
  while (used > 0 && line[used - 1] == ' ') line[--used] = 0;
  puts(line);
}

/* The per-kernel profile (--profile): mean ms per run of each kernel call. */
typedef struct {
  int ncalls;
  const double* ms;
  const char* (*symbol)(int);
} call_profile;

/* The measurements taken at --alternate-threads, one after each at --threads. */
typedef struct {
  int threads; /* 0: none taken */
  int number;
  const double* runs;
} alternate_runs;

static void write_json(FILE* f, const tt_stats* s, const double* runs, int repeat, int number, int threads,
                       int warmup, double min_repeat_ms, unsigned long long seed, double cpu,
                       const call_profile* profile, const alternate_runs* alt) {
  fputs("{\"mean_ms\":", f);
  tt_json_number(f, s->mean);
  fputs(",\"median_ms\":", f);
  tt_json_number(f, s->median);
  fputs(",\"max_ms\":", f);
  tt_json_number(f, s->max);
  fputs(",\"min_ms\":", f);
  tt_json_number(f, s->min);
  fputs(",\"std_ms\":", f);
  tt_json_number(f, s->std);
  fprintf(f, ",\"threads\":%d,\"repeat\":%d,\"number\":%d,\"warmup\":%d,\"min_repeat_ms\":", threads, repeat,
          number, warmup);
  tt_json_number(f, min_repeat_ms);
  fprintf(f, ",\"seed\":%llu,\"runs_ms\":[", seed);
  for (int i = 0; i < repeat; i++) {
    if (i) fputc(',', f);
    tt_json_number(f, runs[i]);
  }
  fputs("],\"cpu_ms\":", f);
  tt_json_number(f, cpu);
  if (alt->threads > 0) {
    fprintf(f, ",\"alternate\":{\"threads\":%d,\"number\":%d,\"runs_ms\":[", alt->threads, alt->number);
    for (int i = 0; i < repeat; i++) {
      if (i) fputc(',', f);
      tt_json_number(f, alt->runs[i]);
    }
    fputs("]}", f);
  }
  if (profile) {
    fputs(",\"profile\":[", f);
    for (int k = 0; k < profile->ncalls; k++) {
      if (k) fputc(',', f);
      fputs("{\"symbol\":", f);
      const char* sym = profile->symbol(k);
      tt_json_string(f, sym ? sym : "");
      fputs(",\"ms\":", f);
      tt_json_number(f, profile->ms[k]);
      fputc('}', f);
    }
    fputc(']', f);
  }
  fprintf(f, ",\"abi_version\":%d}\n", TT_ABI_VERSION);
}

/*
 * --alternate-threads: the `repeat` measurements at `threads` and as many at `alt`, taken in
 * pairs, one right after the other (which goes first alternates), so that measurement r at
 * each count saw the same moment of a shared host. A speed-up read from two separate runs
 * of tt_bench moved between 1.1 and 2.5 on a 2-core VM, where the host
 * changed speed between them; the ratio within a pair is what such a host leaves alone.
 * Each count has its own warm-up and its own `number` (grown to min_repeat_ms as usual).
 */
static int time_alternating(run_ctx* ctx, const tt_timing* timing, int threads, int alt, double* runs, int* number,
                            double* alt_runs, int* alt_number) {
  tt_timing at[2] = {*timing, *timing};
  const int counts[2] = {threads, alt};
  double* out[2] = {runs, alt_runs};
  for (int r = 0; r < timing->repeat; r++) {
    for (int k = 0; k < 2; k++) {
      int which = (r % 2) ? 1 - k : k;
      ctx->api.set_num_threads(counts[which]);
      tt_timing one = at[which];
      one.repeat = 1;
      if (r > 0) one.warmup = 0; /* each count warmed up in its first measurement */
      int used = one.number;
      int rc = tt_time_runs(run_once, NULL, NULL, ctx, &one, &out[which][r], &used);
      if (rc != 0) return rc;
      at[which].number = used; /* the grown number is kept, as within one tt_time_runs */
    }
  }
  *number = at[0].number;
  *alt_number = at[1].number;
  return 0;
}

int main(int argc, char** argv) {
  tt_die_with_parent("tt_bench");
  const char* positional[2] = {NULL, NULL};
  int npos = 0;
  tt_timing timing = {5, 5, 0, 1};
  long long threads = sysconf(_SC_NPROCESSORS_ONLN);
  if (threads < 1) threads = 1;
  long long alt_threads = 0; /* --alternate-threads: also time at this count, measurement by measurement */
  unsigned long long seed = 0;
  const char* save_dir = NULL;
  const char* json_path = NULL;
  int profile = 0; /* --profile: per-kernel times (tt_run_profiled) after the timed runs */
  input_file* input_files = calloc((size_t)argc, sizeof(input_file));
  int ninput_files = 0;
  if (!input_files) die(EXIT_USAGE, "out of memory");

  for (int i = 1; i < argc; i++) {
    const char* a = argv[i];
    if (!strcmp(a, "--version")) {
      printf("%d\n", TT_ABI_VERSION);
      return 0;
    }
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage();
      return 0;
    }
    if (!strcmp(a, "--profile")) {
      profile = 1;
      continue;
    }
    if (strncmp(a, "--", 2) != 0) {
      if (npos == 2) die(EXIT_USAGE, "unexpected argument '%s' (expected MODEL.so PARAMS.bin, then flags)", a);
      positional[npos++] = a;
      continue;
    }
    /* --flag value or --flag=value */
    char flag[64];
    const char* value;
    const char* eq = strchr(a, '=');
    if (eq) {
      size_t n = (size_t)(eq - a) < sizeof flag - 1 ? (size_t)(eq - a) : sizeof flag - 1;
      memcpy(flag, a, n);
      flag[n] = 0;
      value = eq + 1;
    } else {
      snprintf(flag, sizeof flag, "%s", a);
      if (i + 1 >= argc) die(EXIT_USAGE, "%s: missing value", flag);
      value = argv[++i];
    }
    if (!strcmp(flag, "--repeat")) timing.repeat = (int)parse_int(flag, value, 1, 1000000);
    else if (!strcmp(flag, "--number")) timing.number = (int)parse_int(flag, value, 1, 1000000000);
    else if (!strcmp(flag, "--min-repeat-ms")) timing.min_repeat_ms = parse_nonneg(flag, value);
    else if (!strcmp(flag, "--warmup")) timing.warmup = (int)parse_int(flag, value, 0, 1000000);
    else if (!strcmp(flag, "--threads")) threads = parse_int(flag, value, 1, 4096);
    else if (!strcmp(flag, "--alternate-threads")) alt_threads = parse_int(flag, value, 1, 4096);
    else if (!strcmp(flag, "--seed")) seed = (unsigned long long)parse_int(flag, value, 0, 4294967295LL);
    else if (!strcmp(flag, "--save-outputs")) save_dir = value;
    else if (!strcmp(flag, "--json")) json_path = value;
    else if (!strcmp(flag, "--input")) {
      const char* sep = strchr(value, '=');
      if (!sep || sep == value || !sep[1]) die(EXIT_USAGE, "--input: expected NAME=FILE, got '%s'", value);
      char* name = strndup(value, (size_t)(sep - value));
      if (!name) die(EXIT_USAGE, "out of memory");
      for (int k = 0; k < ninput_files; k++)
        if (!strcmp(input_files[k].name, name)) die(EXIT_USAGE, "--input: input '%s' given twice", name);
      input_files[ninput_files].name = name;
      input_files[ninput_files].file = sep + 1;
      ninput_files++;
    } else {
      die(EXIT_USAGE, "unknown flag '%s' (see --help)", flag);
    }
  }
  if (npos < 2) die(EXIT_USAGE, "expected MODEL.so and PARAMS.bin (see --help)");
  const char* model_path = positional[0];
  const char* params_path = positional[1];

  /* Load the library; a path without '/' would make dlopen search the library path. */
  char libpath[4096];
  snprintf(libpath, sizeof libpath, "%s%s", strchr(model_path, '/') ? "" : "./", model_path);
  void* lib = dlopen(libpath, RTLD_NOW | RTLD_LOCAL);
  if (!lib) die(EXIT_USAGE, "MODEL.so '%s': cannot load: %s", model_path, dlerror());

  run_ctx ctx;
  model_api* api = &ctx.api;
  *(void**)&api->abi_version = need_symbol(lib, model_path, "tt_abi_version");
  int abi = api->abi_version();
  if (abi != TT_ABI_VERSION)
    die(EXIT_USAGE,
        "MODEL.so '%s': built for tensortune ABI version %d, this runner speaks version %d; "
        "recompile the model with this version of tensortune",
        model_path, abi, TT_ABI_VERSION);
  *(void**)&api->num_inputs = need_symbol(lib, model_path, "tt_num_inputs");
  *(void**)&api->input_info = need_symbol(lib, model_path, "tt_input_info");
  *(void**)&api->num_outputs = need_symbol(lib, model_path, "tt_num_outputs");
  *(void**)&api->output_info = need_symbol(lib, model_path, "tt_output_info");
  *(void**)&api->params_size = need_symbol(lib, model_path, "tt_params_size");
  *(void**)&api->init = need_symbol(lib, model_path, "tt_init");
  *(void**)&api->run = need_symbol(lib, model_path, "tt_run");
  *(void**)&api->set_num_threads = need_symbol(lib, model_path, "tt_set_num_threads");
  *(void**)&api->last_error = need_symbol(lib, model_path, "tt_last_error");

  char err[TT_ERR_LEN];
  float* params;
  if (tt_load_params(params_path, api->params_size(), &params, err) != 0) die(EXIT_USAGE, "%s", err);

  int nin = api->num_inputs(), nout = api->num_outputs();
  if (nin < 0 || nout < 1) die(EXIT_USAGE, "MODEL.so '%s': reports %d inputs and %d outputs", model_path, nin, nout);
  for (int i = 0; i < nin; i++)
    if (tt_tensor_size(api->input_info(i)) < 0)
      die(EXIT_USAGE, "MODEL.so '%s': input %d has a malformed description", model_path, i);
  for (int i = 0; i < nout; i++)
    if (tt_tensor_size(api->output_info(i)) < 0)
      die(EXIT_USAGE, "MODEL.so '%s': output %d has a malformed description", model_path, i);
  for (int k = 0; k < ninput_files; k++) {
    for (int i = 0; i < nin; i++)
      if (!strcmp(api->input_info(i)->name, input_files[k].name)) input_files[k].used = 1;
    if (!input_files[k].used) {
      char names[1024] = "";
      size_t used = 0;
      for (int i = 0; i < nin && used < sizeof names; i++)
        used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", i ? ", " : "", api->input_info(i)->name);
      die(EXIT_USAGE, "--input %s=%s: the model has no input named '%s' (its inputs: %s)", input_files[k].name,
          input_files[k].file, input_files[k].name, names);
    }
  }

  ctx.inputs = calloc((size_t)nin + 1, sizeof(float*));
  ctx.outputs = calloc((size_t)nout, sizeof(float*));
  long long* out_sizes = calloc((size_t)nout, sizeof(long long));
  if (!ctx.inputs || !ctx.outputs || !out_sizes) die(EXIT_USAGE, "out of memory");
  for (int i = 0; i < nin; i++) {
    const tt_tensor_info* t = api->input_info(i);
    long long n = tt_tensor_size(t);
    float* buf = tt_alloc_floats((size_t)n);
    if (!buf) die(EXIT_USAGE, "out of memory for input '%s' (%lld values)", t->name, n);
    const char* file = NULL;
    for (int k = 0; k < ninput_files; k++)
      if (!strcmp(input_files[k].name, t->name)) file = input_files[k].file;
    if (file) {
      char what[512], shape[256];
      describe_shape(t, shape, sizeof shape);
      snprintf(what, sizeof what, "--input %s (shape %s)", t->name, shape);
      if (tt_read_floats(what, file, buf, (size_t)n, err) != 0) die(EXIT_USAGE, "%s", err);
    } else {
      tt_fill_uniform(buf, (size_t)n, (uint32_t)seed, (uint32_t)i);
      /* Integer inputs (ids, masks) get 0 or 1 from the same stream: valid as an index into
         any axis of two or more, and as a mask (engine/runtime/random.ts, modelInput). */
      if (t->dtype != TT_FLOAT32) {
        int32_t* words = (int32_t*)(void*)buf;
        for (long long k = 0; k < n; k++) words[k] = buf[k] >= 0.5f;
      }
    }
    ctx.inputs[i] = buf;
  }
  for (int i = 0; i < nout; i++) {
    const tt_tensor_info* t = api->output_info(i);
    long long n = tt_tensor_size(t);
    ctx.outputs[i] = tt_alloc_floats((size_t)n);
    if (!ctx.outputs[i]) die(EXIT_USAGE, "out of memory for output '%s' (%lld values)", t->name, n);
    tt_fill_nan(ctx.outputs[i], (size_t)n);
    out_sizes[i] = n;
  }
  /* The file names of the outputs (--save-outputs), checked before anything runs. */
  char(*fnames)[FILE_NAME_MAX] = NULL;
  if (save_dir) {
    make_dirs(save_dir);
    fnames = calloc((size_t)nout, FILE_NAME_MAX);
    if (!fnames) die(EXIT_USAGE, "out of memory");
    for (int i = 0; i < nout; i++) {
      file_name_for(api->output_info(i)->name, fnames[i]);
      /* The same name twice is one value listed twice (ONNX allows it): both write its one file. */
      for (int j = 0; j < i; j++)
        if (!strcmp(fnames[i], fnames[j]) && strcmp(api->output_info(i)->name, api->output_info(j)->name))
          die(EXIT_USAGE, "--save-outputs: outputs '%s' and '%s' would both be saved as %s.bin", api->output_info(j)->name,
              api->output_info(i)->name, fnames[i]);
    }
  }

  api->set_num_threads((int)threads);
  if (api->init(params) != 0) die(EXIT_MODEL, "MODEL.so '%s': tt_init failed: %s", model_path, model_error(api));

  double* runs = calloc((size_t)timing.repeat, sizeof(double));
  double* alt_runs = calloc((size_t)timing.repeat, sizeof(double));
  if (!runs || !alt_runs) die(EXIT_USAGE, "out of memory");
  int number = timing.number;
  alternate_runs alt = {0, timing.number, alt_runs};
  int rc;
  if (alt_threads == 0) {
    rc = tt_time_runs(run_once, NULL, NULL, &ctx, &timing, runs, &number);
  } else {
    rc = time_alternating(&ctx, &timing, (int)threads, (int)alt_threads, runs, &number, alt_runs, &alt.number);
    alt.threads = (int)alt_threads;
    api->set_num_threads((int)threads); /* the profile and the outputs' run: at --threads */
  }
  if (rc != 0) die(EXIT_MODEL, "MODEL.so '%s': tt_run failed (code %d): %s", model_path, rc, model_error(api));

  if (save_dir) {
    for (int i = 0; i < nout; i++) {
      char path[4096];
      snprintf(path, sizeof path, "%s/%s.bin", save_dir, fnames[i]);
      if (tt_write_floats(path, ctx.outputs[i], (size_t)out_sizes[i], err) != 0)
        die(EXIT_USAGE, "--save-outputs %s", err);
    }
  }

  /* --profile: `repeat` more runs, each call's time summed by the model, then averaged per run. */
  int ncalls = 0;
  double* call_ms = NULL;
  const char* (*call_symbol)(int) = NULL;
  if (profile) {
    int (*num_calls)(void) = (int (*)(void))dlsym(lib, "tt_num_calls");
    int (*run_profiled)(const float* const*, float* const*, double*) =
        (int (*)(const float* const*, float* const*, double*))dlsym(lib, "tt_run_profiled");
    *(void**)&call_symbol = dlsym(lib, "tt_call_symbol");
    if (!num_calls || !run_profiled || !call_symbol)
      die(EXIT_USAGE, "--profile: MODEL.so '%s' has no per-kernel profile (tt_run_profiled): a GPU model, or one compiled "
          "by an older tensortune; recompile it", model_path);
    ncalls = num_calls();
    if (ncalls < 0 || ncalls > 1000000) die(EXIT_USAGE, "--profile: MODEL.so '%s' reports %d kernel calls", model_path, ncalls);
    call_ms = calloc((size_t)(ncalls > 0 ? ncalls : 1), sizeof(double));
    if (!call_ms) die(EXIT_USAGE, "out of memory");
    for (int r = 0; r < timing.repeat; r++) {
      int prc = run_profiled((const float* const*)ctx.inputs, ctx.outputs, call_ms);
      if (prc != 0) die(EXIT_MODEL, "MODEL.so '%s': tt_run_profiled failed (code %d): %s", model_path, prc, model_error(api));
    }
    for (int k = 0; k < ncalls; k++) call_ms[k] /= timing.repeat;
  }

  tt_stats s = tt_compute_stats(runs, timing.repeat);
  char c[5][32];
  double vals[5] = {s.mean, s.median, s.max, s.min, s.std};
  const char* heads[5] = {"mean (ms)", "median (ms)", "max (ms)", "min (ms)", "std (ms)"};
  const char* cells[5];
  for (int i = 0; i < 5; i++) {
    snprintf(c[i], sizeof c[i], "%.4f", vals[i]);
    cells[i] = c[i];
  }
  puts("Execution time summary:");
  print_row(heads);
  print_row(cells);

  call_profile prof = {ncalls, call_ms, call_symbol};
  if (profile && !json_path) {
    puts("Per-kernel profile (mean ms per run, in call order):");
    for (int k = 0; k < ncalls; k++) printf("  %4d  %10.4f  %s\n", k, call_ms[k], call_symbol(k) ? call_symbol(k) : "?");
  }
  if (json_path) {
    double cpu = tt_cpu_ms();
    if (!strcmp(json_path, "-")) {
      write_json(stdout, &s, runs, timing.repeat, number, (int)threads, timing.warmup, timing.min_repeat_ms, seed, cpu,
                 profile ? &prof : NULL, &alt);
    } else {
      FILE* f = fopen(json_path, "w");
      if (!f) die(EXIT_USAGE, "--json '%s': cannot write: %s", json_path, strerror(errno));
      write_json(f, &s, runs, timing.repeat, number, (int)threads, timing.warmup, timing.min_repeat_ms, seed, cpu,
                 profile ? &prof : NULL, &alt);
      if (fclose(f) != 0) die(EXIT_USAGE, "--json '%s': write error: %s", json_path, strerror(errno));
    }
  }
  fflush(stdout);
  /* The library stays loaded: unloading it would join its thread pool's threads (tt_pool.h), for nothing at exit. */
  for (int i = 0; i < nin; i++) free((void*)ctx.inputs[i]);
  for (int i = 0; i < nout; i++) free(ctx.outputs[i]);
  for (int k = 0; k < ninput_files; k++) free((void*)input_files[k].name);
  free(ctx.inputs);
  free(ctx.outputs);
  free(out_sizes);
  free(fnames);
  free(input_files);
  free(runs);
  free(alt_runs);
  free(call_ms);
  free(params);
  return 0;
}
