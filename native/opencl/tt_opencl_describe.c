/*
 * A describe library for tt_remote's info request (native/README.md, "tt_remote"): the
 * OpenCL runtime's listing of the platforms and devices (tt_cl_describe, the JSON
 * tt_opencl_info prints), exported under one name. engine/remote/ builds it with the
 * device's compiler, linked with the runtime object that OpenCL candidates link, and sends
 * it in the info request of an OpenCL target: the runtime opens libOpenCL with dlopen, so
 * neither this library nor tt_remote links anything of OpenCL.
 */
#include <stddef.h>

#include "tensortune.h"
#include "tt_opencl.h"

TT_EXPORT int tt_opencl_describe(char* out, size_t outlen, char* err, size_t errlen) {
  return tt_cl_describe(out, outlen, err, errlen);
}
