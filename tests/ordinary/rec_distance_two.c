// rec_distance_two: recurrence
// expect: sequential

void rec_distance_two(int n, float a[n], float b[n], float c[n]) {
  for (int i = 2; i < n; i++)
    a[i] = a[i - 2] + b[i];
}
