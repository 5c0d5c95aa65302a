{{/*
What each plugin needs from the API server, besides what every host needs
(Profiles read, their status written, Events). A plugin's owned kinds need
create, get, list, watch, patch (server-side apply) and delete (pruning); the
host lists and watches them cluster-wide, filtered by profilekit's labels,
and reads one by name when its cache does not hold it as ours. The kinds a
plugin only watches need list and watch: they are read from a cache alone.
Plugins that keep state outside the Profile's namespace (outsideState) also
keep a finalizer on the Profile (patch); their records of that state, the
names' tenures and the identities' claims are ConfigMaps in the host's own
namespace, granted by a Role there (roles.yaml), never cluster-wide. Rules
that depend on the configuration (bind on roles, Roles in other namespaces)
are made in clusterrole.yaml and roles.yaml.
A test (examples/host/helm_test.go) renders the chart with every shipped
configuration and checks these rules against the plugins' definitions; the
end-to-end host tests run under them and report every rule no request
needed (examples/host/rbac_unused_test.go).
*/}}
{{- define "profilekit.pluginRules" -}}
own: &own [create, get, list, watch, patch, delete]
finalizer: &finalizer {groups: [kubeflow.org], resources: [profiles], verbs: [patch]}
# The plugins with outside state: the host keeps their records in its own
# namespace (roles.yaml).
outsideState: [volumes, apps, gitea, blobcsi, WorkloadIdentity, AwsIamForServiceAccount, AzureWorkloadIdentity]
plugins:
  quotas:
  - {groups: [""], resources: [resourcequotas], verbs: *own}
  limitrange:
  - {groups: [""], resources: [limitranges], verbs: *own}
  rbac:
  - {groups: [rbac.authorization.k8s.io], resources: [roles, rolebindings], verbs: *own}
  network:
  - {groups: [networking.k8s.io], resources: [networkpolicies], verbs: *own}
  notebook:
  - {groups: [kubeflow.org], resources: [poddefaults], verbs: *own}
  # The copies in Profiles' namespaces; the sources are read with
  # namespaced, name- or label-filtered watches. RBAC cannot restrict list
  # and watch to a label, so this is wider than what the host reads. With
  # gitea (its banner), the only plugin that writes ConfigMaps outside the
  # host's namespace.
  replicate:
  - {groups: [""], resources: [secrets, configmaps], verbs: *own}
  # The claims; the volumes bound to them (read all, so that a newly bound
  # volume is seen; patch for the reclaim policy, labels and the claim of a
  # returning Profile; delete for the sweeper, which deletes only volumes
  # with profilekit's labels and a release mark); StorageClasses, to know
  # whether a claim may grow.
  volumes:
  - {groups: [""], resources: [persistentvolumeclaims], verbs: *own}
  - {groups: [""], resources: [persistentvolumes], verbs: [get, list, watch, patch, delete]}
  - {groups: [storage.k8s.io], resources: [storageclasses], verbs: [list, watch]}
  - *finalizer
  # The upstream controller's objects; bind on the ClusterRoles its
  # RoleBindings grant is added in clusterrole.yaml, and patch on Profiles
  # (taking the upstream controller's finalizer off) with handOverFinalizer
  # in profilekit.clusterRules.
  core:
  - {groups: [""], resources: [namespaces, serviceaccounts, resourcequotas], verbs: *own}
  - {groups: [rbac.authorization.k8s.io], resources: [rolebindings], verbs: *own}
  - {groups: [security.istio.io], resources: [authorizationpolicies], verbs: *own}
  # Contributors come from the RoleBindings in each Profile's namespace.
  authpolicy:
  - {groups: [security.istio.io], resources: [authorizationpolicies], verbs: *own}
  - {groups: [rbac.authorization.k8s.io], resources: [rolebindings], verbs: [list, watch]}
  # Contributors in the access-management service's shape: a RoleBinding
  # and an AuthorizationPolicy each; bind on the kubeflow-* ClusterRoles the
  # configuration's roles allow is added in clusterrole.yaml.
  contributors:
  - {groups: [rbac.authorization.k8s.io], resources: [rolebindings], verbs: *own}
  - {groups: [security.istio.io], resources: [authorizationpolicies], verbs: *own}
  # Label and annotation keys on the Profile's namespace, applied alone:
  # never create or delete.
  namespacemeta:
  - {groups: [""], resources: [namespaces], verbs: [get, list, watch, patch]}
  expose:
  - {groups: [networking.istio.io], resources: [virtualservices], verbs: *own}
  egress:
  - {groups: [networking.istio.io], resources: [serviceentries, destinationrules, virtualservices], verbs: *own}
  # Applications are granted in the Argo CD namespace only (roles.yaml).
  apps:
  - {groups: [networking.istio.io], resources: [virtualservices], verbs: *own}
  - {groups: [networking.k8s.io], resources: [networkpolicies], verbs: *own}
  - *finalizer
  # The database Secret in each Profile's namespace, and the administrator
  # DSN and CA Secrets, which carry profilekit's label so that the host's
  # label-filtered cache holds them; an instance's banner ConfigMap in each
  # Profile's namespace.
  gitea:
  - {groups: [""], resources: [secrets, configmaps], verbs: *own}
  - {groups: [networking.istio.io], resources: [serviceentries, virtualservices], verbs: *own}
  - {groups: [networking.k8s.io], resources: [networkpolicies], verbs: *own}
  - *finalizer
  # Volumes and claims; the pods of a namespace, read only, to name those
  # that still mount a volume being removed. The account Secrets and grants
  # ConfigMaps are granted by name in their namespaces (roles.yaml), and a
  # ValidatingAdmissionPolicy keeps the host to its own volumes
  # (admissionpolicy.yaml).
  blobcsi:
  - {groups: [""], resources: [persistentvolumes, persistentvolumeclaims], verbs: *own}
  - {groups: [""], resources: [pods], verbs: [list]}
  - *finalizer
  # The cloud identity plugins watch the workload service accounts and
  # apply one annotation key each; never create, update or delete.
  WorkloadIdentity: &identity
  - {groups: [""], resources: [serviceaccounts], verbs: [list, watch, patch]}
  - *finalizer
  AwsIamForServiceAccount: *identity
  AzureWorkloadIdentity: *identity
  # Shares are ResourceQuotas in members' namespaces, written by the
  # balancer alone; refusals are read from workload controllers'
  # FailedCreate Events.
  budgets:
  - {groups: [""], resources: [resourcequotas], verbs: *own}
  - {groups: [""], resources: [events], verbs: [list, watch]}
  # The kinds of the configuration's templates (profilekit.templatesRules).
  templates: []
# The tenant page, when it is on: a SubjectAccessReview for each user and
# namespace it shows, and a cache of every kind it shows, whichever plugins
# write them (KFAM's RoleBindings are read too, as metadata); it reads
# nothing by name.
page:
- {groups: [authorization.k8s.io], resources: [subjectaccessreviews], verbs: [create]}
- {groups: [""], resources: [resourcequotas, limitranges, persistentvolumeclaims, serviceaccounts], verbs: [list, watch]}
- {groups: [rbac.authorization.k8s.io], resources: [rolebindings], verbs: [list, watch]}
- {groups: [kubeflow.org], resources: [poddefaults], verbs: [list, watch]}
{{- end }}

{{/* The templates plugin's rules: own verbs on the kind of each template in
its defaults, and on each of its retiredKinds (still pruned). The resource is
the kind's plural by the English rule CRD generators follow (lower case; s, x,
ch and sh take es, a consonant and y become ies, anything else takes an s),
which is nearly every kind's; give a kind whose plural differs (Endpoints) in
rbac.extraRules. */}}
{{- define "profilekit.templatesRules" -}}
{{- $d := .defaults | default dict }}
{{- $kinds := list }}
{{- range $d.templates | default list }}
{{- $o := .object | default dict }}
{{- if kindIs "string" $o }}
{{- $o = fromYaml $o }}
{{- end }}
{{- $kinds = append $kinds (pick $o "apiVersion" "kind") }}
{{- end }}
{{- $kinds = concat $kinds ($d.retiredKinds | default list) }}
{{- $out := list }}
{{- range $kinds }}
{{- $gv := splitList "/" (.apiVersion | toString) }}
{{- $group := ternary "" (first $gv) (eq (len $gv) 1) }}
{{- $kind := lower (.kind | toString) }}
{{- $resource := printf "%ss" $kind }}
{{- if regexMatch "(s|x|ch|sh)$" $kind }}
{{- $resource = printf "%ses" $kind }}
{{- else if regexMatch "[^aeiou]y$" $kind }}
{{- $resource = printf "%sies" (trimSuffix "y" $kind) }}
{{- end }}
{{- $out = append $out (dict "groups" (list $group) "resources" (list $resource) "verbs" (list "create" "get" "list" "watch" "patch" "delete")) }}
{{- end }}
{{- toYaml $out }}
{{- end }}

{{/* The ClusterRole's rules for the enabled plugins, one rule per resource,
sorted, so that the output is stable. */}}
{{- define "profilekit.clusterRules" -}}
{{- $all := include "profilekit.pluginRules" . | fromYaml }}
{{- $table := $all.plugins }}
{{- $enabled := include "profilekit.enabledPlugins" . | fromYaml }}
{{- $acc := dict }}
{{- $base := list
  (dict "groups" (list "kubeflow.org") "resources" (list "profiles") "verbs" (list "get" "list" "watch"))
  (dict "groups" (list "kubeflow.org") "resources" (list "profiles/status") "verbs" (list "update"))
  (dict "groups" (list "kubeflow.org") "resources" (list "profiles/finalizers") "verbs" (list "update"))
  (dict "groups" (list "events.k8s.io") "resources" (list "events") "verbs" (list "create" "patch")) }}
{{- $rules := $base }}
{{- range $kind := keys $enabled | sortAlpha }}
{{- if not (hasKey $table $kind) }}
{{- fail (printf "config: plugins.%s: the chart knows no RBAC for this plugin; add it to templates/_rbac.tpl" $kind) }}
{{- end }}
{{- $rules = concat $rules (get $table $kind) }}
{{- end }}
{{- with $enabled.templates }}
{{- $rules = concat $rules (include "profilekit.templatesRules" . | fromYamlArray) }}
{{- end }}
{{- with $enabled.core }}
{{- if (.defaults | default dict).handOverFinalizer }}
{{- $rules = append $rules $all.finalizer }}
{{- end }}
{{- end }}
{{- if (include "profilekit.page" . | fromYaml).enabled }}
{{- $rules = concat $rules $all.page }}
{{- end }}
{{- range $r := $rules }}
{{- range $g := $r.groups }}
{{- range $res := $r.resources }}
{{- $key := printf "%s|%s" $g $res }}
{{- $_ := set $acc $key (concat (get $acc $key | default list) $r.verbs | uniq) }}
{{- end }}
{{- end }}
{{- end }}
{{- range $key := keys $acc | sortAlpha }}
{{- $parts := splitList "|" $key }}
- apiGroups: [{{ index $parts 0 | quote }}]
  resources: [{{ index $parts 1 }}]
  verbs: [{{ get $acc $key | sortAlpha | join ", " }}]
{{- end }}
{{- end }}
