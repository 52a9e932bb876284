/*
 * tensortune OpenCL runtime (the contract is in native/include/tt_opencl.h).
 *
 * libOpenCL is opened with dlopen and the few cl* entry points used here are resolved
 * by hand into a function table (`cl` below). No library does this for us: the usual
 * answer is to link -lOpenCL, which would make every library that contains this file
 * fail to load on a machine without an ICD loader, and would need an OpenCL library for
 * the target to cross-compile. Only <CL/cl.h> is needed at build time.
 *
 * Not thread-safe: one thread at a time may call into a program (the loaders in native/
 * and compiled models call from one thread). libOpenCL, once opened, is never closed:
 * drivers (PoCL among them) start threads and register exit handlers that do not survive
 * being unloaded, and the measurement worker loads and unloads candidate libraries that
 * each contain a copy of this file; dlopen's reference count makes them share one copy.
 */
#define CL_TARGET_OPENCL_VERSION 120

#include "tt_opencl.h"

#include <CL/cl.h>
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TT_CL_ERR_LEN 4096
#define TT_CL_LOG_LINES 12

/* ---- the function table ---------------------------------------------------- */

#define TT_CL_FUNCTIONS(X)                                                                      \
  X(clGetPlatformIDs) X(clGetPlatformInfo) X(clGetDeviceIDs) X(clGetDeviceInfo)                \
  X(clCreateContext) X(clReleaseContext) X(clCreateCommandQueue) X(clReleaseCommandQueue)      \
  X(clCreateProgramWithSource) X(clBuildProgram) X(clGetProgramBuildInfo) X(clReleaseProgram)  \
  X(clCreateKernel) X(clGetKernelInfo) X(clGetKernelWorkGroupInfo) X(clSetKernelArg)           \
  X(clReleaseKernel) X(clCreateBuffer) X(clReleaseMemObject) X(clEnqueueWriteBuffer)           \
  X(clEnqueueReadBuffer) X(clEnqueueNDRangeKernel) X(clFinish)

/* __typeof__ of the declarations in CL/cl.h: the table cannot drift from the header. Only
   the type is taken, so nothing here refers to libOpenCL's symbols at link time. */
static struct {
#define TT_CL_MEMBER(f) __typeof__(&f) f;
  TT_CL_FUNCTIONS(TT_CL_MEMBER)
#undef TT_CL_MEMBER
} cl;
static int cl_loaded;

static void setf(char* err, size_t errlen, const char* fmt, ...) {
  if (!err || errlen == 0) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
}

/* Opens the ICD loader: $TT_OPENCL_LIBRARY when set (a driver outside the linker's path,
   e.g. /vendor/lib64/libOpenCL.so on Android), else libOpenCL.so.1, then libOpenCL.so. */
static int load_opencl(char* err, size_t errlen) {
  if (cl_loaded) return 0;
  const char* env = getenv("TT_OPENCL_LIBRARY");
  const char* names[2] = {"libOpenCL.so.1", "libOpenCL.so"};
  int nnames = 2;
  if (env && *env) {
    names[0] = env;
    nnames = 1;
  }
  void* lib = NULL;
  char why[512] = "";
  for (int i = 0; i < nnames && !lib; i++) {
    lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!lib && i == 0) {
      const char* e = dlerror();
      snprintf(why, sizeof why, "%s", e ? e : names[i]);
    }
  }
  if (!lib) {
    setf(err, errlen, "no OpenCL ICD loader: %s (install one, e.g. Debian's ocl-icd-libopencl1, or set TT_OPENCL_LIBRARY)", why);
    return -1;
  }
#define TT_CL_RESOLVE(f)                                                            \
  if (!(*(void**)&cl.f = dlsym(lib, #f))) {                                         \
    setf(err, errlen, "the OpenCL library lacks %s (it is not OpenCL 1.2)", #f); \
    dlclose(lib);                                                                   \
    return -1;                                                                      \
  }
  TT_CL_FUNCTIONS(TT_CL_RESOLVE)
#undef TT_CL_RESOLVE
  cl_loaded = 1;
  return 0;
}

/* ---- error names ------------------------------------------------------------ */

static const char* cl_error_name(cl_int rc) {
  switch (rc) {
#define N(c) \
  case c:    \
    return #c;
    N(CL_SUCCESS) N(CL_DEVICE_NOT_FOUND) N(CL_DEVICE_NOT_AVAILABLE) N(CL_COMPILER_NOT_AVAILABLE)
    N(CL_MEM_OBJECT_ALLOCATION_FAILURE) N(CL_OUT_OF_RESOURCES) N(CL_OUT_OF_HOST_MEMORY)
    N(CL_PROFILING_INFO_NOT_AVAILABLE) N(CL_MEM_COPY_OVERLAP) N(CL_IMAGE_FORMAT_MISMATCH)
    N(CL_IMAGE_FORMAT_NOT_SUPPORTED) N(CL_BUILD_PROGRAM_FAILURE) N(CL_MAP_FAILURE)
    N(CL_MISALIGNED_SUB_BUFFER_OFFSET) N(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
    N(CL_COMPILE_PROGRAM_FAILURE) N(CL_LINKER_NOT_AVAILABLE) N(CL_LINK_PROGRAM_FAILURE)
    N(CL_DEVICE_PARTITION_FAILED) N(CL_KERNEL_ARG_INFO_NOT_AVAILABLE) N(CL_INVALID_VALUE)
    N(CL_INVALID_DEVICE_TYPE) N(CL_INVALID_PLATFORM) N(CL_INVALID_DEVICE) N(CL_INVALID_CONTEXT)
    N(CL_INVALID_QUEUE_PROPERTIES) N(CL_INVALID_COMMAND_QUEUE) N(CL_INVALID_HOST_PTR)
    N(CL_INVALID_MEM_OBJECT) N(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR) N(CL_INVALID_IMAGE_SIZE)
    N(CL_INVALID_SAMPLER) N(CL_INVALID_BINARY) N(CL_INVALID_BUILD_OPTIONS) N(CL_INVALID_PROGRAM)
    N(CL_INVALID_PROGRAM_EXECUTABLE) N(CL_INVALID_KERNEL_NAME) N(CL_INVALID_KERNEL_DEFINITION)
    N(CL_INVALID_KERNEL) N(CL_INVALID_ARG_INDEX) N(CL_INVALID_ARG_VALUE) N(CL_INVALID_ARG_SIZE)
    N(CL_INVALID_KERNEL_ARGS) N(CL_INVALID_WORK_DIMENSION) N(CL_INVALID_WORK_GROUP_SIZE)
    N(CL_INVALID_WORK_ITEM_SIZE) N(CL_INVALID_GLOBAL_OFFSET) N(CL_INVALID_EVENT_WAIT_LIST)
    N(CL_INVALID_EVENT) N(CL_INVALID_OPERATION) N(CL_INVALID_GL_OBJECT) N(CL_INVALID_BUFFER_SIZE)
    N(CL_INVALID_MIP_LEVEL) N(CL_INVALID_GLOBAL_WORK_SIZE) N(CL_INVALID_PROPERTY)
    N(CL_INVALID_IMAGE_DESCRIPTOR) N(CL_INVALID_COMPILER_OPTIONS) N(CL_INVALID_LINKER_OPTIONS)
    N(CL_INVALID_DEVICE_PARTITION_COUNT)
#undef N
    case -1001: return "CL_PLATFORM_NOT_FOUND_KHR";
    default: return NULL;
  }
}

/* "CL_OUT_OF_RESOURCES", or "OpenCL error -9999" for a code the headers do not name. */
static const char* cl_err(cl_int rc) {
  static char unknown[40];
  const char* name = cl_error_name(rc);
  if (name) return name;
  snprintf(unknown, sizeof unknown, "OpenCL error %d", (int)rc);
  return unknown;
}

/* ---- queries ---------------------------------------------------------------- */

/* A platform or device string property, malloc'd ("?" when the driver fails to say);
   NULL only when out of memory. */
static char* info_string(int device, void* obj, cl_uint param) {
  size_t size = 0;
  cl_int rc = device ? cl.clGetDeviceInfo((cl_device_id)obj, param, 0, NULL, &size)
                     : cl.clGetPlatformInfo((cl_platform_id)obj, param, 0, NULL, &size);
  char* s = malloc(size + 2);
  if (!s) return NULL;
  if (rc == CL_SUCCESS && size > 0)
    rc = device ? cl.clGetDeviceInfo((cl_device_id)obj, param, size, s, NULL)
                : cl.clGetPlatformInfo((cl_platform_id)obj, param, size, s, NULL);
  if (rc != CL_SUCCESS || size == 0) size = (size_t)snprintf(s, 2, "?");
  s[size] = 0;
  /* Drivers pad some strings with blanks. */
  for (size_t n = strlen(s); n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\n'); n--) s[n - 1] = 0;
  return s;
}

static cl_ulong device_ulong(cl_device_id d, cl_uint param) {
  cl_ulong v = 0;
  return cl.clGetDeviceInfo(d, param, sizeof v, &v, NULL) == CL_SUCCESS ? v : 0;
}

static cl_uint device_uint(cl_device_id d, cl_uint param) {
  cl_uint v = 0;
  return cl.clGetDeviceInfo(d, param, sizeof v, &v, NULL) == CL_SUCCESS ? v : 0;
}

static size_t device_size(cl_device_id d, cl_uint param) {
  size_t v = 0;
  return cl.clGetDeviceInfo(d, param, sizeof v, &v, NULL) == CL_SUCCESS ? v : 0;
}

/* CL_DEVICE_MAX_WORK_ITEM_SIZES into dims[0..3); returns the number of dimensions. */
static cl_uint device_item_sizes(cl_device_id d, size_t sizes[3]) {
  cl_uint n = device_uint(d, CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS);
  sizes[0] = sizes[1] = sizes[2] = 1;
  if (n == 0) return 0;
  size_t* all = calloc(n, sizeof *all);
  if (all && cl.clGetDeviceInfo(d, CL_DEVICE_MAX_WORK_ITEM_SIZES, n * sizeof *all, all, NULL) == CL_SUCCESS)
    for (cl_uint i = 0; i < n && i < 3; i++) sizes[i] = all[i];
  free(all);
  return n;
}

/* Every platform and its devices (all types). */
typedef struct {
  cl_uint nplatforms;
  cl_platform_id* platforms;
  char** platform_names;
  cl_uint* ndevices;
  cl_device_id** devices;
  char*** device_names;
} inventory;

static void inventory_free(inventory* inv) {
  for (cl_uint p = 0; p < inv->nplatforms; p++) {
    if (inv->platform_names) free(inv->platform_names[p]);
    if (inv->device_names && inv->device_names[p]) {
      for (cl_uint d = 0; d < inv->ndevices[p]; d++) free(inv->device_names[p][d]);
      free(inv->device_names[p]);
    }
    if (inv->devices) free(inv->devices[p]);
  }
  free(inv->platforms);
  free(inv->platform_names);
  free(inv->ndevices);
  free(inv->devices);
  free(inv->device_names);
  memset(inv, 0, sizeof *inv);
}

static int inventory_load(inventory* inv, char* err, size_t errlen) {
  memset(inv, 0, sizeof *inv);
  if (load_opencl(err, errlen) != 0) return -1;
  cl_uint n = 0;
  cl_int rc = cl.clGetPlatformIDs(0, NULL, &n);
  if (rc == -1001 || (rc == CL_SUCCESS && n == 0)) {
    setf(err, errlen, "no OpenCL platform: the ICD loader found no driver (install one, e.g. Debian's pocl-opencl-icd, "
                      "or a GPU vendor's; drivers are listed in /etc/OpenCL/vendors)");
    return -1;
  }
  if (rc != CL_SUCCESS) {
    setf(err, errlen, "clGetPlatformIDs failed: %s", cl_err(rc));
    return -1;
  }
  inv->platforms = calloc(n, sizeof *inv->platforms);
  inv->platform_names = calloc(n, sizeof *inv->platform_names);
  inv->ndevices = calloc(n, sizeof *inv->ndevices);
  inv->devices = calloc(n, sizeof *inv->devices);
  inv->device_names = calloc(n, sizeof *inv->device_names);
  if (!inv->platforms || !inv->platform_names || !inv->ndevices || !inv->devices || !inv->device_names) goto oom;
  inv->nplatforms = n;
  if ((rc = cl.clGetPlatformIDs(n, inv->platforms, NULL)) != CL_SUCCESS) {
    inventory_free(inv);
    setf(err, errlen, "clGetPlatformIDs failed: %s", cl_err(rc));
    return -1;
  }
  for (cl_uint p = 0; p < n; p++) {
    if (!(inv->platform_names[p] = info_string(0, inv->platforms[p], CL_PLATFORM_NAME))) goto oom;
    cl_uint nd = 0;
    /* A platform without devices answers CL_DEVICE_NOT_FOUND: it is listed, empty. */
    if (cl.clGetDeviceIDs(inv->platforms[p], CL_DEVICE_TYPE_ALL, 0, NULL, &nd) != CL_SUCCESS || nd == 0) continue;
    inv->devices[p] = calloc(nd, sizeof **inv->devices);
    inv->device_names[p] = calloc(nd, sizeof **inv->device_names);
    if (!inv->devices[p] || !inv->device_names[p]) goto oom;
    if (cl.clGetDeviceIDs(inv->platforms[p], CL_DEVICE_TYPE_ALL, nd, inv->devices[p], NULL) != CL_SUCCESS) continue;
    inv->ndevices[p] = nd;
    for (cl_uint d = 0; d < nd; d++)
      if (!(inv->device_names[p][d] = info_string(1, inv->devices[p][d], CL_DEVICE_NAME))) goto oom;
  }
  return 0;
oom:
  inventory_free(inv);
  setf(err, errlen, "out of memory listing the OpenCL devices");
  return -1;
}

/* ---- device selection ------------------------------------------------------- */

static const char* env_selector(const char* name) {
  const char* v = getenv(name);
  return v && *v ? v : NULL;
}

static int lower(int c) {
  return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
}

/* A selector matches by index (all digits) or as a case-insensitive substring of the name. */
static int selector_matches(const char* sel, cl_uint index, const char* name) {
  if (strspn(sel, "0123456789") == strlen(sel)) return strtoul(sel, NULL, 10) == index;
  for (const char* h = name; *h; h++) {
    size_t i = 0;
    while (sel[i] && h[i] && lower((unsigned char)sel[i]) == lower((unsigned char)h[i])) i++;
    if (!sel[i]) return 1;
  }
  return 0;
}

/* PoCL hides its devices when it cannot create its kernel cache ($POCL_CACHE_DIR, else
   $XDG_CACHE_HOME/pocl, else ~/.cache/pocl): a read-only home looks like "no device". */
static void pocl_hint(const inventory* inv, char* err, size_t errlen) {
  for (cl_uint p = 0; p < inv->nplatforms; p++) {
    if (inv->ndevices[p] || !selector_matches("portable computing language", p, inv->platform_names[p])) continue;
    size_t used = strlen(err);
    if (used < errlen)
      snprintf(err + used, errlen - used, " (PoCL lists no device when it cannot create its kernel cache: "
                                          "set POCL_CACHE_DIR to a writable directory)");
    return;
  }
}

/* Appends "platform 0 'X' with device 0 'Y', device 1 'Z'; platform 1 ..." to err, and
   PoCL's hint where it applies. */
static void list_devices(const inventory* inv, char* err, size_t errlen) {
  size_t used = strlen(err);
  for (cl_uint p = 0; p < inv->nplatforms && used < errlen; p++) {
    used += (size_t)snprintf(err + used, errlen - used, "%splatform %u '%s' with ", p ? "; " : "", p,
                             inv->platform_names[p]);
    if (inv->ndevices[p] == 0 && used < errlen) used += (size_t)snprintf(err + used, errlen - used, "no device");
    for (cl_uint d = 0; d < inv->ndevices[p] && used < errlen; d++)
      used += (size_t)snprintf(err + used, errlen - used, "%sdevice %u '%s'", d ? ", " : "", d, inv->device_names[p][d]);
  }
  pocl_hint(inv, err, errlen);
}

/* The first platform (among those TT_OPENCL_PLATFORM matches) holding a device that
   TT_OPENCL_DEVICE matches; unset selectors match everything. 0, or -1 with err set. */
static int select_device(const inventory* inv, cl_uint* pi, cl_uint* di, char* err, size_t errlen) {
  const char* ps = env_selector("TT_OPENCL_PLATFORM");
  const char* ds = env_selector("TT_OPENCL_DEVICE");
  int platform_matched = 0;
  for (cl_uint p = 0; p < inv->nplatforms; p++) {
    if (ps && !selector_matches(ps, p, inv->platform_names[p])) continue;
    platform_matched = 1;
    for (cl_uint d = 0; d < inv->ndevices[p]; d++) {
      if (ds && !selector_matches(ds, d, inv->device_names[p][d])) continue;
      *pi = p;
      *di = d;
      return 0;
    }
  }
  if (ps && !platform_matched)
    setf(err, errlen, "TT_OPENCL_PLATFORM='%s' matches no OpenCL platform; available: ", ps);
  else if (ds)
    setf(err, errlen, "TT_OPENCL_DEVICE='%s' matches no OpenCL device%s%s%s; available: ", ds,
         ps ? " on the platforms TT_OPENCL_PLATFORM='" : "", ps ? ps : "", ps ? "' selects" : "");
  else if (ps)
    setf(err, errlen, "the OpenCL platform TT_OPENCL_PLATFORM='%s' selects has no device; available: ", ps);
  else
    setf(err, errlen, "no OpenCL device; the platforms: ");
  list_devices(inv, err, errlen);
  return -1;
}

/* ---- programs --------------------------------------------------------------- */

typedef struct {
  cl_kernel kernel;
  char* name;
  cl_uint dims;
  size_t global[3];
  size_t local[3];
} launch_state;

struct tt_cl_program {
  cl_context context;
  cl_command_queue queue;
  cl_program program;
  int nbuffers;
  cl_mem* mems;
  size_t* counts;
  int nlaunches;
  launch_state* launches;
  char err[TT_CL_ERR_LEN];
};

/* The build log's first TT_CL_LOG_LINES non-empty lines, appended to err. */
static void append_build_log(cl_program prog, cl_device_id dev, char* err, size_t errlen) {
  size_t size = 0;
  if (cl.clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, 0, NULL, &size) != CL_SUCCESS || size == 0) return;
  char* log = malloc(size + 1);
  if (!log) return;
  if (cl.clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, size, log, NULL) != CL_SUCCESS) {
    free(log);
    return;
  }
  log[size] = 0;
  size_t used = strlen(err);
  int shown = 0, more = 0;
  for (char* line = strtok(log, "\n"); line; line = strtok(NULL, "\n")) {
    if (strspn(line, " \t\r") == strlen(line)) continue;
    if (shown == TT_CL_LOG_LINES) {
      more++;
      continue;
    }
    shown++;
    if (used < errlen) used += (size_t)snprintf(err + used, errlen - used, "\n%s", line);
  }
  if (more && used < errlen) snprintf(err + used, errlen - used, "\n... (%d more lines)", more);
  if (!shown && used < errlen) snprintf(err + used, errlen - used, " (the build log is empty)");
  free(log);
}

/* Checks one launch against the device's and the kernel's limits. */
static int check_launch(int i, const launch_state* l, cl_device_id dev, char* err, size_t errlen) {
  size_t max_items[3];
  cl_uint max_dims = device_item_sizes(dev, max_items);
  size_t device_max = device_size(dev, CL_DEVICE_MAX_WORK_GROUP_SIZE);
  size_t kernel_max = 0;
  cl_ulong kernel_local = 0, device_local = device_ulong(dev, CL_DEVICE_LOCAL_MEM_SIZE);
  cl.clGetKernelWorkGroupInfo(l->kernel, dev, CL_KERNEL_WORK_GROUP_SIZE, sizeof kernel_max, &kernel_max, NULL);
  cl.clGetKernelWorkGroupInfo(l->kernel, dev, CL_KERNEL_LOCAL_MEM_SIZE, sizeof kernel_local, &kernel_local, NULL);
  size_t group = l->local[0] * l->local[1] * l->local[2];
  char shape[96];
  snprintf(shape, sizeof shape, "%zux%zux%zu", l->local[0], l->local[1], l->local[2]);
  for (cl_uint d = 0; d < 3; d++)
    if (l->global[d] % l->local[d] != 0) {
      setf(err, errlen, "launch %d (kernel '%s'): global size %zu in dimension %u is not a multiple of the local size %zu",
           i, l->name, l->global[d], d, l->local[d]);
      return -1;
    }
  if (device_max && group > device_max) {
    setf(err, errlen, "launch %d (kernel '%s'): work-group size %zu (%s) exceeds the device's CL_DEVICE_MAX_WORK_GROUP_SIZE (%zu)",
         i, l->name, group, shape, device_max);
    return -1;
  }
  if (kernel_max && group > kernel_max) {
    setf(err, errlen, "launch %d (kernel '%s'): work-group size %zu (%s) exceeds the kernel's CL_KERNEL_WORK_GROUP_SIZE (%zu) "
                      "on this device", i, l->name, group, shape, kernel_max);
    return -1;
  }
  for (cl_uint d = 0; d < l->dims; d++)
    if (d >= max_dims || l->local[d] > max_items[d]) {
      setf(err, errlen, "launch %d (kernel '%s'): local size %zu in dimension %u exceeds the device's "
                        "CL_DEVICE_MAX_WORK_ITEM_SIZES (%zu)", i, l->name, l->local[d], d, d < max_dims ? max_items[d] : 0);
      return -1;
    }
  if (device_local && kernel_local > device_local) {
    setf(err, errlen, "launch %d (kernel '%s'): uses %llu bytes of local memory, the device has %llu (CL_DEVICE_LOCAL_MEM_SIZE)",
         i, l->name, (unsigned long long)kernel_local, (unsigned long long)device_local);
    return -1;
  }
  return 0;
}

/* What the caller passed, before any OpenCL call. */
static int check_arguments(const char* source, const tt_cl_buffer_spec* buffers, int nbuffers,
                           const tt_cl_launch* launches, int nlaunches, char* err, size_t errlen) {
  if (!source) return setf(err, errlen, "no OpenCL source"), -1;
  if (nbuffers < 0 || nlaunches < 0 || (nbuffers && !buffers) || (nlaunches && !launches))
    return setf(err, errlen, "bad buffer or launch list"), -1;
  for (int b = 0; b < nbuffers; b++) {
    if (buffers[b].count == 0) return setf(err, errlen, "buffer %d has no elements", b), -1;
    if (buffers[b].role < TT_CL_IN || buffers[b].role > TT_CL_PARAM)
      return setf(err, errlen, "buffer %d: unknown role %d", b, buffers[b].role), -1;
  }
  for (int i = 0; i < nlaunches; i++) {
    const tt_cl_launch* l = &launches[i];
    if (!l->kernel || !*l->kernel) return setf(err, errlen, "launch %d: no kernel name", i), -1;
    if (l->nargs < 0 || (l->nargs && !l->args)) return setf(err, errlen, "launch %d (kernel '%s'): bad argument list", i, l->kernel), -1;
    for (int a = 0; a < l->nargs; a++)
      if (l->args[a] < 0 || l->args[a] >= nbuffers)
        return setf(err, errlen, "launch %d (kernel '%s'): argument %d names buffer %d, there are %d", i, l->kernel, a,
                    l->args[a], nbuffers), -1;
    for (int d = 0; d < 3; d++)
      if (l->global[d] == 0 || l->local[d] == 0)
        return setf(err, errlen, "launch %d (kernel '%s'): global and local sizes must be >= 1 (dimension %d)", i,
                    l->kernel, d), -1;
  }
  return 0;
}

tt_cl_program* tt_cl_create(const char* source, const char* build_options,
                            const tt_cl_buffer_spec* buffers, int nbuffers,
                            const tt_cl_launch* launches, int nlaunches,
                            int* kind, char* err, size_t errlen) {
  int failure = TT_CL_RUNTIME_ERROR;
  inventory inv;
  memset(&inv, 0, sizeof inv);
  tt_cl_program* p = NULL;
  char* options = NULL;
  cl_int rc;
  if (err && errlen) err[0] = 0;
  if (check_arguments(source, buffers, nbuffers, launches, nlaunches, err, errlen) != 0) goto fail;
  if (inventory_load(&inv, err, errlen) != 0) goto fail;
  cl_uint pi, di;
  if (select_device(&inv, &pi, &di, err, errlen) != 0) goto fail;
  cl_platform_id platform = inv.platforms[pi];
  cl_device_id dev = inv.devices[pi][di];
  const char* dev_name = inv.device_names[pi][di];

  if (!(p = calloc(1, sizeof *p)) || !(p->mems = calloc((size_t)nbuffers + 1, sizeof *p->mems)) ||
      !(p->counts = calloc((size_t)nbuffers + 1, sizeof *p->counts)) ||
      !(p->launches = calloc((size_t)nlaunches + 1, sizeof *p->launches))) {
    setf(err, errlen, "out of memory");
    goto fail;
  }
  cl_context_properties props[3] = {CL_CONTEXT_PLATFORM, (cl_context_properties)platform, 0};
  p->context = cl.clCreateContext(props, 1, &dev, NULL, NULL, &rc);
  if (rc != CL_SUCCESS) {
    setf(err, errlen, "clCreateContext on '%s' failed: %s", dev_name, cl_err(rc));
    goto fail;
  }
  p->queue = cl.clCreateCommandQueue(p->context, dev, 0, &rc);
  if (rc != CL_SUCCESS) {
    setf(err, errlen, "clCreateCommandQueue on '%s' failed: %s", dev_name, cl_err(rc));
    goto fail;
  }
  p->program = cl.clCreateProgramWithSource(p->context, 1, &source, NULL, &rc);
  if (rc != CL_SUCCESS) {
    setf(err, errlen, "clCreateProgramWithSource failed: %s", cl_err(rc));
    goto fail;
  }
  const char* base = "-cl-std=CL1.2";
  size_t olen = strlen(base) + (build_options ? strlen(build_options) + 1 : 0) + 1;
  if (!(options = malloc(olen))) {
    setf(err, errlen, "out of memory");
    goto fail;
  }
  snprintf(options, olen, "%s%s%s", base, build_options ? " " : "", build_options ? build_options : "");
  rc = cl.clBuildProgram(p->program, 1, &dev, options, NULL, NULL);
  if (rc != CL_SUCCESS) {
    /* A bad program or bad options is the candidate's fault; anything else is the device's. */
    if (rc == CL_BUILD_PROGRAM_FAILURE || rc == CL_INVALID_BUILD_OPTIONS) failure = TT_CL_BUILD_ERROR;
    setf(err, errlen, "building the OpenCL program for '%s' failed (%s, options '%s'):", dev_name, cl_err(rc), options);
    append_build_log(p->program, dev, err, errlen);
    goto fail;
  }
  p->nbuffers = nbuffers;
  for (int b = 0; b < nbuffers; b++) {
    /* Kernels only read inputs and params: a driver may place them accordingly. */
    cl_mem_flags flags = buffers[b].role == TT_CL_IN || buffers[b].role == TT_CL_PARAM ? CL_MEM_READ_ONLY : CL_MEM_READ_WRITE;
    p->counts[b] = buffers[b].count;
    p->mems[b] = cl.clCreateBuffer(p->context, flags, buffers[b].count * sizeof(float), NULL, &rc);
    if (rc != CL_SUCCESS) {
      setf(err, errlen, "buffer %d (%zu floats) on '%s': clCreateBuffer failed: %s", b, buffers[b].count, dev_name, cl_err(rc));
      goto fail;
    }
  }
  p->nlaunches = nlaunches;
  for (int i = 0; i < nlaunches; i++) {
    const tt_cl_launch* in = &launches[i];
    launch_state* l = &p->launches[i];
    if (!(l->name = malloc(strlen(in->kernel) + 1))) {
      setf(err, errlen, "out of memory");
      goto fail;
    }
    strcpy(l->name, in->kernel);
    l->dims = 1;
    for (int d = 0; d < 3; d++) {
      l->global[d] = in->global[d];
      l->local[d] = in->local[d];
      if (in->global[d] > 1 || in->local[d] > 1) l->dims = (cl_uint)d + 1;
    }
    l->kernel = cl.clCreateKernel(p->program, in->kernel, &rc);
    if (rc != CL_SUCCESS) {
      setf(err, errlen, rc == CL_INVALID_KERNEL_NAME ? "launch %d: the program has no __kernel '%s'"
                                                      : "launch %d (kernel '%s'): clCreateKernel failed: %s",
           i, in->kernel, cl_err(rc));
      goto fail;
    }
    cl_uint nargs = 0;
    cl.clGetKernelInfo(l->kernel, CL_KERNEL_NUM_ARGS, sizeof nargs, &nargs, NULL);
    if (nargs != (cl_uint)in->nargs) {
      setf(err, errlen, "launch %d (kernel '%s'): the kernel takes %u arguments, the launch passes %d", i, in->kernel,
           nargs, in->nargs);
      goto fail;
    }
    for (int a = 0; a < in->nargs; a++) {
      rc = cl.clSetKernelArg(l->kernel, (cl_uint)a, sizeof(cl_mem), &p->mems[in->args[a]]);
      if (rc != CL_SUCCESS) {
        setf(err, errlen, "launch %d (kernel '%s'): argument %d (buffer %d): clSetKernelArg failed: %s", i, in->kernel, a,
             in->args[a], cl_err(rc));
        goto fail;
      }
    }
    if (check_launch(i, l, dev, err, errlen) != 0) goto fail;
  }
  free(options);
  inventory_free(&inv);
  if (kind) *kind = TT_CL_OK;
  return p;

fail:
  free(options);
  inventory_free(&inv);
  tt_cl_destroy(p);
  if (kind) *kind = failure;
  return NULL;
}

static int check_buffer(tt_cl_program* p, int index, const void* host, const char* what) {
  if (index < 0 || index >= p->nbuffers) {
    setf(p->err, sizeof p->err, "%s: no buffer %d (there are %d)", what, index, p->nbuffers);
    return -1;
  }
  if (!host) {
    setf(p->err, sizeof p->err, "%s: buffer %d: no host memory", what, index);
    return -1;
  }
  return 0;
}

int tt_cl_write(tt_cl_program* p, int index, const float* host) {
  if (!p) return -1;
  if (check_buffer(p, index, host, "tt_cl_write") != 0) return -1;
  cl_int rc = cl.clEnqueueWriteBuffer(p->queue, p->mems[index], CL_TRUE, 0, p->counts[index] * sizeof(float), host, 0,
                                      NULL, NULL);
  if (rc != CL_SUCCESS) {
    setf(p->err, sizeof p->err, "writing buffer %d (%zu floats) to the device failed: %s", index, p->counts[index], cl_err(rc));
    return -1;
  }
  return 0;
}

int tt_cl_read(tt_cl_program* p, int index, float* host) {
  if (!p) return -1;
  if (check_buffer(p, index, host, "tt_cl_read") != 0) return -1;
  cl_int rc = cl.clEnqueueReadBuffer(p->queue, p->mems[index], CL_TRUE, 0, p->counts[index] * sizeof(float), host, 0,
                                     NULL, NULL);
  if (rc != CL_SUCCESS) {
    setf(p->err, sizeof p->err, "reading buffer %d (%zu floats) from the device failed: %s", index, p->counts[index],
         cl_err(rc));
    return -1;
  }
  return 0;
}

int tt_cl_run(tt_cl_program* p) {
  if (!p) return -1;
  for (int i = 0; i < p->nlaunches; i++) {
    const launch_state* l = &p->launches[i];
    cl_int rc = cl.clEnqueueNDRangeKernel(p->queue, l->kernel, l->dims, NULL, l->global, l->local, 0, NULL, NULL);
    if (rc != CL_SUCCESS) {
      setf(p->err, sizeof p->err, "launch %d (kernel '%s', global %zux%zux%zu, local %zux%zux%zu): clEnqueueNDRangeKernel failed: %s",
           i, l->name, l->global[0], l->global[1], l->global[2], l->local[0], l->local[1], l->local[2], cl_err(rc));
      return -1;
    }
  }
  cl_int rc = cl.clFinish(p->queue);
  if (rc != CL_SUCCESS) {
    setf(p->err, sizeof p->err, "clFinish after %d launches failed: %s", p->nlaunches, cl_err(rc));
    return -1;
  }
  return 0;
}

const char* tt_cl_error(const tt_cl_program* p) {
  return p ? p->err : "";
}

void tt_cl_destroy(tt_cl_program* p) {
  if (!p) return;
  if (p->queue) cl.clFinish(p->queue);
  for (int i = 0; p->launches && i < p->nlaunches; i++) {
    if (p->launches[i].kernel) cl.clReleaseKernel(p->launches[i].kernel);
    free(p->launches[i].name);
  }
  /* A failed create stops part-way: nlaunches is set before the loop, so unset entries
     are zero (calloc) and skipped above; buffers likewise. */
  for (int b = 0; p->mems && b < p->nbuffers; b++)
    if (p->mems[b]) cl.clReleaseMemObject(p->mems[b]);
  if (p->program) cl.clReleaseProgram(p->program);
  if (p->queue) cl.clReleaseCommandQueue(p->queue);
  if (p->context) cl.clReleaseContext(p->context);
  free(p->launches);
  free(p->mems);
  free(p->counts);
  free(p);
}

/* ---- description ------------------------------------------------------------ */

typedef struct {
  char* out;
  size_t cap, len;
} text;

static void put(text* t, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  size_t room = t->len < t->cap ? t->cap - t->len : 0;
  int n = vsnprintf(room ? t->out + t->len : NULL, room, fmt, ap);
  va_end(ap);
  if (n > 0) t->len += (size_t)n;
}

static void put_string(text* t, const char* s) {
  put(t, "\"");
  for (const unsigned char* c = (const unsigned char*)s; *c; c++) {
    if (*c == '"' || *c == '\\') put(t, "\\%c", *c);
    else if (*c < 0x20) put(t, "\\u%04x", *c);
    else put(t, "%c", *c);
  }
  put(t, "\"");
}

static const char* device_type(cl_device_id d) {
  cl_device_type type = 0;
  cl.clGetDeviceInfo(d, CL_DEVICE_TYPE, sizeof type, &type, NULL);
  if (type & CL_DEVICE_TYPE_GPU) return "gpu";
  if (type & CL_DEVICE_TYPE_CPU) return "cpu";
  if (type & CL_DEVICE_TYPE_ACCELERATOR) return "accelerator";
  return "other";
}

static void put_device(text* t, cl_device_id d, const char* name) {
  static const cl_uint strings[3] = {CL_DEVICE_VENDOR, CL_DEVICE_VERSION, CL_DRIVER_VERSION};
  static const char* keys[3] = {"vendor", "version", "driver_version"};
  put(t, "{\"name\":");
  put_string(t, name);
  for (int i = 0; i < 3; i++) {
    char* s = info_string(1, d, strings[i]);
    put(t, ",\"%s\":", keys[i]);
    put_string(t, s ? s : "?");
    free(s);
  }
  put(t, ",\"type\":\"%s\",\"max_compute_units\":%u,\"max_work_group_size\":%zu,\"max_work_item_sizes\":[", device_type(d),
      device_uint(d, CL_DEVICE_MAX_COMPUTE_UNITS), device_size(d, CL_DEVICE_MAX_WORK_GROUP_SIZE));
  size_t sizes[3];
  cl_uint dims = device_item_sizes(d, sizes);
  for (cl_uint i = 0; i < dims && i < 3; i++) put(t, "%s%zu", i ? "," : "", sizes[i]);
  put(t, "],\"local_mem_size\":%llu,\"global_mem_size\":%llu,\"max_mem_alloc_size\":%llu,\"preferred_vector_width_float\":%u}",
      (unsigned long long)device_ulong(d, CL_DEVICE_LOCAL_MEM_SIZE),
      (unsigned long long)device_ulong(d, CL_DEVICE_GLOBAL_MEM_SIZE),
      (unsigned long long)device_ulong(d, CL_DEVICE_MAX_MEM_ALLOC_SIZE),
      device_uint(d, CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT));
}

int tt_cl_describe(char* out, size_t outlen, char* err, size_t errlen) {
  inventory inv;
  if (err && errlen) err[0] = 0;
  if (inventory_load(&inv, err, errlen) != 0) return -1;
  int any = 0;
  for (cl_uint p = 0; p < inv.nplatforms; p++) any |= inv.ndevices[p] > 0;
  if (!any) {
    setf(err, errlen, "no OpenCL device; the platforms: ");
    list_devices(&inv, err, errlen);
    inventory_free(&inv);
    return -1;
  }
  text t = {out, outlen, 0};
  put(&t, "{\"platforms\":[");
  for (cl_uint p = 0; p < inv.nplatforms; p++) {
    static const cl_uint strings[2] = {CL_PLATFORM_VENDOR, CL_PLATFORM_VERSION};
    static const char* keys[2] = {"vendor", "version"};
    put(&t, "%s{\"name\":", p ? "," : "");
    put_string(&t, inv.platform_names[p]);
    for (int i = 0; i < 2; i++) {
      char* s = info_string(0, inv.platforms[p], strings[i]);
      put(&t, ",\"%s\":", keys[i]);
      put_string(&t, s ? s : "?");
      free(s);
    }
    put(&t, ",\"devices\":[");
    for (cl_uint d = 0; d < inv.ndevices[p]; d++) {
      if (d) put(&t, ",");
      put_device(&t, inv.devices[p][d], inv.device_names[p][d]);
    }
    put(&t, "]}");
  }
  cl_uint pi, di;
  char why[TT_CL_ERR_LEN];
  if (select_device(&inv, &pi, &di, why, sizeof why) == 0) {
    put(&t, "],\"selected\":{\"platform\":%u,\"device\":%u}}", pi, di);
  } else {
    /* Not part of the contract's minimum: why nothing is selected, for the caller to show. */
    put(&t, "],\"selected\":null,\"selection_error\":");
    put_string(&t, why);
    put(&t, "}");
  }
  inventory_free(&inv);
  if (t.len >= outlen) {
    setf(err, errlen, "the description needs %zu bytes, the buffer holds %zu", t.len + 1, outlen);
    if (outlen) out[0] = 0;
    return -1;
  }
  return 0;
}
