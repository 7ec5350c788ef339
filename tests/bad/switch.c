// ERROR: 4:5: a 'case' label nested inside a statement of its switch
void f(int n, double A[n]) {
  for (int i = 0; i < n; i++) {
    switch (i % 2) { case 0: if (i > 2) { case 1: A[i] = 1; } }
  }
}
