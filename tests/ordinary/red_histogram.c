// red_histogram: reduction
// expect: parallel i

void red_histogram(int n, int m, int key[n], float v[n], float h[m]) {
  for (int i = 0; i < n; i++)
    h[key[i] % m] += v[i];
}
