// step_runtime_blas: stride
// expect: parallel i

void step_runtime_blas(int n, int incx, float alpha, float x[n]) {
  for (int i = 0; i < n; i += incx)
    x[i] = alpha * x[i];
}
