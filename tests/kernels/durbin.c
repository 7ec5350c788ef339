/* durbin: Levinson-Durbin recursion for the Yule-Walker equations.
 * Solves T y = -r where T is the symmetric Toeplitz matrix with first
 * column (1, r[0], ..., r[n-2]). */

void kernel_durbin(int n, double r[n], double y[n])
{
  double z[n];
  double alpha;
  double beta;
  double sum;
  int i, k;

#pragma scop
  y[0] = -r[0];
  beta = 1.0;
  alpha = -r[0];

  for (k = 1; k < n; k++) {
    beta = (1 - alpha * alpha) * beta;
    sum = 0.0;
    for (i = 0; i < k; i++)
      sum += r[k - i - 1] * y[i];
    alpha = -(r[k] + sum) / beta;

    for (i = 0; i < k; i++)
      z[i] = y[i] + alpha * y[k - i - 1];
    for (i = 0; i < k; i++)
      y[i] = z[i];
    y[k] = alpha;
  }
#pragma endscop
}
