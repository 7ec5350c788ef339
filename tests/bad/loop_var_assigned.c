// ERROR: 5:7: loop variable 'i' is assigned in the body of its loop
void f(int n, double A[n]) {
  for (int i = 0; i < n; i++) {
    if (A[i] > 0)
      i += 2;
  }
}
