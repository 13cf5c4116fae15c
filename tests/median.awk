# median(k): the median of val[k, 1] .. val[k, cnt[k]], with lo[k] and
# hi[k] their smallest and largest.  Put before a program's own text
# (awk "$(cat tests/median.awk)"'...'): tests/run-main, tests/hosts/timing.
function median(k,   a, m, i, j, x) {
	m = cnt[k]
	for (i = 1; i <= m; i++) a[i] = val[k, i]
	for (i = 2; i <= m; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
	lo[k] = a[1]; hi[k] = a[m]
	return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
}
