// wrap_cyclic_neighbour: wraparound
// expect: parallel i

void wrap_cyclic_neighbour(int n, float a[n], float b[n]) {
  int left = n - 1;
  for (int i = 0; i < n; i++) {
    a[i] = 0.5f * (b[left] + b[i]);
    left = i;
  }
}
