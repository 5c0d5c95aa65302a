package plugins

// CoreKind is the kind of the plugin that makes what the upstream Kubeflow
// profile controller makes (the namespace, its owner's RoleBinding, the
// default service accounts, the owner's AuthorizationPolicy and
// kf-resource-quota), so that a host can replace that controller. It is the
// only kind whose Definition may set Upstream.
const CoreKind = "core"
