package loadgen

import (
	"context"
	"io"
	"net/http"
)

// Profile asks a vLLM server to start or stop its profiler (POST /start_profile or
// /stop_profile, as vllm bench serve's --profile does) and reports whether it answered 200.
func (c *Client) Profile(ctx context.Context, start bool) bool {
	path := "/stop_profile"
	if start {
		path = "/start_profile"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.BaseURL()+path, nil)
	if err != nil {
		return false
	}
	if c.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	c.cfg.Extras.setHeaders(req.Header, "")
	resp, err := c.hc.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBodyBytes))
	return resp.StatusCode == http.StatusOK
}
