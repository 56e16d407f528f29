package dashboard

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

//go:embed static
var staticFS embed.FS

var staticRoot = func() fs.FS {
	sub, err := fs.Sub(staticFS, "static")
	if err != nil {
		panic(err)
	}
	return sub
}()

// staticVersion is a digest of every static file. Templates link the files
// with it (StaticPath), so that browsers may keep them a year: a binary
// with other files links other URLs.
var staticVersion = func() string {
	h := sha256.New()
	err := fs.WalkDir(staticRoot, ".", func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := fs.ReadFile(staticRoot, p)
		h.Write([]byte(p))
		h.Write(b)
		return err
	})
	if err != nil {
		panic(err)
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}()

// StaticPath is the URL of a static file (e.g. "vendor/htmx.min.js").
func StaticPath(name string) string {
	return Prefix + "/static/" + name + "?v=" + staticVersion
}

// staticTypes are the content types of the static files, set rather than
// guessed from the system's MIME table.
var staticTypes = map[string]string{
	".css": "text/css; charset=utf-8",
	".js":  "text/javascript; charset=utf-8",
	".svg": "image/svg+xml",
}

var staticFiles = http.StripPrefix(Prefix+"/static/", http.FileServerFS(staticRoot))

// serveStatic serves the CSS, scripts and images (not directories, licences
// or the lock file: they are for people reading the repository).
func serveStatic(w http.ResponseWriter, r *http.Request) {
	ct, ok := staticTypes[path.Ext(r.URL.Path)]
	if !ok || strings.HasSuffix(r.URL.Path, "/") {
		Error(w, r, http.StatusNotFound, "There is no such file.")
		return
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	staticFiles.ServeHTTP(w, r)
}
