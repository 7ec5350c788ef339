// ERROR: 5:3: do-while loops are not supported
void f(int n, double A[n]) {
  int i = 0;
#pragma scop
  do {
    A[i] = 0;
    i++;
  } while (i < n);
#pragma endscop
}
