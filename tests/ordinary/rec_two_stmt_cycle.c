// rec_two_stmt_cycle: recurrence
// expect: sequential

void rec_two_stmt_cycle(int n, float a[n], float b[n], float c[n]) {
  for (int i = 1; i < n; i++) {
    a[i] = b[i - 1] + c[i];
    b[i] = a[i] * 0.5f;
  }
}
