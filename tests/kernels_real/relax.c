/* relax: shortest route lengths between all pairs of stops, relaxing through each stop in turn
 * (the min-plus closure of a distance table). */
#include <stdio.h>

#include "kr_util.h"

#ifndef NS
#define NS 40
#endif

static void fill(int ns, int KR_ARR2(d, NS, NS, ns, ns))
{
  unsigned seed = 3;
  for (int i = 0; i < ns; i++)
    for (int j = 0; j < ns; j++)
      d[i][j] = i == j ? 0 : 1 + (int)(kr_random(&seed) * 50.0);
}

void kernel_relax(int ns, int KR_ARR2(d, NS, NS, ns, ns))
{
  int via, from, to;

#pragma scop
  for (via = 0; via < ns; via++)
    for (from = 0; from < ns; from++)
      for (to = 0; to < ns; to++)
        d[from][to] = d[from][to] < d[from][via] + d[via][to] ? d[from][to] : d[from][via] + d[via][to];
#pragma endscop
}

int main(void)
{
  int ns = NS;
  KR_NEW2(d, int, NS, NS);
  fill(ns, KR_USE(d));
  kr_timer_start();
  kernel_relax(ns, KR_USE(d));
  kr_timer_print();
  long check = 0;
  for (int i = 0; i < ns; i++)
    for (int j = 0; j < ns; j++)
      check += KR_USE(d)[i][j];
  printf("%ld\n", check);
  KR_FREE(d);
  return 0;
}
