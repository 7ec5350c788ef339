// exit_down_stride: a downward loop by three; where it stopped is read after it
// expect: parallel i_1

void exit_down_stride(int n, float a[n], int stop[1]) {
  int i;
  for (i = n - 1; i >= 0; i -= 3)
    a[i] = -a[i];
  stop[0] = i;
}
