// ret_search: linear search returning the first index found (the return leaves the loop)
// expect: reduction

int ret_search(int n, const float a[n], float x) {
  for (int i = 0; i < n; i++)
    if (a[i] >= x)
      return i;
  return -1;
}
