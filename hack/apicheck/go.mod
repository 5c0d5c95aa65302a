// Module apicheck pins golang.org/x/exp/apidiff for make apicheck, which
// compares the stable packages' exported API with the baseline beside it.
module github.com/profilekit/profilekit/hack/apicheck

go 1.26.0

require (
	golang.org/x/exp v0.0.0-20261113113407-e3970619a1a4
	golang.org/x/tools v0.52.1-0.20261106145633-d407941a339a
)

require (
	golang.org/x/mod v0.42.0 // indirect
	golang.org/x/sync v0.24.0 // indirect
)
