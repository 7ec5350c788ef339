// goto_backward: goto
// expect: error: goto

void goto_backward(int n, float a[n], float b[n], float c[n]) {
  int i = 0;
again:
  a[i] = b[i];
  i++;
  if (i < n)
    goto again;
}
