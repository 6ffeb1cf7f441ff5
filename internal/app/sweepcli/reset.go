package sweepcli

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/vllmtop/vllmtop/internal/app/benchcli"
	"github.com/vllmtop/vllmtop/internal/app/launch"
	"github.com/vllmtop/vllmtop/server"
)

// resetEndpoints are the caches vLLM's sweep empties after each run (without
// --after-bench-cmd), so that no run is answered from what an earlier one cached; vLLM
// serves them only with devModeEnv set, which the sweep sets for the servers it starts.
var resetEndpoints = []string{"/reset_prefix_cache", "/reset_mm_cache", "/reset_encoder_cache"}

const devModeEnv = "VLLM_SERVER_DEV_MODE=1"

// cacheReset empties a vLLM server's caches between runs. A server without the endpoints
// (another vLLM build, or the simulator under a vllm name) is said once and left alone: the
// sweep's fresh prompts already keep its runs apart.
type cacheReset struct {
	url, key string
	off      bool
	client   *http.Client
}

func newCacheReset(url, key string) *cacheReset {
	return &cacheReset{url: strings.TrimSuffix(url, "/"), key: key, client: &http.Client{Timeout: 30 * time.Second}}
}

// do POSTs each endpoint, as vLLM does; a missing one turns the reset off with one line.
func (r *cacheReset) do(ctx context.Context, env benchcli.Env) error {
	if r == nil || r.off {
		return nil
	}
	fmt.Fprintf(env.Stdout, "Resetting caches at %s\n", r.url)
	for _, ep := range resetEndpoints {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.url+ep, nil)
		if err != nil {
			return err
		}
		if r.key != "" {
			req.Header.Set("Authorization", "Bearer "+r.key)
		}
		resp, err := r.client.Do(req)
		if err != nil {
			return fmt.Errorf("resetting the server's caches: %v", err)
		}
		resp.Body.Close()
		switch {
		case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed:
			r.off = true
			env.Say("the server has no %s (vLLM serves it with %s): its caches are not reset between runs", ep, devModeEnv)
			return nil
		case resp.StatusCode >= 300:
			return fmt.Errorf("resetting the server's caches: POST %s: %s", ep, resp.Status)
		}
	}
	return nil
}

// vllmReset is the reset of a launched server that is vLLM (vllm serve, or its API server
// module); nil for any other.
func vllmReset(srv *launch.Server, url, key string) *cacheReset {
	if srv.Kind != server.KindVLLMServe && srv.Kind != server.KindAPIServer {
		return nil
	}
	return newCacheReset(url, key)
}
