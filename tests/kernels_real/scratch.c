/* scratch: every (b, t) row of x is replaced by its product with a weight matrix, through one
 * scratch vector acc that every (b, t) fills afresh (the vector is what array expansion copies). */
#include <stdio.h>

#include "kr_util.h"

#ifndef NB
#define NB 12
#define NT 10
#define NK 16
#endif

static void fill(int nb, int nt, int nk, double KR_ARR3(x, NB, NT, NK, nb, nt, nk), double KR_ARR2(w, NK, NK, nk, nk))
{
  unsigned seed = 7;
  for (int b = 0; b < nb; b++)
    for (int t = 0; t < nt; t++)
      for (int p = 0; p < nk; p++)
        x[b][t][p] = kr_random(&seed);
  for (int p = 0; p < nk; p++)
    for (int s = 0; s < nk; s++)
      w[p][s] = kr_random(&seed) - 0.5;
}

void kernel_scratch(int nb, int nt, int nk, double KR_ARR3(x, NB, NT, NK, nb, nt, nk),
                    double KR_ARR2(w, NK, NK, nk, nk), double KR_ARR1(acc, NK, nk))
{
  int b, t, p, s;

#pragma scop
  for (b = 0; b < nb; b++)
    for (t = 0; t < nt; t++) {
      for (p = 0; p < nk; p++) {
        acc[p] = 0.0;
        for (s = 0; s < nk; s++)
          acc[p] = acc[p] + w[p][s] * x[b][t][s];
      }
      for (p = 0; p < nk; p++)
        x[b][t][p] = 0.5 * acc[p];
    }
#pragma endscop
}

int main(void)
{
  int nb = NB, nt = NT, nk = NK;
  KR_NEW3(x, double, NB, NT, NK);
  KR_NEW2(w, double, NK, NK);
  KR_NEW1(acc, double, NK);
  fill(nb, nt, nk, KR_USE(x), KR_USE(w));
  kr_timer_start();
  kernel_scratch(nb, nt, nk, KR_USE(x), KR_USE(w), KR_USE(acc));
  kr_timer_print();
  double check = 0.0;
  for (int b = 0; b < nb; b++)
    for (int t = 0; t < nt; t++)
      for (int p = 0; p < nk; p++)
        check += KR_USE(x)[b][t][p];
  printf("%0.6f\n", check);
  KR_FREE(x);
  KR_FREE(w);
  KR_FREE(acc);
  return 0;
}
