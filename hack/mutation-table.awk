# mutation-table.awk prints make mutation's table from lines
# "plugin|mutant|result": one row per plugin and mutant, then each
# plugin's score (killed of the mutants it reached that are not declared
# equivalent) and the total.
{
	printf "%-34s %-18s %s\n", $1, $2, $3
	if (!($1 in seen)) { seen[$1] = 1; order[++count] = $1 }
	n[$1, $3]++
	total[$3]++
}
BEGIN { printf "%-34s %-18s %s\n", "plugin", "mutant", "result" }
END {
	print ""
	printf "%-34s %s\n", "plugin", "score (killed / reached and not equivalent; equivalent; not reached)"
	for (i = 1; i <= count; i++) {
		p = order[i]
		k = n[p, "killed"]; s = n[p, "survived"] + n[p, "wrongly equivalent"]
		printf "%-34s %d/%d; %d; %d\n", p, k, k + s, n[p, "equivalent"], n[p, "not reached"]
	}
	k = total["killed"]; s = total["survived"] + total["wrongly equivalent"]
	printf "%-34s %d/%d; %d; %d\n", "all", k, k + s, total["equivalent"], total["not reached"]
}
