// Command fakemodel runs agentctl's fake model server (package
// internal/fakemodel) for shell scripts, demos and CI: the real agent CLIs
// talk to it instead of a model provider. It listens on 127.0.0.1 only and
// stops on SIGINT or SIGTERM.
//
//	fakemodel [--port N] [--port-file F] [--log F]
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/agentctl/agentctl/internal/atomicfile"
	"github.com/agentctl/agentctl/internal/fakemodel"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "fakemodel:", err)
		os.Exit(1)
	}
}

func run() error {
	port := flag.Int("port", 0, "port to listen on (0: a free one)")
	portFile := flag.String("port-file", "", "write the chosen port to this file once listening")
	logPath := flag.String("log", "", "append one JSON line per request to this file")
	flag.Parse()
	if flag.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %q", flag.Args())
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	opts := []fakemodel.Option{fakemodel.WithPort(*port)}
	if *logPath != "" {
		opts = append(opts, fakemodel.WithLogFile(*logPath))
	}
	srv, err := fakemodel.Start(ctx, opts...)
	if err != nil {
		return err
	}
	defer srv.Close()
	if *portFile != "" {
		// Written atomically: a reader polling for the file never sees a
		// partial port number.
		if err := atomicfile.Write(filepath.Clean(*portFile), []byte(strconv.Itoa(srv.Port())+"\n"), 0o644); err != nil {
			return fmt.Errorf("write port file: %w", err)
		}
	}
	slog.Info("fake model server listening", "url", srv.URL())
	<-ctx.Done()
	return nil
}
