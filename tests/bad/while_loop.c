// ERROR: 5:3: while loops are not supported: no provable trip count
void f(int n, double A[n]) {
  int i = 0;
#pragma scop
  while (i < n) {
    A[i] = 0;
    i++;
  }
#pragma endscop
}
