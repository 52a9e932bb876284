/*
 * tt_opencl_info: prints the OpenCL platforms and devices this machine offers, and the
 * one TT_OPENCL_PLATFORM / TT_OPENCL_DEVICE select, as one JSON object on stdout
 * (tt_cl_describe, format in native/README.md). engine/native/opencl.ts reads it for
 * the target's hardware fingerprint and to decide whether OpenCL tests can run.
 * Exit codes: 0 printed; 2 usage; 3 no ICD loader, no platform or no device (one line
 * on stderr says which).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensortune.h"
#include "tt_opencl.h"

#define OUT_BYTES (1 << 20)

int main(int argc, char** argv) {
  if (argc > 1 && !strcmp(argv[1], "--version")) {
    printf("%d\n", TT_ABI_VERSION);
    return 0;
  }
  if (argc > 1) {
    fputs("usage: tt_opencl_info            (JSON description of the OpenCL devices)\n"
          "       tt_opencl_info --version  (prints the ABI version of this tool)\n",
          stderr);
    return 2;
  }
  char* out = malloc(OUT_BYTES);
  char err[4096];
  if (!out) {
    fputs("tt_opencl_info: out of memory\n", stderr);
    return 3;
  }
  if (tt_cl_describe(out, OUT_BYTES, err, sizeof err) != 0) {
    fprintf(stderr, "tt_opencl_info: %s\n", err);
    free(out);
    return 3;
  }
  printf("%s\n", out);
  free(out);
  return 0;
}
