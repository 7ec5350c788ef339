// exit_two_phase: a prefix loop up to k, then a second loop over the rest from where it stopped
// expect: parallel i_1

void exit_two_phase(int n, int m, float a[n], const float b[n]) {
  int i;
  for (i = 0; i < n && i < m; i++)
    a[i] = b[i];
  for (; i < n; i++)
    a[i] = 0.0f;
}
