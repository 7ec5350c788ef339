// ret_helper_loop: a helper that returns from inside its loop, called per row
// expect: parallel i

static int first_positive(int m, const float *row) {
  for (int j = 0; j < m; j++)
    if (row[j] > 0.0f)
      return j;
  return m;
}

void ret_helper_loop(int n, int m, const float a[n][m], int where[n]) {
  for (int i = 0; i < n; i++)
    where[i] = first_positive(m, a[i]);
}
