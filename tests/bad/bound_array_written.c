// ERROR: 5:7: array 'ptr' is written in the body of a loop whose bounds read it
void f(int n, int ptr[n + 1], double v[100]) {
  for (int i = 0; i < n; i++)
    for (int k = ptr[i]; k < ptr[i + 1]; k++) {
      ptr[i + 1] = 0;
      v[k] = 1;
    }
}
