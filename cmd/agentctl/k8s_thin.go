//go:build !k8s

package main

import (
	"net/url"

	"github.com/agentctl/agentctl/client"
	"github.com/agentctl/agentctl/hosts"
)

// withClusters registers k8s:// in an agentctl without client-go: the URL
// is checked here (a typo is told at once), and opening it hands the
// command over to clusterBinary.
func withClusters(r hosts.Registry) hosts.Registry {
	r["k8s"] = func(u *url.URL, name string, _ hosts.Env) (client.Sessions, error) {
		if _, err := hosts.ParseK8s(u); err != nil {
			return nil, err
		}
		return nil, clusterHostError{host: name}
	}
	return r
}
