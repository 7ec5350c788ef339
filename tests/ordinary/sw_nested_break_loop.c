// sw_nested_break_loop: switch
// expect: parallel i

void sw_nested_break_loop(int n, int op[n], float a[n]) {
  for (int i = 0; i < n; i++) {
    switch (op[i] % 2) {
    case 0:
      for (int j = 0; j < n; j++) {
        if (j > i)
          break;
        a[i] += 1.0f;
      }
      a[i] = 1.0f;
    case 1:
      a[i] = a[i] * 2.0f;
      if (a[i] > 4.0f) break;
      a[i] += 1.0f;
    }
  }
}
