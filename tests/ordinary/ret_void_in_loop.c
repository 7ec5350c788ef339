// ret_void_in_loop: a void function stops at the first negative element, after writing the ones before
// expect: sequential

void ret_void_in_loop(int n, float a[n]) {
  for (int i = 0; i < n; i++) {
    if (a[i] < 0.0f)
      return;
    a[i] = a[i] * 0.5f;
  }
}
