// Package apps deploys per-Profile applications through Argo CD: for each
// app the host declares and a Profile enables, one argoproj.io/v1alpha1
// Application in the Argo CD namespace whose destination is the Profile's
// namespace, with an optional route (an Istio VirtualService built by the
// expose plugin's route builder) and NetworkPolicies (built by the network
// plugin's builder) in the Profile's namespace.
//
// A Profile enables an app by naming it in its spec (enable: [name]) or by
// carrying the app's opt-in label set to true. A label value that is not a
// boolean is reported (AppsReady=False, InvalidLabel, naming the label and
// value) and leaves the app as it is.
//
// Each Application is named <namespace>.<app> (ApplicationName), or, when
// that is longer than 63 bytes, parts of both and a hash, with two dots.
// Namespaces and app names never hold a dot, so no two Profiles' apps, nor
// the apps of two plugins in one Argo CD namespace, ever share a name. An
// Application the first release named <namespace>-<app>
// (LegacyApplicationName), which two pairs could share, keeps that name as
// long as it exists with the plugin's labels for its Profile, so that an
// upgrade renames nothing (Argo CD deletes what a deleted Application
// deployed); the plugin never writes an Application without its labels.
//
// Each Application gets:
//
//   - the source the host declares: repoURL, targetRevision, path or chart,
//     and helm (releaseName, valueFiles, parameters, valuesObject), kustomize
//     (namePrefix, nameSuffix, images, commonLabels, commonAnnotations) or
//     directory (recurse, include, exclude, jsonnet) options;
//   - the destination server (default https://kubernetes.default.svc) and
//     the Profile's namespace;
//   - the sync policy, by default automated with prune and selfHeal;
//   - Argo CD's resources finalizer, so that deleting it makes Argo CD
//     remove what it deployed.
//
// Values that take placeholders (helm releaseName, parameter values and
// every string in valuesObject; kustomize name prefix and suffix, common
// labels and annotations; Jsonnet variables that are not code) may use
// {{ .Namespace }}, {{ .Profile }}, {{ .Owner }}, {{ .RootURL }} (the host's
// public root URL) and {{ .AppURL }} (the root URL plus the app's path
// prefix /<prefix>/<namespace>/). They are substituted into decoded values,
// never into YAML text, and a Helm parameter whose substituted value brings
// in a character of Helm's --set syntax is refused, so that a Profile's
// owner name cannot set other values.
//
// An app the Profile no longer wants loses its Application, route and
// policies. Revoke (the plugin removed, or the Profile deleted) deletes them
// all and keeps the Profile's finalizer profilekit.dev/apps until Argo CD
// has finished: the Application stays, with its deletion timestamp, until
// Argo CD has removed what it deployed and dropped the resources finalizer.
// Applications live outside the Profile's namespace, so the plugin keeps
// outside state; hosts narrow their cache of Applications, and their
// rights, to the Argo CD namespace.
//
// Host configuration, an S3 browser proxy per Profile:
//
//	apps:
//	  enabled: all
//	  defaults:
//	    argocd: {namespace: argocd, project: tenants}
//	    rootURL: https://kubeflow.example.org
//	    apps:
//	    - name: s3-browser
//	      optInLabel: apps.example.org/s3-browser
//	      source:
//	        repoURL: https://git.example.org/platform/s3-browser.git
//	        path: chart
//	        targetRevision: v1.4.0
//	        helm:
//	          parameters:
//	          - {name: bucketPrefix, value: '{{ .Namespace }}'}
//	          valuesObject:
//	            baseURL: '{{ .AppURL }}'
//	      route: {service: s3-browser, port: 8080, rewriteToRoot: true, dashboardRedirect: true}
//
// A Profile that wants it:
//
//	apiVersion: kubeflow.org/v1
//	kind: Profile
//	metadata:
//	  name: team-a
//	  labels:
//	    apps.example.org/s3-browser: "true"
//	spec:
//	  owner: {kind: User, name: alice@example.org}
//
// # Stability
//
// Stable under semver (see the README's Versioning section): [Kind],
// [Definition], [DefinitionFromEnv], [Config] and the types it holds
// ([ArgoCD], [App], [Route], [Routing], [Source] and its [Helm] (with
// [HelmParameter]), [Kustomize], [Directory] and [Jsonnet] (with [JsonnetVar])
// parts, [SyncPolicy] with [Automated], [Retry] and [Backoff]) with the JSON
// names, defaults and meaning of their fields, the placeholders RootURL and
// AppURL ([PlaceholderRootURL], [PlaceholderAppURL]), the [Application] names
// [ApplicationName] and [LegacyApplicationName] give, and the condition
// AppsReady. Experimental, and free to change in a minor release: [Build],
// [Choose], [Wanted], [WaitGone], [KeptNames], [Kept], [Desired], [Choice],
// and [Application] with its parts ([ApplicationKind], [ApplicationMeta],
// [ApplicationSpec], [Destination], [ResourcesFinalizer]), the few fields of
// Argo CD's API the plugin writes; [Plugin], [Owns], [Reads], [ConfigFromEnv],
// [NewConfig], [Expand] with [Values], and the constants of the defaults
// ([DefaultArgoCDNamespace], [DefaultProject], [DefaultServer],
// [DefaultSyncPolicy]); run the plugin through its [Definition], and use these
// for tests and previews.
package apps
