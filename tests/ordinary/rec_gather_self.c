// rec_gather_self: recurrence
// expect: sequential

void rec_gather_self(int n, float a[n], int idx[n]) {
  for (int i = 0; i < n; i++)
    a[i] = a[idx[i]] + 1.0f;
}
