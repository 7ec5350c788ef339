// ptr_post_increment: pointer
// expect: parallel i

void ptr_post_increment(int n, float a[n], float b[n], float c[n]) {
  float *p = a;
  float *q = b;
  for (int i = 0; i < n; i++)
    *p++ = *q++ + c[i];
}
