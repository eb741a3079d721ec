//go:build k8s

package main

import (
	"fmt"
	"net/url"

	"github.com/agentctl/agentctl/client"
	"github.com/agentctl/agentctl/cluster"
	"github.com/agentctl/agentctl/hosts"
)

// withClusters registers k8s://CONTEXT/NAMESPACE: one namespace of a
// cluster, reached through client-go (KUBECONFIG honoured).
func withClusters(r hosts.Registry) hosts.Registry {
	r["k8s"] = openCluster
	return r
}

func openCluster(u *url.URL, name string, _ hosts.Env) (client.Sessions, error) {
	k, err := hosts.ParseK8s(u)
	if err != nil {
		return nil, err
	}
	c, err := cluster.New(cluster.Config{
		Kubeconfig: k.Kubeconfig, Context: k.Context, Namespace: k.Namespace,
		Image: k.Image, PullPolicy: k.PullPolicy, Volume: k.Volume,
	})
	if err != nil {
		return nil, fmt.Errorf("host %s: %w", name, err)
	}
	return c, nil
}

// A cluster does what these commands ask beyond client.Sessions.
var (
	_ streamAttacher    = (*cluster.Cluster)(nil)
	_ hosts.EventSource = (*cluster.Cluster)(nil)
	_ watchSource       = (*cluster.Cluster)(nil)
)
