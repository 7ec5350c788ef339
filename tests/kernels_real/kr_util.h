/* Utilities of the kernels in this folder: the shape of a benchmark suite's programs (fixed extents
 * from size macros, arrays declared and allocated through macros, a separate utility translation
 * unit), written for transpile's tests.
 *
 * KR_ARR2(name, D1, D2, d1, d2) declares a 2-D array parameter: with fixed extents by default
 * (double A[D1][D2], the sizes' upper bounds), or with the run-time sizes when KR_VLA is defined
 * (double A[d1][d2], C99 variable-length parameters).  The kernels' loops run to the run-time
 * sizes, which may be below the extents. */
#ifndef KR_UTIL_H
#define KR_UTIL_H

#ifdef KR_VLA
#define KR_PICK(fixed, run) run
#else
#define KR_PICK(fixed, run) fixed
#endif

#define KR_ARR1(name, D1, d1) name[KR_PICK(D1, d1)]
#define KR_ARR2(name, D1, D2, d1, d2) name[KR_PICK(D1, d1)][KR_PICK(D2, d2)]
#define KR_ARR3(name, D1, D2, D3, d1, d2, d3) name[KR_PICK(D1, d1)][KR_PICK(D2, d2)][KR_PICK(D3, d3)]

/* Heap arrays of the extents, used in main through KR_USE (a pointer to the whole array). */
#define KR_NEW1(name, T, D1) T (*name)[D1] = (T (*)[D1])kr_alloc((D1), sizeof(T))
#define KR_NEW2(name, T, D1, D2) T (*name)[D1][D2] = (T (*)[D1][D2])kr_alloc((D1) * (D2), sizeof(T))
#define KR_NEW3(name, T, D1, D2, D3) \
  T (*name)[D1][D2][D3] = (T (*)[D1][D2][D3])kr_alloc((D1) * (D2) * (D3), sizeof(T))
#define KR_USE(name) (*name)
#define KR_FREE(name) kr_free((void *)name)

void *kr_alloc(unsigned long count, unsigned long size);
void kr_free(void *p);
double kr_random(unsigned *state);
void kr_timer_start(void);
void kr_timer_print(void);

#endif
