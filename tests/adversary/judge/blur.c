/* blur: one step of a three-point stencil; the two end points of b are left alone. */
void blur(int n, double a[n], double b[n])
{
  for (int i = 1; i < n - 1; i++)
    b[i] = 0.25 * a[i - 1] + 0.5 * a[i] + 0.25 * a[i + 1];
}
