/*
 * tensortune's thread pool, as the generated CPU kernels see it: the C renderer
 * (engine/codegen/c.ts) pastes these declarations into every kernel file, and turns each
 * parallel loop into a static function over a range of its iterations, run by
 * tt_parallel_for. The pool itself is native/pool/tt_pool.c, compiled once per compiler
 * and linked into each candidate library and model.so; its header comment says how it
 * works. Hidden: each library calls its own copy directly, not through the PLT.
 */
#ifndef TT_POOL_H
#define TT_POOL_H

#include <stdint.h>

typedef void (*tt_loop_body)(void* ctx, int32_t begin, int32_t end);

/* Run body(ctx, b, e) over chunks [b, e) that cover [begin, end), on the pool's threads
   (the caller among them). A call from inside a parallel loop runs on the caller. */
__attribute__((visibility("hidden"))) void tt_parallel_for(int32_t begin, int32_t end, tt_loop_body body, void* ctx);

/* The threads parallel loops use from now on, the caller included (at least 1). Until it is
   called: OMP_NUM_THREADS, else the CPUs this process may run on. */
__attribute__((visibility("hidden"))) void tt_pool_set_threads(int n);

#endif
