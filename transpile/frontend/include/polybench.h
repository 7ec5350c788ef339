/* transpile's own minimal stand-in for PolyBench's polybench.h: the array
   and loop-bound macros kernels use, and prototypes for the runtime.  Array
   parameters come out as C99 arrays with the macro extents (or the scalar
   parameters with POLYBENCH_USE_C99_PROTO); loop bounds use the scalar
   parameters unless POLYBENCH_USE_SCALAR_LB is defined. */
#ifndef _TRANSPILE_POLYBENCH_H
#define _TRANSPILE_POLYBENCH_H
#include <stdlib.h>
#include <stdio.h>

#ifdef POLYBENCH_USE_C99_PROTO
# define POLYBENCH_1D(var, d1, dd1) var[dd1]
# define POLYBENCH_2D(var, d1, d2, dd1, dd2) var[dd1][dd2]
# define POLYBENCH_3D(var, d1, d2, d3, dd1, dd2, dd3) var[dd1][dd2][dd3]
#else
# define POLYBENCH_1D(var, d1, dd1) var[d1]
# define POLYBENCH_2D(var, d1, d2, dd1, dd2) var[d1][d2]
# define POLYBENCH_3D(var, d1, d2, d3, dd1, dd2, dd3) var[d1][d2][d3]
#endif

#ifdef POLYBENCH_USE_SCALAR_LB
# define POLYBENCH_LOOP_BOUND(macro, param) macro
#else
# define POLYBENCH_LOOP_BOUND(macro, param) param
#endif

#define POLYBENCH_1D_ARRAY_DECL(var, type, d1, dd1) \
  type (*var)[d1] = (type (*)[d1]) polybench_alloc_data((d1), sizeof(type))
#define POLYBENCH_2D_ARRAY_DECL(var, type, d1, d2, dd1, dd2) \
  type (*var)[d1][d2] = (type (*)[d1][d2]) polybench_alloc_data((d1) * (d2), sizeof(type))
#define POLYBENCH_3D_ARRAY_DECL(var, type, d1, d2, d3, dd1, dd2, dd3) \
  type (*var)[d1][d2][d3] = \
    (type (*)[d1][d2][d3]) polybench_alloc_data((d1) * (d2) * (d3), sizeof(type))
#define POLYBENCH_ARRAY(x) (*x)
#define POLYBENCH_FREE_ARRAY(x) free((void *)x)

#define POLYBENCH_DUMP_TARGET stderr
#define POLYBENCH_DUMP_START fprintf(POLYBENCH_DUMP_TARGET, "==BEGIN DUMP_ARRAYS==\n")
#define POLYBENCH_DUMP_FINISH fprintf(POLYBENCH_DUMP_TARGET, "==END   DUMP_ARRAYS==\n")
#define POLYBENCH_DUMP_BEGIN(s) fprintf(POLYBENCH_DUMP_TARGET, "begin dump: %s", s)
#define POLYBENCH_DUMP_END(s) fprintf(POLYBENCH_DUMP_TARGET, "\nend   dump: %s\n", s)

#define polybench_start_instruments
#define polybench_stop_instruments
#define polybench_print_instruments
#define polybench_prevent_dce(x) x

void *polybench_alloc_data(unsigned long long n, int elt_size);
void polybench_free_data(void *ptr);
void polybench_flush_cache(void);
void polybench_prepare_instruments(void);
void polybench_timer_start(void);
void polybench_timer_stop(void);
void polybench_timer_print(void);
#endif
