// Package image builds Sundial's container image without a Docker daemon
// and without a base image: the four services, built static for each
// platform (no cgo, time zone data and fallback root certificates
// compiled in), in one layer on an empty image, as a multi-platform OCI
// index. The container runs as a non-root user and picks its service by
// command (gateway, scheduler, dispatcher, notifier; `gateway migrate`
// applies the schema), as the Helm chart and Compose file do.
package image

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Services are the binaries of the image, each built from
// services/NAME/cmd/NAME.
var Services = []string{"gateway", "scheduler", "dispatcher", "notifier"}

// Platforms are the platforms the image is built for unless told others.
var Platforms = []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64"}}

// BinDir is where the binaries are in the image, on its PATH.
const BinDir = "/usr/local/bin"

// User is the image's user and group: not root, and with no account in
// the image (there is no /etc/passwd to need one).
const User = "65532:65532"

// Source is the repository the image's source label names.
const Source = "https://github.com/sundial-run/sundial"

// Options say what to build.
type Options struct {
	// Root is the repository's root, where go.work is.
	Root string
	// Version is stamped into every binary (app.Version) and labelled.
	Version string
	// Revision is the commit built, labelled when set.
	Revision string
	// Platforms defaults to Platforms.
	Platforms []v1.Platform
	// Services defaults to Services.
	Services []string
	// Log, if set, gets a line per binary built.
	Log io.Writer
}

// Build builds the image's binaries for each platform and returns the
// index of the platforms' images.
func Build(ctx context.Context, o Options) (v1.ImageIndex, error) {
	if o.Version == "" {
		return nil, fmt.Errorf("image: no version")
	}
	if len(o.Platforms) == 0 {
		o.Platforms = Platforms
	}
	if len(o.Services) == 0 {
		o.Services = Services
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range o.Platforms {
		img, err := platformImage(ctx, o, p)
		if err != nil {
			return nil, fmt.Errorf("image for %s: %w", p, err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add: img, Descriptor: v1.Descriptor{MediaType: types.OCIManifestSchema1, Platform: &p},
		})
	}
	return idx, nil
}

// platformImage is the image of one platform: its binaries in one layer,
// and the configuration that runs them.
func platformImage(ctx context.Context, o Options, p v1.Platform) (v1.Image, error) {
	dir, err := os.MkdirTemp("", "sundial-image-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	for _, s := range o.Services {
		if err := buildService(ctx, o, p, s, filepath.Join(dir, s)); err != nil {
			return nil, err
		}
	}
	layerTar, err := binariesTar(dir, o.Services)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	if img, err = mutate.AppendLayers(img, layer); err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = p.OS, p.Architecture, p.Variant
	cf.Config = v1.Config{
		Cmd:          []string{o.Services[0]},
		Env:          []string{"PATH=" + BinDir},
		User:         User,
		ExposedPorts: map[string]struct{}{"8080/tcp": {}},
		Labels:       labels(o),
	}
	return mutate.ConfigFile(img, cf)
}

// labels are the OCI annotations of the image's configuration.
func labels(o Options) map[string]string {
	l := map[string]string{
		"org.opencontainers.image.title":       "sundial",
		"org.opencontainers.image.description": "Sundial, a self-hosted webhook scheduler: gateway, scheduler, dispatcher and notifier",
		"org.opencontainers.image.version":     o.Version,
		"org.opencontainers.image.source":      Source,
		"org.opencontainers.image.url":         Source,
	}
	if o.Revision != "" {
		l["org.opencontainers.image.revision"] = o.Revision
	}
	return l
}

// buildService builds service for p into out: static, its version
// stamped (the tz database local times need is package calendar's own).
func buildService(ctx context.Context, o Options, p v1.Platform, service, out string) error {
	ldflags := fmt.Sprintf("-s -w -X github.com/sundial-run/sundial/services/%s/app.Version=%s", service, o.Version)
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", ldflags,
		"-o", out, "./services/"+service+"/cmd/"+service)
	cmd.Dir = o.Root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Architecture)
	if p.Variant != "" && p.Architecture == "arm" {
		cmd.Env = append(cmd.Env, "GOARM="+p.Variant[1:])
	}
	if msg, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", service, err, msg)
	}
	if o.Log != nil {
		_, _ = fmt.Fprintf(o.Log, "built %s for %s\n", service, p.String())
	}
	return nil
}

// binariesTar is the layer's tar: BinDir and its binaries, owned by root,
// executable by all, with a fixed time, so that the same binaries make the
// same layer.
func binariesTar(dir string, services []string) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0).UTC()
	for _, d := range []string{"usr/", "usr/local/", "usr/local/bin/"} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: 0o755, ModTime: epoch, Format: tar.FormatPAX}); err != nil {
			return nil, err
		}
	}
	for _, s := range services {
		data, err := os.ReadFile(filepath.Join(dir, s))
		if err != nil {
			return nil, err
		}
		h := &tar.Header{Typeflag: tar.TypeReg, Name: "usr/local/bin/" + s, Mode: 0o755, Size: int64(len(data)), ModTime: epoch, Format: tar.FormatPAX}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
