// Command agentctl-k8s is agentctl's helper for sessions on Kubernetes: it
// links client-go (the cluster package), which agentctl itself does not, so
// that no agentctl command pays client-go's start-up. agentctl runs it once
// per call (cluster/k8shelper):
//
//	agentctl-k8s [--kubeconfig F] [--context C] [--namespace N] [--image I]
//	             [--pull-policy P] [--volume V] OP < request.json
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentctl/agentctl/cluster"
	"github.com/agentctl/agentctl/cluster/k8shelper"
)

func main() {
	var cfg cluster.Config
	fs := flag.NewFlagSet("agentctl-k8s", flag.ContinueOnError)
	fs.StringVar(&cfg.Kubeconfig, "kubeconfig", "", "the kubeconfig `file` (default: KUBECONFIG, ~/.kube/config)")
	fs.StringVar(&cfg.Context, "context", "", "the kubeconfig `context` (default: its current one)")
	fs.StringVar(&cfg.Namespace, "namespace", "", "the `namespace` (default: the context's)")
	fs.StringVar(&cfg.Image, "image", "", "the sessions' `image` (default: AGENTCTL_K8S_IMAGE)")
	fs.StringVar(&cfg.PullPolicy, "pull-policy", "", "the image pull `policy` (default: IfNotPresent)")
	fs.StringVar(&cfg.Volume, "volume", "", "the working directory's `volume`: pvc:NAME, host:/PATH, or an empty folder")
	fs.BoolVar(&cfg.HostNetwork, "host-network", false, "run the pods on their node's network (one-node clusters)")
	if err := fs.Parse(os.Args[1:]); err != nil || fs.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: agentctl-k8s [flags] launch|list|get|stop|input|transcript|explain|logs|attach|events < request.json")
		os.Exit(2)
	}
	cluster.QuietClientLogs()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c, err := cluster.New(cfg)
	if err != nil {
		os.Exit(k8shelper.Fail(os.Stdout, err))
	}
	os.Exit(k8shelper.Serve(ctx, c, fs.Arg(0), os.Stdin, os.Stdout))
}
