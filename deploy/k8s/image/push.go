package image

import (
	"context"
	"fmt"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Push writes idx, every platform's image with it, to the registry at ref
// (registry/repository:tag), with the credentials `docker login` or a
// credential helper left in the user's Docker configuration, so no Docker
// daemon is needed. It returns the reference by digest, which pins the
// image whatever later happens to the tag.
func Push(ctx context.Context, idx v1.ImageIndex, ref string) (name.Digest, error) {
	tag, err := name.ParseReference(ref)
	if err != nil {
		return name.Digest{}, fmt.Errorf("push %s: %w", ref, err)
	}
	if err := remote.WriteIndex(tag, idx, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return name.Digest{}, fmt.Errorf("push %s: %w", tag, err)
	}
	digest, err := idx.Digest()
	if err != nil {
		return name.Digest{}, fmt.Errorf("push %s: %w", tag, err)
	}
	return tag.Context().Digest(digest.String()), nil
}
