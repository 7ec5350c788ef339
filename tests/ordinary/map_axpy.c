// map_axpy: basic
// expect: parallel i

void map_axpy(int n, float alpha, float x[n], float y[n]) {
  for (int i = 0; i < n; i++)
    y[i] = alpha * x[i] + y[i];
}
