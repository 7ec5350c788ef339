/* branch: elements of even 32-blocks doubled, of odd ones incremented.  The reference for
 * branch_uniform.cu and branch_divergent.cu. */
void branch(int n, float a[n], float b[n])
{
  for (int i = 0; i < n; i++) {
    if ((i / 32) % 2 == 0)
      b[i] = 2.0f * a[i];
    else
      b[i] = a[i] + 1.0f;
  }
}
