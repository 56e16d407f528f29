// Package clientaddr tells the address a request comes from, through
// trusted proxies only.
package clientaddr

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// Of is the address a request comes from, for counting failed
// authentications per client. It is the peer of the connection, unless the
// peer is one of the trusted proxies: then it is the right-most address of
// X-Forwarded-For that is not a trusted proxy (the entries to its left were
// written by the client and may be forged). Without trusted proxies the
// header is ignored: anyone could send it.
func Of(r *http.Request, trusted []netip.Prefix) netip.Addr {
	peer := remoteAddr(r.RemoteAddr)
	if !isTrusted(peer, trusted) {
		return peer
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	client := peer
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			break // a malformed hop: trust nothing left of it
		}
		client = a.Unmap()
		if !isTrusted(client, trusted) {
			break
		}
	}
	return client
}

func remoteAddr(hostport string) netip.Addr {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}
	}
	return a.Unmap()
}

func isTrusted(a netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
