// ret_guard: an early return on an empty or bad size, then an ordinary map
// expect: parallel i

void ret_guard(int n, float a[n], float s) {
  if (n <= 1)
    return;
  for (int i = 0; i < n; i++)
    a[i] *= s;
}
