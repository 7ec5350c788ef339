/* nussinov: RNA secondary-structure prediction by dynamic programming.
 * table[i][j] is the maximum number of complementary base pairs
 * (bases 0..3, a pair matches when b1 + b2 == 3) in seq[i..j]. */

static int match(int b1, int b2)
{
  return b1 + b2 == 3 ? 1 : 0;
}

static int max_score(int s1, int s2)
{
  return s1 >= s2 ? s1 : s2;
}

void kernel_nussinov(int n, char seq[n], int table[n][n])
{
  int i, j, k;

#pragma scop
  for (i = n - 1; i >= 0; i--) {
    for (j = i + 1; j < n; j++) {
      if (j - 1 >= 0)
        table[i][j] = max_score(table[i][j], table[i][j - 1]);
      if (i + 1 < n)
        table[i][j] = max_score(table[i][j], table[i + 1][j]);

      if (j - 1 >= 0 && i + 1 < n) {
        /* Do not allow adjacent elements to bond. */
        if (i < j - 1)
          table[i][j] = max_score(table[i][j], table[i + 1][j - 1] + match(seq[i], seq[j]));
        else
          table[i][j] = max_score(table[i][j], table[i + 1][j - 1]);
      }

      for (k = i + 1; k < j; k++) {
        table[i][j] = max_score(table[i][j], table[i][k] + table[k + 1][j]);
      }
    }
  }
#pragma endscop
}
