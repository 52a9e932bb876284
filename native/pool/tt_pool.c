/*
 * tensortune's thread pool: what runs the parallel loops of generated CPU kernels.
 *
 * The C renderer (engine/codegen/c.ts) turns each parallel loop into a static function
 * over a range of iterations and a call of tt_parallel_for. This file is compiled once per
 * compiler into an object in the native cache (engine/native/build.ts, poolObject), which
 * every CPU candidate library and every model.so links; the kernels carry only the
 * declarations of native/include/tt_pool.h. Compiling it into every kernel instead cost
 * 30 to 40 ms per candidate, on the tuner's hot path. Its symbols are hidden: the kernels
 * of one model.so share one pool, and two libraries loaded in one process (two models, or
 * the tuner's candidates one after another) each keep their own.
 *
 * Written here rather than taken from OpenMP because of what a network needs from it,
 * measured with libgomp (docs/tuning.md, "Threads"): a network makes 30 to 60 short
 * parallel loops per run, one after the other. libgomp either spins between them, which
 * costs a lot when another process shares a core (its end-of-loop barrier waits for every
 * thread of the team, also one the kernel preempted before it took any work), or sleeps,
 * which costs a wake-up per loop (an empty parallel loop took 32 us on a 2-core VM, and
 * mobilenet at 2 threads ran 1.66x its 1-thread speed, where spinning gave 1.92x). Here:
 *   - the caller works too, and threads take chunks from a shared counter, large first,
 *     smaller as the loop runs out (as OpenMP's guided schedule);
 *   - a loop ends when its iterations are done: a thread that has not come to it yet is
 *     not waited for, it finds the loop finished when it runs;
 *   - a thread with nothing to do spins a while (TT_POOL_SPIN_US, default 2000 us), with
 *     sched_yield after the first few hundred polls so that another runnable process on
 *     its core gets the core, and then sleeps until the next loop;
 *   - a parallel loop inside a parallel loop runs on the calling thread.
 * The threads: tt_pool_set_threads(n), else OMP_NUM_THREADS (the variable users already
 * set for OpenMP programs), else the CPUs this process may run on.
 *
 * Each loop also carries the caller's floating-point mode, which the helpers take before
 * their chunks: a model runs with subnormal floats flushed to zero (tt_fp_flush_begin,
 * below), and every chunk of its loops must run so, on whichever thread.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "tt_pool.h"
#include "../common/tt_fpmode.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define TT_POOL_MAX_THREADS 256

struct tt_pool {
  /* The current loop. `claim` packs the loop's generation (high 32 bits) with the next
     unclaimed iteration (low 32 bits), so that a late thread's claim fails once the loop
     it read has moved on. The other fields are written before `claim` is published. */
  _Alignas(64) uint64_t claim;
  tt_loop_body body;
  void* ctx;
  int32_t end;
  int32_t helpers; /* threads other than the caller that may take part */
  unsigned fpmode; /* the caller's floating-point control word (tt_fp_mode) */
  _Alignas(64) int32_t left; /* iterations not finished */
  _Alignas(64) int32_t sleepers;
  int stop;
  pthread_mutex_t lock;
  pthread_cond_t wake;
  int threads;  /* wanted, including the caller; 0: not decided yet */
  int started;  /* helper threads running */
  long spin_ns;
  pthread_t tid[TT_POOL_MAX_THREADS];
};

static struct tt_pool tt_pool_state = { .lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER };
static _Thread_local int tt_pool_inside;

static inline void tt_pool_pause(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

/* Flush subnormal floats to zero on this thread, as inputs and as results (x86: MXCSR's DAZ
   and FTZ; aarch64: FPCR.FZ), until tt_fp_flush_end restores the mode this returns. A model
   runs so (engine/compile/model.ts: tt_run and tt_run_profiled), as TensorFlow runs its
   kernels, because on Intel cores every arithmetic step that takes or makes a subnormal
   float costs a microcode assist of about a hundred cycles: a BERT attention softmax over
   a padding mask (exp of -10000 underflows) ran 3.8x slower without it (the kernel alone,
   1 thread, AVX-512 Xeon). Values below 2^-126 (1.2e-38) become 0; nothing a network's
   tolerance can see. */
__attribute__((visibility("hidden"))) unsigned tt_fp_flush_begin(void);
__attribute__((visibility("hidden"))) void tt_fp_flush_end(unsigned mode);
unsigned tt_fp_flush_begin(void) {
  unsigned mode = tt_fp_mode();
  tt_fp_set_mode(tt_fp_flushing(mode));
  return mode;
}
void tt_fp_flush_end(unsigned mode) { tt_fp_set_mode(mode); }

/* The generation of the latest loop (0 before the first). */
static inline uint32_t tt_pool_generation(struct tt_pool* p) {
  return (uint32_t)(__atomic_load_n(&p->claim, __ATOMIC_SEQ_CST) >> 32);
}

static inline long tt_pool_now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long)t.tv_sec * 1000000000L + t.tv_nsec;
}

/* Polls of a waiting thread before it starts yielding its core. */
#define TT_POOL_PAUSE_POLLS 256

/* Run chunks of the loop of generation `gen` until none is left. */
static void tt_pool_work(uint32_t gen, int32_t participants) {
  struct tt_pool* p = &tt_pool_state;
  for (;;) {
    uint64_t c = __atomic_load_n(&p->claim, __ATOMIC_ACQUIRE);
    if ((uint32_t)(c >> 32) != gen) return;
    int32_t next = (int32_t)(uint32_t)c;
    tt_loop_body body = __atomic_load_n(&p->body, __ATOMIC_RELAXED);
    void* ctx = __atomic_load_n(&p->ctx, __ATOMIC_RELAXED);
    int32_t end = __atomic_load_n(&p->end, __ATOMIC_RELAXED);
    if (next >= end) return;
    /* Guided, as OpenMP's: an equal share of what is left, so that on a quiet machine the
       first thread takes half the loop (and the same half every call, which keeps what it
       writes in its core's cache), and the last chunks are small. A quarter of what is
       left gave more, smaller chunks: Winograd's transform stages at 2 threads ran 0.27
       instead of 0.23 ms, and half of them were slower than at 1 thread. */
    int32_t chunk = (end - next + participants - 1) / participants;
    uint64_t want = ((uint64_t)gen << 32) | (uint32_t)(next + chunk);
    if (!__atomic_compare_exchange_n(&p->claim, &c, want, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) continue;
    body(ctx, next, next + chunk);
    __atomic_sub_fetch(&p->left, chunk, __ATOMIC_RELEASE);
  }
}

static void* tt_pool_helper(void* arg) {
  struct tt_pool* p = &tt_pool_state;
  int index = (int)(intptr_t)arg;
  tt_pool_inside = 1;
  uint32_t seen = tt_pool_generation(p);
  for (;;) {
    /* Wait for a new loop: poll, then poll yielding the core, then sleep. */
    long deadline = 0;
    for (int polls = 0;; ++polls) {
      if (__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE)) return 0;
      if (tt_pool_generation(p) != seen) break;
      if (polls < TT_POOL_PAUSE_POLLS) { tt_pool_pause(); continue; }
      if (polls == TT_POOL_PAUSE_POLLS) deadline = tt_pool_now_ns() + p->spin_ns;
      if ((polls & 63) == 0 && tt_pool_now_ns() > deadline) {
        pthread_mutex_lock(&p->lock);
        __atomic_add_fetch(&p->sleepers, 1, __ATOMIC_SEQ_CST);
        while (!__atomic_load_n(&p->stop, __ATOMIC_SEQ_CST) && tt_pool_generation(p) == seen)
          pthread_cond_wait(&p->wake, &p->lock);
        __atomic_sub_fetch(&p->sleepers, 1, __ATOMIC_SEQ_CST);
        pthread_mutex_unlock(&p->lock);
        polls = -1;
        continue;
      }
      sched_yield();
    }
    seen = tt_pool_generation(p);
    int32_t helpers = __atomic_load_n(&p->helpers, __ATOMIC_RELAXED);
    if (index < helpers) {
      tt_fp_set_mode(__atomic_load_n(&p->fpmode, __ATOMIC_RELAXED));
      tt_pool_work(seen, helpers + 1);
    }
  }
}

/* Stop and join the helpers: when the library is unloaded (a tuning candidate), its code
   must not be running. */
__attribute__((destructor)) static void tt_pool_shutdown(void) {
  struct tt_pool* p = &tt_pool_state;
  if (p->started == 0) return;
  pthread_mutex_lock(&p->lock);
  __atomic_store_n(&p->stop, 1, __ATOMIC_SEQ_CST);
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->lock);
  for (int i = 0; i < p->started; ++i) pthread_join(p->tid[i], 0);
  p->started = 0;
  __atomic_store_n(&p->stop, 0, __ATOMIC_SEQ_CST);
}

void tt_pool_set_threads(int n) {
  if (n < 1) n = 1;
  if (n > TT_POOL_MAX_THREADS) n = TT_POOL_MAX_THREADS;
  tt_pool_state.threads = n;
}

static int tt_pool_default_threads(void) {
  const char* env = getenv("OMP_NUM_THREADS");
  if (env && *env) {
    int n = atoi(env);
    if (n > 0) return n;
  }
#ifdef CPU_COUNT
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
#endif
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)n : 1;
}

/* The threads parallel loops use, the caller included (deciding them on the first call). The
   kernels do not call it, so the header pasted into them does not declare it: a model whose
   samples run in parallel (engine/compile/model.ts) declares it itself. */
__attribute__((visibility("hidden"))) int tt_pool_threads(void);
int tt_pool_threads(void) {
  if (tt_pool_state.threads == 0) tt_pool_set_threads(tt_pool_default_threads());
  return tt_pool_state.threads;
}

/* Run body(ctx, b, e) over chunks [b, e) covering [begin, end), on the pool's threads. */
void tt_parallel_for(int32_t begin, int32_t end, tt_loop_body body, void* ctx) {
  struct tt_pool* p = &tt_pool_state;
  if (end <= begin) return;
  int helpers = tt_pool_inside ? 0 : tt_pool_threads() - 1;
  if (helpers > end - begin - 1) helpers = end - begin - 1;
  if (helpers > 0 && p->spin_ns == 0) {
    const char* env = getenv("TT_POOL_SPIN_US");
    long us = env && *env ? atol(env) : 2000;
    p->spin_ns = us > 0 ? us * 1000 : 1;
  }
  while (p->started < helpers) {
    if (pthread_create(&p->tid[p->started], 0, tt_pool_helper, (void*)(intptr_t)p->started) != 0) break;
    p->started++;
  }
  if (helpers > p->started) helpers = p->started;
  if (helpers <= 0) {
    body(ctx, begin, end);
    return;
  }
  /* The new loop's generation; publishing `claim` is what starts it for the helpers. */
  uint32_t gen = tt_pool_generation(p) + 1;
  __atomic_store_n(&p->body, body, __ATOMIC_RELAXED);
  __atomic_store_n(&p->ctx, ctx, __ATOMIC_RELAXED);
  __atomic_store_n(&p->end, end, __ATOMIC_RELAXED);
  __atomic_store_n(&p->helpers, helpers, __ATOMIC_RELAXED);
  __atomic_store_n(&p->fpmode, tt_fp_mode(), __ATOMIC_RELAXED);
  __atomic_store_n(&p->left, end - begin, __ATOMIC_RELAXED);
  __atomic_store_n(&p->claim, ((uint64_t)gen << 32) | (uint32_t)begin, __ATOMIC_SEQ_CST);
  if (__atomic_load_n(&p->sleepers, __ATOMIC_SEQ_CST) > 0) {
    pthread_mutex_lock(&p->lock);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
  }
  tt_pool_inside = 1;
  tt_pool_work(gen, helpers + 1);
  tt_pool_inside = 0;
  /* Wait for the chunks other threads hold; yield the core after a few polls, since the
     holder may be waiting for it. */
  for (int polls = 0; __atomic_load_n(&p->left, __ATOMIC_ACQUIRE) > 0; ++polls) {
    if (polls < TT_POOL_PAUSE_POLLS) tt_pool_pause();
    else sched_yield();
  }
}
