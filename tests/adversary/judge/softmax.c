/* softmax: each row of y is the softmax of the same row of x. */
#include <math.h>

void softmax(int m, int n, double x[m][n], double y[m][n])
{
  for (int i = 0; i < m; i++) {
    double mx = x[i][0];
    for (int j = 1; j < n; j++)
      if (x[i][j] > mx)
        mx = x[i][j];
    double s = 0.0;
    for (int j = 0; j < n; j++) {
      y[i][j] = exp(x[i][j] - mx);
      s += y[i][j];
    }
    for (int j = 0; j < n; j++)
      y[i][j] = y[i][j] / s;
  }
}
