// ERROR: 3:10: include file 'no_such_header.h' not found
#include <stdio.h>
#include <no_such_header.h>

void f(int n, double A[n]) {
  for (int i = 0; i < n; i++) A[i] = 0;
}
