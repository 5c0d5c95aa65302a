package plugins

import "context"

// Notifier is implemented by a plugin whose desired state depends on
// something besides the cluster and the Profile, such as a file the host
// mounts. The host calls Notify once when it starts, with the plugin's host
// config (the type NewConfig returns), and lets it run until ctx ends; each
// call of changed makes the host reconcile every Profile the plugin serves.
// Notify returns nil when ctx ends; an error it returns stops the host, so it
// reports trouble with what it watches through Apply's errors instead.
type Notifier interface {
	Notify(ctx context.Context, config any, changed func()) error
}
