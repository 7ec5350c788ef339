// scan_horner: a polynomial by Horner's rule, its value read only after the loop
// expect: scan

float scan_horner(int n, const float c[n], float x) {
  float p = 0.0f;
  for (int i = 0; i < n; i++)
    p = p * x + c[i];
  return p;
}
