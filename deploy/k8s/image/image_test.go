//go:build imagecheck

package image_test

import (
	"archive/tar"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/deploy/k8s/image"
)

// TestBuildMakesARunnableImage (make check-image, part of make verify:
// tagged imagecheck, since a cold build of a service takes minutes) builds
// the image of one service for this machine's architecture, writes it as an OCI layout and reads it back:
// the platform, the non-root user, the command, the version label, and a
// binary in the layer that reports the version it was stamped with; then
// pushes it to a registry and pulls it back.
func TestBuildMakesARunnableImage(t *testing.T) {
	t.Parallel()
	const version = "9.9.9-test"
	platform := v1.Platform{OS: "linux", Architecture: runtime.GOARCH}
	idx, err := image.Build(t.Context(), image.Options{
		Root: filepath.Join("..", "..", ".."), Version: version, Revision: "abc123",
		Platforms: []v1.Platform{platform}, Services: []string{"gateway"},
	})
	require.NoError(t, err)

	dir := t.TempDir()
	path, err := layout.Write(filepath.Join(dir, "layout"), idx)
	require.NoError(t, err)
	idx, err = path.ImageIndex()
	require.NoError(t, err)
	im, err := idx.IndexManifest()
	require.NoError(t, err)
	require.Len(t, im.Manifests, 1)
	require.Equal(t, &platform, im.Manifests[0].Platform)

	img, err := idx.Image(im.Manifests[0].Digest)
	require.NoError(t, err)
	cf, err := img.ConfigFile()
	require.NoError(t, err)
	require.Equal(t, "linux", cf.OS)
	require.Equal(t, runtime.GOARCH, cf.Architecture)
	require.Equal(t, image.User, cf.Config.User)
	require.Equal(t, []string{"gateway"}, cf.Config.Cmd)
	require.Equal(t, version, cf.Config.Labels["org.opencontainers.image.version"])
	require.Equal(t, "abc123", cf.Config.Labels["org.opencontainers.image.revision"])

	bin := extract(t, img, "usr/local/bin/gateway", dir)
	out, err := exec.Command(bin, "version").CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Equal(t, "gateway "+version+"\n", string(out))

	requirePushed(t, idx)
}

// requirePushed pushes idx to a registry of the test's own (the
// registry API, in memory, over plain HTTP on loopback, as
// go-containerregistry speaks it to any registry) and pulls it back by
// tag: the same index, whose digest Push returned.
func requirePushed(t *testing.T, idx v1.ImageIndex) {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	ref := strings.TrimPrefix(srv.URL, "http://") + "/acme/sundial:9.9.9-test"
	digest, err := image.Push(t.Context(), idx, ref)
	require.NoError(t, err)

	tag, err := name.ParseReference(ref)
	require.NoError(t, err)
	pulled, err := remote.Index(tag, remote.WithContext(t.Context()))
	require.NoError(t, err)
	got, err := pulled.Digest()
	require.NoError(t, err)
	want, err := idx.Digest()
	require.NoError(t, err)
	require.Equal(t, want, got)
	require.Equal(t, want.String(), digest.DigestStr())
}

// extract writes the file at name in img's layers to dir and returns its
// path, requiring it executable by all.
func extract(t *testing.T, img v1.Image, name, dir string) string {
	t.Helper()
	layers, err := img.Layers()
	require.NoError(t, err)
	for _, l := range layers {
		rc, err := l.Uncompressed()
		require.NoError(t, err)
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			require.NoError(t, err)
			if h.Name != name {
				continue
			}
			require.Equal(t, int64(0o755), h.Mode&0o777, "mode of %s", name)
			out := filepath.Join(dir, filepath.Base(name))
			f, err := os.OpenFile(out, os.O_CREATE|os.O_WRONLY, 0o755)
			require.NoError(t, err)
			_, err = io.Copy(f, tr)
			require.NoError(t, err)
			require.NoError(t, f.Close())
			require.NoError(t, rc.Close())
			return out
		}
		require.NoError(t, rc.Close())
	}
	t.Fatalf("%s is in no layer", name)
	return ""
}
