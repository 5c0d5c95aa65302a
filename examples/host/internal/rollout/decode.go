package rollout

import corev1 "k8s.io/api/core/v1"

// Decode returns the state that cm, the ConfigMap ConfigMapName in the
// host's namespace, holds as the leader wrote it: for those that show where
// a rollout stands without moving it, such as the page's admin overview on
// any replica.
func Decode(cm *corev1.ConfigMap) (*State, error) { return decode(cm) }
