package serve

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/vllmtop/vllmtop/server/sim"
	"github.com/vllmtop/vllmtop/server/sim/metrics"
	"github.com/vllmtop/vllmtop/server/sim/vlog"
)

// Server is a simulated vLLM API server.
type Server struct {
	opts      *Options
	setup     *sim.Setup
	clock     sim.Clock
	drv       *driver   // the first engine's, drvs[0]
	drvs      []*driver // one per data-parallel engine
	lb        *balancer
	metrics   *metrics.Metrics
	logs      *vlog.Logger
	ready     atomic.Bool
	modelName string // the served name: response "model" field and metrics label
	root      string // the --model value
	created   int64
	permID    string
	mux       *http.ServeMux
	served    map[string]string             // each served route's path to its methods
	onWrite   func(id string, at time.Time) // see sseSink.onWrite
}

// Routes the server answers, as vLLM lists them at startup.
var routes = []vlog.Route{
	{Path: "/health", Methods: "GET"},
	{Path: "/ping", Methods: "GET, POST"},
	{Path: "/load", Methods: "GET"},
	{Path: "/metrics", Methods: "GET"},
	{Path: "/tokenize", Methods: "POST"},
	{Path: "/detokenize", Methods: "POST"},
	{Path: "/v1/models", Methods: "GET"},
	{Path: "/version", Methods: "GET"},
	{Path: "/v1/chat/completions", Methods: "POST"},
	{Path: "/v1/completions", Methods: "POST"},
}

// New builds a server for a resolved setup. logs may be nil (no log output); clock may be a
// *sim.VirtualClock for tests, else the wall clock scaled by opts.Speed is used.
func New(opts *Options, setup *sim.Setup, clock sim.Clock, logs *vlog.Logger) *Server {
	if clock == nil {
		clock = newScaledClock(opts.Speed)
	}
	s := &Server{opts: opts, setup: setup, clock: clock, logs: logs, root: setup.Model, created: time.Now().Unix()}
	s.modelName = setup.Model
	if len(opts.ServedModelNames) > 0 {
		s.modelName = opts.ServedModelNames[0]
	}
	s.permID = "modelperm-" + randomHex(8)
	s.startEngines(clock)
	s.mux = http.NewServeMux()
	s.served = routeMethods(servedRoutes(opts.Pooling))
	s.routes()
	return s
}

const statsInterval = 10 * time.Second

type statsObserver struct{ *vlog.Stats }

func (o statsObserver) ObserveStep(r *sim.StepResult) { o.Observe(r) }
func (statsObserver) ObserveEnded(*sim.Sequence)      {}

// Handler is the HTTP API (usable with httptest).
func (s *Server) Handler() http.Handler { return s }

// Ready reports whether the "model" has loaded and /health answers 200.
func (s *Server) Ready() bool { return s.ready.Load() }

// Start runs the engine driver without a listener and marks the server ready at once, for
// use with httptest or an in-process handler. Cancel ctx to stop the driver.
func (s *Server) Start(ctx context.Context) {
	for _, d := range s.drvs {
		go d.run(ctx)
	}
	s.ready.Store(true)
}

// Run serves on ln until ctx ends: it imitates the model load (opts.StartupSeconds, /health
// 503 meanwhile), logs vLLM's startup lines, then serves. On ctx's end it stops accepting,
// lets in-flight requests finish for up to grace, aborts the rest, and returns nil.
func (s *Server) Run(ctx context.Context, ln net.Listener, grace time.Duration) error {
	driverCtx, stopDriver := context.WithCancel(context.Background())
	driverDone := s.runDrivers(driverCtx)
	hs := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	serveErr := make(chan error, 1)
	go func() { serveErr <- hs.Serve(ln) }()

	start := time.Now()
	load := time.Duration(s.opts.StartupSeconds / s.opts.Speed * float64(time.Second))
	select {
	case <-time.After(load):
		if s.logs != nil {
			s.logs.StartupEngines(s.setup, loggedArgs(s.opts), time.Since(start).Seconds(), len(s.drvs))
			if line := notSimulatedLine(s.opts.NotSimulated); line != "" {
				s.logs.API(vlog.Warning, "serve.py:1", line)
			}
			s.logs.Serving(listenURL(s.opts.Host, ln), servedRoutes(s.opts.Pooling))
		}
		s.ready.Store(true)
	case <-ctx.Done():
	case err := <-serveErr:
		stopDriver()
		<-driverDone
		return err
	}

	var err error
	select {
	case <-ctx.Done():
	case err = <-serveErr:
	}
	if s.logs != nil {
		s.logs.Shutdown()
	}
	s.ready.Store(false)
	graceCtx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	done := make(chan struct{})
	go func() {
		_ = hs.Shutdown(graceCtx) // waits for handlers, i.e. in-flight streams
		close(done)
	}()
	select {
	case <-done:
	case <-graceCtx.Done():
		for _, d := range s.drvs {
			d.abortAll()
		}
		<-done
	}
	stopDriver()
	<-driverDone
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

func listenURL(host string, ln net.Listener) string {
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	if host == "" {
		host = "0.0.0.0"
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return "http://" + host + ":" + port
}

// toKV is the non-default args as vLLM logs them: the simulator's own --sim-* flags are not
// vLLM's arguments, so its log leaves them out.
func toKV(nv []NamedValue) []vlog.KV {
	out := make([]vlog.KV, 0, len(nv))
	for _, v := range nv {
		if !strings.HasPrefix(v.Key, "sim_") {
			out = append(out, vlog.KV{Key: v.Key, Value: v.Value})
		}
	}
	return out
}

// loggedArgs is o's non-default args as vLLM logs them (toKV), without the flags given their
// default value.
func loggedArgs(o *Options) []vlog.KV {
	kv := toKV(o.NonDefault)
	return slices.DeleteFunc(kv, func(v vlog.KV) bool { return o.atDefault[v.Key] })
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// ServeHTTP applies vLLM's API-key check to /v1 paths, answers 503 while loading, logs an
// access line, and routes.
//
// The requests the application serves (past the API-key check, which vLLM runs as an outer
// middleware) are counted in the http_* families as prometheus-fastapi-instrumentator counts
// them: by route, or "none" for a path no route has.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := &statusRecorder{ResponseWriter: w, status: 200}
	defer func() {
		if s.logs != nil {
			s.logs.Access(r.RemoteAddr, r.Method, r.URL.RequestURI(), rec.status)
		}
	}()
	if len(s.opts.APIKeys) > 0 && r.Method != http.MethodOptions && guarded(r.URL.Path) && !s.authorized(r) {
		writeJSON(rec, http.StatusUnauthorized, []byte(`{"error":"Unauthorized"}`))
		return
	}
	if !s.ready.Load() && r.URL.Path != "/metrics" {
		rec.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	s.mux.ServeHTTP(rec, r)
	handler := "none"
	if _, ok := s.served[r.URL.Path]; ok {
		handler = r.URL.Path
	}
	s.metrics.ObserveHTTP(handler, r.Method, rec.status, max(0, r.ContentLength), rec.contentLength, time.Since(start))
}

// servedRoutes are the routes of a server with the given runner, in the order vLLM lists them:
// a pooling server has /v1/embeddings where a generating one has the completions routes.
func servedRoutes(pooling bool) []vlog.Route {
	if !pooling {
		return routes
	}
	out := make([]vlog.Route, 0, len(routes))
	for _, r := range routes {
		if r.Path != "/v1/chat/completions" && r.Path != "/v1/completions" {
			out = append(out, r)
		}
	}
	return append(out, vlog.Route{Path: "/v1/embeddings", Methods: "POST"})
}

// routeMethods maps each route's path to the methods it answers.
func routeMethods(rs []vlog.Route) map[string]string {
	m := make(map[string]string, len(rs))
	for _, r := range rs {
		m[r.Path] = r.Methods
	}
	return m
}

func guarded(path string) bool {
	return strings.HasPrefix(path, "/v1") || strings.HasPrefix(path, "/v2") || strings.HasPrefix(path, "/inference")
}

func (s *Server) authorized(r *http.Request) bool {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	for _, k := range s.opts.APIKeys {
		if token == k {
			return true
		}
	}
	return false
}

type statusRecorder struct {
	http.ResponseWriter
	status        int
	contentLength int64 // the Content-Length header sent, 0 without one (a stream)
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	if n, err := strconv.ParseInt(r.Header().Get("Content-Length"), 10, 64); err == nil {
		r.contentLength = n
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *Server) routes() {
	health := func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) }
	s.mux.HandleFunc("GET /health", health)
	s.mux.HandleFunc("GET /ping", health)
	s.mux.HandleFunc("POST /ping", health)
	s.mux.HandleFunc("GET /version", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, []byte(`{"version":"`+s.setup.Version.String()+`"}`))
	})
	s.mux.HandleFunc("GET /load", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, []byte(`{"server_load":0}`))
	})
	// vLLM also mounts the metrics app under /metrics, which answers any method.
	s.mux.Handle("/metrics", s.metrics.Handler())
	s.mux.HandleFunc("GET /v1/models", s.models)
	s.mux.HandleFunc("POST /tokenize", s.tokenize)
	s.mux.HandleFunc("POST /detokenize", s.detokenize)
	s.mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) { s.generate(w, r, false) })
	s.mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) { s.generate(w, r, true) })
	s.mux.HandleFunc("POST /v1/embeddings", s.embeddings)
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if methods, ok := s.served[r.URL.Path]; ok {
			// A route with another method: Starlette's partial match, FastAPI's 405.
			w.Header().Set("Allow", methods)
			writeJSON(w, http.StatusMethodNotAllowed, []byte(`{"detail":"Method Not Allowed"}`))
			return
		}
		writeJSON(w, http.StatusNotFound, []byte(`{"detail":"Not Found"}`))
	})
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// writeError writes vLLM's ErrorResponse; the HTTP status equals error.code.
func writeError(w http.ResponseWriter, status int, typ, msg string, param *string) {
	b := []byte(`{"error":{"message":`)
	b = appendJSONString(b, msg)
	b = append(b, `,"type":`...)
	b = appendJSONString(b, typ)
	b = append(b, `,"param":`...)
	if param != nil {
		b = appendJSONString(b, *param)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"code":`...)
	b = appendInt(b, int64(status))
	b = append(b, "}}"...)
	writeJSON(w, status, b)
}

func ptr(s string) *string { return &s }

func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	type perm struct {
		ID                 string  `json:"id"`
		Object             string  `json:"object"`
		Created            int64   `json:"created"`
		AllowCreateEngine  bool    `json:"allow_create_engine"`
		AllowSampling      bool    `json:"allow_sampling"`
		AllowLogprobs      bool    `json:"allow_logprobs"`
		AllowSearchIndices bool    `json:"allow_search_indices"`
		AllowView          bool    `json:"allow_view"`
		AllowFineTuning    bool    `json:"allow_fine_tuning"`
		Organization       string  `json:"organization"`
		Group              *string `json:"group"`
		IsBlocking         bool    `json:"is_blocking"`
	}
	type card struct {
		ID          string  `json:"id"`
		Object      string  `json:"object"`
		Created     int64   `json:"created"`
		OwnedBy     string  `json:"owned_by"`
		Root        string  `json:"root"`
		Parent      *string `json:"parent"`
		MaxModelLen *int    `json:"max_model_len"`
		Permission  []perm  `json:"permission"`
	}
	names := listedNames(s.opts, s.modelName)
	var list struct {
		Object string `json:"object"`
		Data   []card `json:"data"`
	}
	list.Object = "list"
	permission := []perm{{ID: s.permID, Object: "model_permission", Created: s.created,
		AllowSampling: true, AllowLogprobs: true, AllowView: true, Organization: "*"}}
	for _, n := range names {
		list.Data = append(list.Data, card{ID: n, Object: "model", Created: s.created, OwnedBy: "vllm", Root: s.root,
			MaxModelLen: &s.setup.MaxModelLen, Permission: permission})
	}
	// LoRA adapters follow, their parent the base model, with no max_model_len (as vLLM).
	for _, l := range s.opts.LoRAModules {
		parent := l.BaseModel
		if parent == "" {
			parent = names[0]
		}
		list.Data = append(list.Data, card{ID: l.Name, Object: "model", Created: s.created, OwnedBy: "vllm", Root: l.Path,
			Parent: &parent, Permission: permission})
	}
	b, _ := json.Marshal(list)
	writeJSON(w, 200, b)
}

// knownModel reports whether a request's "model" names this server (empty means the base model).
func (s *Server) knownModel(name string) bool {
	if name == "" || name == s.modelName || name == s.root || s.loraModule(name) != nil {
		return true
	}
	for _, n := range s.opts.ServedModelNames {
		if n == name {
			return true
		}
	}
	return false
}

func (s *Server) modelNotFound(w http.ResponseWriter, name string) {
	writeError(w, http.StatusNotFound, "NotFoundError", fmt.Sprintf("The model `%s` does not exist.", name), ptr("model"))
}

// badJSON answers a body that is not valid JSON as FastAPI's validation does.
func badJSON(w http.ResponseWriter, err error) {
	msg := fmt.Sprintf("1 validation error:\n  {'type': 'json_invalid', 'loc': ('body', 0), 'msg': 'JSON decode error', 'input': {}, 'ctx': {'error': '%s'}}", strings.ReplaceAll(err.Error(), "'", "\""))
	writeError(w, http.StatusBadRequest, "Bad Request", msg, ptr("body"))
}

const maxBody = 64 << 20

func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			writeError(w, http.StatusBadRequest, "Bad Request", fmt.Sprintf("1 validation error:\n  {'type': 'invalid_type', 'loc': ('body', '%s'), 'msg': 'Input should be a valid %s'}", te.Field, te.Type), ptr("body."+te.Field))
			return false
		}
		badJSON(w, err)
		return false
	}
	return true
}

func (s *Server) tokenize(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model               string        `json:"model"`
		Prompt              *string       `json:"prompt"`
		Messages            []chatMessage `json:"messages"`
		AddGenerationPrompt *bool         `json:"add_generation_prompt"`
		ReturnTokenStrs     bool          `json:"return_token_strs"`
	}
	if !decodeBody(w, r, &req) {
		return
	}
	if !s.knownModel(req.Model) {
		s.modelNotFound(w, req.Model)
		return
	}
	var ids []int
	var strs []string
	switch {
	case req.Prompt != nil:
		ids = sim.Tokenize(*req.Prompt)
		if req.ReturnTokenStrs {
			strs = sim.TokenStrings(*req.Prompt)
		}
	case req.Messages != nil:
		ids = chatPrompt(req.Messages, req.AddGenerationPrompt == nil || *req.AddGenerationPrompt)
		if req.ReturnTokenStrs {
			for _, id := range ids {
				strs = append(strs, sim.TokenText(id))
			}
		}
	default:
		writeError(w, http.StatusBadRequest, "Bad Request", "1 validation error:\n  {'type': 'missing', 'loc': ('body', 'prompt'), 'msg': 'Field required'}", ptr("body.prompt"))
		return
	}
	resp := struct {
		Count       int      `json:"count"`
		MaxModelLen int      `json:"max_model_len"`
		Tokens      []int    `json:"tokens"`
		TokenStrs   []string `json:"token_strs"`
	}{len(ids), s.setup.MaxModelLen, ids, strs}
	if resp.Tokens == nil {
		resp.Tokens = []int{}
	}
	b, _ := json.Marshal(resp)
	writeJSON(w, 200, b)
}

func (s *Server) detokenize(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model  string `json:"model"`
		Tokens []int  `json:"tokens"`
	}
	if !decodeBody(w, r, &req) {
		return
	}
	if !s.knownModel(req.Model) {
		s.modelNotFound(w, req.Model)
		return
	}
	for _, t := range req.Tokens {
		if t < 0 {
			writeError(w, http.StatusBadRequest, "BadRequestError", "token ids must be non-negative", ptr("tokens"))
			return
		}
	}
	b, _ := json.Marshal(struct {
		Prompt string `json:"prompt"`
	}{sim.Detokenize(req.Tokens)})
	writeJSON(w, 200, b)
}
