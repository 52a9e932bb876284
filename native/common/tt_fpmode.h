/*
 * The floating-point mode bits that decide how subnormal floats are handled (x86: MXCSR;
 * aarch64: FPCR), read and set on the calling thread. Shared by the kernels' thread pool
 * (native/pool/tt_pool.c: a model runs its kernels with subnormals flushed to zero, why is
 * there) and the measurement workers (tt_common.c, tt_flush_subnormals: candidates are
 * timed and verified in that same mode), so that the two cannot disagree on the bits.
 */
#ifndef TT_FPMODE_H
#define TT_FPMODE_H

#include <stdint.h>

/* This thread's control word; 0 on an architecture with neither. */
static inline unsigned tt_fp_mode(void) {
#if defined(__x86_64__) || defined(__i386__)
  return __builtin_ia32_stmxcsr();
#elif defined(__aarch64__)
  uint64_t v;
  __asm__ __volatile__("mrs %0, fpcr" : "=r"(v));
  return (unsigned)v;
#else
  return 0;
#endif
}

/* Sets this thread's control word (only where it differs: writing it can stall). */
static inline void tt_fp_set_mode(unsigned mode) {
#if defined(__x86_64__) || defined(__i386__)
  if (__builtin_ia32_stmxcsr() != mode) __builtin_ia32_ldmxcsr(mode);
#elif defined(__aarch64__)
  if (tt_fp_mode() != mode) __asm__ __volatile__("msr fpcr, %0" : : "r"((uint64_t)mode));
#else
  (void)mode;
#endif
}

/* `mode` with subnormal floats flushed to zero, as inputs and as results (x86: FTZ, bit 15,
   and DAZ, bit 6; aarch64: FZ, bit 24). */
static inline unsigned tt_fp_flushing(unsigned mode) {
#if defined(__x86_64__) || defined(__i386__)
  return mode | 0x8040u;
#elif defined(__aarch64__)
  return mode | (1u << 24);
#else
  return mode;
#endif
}

#endif
