// brk_exit: break
// expect: error: exit
#include <stdlib.h>

void brk_exit(int n, float a[n], float b[n], float c[n]) {
  for (int i = 0; i < n; i++) {
    if (b[i] < 0.0f)
      exit(1);
    a[i] = b[i];
  }
}
