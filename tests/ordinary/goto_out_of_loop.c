// goto_out_of_loop: goto
// expect: parallel i

void goto_out_of_loop(int n, float a[n], float b[n], float c[n]) {
  for (int i = 0; i < n; i++) {
    if (b[i] < 0.0f)
      goto done;
    a[i] = b[i];
  }
done:
  c[0] = 1.0f;
}
