// ERROR: 3:19: loop condition 'i != ...' with step 2 is not supported
void f(int n, double A[n]) {
  for (int i = 0; i != n; i += 2)
    A[i] = 0;
}
