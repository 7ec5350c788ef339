// iv_both_branches: a counter stepped first in both branches of an if (TSVC s124): stepped every iteration
// expect: parallel i

void iv_both_branches(int n, float a[n], const float b[n], const float c[n], const float d[n], const float e[n]) {
  int j = -1;
  for (int i = 0; i < n; i++) {
    if (b[i] > 0.0f) {
      j++;
      a[j] = b[i] + d[i] * e[i];
    } else {
      j++;
      a[j] = c[i] + d[i] * e[i];
    }
  }
}
