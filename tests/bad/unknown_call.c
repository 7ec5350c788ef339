// ERROR: 6:5: call to 'printf' is not supported in an offloaded function
#include <stdio.h>

void f(int n, double A[n]) {
  for (int i = 0; i < n; i++)
    printf("%f\n", A[i]);
}
