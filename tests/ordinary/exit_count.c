// exit_count: the counter's exit value is the number of elements written
// expect: parallel i_1

void exit_count(int n, float a[n], const float b[n], int used[1]) {
  int i;
  for (i = 0; i < n; i++)
    a[i] = b[i] + 1.0f;
  used[0] = i;
}
