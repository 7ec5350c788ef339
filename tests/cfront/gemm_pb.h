#ifndef GEMM_PB_H
#define GEMM_PB_H
#ifndef NI
# define NI 20
#endif
#define NJ 25
#define NK 30
#define _PB_NI POLYBENCH_LOOP_BOUND(NI, ni)
#define _PB_NJ POLYBENCH_LOOP_BOUND(NJ, nj)
#define _PB_NK POLYBENCH_LOOP_BOUND(NK, nk)
#define DATA_TYPE double
#define SCALAR_VAL(x) x
#endif
