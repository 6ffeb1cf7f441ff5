package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// EndpointEmbeddings is the path of vLLM's embeddings API (a pooling model's server).
const EndpointEmbeddings = "/v1/embeddings"

// embeddingsBody is what vllm bench serve's openai-embeddings backend sends: the prompt text
// as the input, truncated by the server to its context length (truncate_prompt_tokens -1,
// since embedding models often have short ones).
type embeddingsBody struct {
	Model    string `json:"model,omitempty"`
	Input    string `json:"input"`
	Truncate int    `json:"truncate_prompt_tokens"`
	// IgnoreEOS is sent as vLLM's benchmark sends it with --ignore-eos (and only then), though
	// nothing is generated.
	IgnoreEOS bool `json:"ignore_eos,omitempty"`
}

func (c *Client) embeddingsBody(p Prompt) ([]byte, error) {
	b := embeddingsBody{Model: c.cfg.Model, Input: p.Text, Truncate: -1, IgnoreEOS: c.cfg.PoolingIgnoreEOS}
	raw, err := json.Marshal(b)
	if err != nil || len(c.cfg.Extras.Body) == 0 {
		return raw, err
	}
	fields := map[string]json.RawMessage{}
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, err
	}
	for k, v := range c.cfg.Extras.Body {
		enc, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("--extra-body %q: %w", k, err)
		}
		fields[k] = enc
	}
	return json.Marshal(fields)
}

// doEmbeddings sends one embeddings request, not streamed, and measures its end-to-end
// latency only: from the send to the whole body read (vLLM stops its clock at the status
// line; the body of one vector is small beside the request's prefill). TTFT is the same
// latency, as vLLM records it; the prompt tokens are the server's usage.prompt_tokens.
func (c *Client) doEmbeddings(ctx context.Context, p Prompt) Result {
	res := Result{PromptTokens: p.InputTokens}
	body, err := c.embeddingsBody(p)
	if err != nil {
		res.Error, res.ErrorMessage = ErrHTTP400, err.Error()
		return res
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.RequestTimeout)
	defer cancel()
	stall := newStallTimer(c.cfg.StallTimeout, cancel)
	defer stall.timer.Stop()
	req, err := c.newPost(ctx, body, p.RequestID)
	if err != nil {
		res.Error, res.ErrorMessage = ErrConnect, err.Error()
		return res
	}

	res.Start = time.Now()
	resp, err := c.hc.Do(req)
	if err != nil {
		res.Error, res.ErrorMessage = classifyTransport(ctx, err, &stall.stalled, &stall.mu, true)
		return res
	}
	defer resp.Body.Close()
	res.Status = resp.StatusCode
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, min(maxErrorBodyBytes, int64(c.cfg.MaxBodyBytes))))
		res.Error = classifyStatus(resp.StatusCode)
		res.ErrorMessage = fmt.Sprintf("HTTP %d: %s", resp.StatusCode, errorMessage(bytes.TrimSpace(msg)))
		return res
	}
	data, err := readCapped(resp.Body, c.cfg.MaxBodyBytes)
	if err != nil {
		res.Error, res.ErrorMessage = classifyTransport(ctx, err, &stall.stalled, &stall.mu, false)
		if errors.Is(err, ErrTooLarge) {
			res.Error, res.ErrorMessage = ErrOversized, err.Error()
		}
		return res
	}
	res.E2EL = time.Since(res.Start)
	res.TTFT = res.E2EL
	var out struct {
		Usage *struct {
			PromptTokens *int `json:"prompt_tokens"`
		} `json:"usage"`
	}
	if json.Unmarshal(data, &out) != nil {
		res.Error, res.ErrorMessage = ErrProtocol, "the embeddings response is not JSON"
		return res
	}
	if out.Usage != nil && out.Usage.PromptTokens != nil {
		res.PromptTokens = *out.Usage.PromptTokens
	}
	res.FinishReason = "stop"
	return res
}
