/* floyd-warshall: all-pairs shortest path lengths.
 * paths[i][j] starts as the edge weight from i to j and ends as the length
 * of the shortest path through any intermediate nodes. */

void kernel_floyd_warshall(int n, int paths[n][n])
{
  int i, j, k;

#pragma scop
  for (k = 0; k < n; k++) {
    for (i = 0; i < n; i++)
      for (j = 0; j < n; j++)
        paths[i][j] = paths[i][j] < paths[i][k] + paths[k][j] ?
                      paths[i][j] : paths[i][k] + paths[k][j];
  }
#pragma endscop
}
