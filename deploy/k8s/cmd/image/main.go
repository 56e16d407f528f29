// Command image builds Sundial's container image (package image) into an
// OCI layout, and pushes it to a registry when told to:
//
//	go run ./deploy/k8s/cmd/image -out .image
//	go run ./deploy/k8s/cmd/image -push registry.example.com/sundial:0.1.0
//
// Pushing authenticates as docker and podman do (their config file, or a
// credential helper it names). make image and make image-push run it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"

	"github.com/sundial-run/sundial/deploy/k8s/image"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := run(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	var (
		out       = flag.String("out", "", "write the image as an OCI layout into this directory (replaced)")
		push      = flag.String("push", "", "push the image to this reference (registry/repository:tag)")
		platforms = flag.String("platforms", "linux/amd64,linux/arm64", "comma-separated platforms")
		version   = flag.String("version", "", "the version stamped and labelled (default: the VERSION file)")
	)
	flag.Parse()
	if *out == "" && *push == "" {
		return fmt.Errorf("nothing to do: give -out, -push or both")
	}
	if *version == "" {
		raw, err := os.ReadFile("VERSION")
		if err != nil {
			return fmt.Errorf("run from the repository's root, or give -version: %w", err)
		}
		*version = strings.TrimSpace(string(raw))
	}
	o := image.Options{Root: ".", Version: *version, Revision: revision(), Log: os.Stderr}
	for _, p := range strings.Split(*platforms, ",") {
		platform, err := v1.ParsePlatform(strings.TrimSpace(p))
		if err != nil {
			return err
		}
		o.Platforms = append(o.Platforms, *platform)
	}
	idx, err := image.Build(ctx, o)
	if err != nil {
		return err
	}
	if *out != "" {
		if err := os.RemoveAll(*out); err != nil {
			return err
		}
		// The layout's index is the image's: one manifest per platform.
		if _, err := layout.Write(*out, idx); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "wrote %s (version %s)\n", *out, o.Version)
	}
	if *push != "" {
		digest, err := image.Push(ctx, idx, *push)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "pushed %s as %s\n", *push, digest)
	}
	return nil
}

// revision is the commit checked out, "" outside a git checkout; a
// checkout with changes is marked -dirty.
func revision() string {
	out, err := exec.Command("git", "describe", "--always", "--dirty", "--abbrev=40", "--match=NeVeRmAtCh").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}
