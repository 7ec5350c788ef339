// ERROR: 4:5: 'switch' statement is not supported
void f(int n, double A[n]) {
  for (int i = 0; i < n; i++) {
    switch (i) { case 0: A[i] = 1; }
  }
}
