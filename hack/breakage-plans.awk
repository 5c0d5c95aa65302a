# breakage-plans.awk reads the output of a harness test (go test without
# -v) and prints the first line of each finding the harness reported
# (plugintest's fail starts it with the plan, and ends it with the line
# that reruns the plan), then the counts of the patterns that failed. With
# first=1 it prints the first plan that failed alone, and nothing when no
# plan failed.
/^ +[a-z_]+\.go:[0-9]+: / {
	line = $0
	sub(/^ +[a-z_]+\.go:[0-9]+: /, "", line)
	if (line ~ /: [0-9]+ [a-z-]+ plans, [1-9][0-9]* failed/) counts[++c] = line
	else if (!(line in seen)) { seen[line] = 1; findings[++n] = line }
}
/rerun: PLUGINTEST_PLAN="/ && !plan {
	plan = $0
	sub(/.*PLUGINTEST_PLAN="/, "", plan)
	sub(/" go test .*/, "", plan)
}
END {
	if (first) {
		if (plan != "") print plan
		exit
	}
	for (i = 1; i <= n; i++) print "\t" findings[i]
	for (i = 1; i <= c; i++) print "\t" counts[i]
}
