// goto_two_labels: goto
// expect: parallel i

void goto_two_labels(int n, float a[n], float b[n], float c[n]) {
  for (int i = 0; i < n; i++) {
    if (b[i] < 0.0f)
      goto neg;
    if (b[i] > 1.0f)
      goto big;
    a[i] = b[i];
    goto out;
  neg:
    a[i] = 0.0f;
    goto out;
  big:
    a[i] = 1.0f;
  out:;
  }
}
