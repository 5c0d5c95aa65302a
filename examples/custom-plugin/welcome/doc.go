// Package welcome is a profilekit plugin written outside profilekit's own
// plugin packages, with nothing but its public API (packages plugins and
// api/kubeflow/v1): it gives every Profile that enables it
// a ConfigMap with a welcome message for the namespace's users.
//
// The ConfigMap (named welcome unless the host says otherwise) holds two
// keys: message, the configured message with the placeholders
// {{ .Namespace }}, {{ .Profile }} and {{ .Owner }} filled in, and contact,
// whom to ask for help. A Profile may set its own message and contact; the
// name and the longest message allowed are the host's. A message that is
// empty, too long or holds an unknown placeholder is reported as
// WelcomeReady=False naming the field, and the ConfigMap stays as it was.
// Revoking the plugin deletes the ConfigMap.
//
// Host defaults (the defaults of its section, welcome, in the host's
// configuration file):
//
//	name: welcome
//	maxLength: 1024
//	message: "Welcome to {{ .Namespace }}, {{ .Owner }}!"
//	contact: platform@example.org
//
// A Profile that enables it with a message of its own:
//
//	apiVersion: kubeflow.org/v1
//	kind: Profile
//	metadata:
//	  name: team-a
//	spec:
//	  owner: {kind: User, name: alice@example.org}
//	  plugins:
//	  - kind: welcome
//	    spec:
//	      message: "Team A's notebooks live in {{ .Namespace }}."
//
// # Stability
//
// This package is an example: it is not part of profilekit's stable API and
// changes with it.
package welcome
