/* Loading a model compiled by tensortune from a C program: open DIR/model.so, hand it the
   weights of DIR/params.bin, run it once on an input and print, for each output, its shape
   and its largest element (the top-1 class of a classifier).

     cc -O2 -I <tensortune>/native/include run-model.c -o run-model -ldl
     ./run-model dist/tensortune/mobilenet/cpu [input.bin]

   input.bin holds the first input as raw little-endian float32 values (for mobilenet NHWC:
   1*224*224*3 of them); without it the input is all zeros. The ABI is described in
   native/README.md and native/include/tensortune.h. Error handling is kept short. */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensortune.h"

static void fail(const char* what, const char* why) {
  fprintf(stderr, "run-model: %s: %s\n", what, why);
  exit(1);
}

static void* sym(void* lib, const char* name) {
  void* p = dlsym(lib, name);
  if (!p) fail(name, "missing from model.so");
  return p;
}

static int64_t elements(const tt_tensor_info* t) {
  int64_t n = 1;
  for (int d = 0; d < t->ndim; d++) n *= t->shape[d];
  return n;
}

/* 64-byte aligned, as the loaders in native/ allocate every buffer. */
static float* alloc_floats(int64_t n) {
  size_t bytes = ((size_t)n * sizeof(float) + 63) / 64 * 64;
  float* p = aligned_alloc(64, bytes ? bytes : 64);
  if (!p) fail("memory", "out of memory");
  return p;
}

int main(int argc, char** argv) {
  if (argc < 2) fail("usage", "run-model DIR [input.bin]");
  char path[4096];

  snprintf(path, sizeof path, "%s/model.so", argv[1]);
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) fail(path, dlerror());
  int (*abi_version)(void) = (int (*)(void))sym(lib, "tt_abi_version");
  int (*num_inputs)(void) = (int (*)(void))sym(lib, "tt_num_inputs");
  const tt_tensor_info* (*input_info)(int) = (const tt_tensor_info* (*)(int))sym(lib, "tt_input_info");
  int (*num_outputs)(void) = (int (*)(void))sym(lib, "tt_num_outputs");
  const tt_tensor_info* (*output_info)(int) = (const tt_tensor_info* (*)(int))sym(lib, "tt_output_info");
  int64_t (*params_size)(void) = (int64_t (*)(void))sym(lib, "tt_params_size");
  int (*init)(const float*) = (int (*)(const float*))sym(lib, "tt_init");
  int (*run)(const float* const*, float* const*) = (int (*)(const float* const*, float* const*))sym(lib, "tt_run");
  void (*set_num_threads)(int) = (void (*)(int))sym(lib, "tt_set_num_threads");
  const char* (*last_error)(void) = (const char* (*)(void))sym(lib, "tt_last_error");
  if (abi_version() != TT_ABI_VERSION) fail(path, "built for another ABI version");

  /* params.bin: "TTPARAM1", uint64 count, uint64 FNV-1a-64 of the payload, 8 zero bytes,
     then count float32 values (this example does not check the hash; tt_bench does). */
  snprintf(path, sizeof path, "%s/params.bin", argv[1]);
  FILE* f = fopen(path, "rb");
  if (!f) fail(path, "cannot open");
  unsigned char header[32];
  uint64_t count;
  if (fread(header, 1, 32, f) != 32 || memcmp(header, "TTPARAM1", 8) != 0) fail(path, "not a params file");
  memcpy(&count, header + 8, 8); /* little-endian, as the machines we build for */
  if ((int64_t)count != params_size()) fail(path, "its size does not match model.so");
  float* params = alloc_floats((int64_t)count);
  if (fread(params, sizeof(float), count, f) != count) fail(path, "truncated");
  fclose(f);
  /* The model keeps this pointer: params must stay allocated while the model is used. */
  if (init(params) != 0) fail("tt_init", last_error());
  set_num_threads(1);

  int nin = num_inputs(), nout = num_outputs();
  float** inputs = calloc((size_t)nin, sizeof *inputs);
  float** outputs = calloc((size_t)nout, sizeof *outputs);
  for (int i = 0; i < nin; i++) {
    int64_t n = elements(input_info(i));
    inputs[i] = alloc_floats(n);
    memset(inputs[i], 0, (size_t)n * sizeof(float));
    if (i == 0 && argc > 2) {
      FILE* in = fopen(argv[2], "rb");
      if (!in || fread(inputs[i], sizeof(float), (size_t)n, in) != (size_t)n) fail(argv[2], "cannot read the input's float32 values");
      fclose(in);
    }
  }
  for (int i = 0; i < nout; i++) outputs[i] = alloc_floats(elements(output_info(i)));

  if (run((const float* const*)inputs, outputs) != 0) fail("tt_run", last_error());

  for (int i = 0; i < nout; i++) {
    const tt_tensor_info* t = output_info(i);
    int64_t n = elements(t), best = 0;
    for (int64_t k = 1; k < n; k++)
      if (outputs[i][k] > outputs[i][best]) best = k;
    printf("output %s [", t->name);
    for (int d = 0; d < t->ndim; d++) printf("%s%lld", d ? ", " : "", (long long)t->shape[d]);
    printf("]: largest element %lld = %g\n", (long long)best, outputs[i][best]);
  }
  return 0;
}
