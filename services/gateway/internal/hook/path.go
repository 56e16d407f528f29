package hook

import (
	"net/url"
	"strings"
	"unicode"
)

// MaxPathBytes bounds a hook's path, query string included.
const MaxPathBytes = 2048

// validPath checks the path a hook is delivered to: it is appended to
// https:// and the project's domain, so anything that could change the host
// (a scheme, //host) or climb out of the path (a .. segment) is refused, and
// so are characters that have no place in a request line.
func validPath(path *string, p *problems) string {
	if path == nil {
		p.add("path", "is required")
		return ""
	}
	if msg := pathProblem(*path); msg != "" {
		p.add("path", "%s", msg)
		return ""
	}
	return *path
}

// PathProblem says what is wrong with a delivery path, in words for the
// client, or "" when nothing is: the one rule for a hook's path and for a
// sequence step's, whose hooks are delivered the same way.
func PathProblem(path string) string {
	return pathProblem(path)
}

func pathProblem(path string) string {
	switch {
	case path == "":
		return "must not be empty"
	case len(path) > MaxPathBytes:
		return "must be at most 2048 bytes"
	case !strings.HasPrefix(path, "/"):
		return `must start with "/"`
	case strings.HasPrefix(path, "//"):
		return "must not name a host: give only the path, the project's domain is prepended"
	case strings.IndexFunc(path, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		return "must not contain whitespace or control characters"
	case strings.Contains(path, "#"):
		return "must not contain a fragment (#): it is never sent to the server"
	}
	if plainPath(path) {
		return plainProblem(path)
	}
	return encodedProblem(path)
}

// plainPath reports whether path has only letters, digits and "/-._~":
// nothing percent-decodes, nothing starts a query, and the path parses as
// a URL path, so that a ".." segment is all that is left to refuse
// (plainProblem). It is the common case, and encodedProblem's unescaping
// and URL parsing cost a batch of 1,000 hooks more than the rest of their
// validation.
func plainPath(path string) bool {
	for i := 0; i < len(path); i++ {
		c := path[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '/' || c == '-' || c == '.' || c == '_' || c == '~') {
			return false
		}
	}
	return true
}

// plainProblem is encodedProblem for a plainPath.
func plainProblem(path string) string {
	for segment := range strings.SplitSeq(path, "/") {
		if segment == ".." {
			return `must not contain a ".." segment`
		}
	}
	return ""
}

// encodedProblem checks what the prefix rules leave of any path: its
// segments once percent-decoded, and that it parses as a URL path.
func encodedProblem(path string) string {
	pathPart, _, _ := strings.Cut(path, "?")
	for _, segment := range strings.Split(pathPart, "/") {
		decoded, err := url.PathUnescape(segment)
		if err != nil {
			return "contains an invalid percent-encoding"
		}
		if climbs(decoded) {
			return `must not contain a ".." segment`
		}
	}
	if _, err := url.ParseRequestURI("https://example.com" + path); err != nil {
		return "is not a valid URL path"
	}
	return ""
}

// climbs reports whether a decoded segment is "..", or holds one between
// the separators a receiver might make of it once decoded: "%2e%2e" is
// "..", and some servers also split "..%2F" or "..%5C" (a backslash, a
// separator on Windows) into segments before resolving them.
func climbs(decoded string) bool {
	for _, part := range strings.FieldsFunc(decoded, func(r rune) bool { return r == '/' || r == '\\' }) {
		if part == ".." {
			return true
		}
	}
	return false
}
