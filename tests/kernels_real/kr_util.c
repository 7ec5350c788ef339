/* The utility translation unit of the kernels in this folder (linked, never transpiled). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "kr_util.h"

static struct timespec kr_started;

void *kr_alloc(unsigned long count, unsigned long size)
{
  void *p = calloc(count, size);
  if (p == NULL) {
    fprintf(stderr, "kr_alloc: out of memory\n");
    exit(1);
  }
  return p;
}

void kr_free(void *p) { free(p); }

double kr_random(unsigned *state)
{
  *state = *state * 1103515245u + 12345u;
  return (double)((*state >> 8) % 1000u) / 1000.0;
}

void kr_timer_start(void) { clock_gettime(CLOCK_MONOTONIC, &kr_started); }

void kr_timer_print(void)
{
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  printf("%0.6f\n", (double)(now.tv_sec - kr_started.tv_sec) + 1e-9 * (double)(now.tv_nsec - kr_started.tv_nsec));
}
