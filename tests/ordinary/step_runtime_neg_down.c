// step_runtime_neg_down: stride
// expect: parallel i

void step_runtime_neg_down(int n, int dec, float a[n], float b[n]) {
  for (int i = n - 1; i >= 0; i += dec)
    a[i] = b[i] * 3.0f;
}
