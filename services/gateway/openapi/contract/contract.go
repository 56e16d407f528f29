// Package contract checks HTTP exchanges with the gateway against its
// OpenAPI document, so that a test suite talking to the API through it
// checks the document too: every request and response, headers and JSON
// bodies included.
//
// A request the document refuses is taken to be deliberately invalid: only
// its response is checked, and it must not be a success (the service must
// refuse what the document refuses). Requests to routes the document does
// not describe (unknown routes, /healthz) are checked for what every
// response must have: an X-Request-Id, and the error body on errors.
//
// Response bodies are checked strictly: an object schema that lists its
// properties and says nothing of others is taken to forbid others, so that
// a field the document does not describe fails the check. Free-form objects
// (a hook's data) stay free.
package contract

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/google/uuid"

	"github.com/sundial-run/sundial/services/gateway/openapi"
)

// Option changes what a transport expects.
type Option func(*config)

type config struct {
	headerPrefix string
}

// WithHeaderPrefix checks a gateway configured with SUNDIAL_HEADER_PREFIX
// against the document that gateway serves, whose quota headers carry the
// prefix.
func WithHeaderPrefix(prefix string) Option {
	return func(c *config) { c.headerPrefix = prefix }
}

// Client returns an HTTP client whose every exchange is checked against the
// document; each violation is reported with t.Errorf.
func Client(t testing.TB, opts ...Option) *http.Client {
	t.Helper()
	return &http.Client{Transport: Transport(t, http.DefaultTransport, opts...)}
}

// Transport wraps base so that every exchange is checked against the
// document; each violation is reported with t.Errorf.
func Transport(t testing.TB, base http.RoundTripper, opts ...Option) http.RoundTripper {
	t.Helper()
	cfg := config{headerPrefix: openapi.DefaultHeaderPrefix}
	for _, o := range opts {
		o(&cfg)
	}
	spec, err := Load(cfg.headerPrefix)
	if err != nil {
		t.Fatalf("contract: %v", err)
	}
	return &transport{t: t, base: base, spec: spec}
}

// Spec is a loaded document with its router.
type Spec struct {
	Doc    *openapi3.T
	router routers.Router
}

var (
	specsMu sync.Mutex
	specs   = map[string]*Spec{}
)

// Load returns the document with headerPrefix, loaded and validated once
// per process and prefix.
func Load(headerPrefix string) (*Spec, error) {
	specsMu.Lock()
	defer specsMu.Unlock()
	if s, ok := specs[headerPrefix]; ok {
		return s, nil
	}
	raw, err := openapi.JSON(headerPrefix)
	if err != nil {
		return nil, err
	}
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(raw)
	if err != nil {
		return nil, fmt.Errorf("load openapi document: %w", err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		return nil, fmt.Errorf("openapi document is invalid: %w", err)
	}
	closeObjects(doc)
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("openapi router: %w", err)
	}
	s := &Spec{Doc: doc, router: router}
	specs[headerPrefix] = s
	return s, nil
}

type transport struct {
	t    testing.TB
	base http.RoundTripper
	spec *Spec
}

func (c *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	reqBody, err := readAll(req.Body)
	if err != nil {
		return nil, err
	}
	route, params, routeErr := c.spec.router.FindRoute(withBody(req, reqBody))
	var requestProblem error
	if routeErr == nil {
		requestProblem = c.checkRequest(withBody(req, reqBody), route, params)
	}

	res, err := c.base.RoundTrip(withBody(req, reqBody))
	if err != nil {
		return nil, err
	}
	resBody, err := readAll(res.Body)
	if err != nil {
		return nil, err
	}
	res.Body = io.NopCloser(bytes.NewReader(resBody))

	var problems []error
	if routeErr != nil {
		problems = c.checkUndocumented(res, resBody)
	} else {
		record(route, res.StatusCode)
		problems = c.checkResponse(withBody(req, reqBody), route, params, res, resBody)
		if requestProblem != nil && res.StatusCode < 400 {
			problems = append(problems, fmt.Errorf("the service accepted (%d) a request the document refuses: %w", res.StatusCode, requestProblem))
		}
	}
	for _, p := range problems {
		c.t.Errorf("contract: %s %s -> %d: %v", req.Method, req.URL.Path, res.StatusCode, p)
	}
	return res, nil
}

func readAll(body io.ReadCloser) ([]byte, error) {
	if body == nil {
		return nil, nil
	}
	defer body.Close()
	return io.ReadAll(body)
}

// withBody is a copy of req with a fresh reader of body. A RoundTripper
// must not change the request it was given, and each check reads the body.
// The declared length is kept, so that a chunked request stays chunked.
func withBody(req *http.Request, body []byte) *http.Request {
	r := req.Clone(req.Context())
	if body != nil {
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	return r
}

var requestOptions = &openapi3filter.Options{
	MultiError:         true,
	AuthenticationFunc: apiKeyPresent,
}

// apiKeyPresent is the document's apiKey scheme as a client sees it: the
// header is there. Whether the key is valid is the service's to say.
func apiKeyPresent(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	scheme := in.SecurityScheme
	if scheme == nil || scheme.Type != "apiKey" || scheme.In != "header" {
		return fmt.Errorf("unexpected security scheme %q", in.SecuritySchemeName)
	}
	if in.RequestValidationInput.Request.Header.Get(scheme.Name) == "" {
		return fmt.Errorf("no %s header", scheme.Name)
	}
	return nil
}

func (c *transport) checkRequest(req *http.Request, route *routers.Route, params map[string]string) error {
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: requestOptions}
	return openapi3filter.ValidateRequest(req.Context(), in)
}

var responseOptions = &openapi3filter.Options{
	MultiError:            true,
	IncludeResponseStatus: true,
	AuthenticationFunc:    openapi3filter.NoopAuthenticationFunc,
}

func (c *transport) checkResponse(req *http.Request, route *routers.Route, params map[string]string, res *http.Response, body []byte) []error {
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: responseOptions},
		Status:                 res.StatusCode,
		Header:                 res.Header,
		Body:                   io.NopCloser(bytes.NewReader(body)),
		Options:                responseOptions,
	}
	var problems []error
	if err := openapi3filter.ValidateResponse(req.Context(), in); err != nil {
		problems = append(problems, err)
	}
	if res.StatusCode >= 400 {
		problems = append(problems, c.checkRequestID(res, body)...)
	}
	return problems
}

// checkUndocumented checks a response of a route the document does not
// describe: an X-Request-Id always, and the error format on errors.
func (c *transport) checkUndocumented(res *http.Response, body []byte) []error {
	id := res.Header.Get("X-Request-Id")
	if _, err := uuid.Parse(id); err != nil {
		return []error{fmt.Errorf("X-Request-Id %q is not a UUID", id)}
	}
	if res.StatusCode < 400 {
		return nil
	}
	if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		return []error{fmt.Errorf("error response has Content-Type %q, want application/json", ct)}
	}
	errSchema := c.spec.Doc.Components.Schemas["Error"].Value
	value, err := decodeJSON(body)
	if err != nil {
		return []error{err}
	}
	if err := errSchema.VisitJSON(value, openapi3.MultiErrors(), openapi3.EnableJSONSchema2020()); err != nil {
		return []error{fmt.Errorf("error body does not match the Error schema: %w", err)}
	}
	return c.checkRequestID(res, body)
}

// checkRequestID checks that an error body's requestId is the response's
// X-Request-Id, which the schema alone cannot say.
func (c *transport) checkRequestID(res *http.Response, body []byte) []error {
	value, err := decodeJSON(body)
	if err != nil {
		return []error{err}
	}
	obj, _ := value.(map[string]any)
	if got, want := obj["requestId"], res.Header.Get("X-Request-Id"); got != want {
		return []error{fmt.Errorf("error body's requestId %v differs from X-Request-Id %q", got, want)}
	}
	return nil
}

func decodeJSON(body []byte) (any, error) {
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return nil, fmt.Errorf("body is not JSON: %w", err)
	}
	return v, nil
}

// closeObjects makes every object schema that lists properties, and says
// nothing about others, forbid others.
func closeObjects(doc *openapi3.T) {
	seen := map[*openapi3.Schema]bool{}
	var walk func(ref *openapi3.SchemaRef)
	walk = func(ref *openapi3.SchemaRef) {
		if ref == nil || ref.Value == nil || seen[ref.Value] {
			return
		}
		s := ref.Value
		seen[s] = true
		if len(s.Properties) > 0 && s.AdditionalProperties.Has == nil && s.AdditionalProperties.Schema == nil {
			closed := false
			s.AdditionalProperties.Has = &closed
		}
		for _, p := range s.Properties {
			walk(p)
		}
		walk(s.Items)
		walk(s.AdditionalProperties.Schema)
		for _, list := range []openapi3.SchemaRefs{s.AllOf, s.AnyOf, s.OneOf} {
			for _, sub := range list {
				walk(sub)
			}
		}
	}
	for _, s := range doc.Components.Schemas {
		walk(s)
	}
	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			if op.RequestBody != nil && op.RequestBody.Value != nil {
				for _, mt := range op.RequestBody.Value.Content {
					walk(mt.Schema)
				}
			}
			for _, res := range op.Responses.Map() {
				if res.Value == nil {
					continue
				}
				for _, mt := range res.Value.Content {
					walk(mt.Schema)
				}
			}
		}
	}
}

// coverage counts, per operation, the statuses the checked exchanges got.
var coverage = struct {
	sync.Mutex
	seen map[string]map[int]int
}{seen: map[string]map[int]int{}}

func operationName(method, path string) string { return method + " " + path }

func record(route *routers.Route, status int) {
	coverage.Lock()
	defer coverage.Unlock()
	name := operationName(route.Method, route.Path)
	if coverage.seen[name] == nil {
		coverage.seen[name] = map[int]int{}
	}
	coverage.seen[name][status]++
}

// Report writes, for each operation of the document, the statuses of the
// exchanges checked so far in this process, and which documented statuses
// no exchange got.
func Report(w io.Writer) error {
	spec, err := Load(openapi.DefaultHeaderPrefix)
	if err != nil {
		return err
	}
	coverage.Lock()
	defer coverage.Unlock()
	var lines []string
	for path, item := range spec.Doc.Paths.Map() {
		for method, op := range item.Operations() {
			name := operationName(method, path)
			var got, missing []string
			for status, n := range coverage.seen[name] {
				got = append(got, fmt.Sprintf("%d×%d", status, n))
			}
			for code := range op.Responses.Map() {
				if !seenStatus(coverage.seen[name], code) {
					missing = append(missing, code)
				}
			}
			sort.Strings(got)
			sort.Strings(missing)
			lines = append(lines, fmt.Sprintf("%-40s %-10s seen: %s; never: %s", name, op.OperationID,
				strings.Join(got, " "), strings.Join(missing, " ")))
		}
	}
	sort.Strings(lines)
	_, err = io.WriteString(w, strings.Join(lines, "\n")+"\n")
	return err
}

func seenStatus(seen map[int]int, code string) bool {
	for status := range seen {
		if fmt.Sprint(status) == code {
			return true
		}
	}
	return false
}

// Unexercised lists the operations ("GET /hooks/{id}") that no checked
// exchange reached in this process.
func Unexercised() ([]string, error) {
	spec, err := Load(openapi.DefaultHeaderPrefix)
	if err != nil {
		return nil, err
	}
	coverage.Lock()
	defer coverage.Unlock()
	var out []string
	for path, item := range spec.Doc.Paths.Map() {
		for method := range item.Operations() {
			if name := operationName(method, path); len(coverage.seen[name]) == 0 {
				out = append(out, name)
			}
		}
	}
	sort.Strings(out)
	return out, nil
}
