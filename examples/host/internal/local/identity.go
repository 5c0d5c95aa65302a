package local

// This file holds how `profilekit local` lets a browser on the machine
// itself open the tenant page, which otherwise trusts only the user the
// Kubeflow gateway names.

import (
	"net"
	"net/http"
	"net/netip"
)

// AsUser returns a wrapper of the tenant page's handler that makes every
// request from a loopback address come from user: the user-id header
// (header, its value after prefix) is set to the user, replacing any the
// request sent, and the groups header, when the page reads one, is
// dropped. A request from any other address passes unchanged, so it needs
// the header as it would behind the gateway. Serve the page on a loopback
// address only (Loopback), since on this machine anyone is then the user.
func AsUser(header, prefix, groupsHeader, user string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if fromLoopback(r.RemoteAddr) {
				r = r.Clone(r.Context())
				r.Header.Set(header, prefix+user)
				if groupsHeader != "" {
					r.Header.Del(groupsHeader)
				}
			}
			next.ServeHTTP(w, r)
		})
	}
}

// fromLoopback reports whether a request's remote address (ip:port) is a
// loopback address.
func fromLoopback(remote string) bool {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		return false
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// Loopback reports whether a listening address (host:port) listens on a
// loopback address only: 127.0.0.1, ::1 or localhost. An empty host
// (every address) is not.
func Loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}
