// red_count: reduction
// expect: reduction

void red_count(int n, float a[n], int out[1]) {
  int k = 0;
  for (int i = 0; i < n; i++)
    if (a[i] > 0.5f)
      k++;
  out[0] = k;
}
