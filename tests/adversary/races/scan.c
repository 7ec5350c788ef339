/* scan: inclusive prefix sums of x. */
void scan(int n, double x[n], double s[n])
{
  double run = 0.0;
  for (int i = 0; i < n; i++) {
    run += x[i];
    s[i] = run;
  }
}
