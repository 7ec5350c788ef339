// goto_cleanup_chain: goto
// expect: parallel i

void goto_cleanup_chain(int n, float a[n], float b[n], float c[n]) {
  for (int i = 0; i < n; i++) {
    float t = b[i];
    if (t < 0.0f)
      goto neg;
    if (t > 0.5f)
      goto clamp;
    a[i] = t;
    continue;
  clamp:
    t = 0.5f;
  neg:
    a[i] = t * c[i];
  }
}
